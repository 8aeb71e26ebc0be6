"""Binary dataset bodies and resumable uploads (``/v1/uploads``); protocol in docs/datasets.md.

``POST /v1/datasets`` takes a ``.npy`` file (``application/x-npy``), a Parquet file
(``application/vnd.apache.parquet``) or an Arrow IPC stream (``application/vnd.apache.arrow.stream``)
as its body (:func:`create_binary_dataset`), read to the data directory piece by piece
(:mod:`service.ingest`). A file too large for one request goes up in pieces:

1. ``POST /v1/uploads {"content_type": ..., "length": ...}`` -> 201, the upload (``id``, ``offset`` 0);
2. ``PATCH /v1/uploads/{id}`` with ``Upload-Offset: <offset>`` and the next bytes -> 204 with the new
   ``Upload-Offset``; a request cut off keeps what arrived; an offset that is not the upload's -> 409
   with the right one;
3. ``HEAD /v1/uploads/{id}`` (or ``GET``) -> ``Upload-Offset``: where to go on after an interruption;
4. ``POST /v1/datasets {"upload_id": ..., "name", "labels", "item_ids"}`` -> 201, the dataset.
"""

import os

from flask import current_app, request, url_for
from flask_smorest import Blueprint

from schemas.uploads import BINARY_TYPES, UploadCreateSchema, UploadSchema
from workers.records import is_record_id

from . import doc_headers, get_store
from .auth import require_owned, tenant
from .errors import ApiError, problem_docs
from .ingest import NPY, check_npy, limits_of, npy_header_check, receive, table_to_npy
from .limits import check_quota, settle_quota

blp = Blueprint("uploads", __name__, url_prefix="/v1/uploads",
                description="Resumable uploads of large binary datasets (docs/datasets.md)")

#: ``PATCH /v1/uploads/{id}`` body types (tus's, and the generic one).
CHUNK_TYPES = ("application/offset+octet-stream", "application/octet-stream")
OFFSET = "Upload-Offset"


def binary_request():
    """Whether this request's body is binary data for an endpoint that streams it (no JSON checks,
    no buffering, no idempotency fingerprint; ``SHOAL_MAX_UPLOAD_BYTES`` bounds it)."""
    if request.method == "POST" and request.endpoint == "datasets.create_dataset":
        return request.mimetype in BINARY_TYPES
    return request.method == "PATCH" and request.endpoint == "uploads.append_upload"


def _body_length():
    return request.content_length if request.headers.get("Content-Length") is not None else None


def create_binary_dataset(name=None):
    """``POST /v1/datasets`` with a binary body: stream it to the data directory, check, store.

    Returns the dataset's metadata (the view answers 201). Labels and item ids come in the table's
    ``label`` / ``item_id`` columns, or for ``.npy`` in ``PATCH /v1/datasets/{id}`` afterwards; a
    table's ``text`` column becomes the rows' item content. A ``.npy`` header past the size limits is a
    413 before the rows are read.
    """
    cfg, store = current_app.config, get_store()
    if name is not None and len(name) > 200:
        raise ApiError(422, "invalid_input", "name: at most 200 characters", errors={"/name": ["at most 200 characters"]})
    tmp = store.matrix_files.temp_file(suffix=".upload")
    try:
        with tmp:
            length = _body_length()
            first = npy_header_check(limits_of(cfg)) if request.mimetype == NPY else None
            got = receive(request.environ["wsgi.input"], tmp, cfg["SHOAL_MAX_UPLOAD_BYTES"], length, first=first)
        if length is not None and got < length:
            raise ApiError(400, "bad_request", f"the body was cut off after {got} of {length} bytes")
        return dataset_from_file(store, tmp.name, request.mimetype, name=name)
    finally:
        _unlink(tmp.name)


def dataset_from_file(store, path, content_type, *, name=None, labels=None, item_ids=None):
    """Check or convert the binary file at ``path`` and store it as a dataset; returns its metadata.

    ``labels`` / ``item_ids`` (from a JSON body, already checked for type) must match the row count.
    The size limits of a JSON upload (``SHOAL_MAX_ROWS``, ``SHOAL_MAX_FEATURES``, ``SHOAL_MAX_CELLS``)
    apply: 413 at ``/data``. A table's ``text`` column is stored as the rows' items.
    The file is moved into place (``.npy``) or converted and left for the caller to remove.
    """
    limits = limits_of(current_app.config)
    out, items = None, None
    try:
        if content_type == NPY:
            upload = check_npy(path, limits)
        else:
            out = store.matrix_files.temp_file(suffix=".npy")
            with out:
                upload, t_labels, t_ids, items = table_to_npy(path, content_type, out, limits)
            labels = t_labels if labels is None else labels
            item_ids = t_ids if item_ids is None else item_ids
        check_row_lists(upload["shape"][0], labels, item_ids)
        check_quota("max_stored_bytes", os.path.getsize(upload["path"]))
        meta = store.put_dataset(upload=upload, name=name, labels=labels, item_ids=item_ids, owner=tenant())
        settle_quota()
        if items is not None:
            meta["has_items"] = store.put_items(meta["id"], items)
        return meta
    finally:
        if out is not None:
            _unlink(out.name)


def check_row_lists(n, labels, item_ids):
    """422 at ``/labels`` or ``/item_ids`` for a list whose length is not the row count ``n``."""
    errors = {}
    if labels is not None and len(labels) != n:
        errors["/labels"] = [f"has {len(labels)} values for {n} rows"]
    if item_ids is not None and len(item_ids) != n:
        errors["/item_ids"] = [f"has {len(item_ids)} values for {n} rows"]
    if errors:
        raise ApiError(422, "invalid_input", "; ".join(f"{k[1:]} {v[0]}" for k, v in errors.items()), errors=errors)


def dataset_from_upload(body):
    """``POST /v1/datasets {"upload_id": ...}``: the complete upload becomes a dataset (and is deleted)."""
    store = get_store()
    uid = body["upload_id"]
    rec = upload_or_404(store, uid, pointer="/upload_id")
    if rec["length"] is not None and rec["offset"] != rec["length"]:
        raise ApiError(409, "upload_incomplete", f"upload {uid} has {rec['offset']} of its {rec['length']} bytes",
                       errors={"/upload_id": ["the upload is not complete"]}, headers={OFFSET: str(rec["offset"])})
    token = store.lock_upload(uid)
    if token is None:
        raise ApiError(409, "upload_busy", f"upload {uid} is receiving bytes", errors={"/upload_id": ["busy"]})
    try:
        meta = dataset_from_file(store, store.upload_path(uid), rec["content_type"], name=body.get("name"),
                                 labels=body.get("labels"), item_ids=body.get("item_ids"))
        store.delete_upload(uid)
        return meta
    finally:
        store.unlock_upload(uid, token)


def upload_or_404(store, uid, pointer=None):
    """The upload ``uid`` of the tenant asking, or a 404 (:func:`service.auth.require_owned`)."""
    return require_owned(store.get_upload(uid) if is_record_id(uid, "up") else None, "upload", uid, pointer)


@blp.route("", methods=["POST"])
@blp.arguments(UploadCreateSchema)
@blp.response(201, UploadSchema, headers=doc_headers("Location"))
@problem_docs(blp, (413, "length past SHOAL_MAX_UPLOAD_BYTES"), (422, "Unknown content type"))
def create_upload(body):
    """Start a resumable upload of a binary dataset; send its bytes with ``PATCH /v1/uploads/{id}``."""
    limit = current_app.config["SHOAL_MAX_UPLOAD_BYTES"]
    if body["length"] is not None and body["length"] > limit:
        raise ApiError(413, "too_large", f"length {body['length']} is over {limit} bytes (SHOAL_MAX_UPLOAD_BYTES)",
                       errors={"/length": [f"at most {limit}"]})
    rec = get_store().create_upload(body["content_type"], body["length"], owner=tenant())
    return rec, 201, {"Location": url_for("uploads.get_upload", upload_id=rec["id"]), OFFSET: "0"}


@blp.route("/<string:upload_id>", methods=["GET"])
@blp.response(200, UploadSchema)
@problem_docs(blp, (404, "Unknown or expired upload"))
def get_upload(upload_id):
    """The upload and its offset (also in ``Upload-Offset``; ``HEAD`` gives the headers only)."""
    rec = upload_or_404(get_store(), upload_id)
    headers = {OFFSET: str(rec["offset"]), "Cache-Control": "no-store"}
    if rec["length"] is not None:
        headers["Upload-Length"] = str(rec["length"])
    return rec, 200, headers


@blp.route("/<string:upload_id>", methods=["PATCH"])
@blp.doc(parameters=[{"in": "header", "name": OFFSET, "required": True, "schema": {"type": "integer", "minimum": 0},
                      "description": "the upload's offset (bytes received so far): where these bytes start"}],
         requestBody={"required": True, "content": {t: {"schema": {"type": "string", "format": "binary"}}
                                                    for t in CHUNK_TYPES}})
@blp.response(204, headers={OFFSET: {"description": "the offset after these bytes", "schema": {"type": "integer"}}})
@problem_docs(blp, (400, "Missing or malformed Upload-Offset"), (404, "Unknown or expired upload"),
              (409, "Upload-Offset is not the upload's offset, or another request is appending"),
              (413, "Past the upload's length or SHOAL_MAX_UPLOAD_BYTES"), (415, "Body type not taken"))
def append_upload(upload_id):
    """Append bytes at ``Upload-Offset``; a request cut off keeps what arrived (``HEAD`` tells how much)."""
    store = get_store()
    rec = upload_or_404(store, upload_id)
    if request.mimetype not in CHUNK_TYPES:
        raise ApiError(415, "unsupported_media_type",
                       f"send the bytes as {' or '.join(CHUNK_TYPES)}, not {request.mimetype or 'no type'}")
    raw = request.headers.get(OFFSET, "")
    if not raw.isdigit():
        raise ApiError(400, "bad_request", f"{OFFSET} must be the upload's offset, a non-negative integer",
                       errors={f"header:{OFFSET}": ["a non-negative integer"]})
    token = store.lock_upload(upload_id)
    if token is None:
        raise ApiError(409, "upload_busy", f"another request is appending to upload {upload_id}")
    try:
        offset = os.path.getsize(store.upload_path(upload_id))
        if int(raw) != offset:
            raise ApiError(409, "offset_mismatch", f"{OFFSET} {raw} is not the upload's offset {offset}",
                           errors={f"header:{OFFSET}": [f"the offset is {offset}"]}, headers={OFFSET: str(offset)})
        limit = current_app.config["SHOAL_MAX_UPLOAD_BYTES"]
        if rec["length"] is not None:
            limit = min(limit, rec["length"])
        with open(store.upload_path(upload_id), "r+b") as f:
            f.seek(offset)
            first = npy_header_check(limits_of(current_app.config)) if offset == 0 and rec["content_type"] == NPY else None
            try:
                got = receive(request.environ["wsgi.input"], f, limit, _body_length(), already=offset, first=first)
            finally:
                f.truncate(f.tell())
        return "", 204, {OFFSET: str(offset + got)}
    finally:
        store.unlock_upload(upload_id, token)


@blp.route("/<string:upload_id>", methods=["DELETE"])
@blp.response(204)
@problem_docs(blp, (404, "Unknown or expired upload"))
def delete_upload(upload_id):
    """Abandon an upload and delete its bytes."""
    store = get_store()
    upload_or_404(store, upload_id)
    store.delete_upload(upload_id)
    return ""


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
