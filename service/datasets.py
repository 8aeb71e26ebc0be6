"""Datasets: upload (JSON, a binary body or a resumable upload: service.uploads), metadata, labels, list, delete."""

import functools

from flask import current_app, request, url_for
from flask_smorest import Blueprint

from clustering.exceptions import InvalidInputError
from clustering.validation import check_values
from schemas.datasets import DatasetCreateSchema, DatasetListArgsSchema, DatasetListSchema, DatasetSchema
from schemas.items import ItemsInfoSchema, ItemsRequestSchema, clean_item
from schemas.uploads import BINARY_TYPES, DatasetLabelsSchema
from workers.records import is_record_id
from workers.dataset_store import DatasetInUse
from workers.session_store import refuse_if_in_use

from . import doc_headers, get_store
from .auth import listing_scope, require_owned, tenant
from .limits import check_quota, settle_quota
from .errors import ApiError, check_page_token, problem_docs
from .idempotency import idempotent
from .ingest import check_limits, limits_of
from .uploads import binary_request, check_row_lists, create_binary_dataset, dataset_from_upload

blp = Blueprint("datasets", __name__, url_prefix="/v1/datasets", description="Upload and manage datasets")


def check_size(X, min_rows=2):
    """413 past ``SHOAL_MAX_ROWS`` / ``SHOAL_MAX_FEATURES`` / ``SHOAL_MAX_CELLS`` (as a binary body's,
    :func:`service.ingest.check_limits`), 422 for fewer than ``min_rows`` rows, at ``/data``."""
    n, d = X.shape
    check_limits(n, d, limits_of(current_app.config))
    if n < min_rows:
        raise ApiError(422, "invalid_input", f"data needs at least {min_rows} rows",
                       errors={"/data": [f"at least {min_rows} rows"]})


def check_data_values(X):
    """422 unless every cell of ``X`` is finite and within ``±clustering.validation.MAX_ABS_VALUE``.

    The estimators' own check (:func:`clustering.validation.check_values`), run on
    the upload so that a matrix no method could fit is refused before it is stored.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_cols), float64
        The parsed ``data`` of a dataset or predict request.

    Raises
    ------
    ApiError
        422 ``invalid_input`` with the pointer ``/data`` (as the schema's NaN
        errors) and a message naming the first offending cell ``data[r][c]``.
    """
    try:
        check_values(X, name="data")
    except InvalidInputError as exc:
        raise ApiError(422, "invalid_input", str(exc), errors={"/data": [str(exc)]}) from exc


def dataset_or_404(store, dataset_id, pointer=None):
    """The dataset's metadata, or a 404 (``errors`` at ``pointer`` when given) for an unknown id.

    An id not of the form the API makes is unknown without a look-up: the store builds its keys from
    ids, and ``ds_...:aux`` would name the item-id key of an existing dataset. Another tenant's
    dataset is unknown too (:func:`service.auth.require_owned`).
    """
    meta = store.get_dataset_meta(dataset_id) if is_record_id(dataset_id, "ds") else None
    return require_owned(meta, "dataset", dataset_id, pointer)


def _created(meta):
    return meta, 201, {"Location": url_for("datasets.get_dataset", dataset_id=meta["id"])}


def _binary_alternative(view):
    """Answer ``POST /v1/datasets`` with a binary body (:data:`schemas.uploads.BINARY_TYPES`) before the
    JSON schema parses anything: the body streams to the data directory (:func:`service.uploads.create_binary_dataset`)."""
    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        if binary_request():
            meta = create_binary_dataset(name=request.args.get("name"))
            _, status, headers = _created(meta)
            return DatasetSchema().dump(meta), status, headers
        return view(*args, **kwargs)
    return wrapper


_BINARY_BODY = {"schema": {"type": "string", "format": "binary"}}


@blp.route("", methods=["POST"])
@_binary_alternative
@idempotent(blp)
@blp.arguments(DatasetCreateSchema)
@blp.doc(requestBody={"content": {t: _BINARY_BODY for t in BINARY_TYPES}},
         parameters=[{"in": "query", "name": "name", "required": False, "schema": {"type": "string", "maxLength": 200},
                      "description": "the dataset's name, for a binary body"}])
@blp.response(201, DatasetSchema, headers=doc_headers("Location"))
@problem_docs(blp, (404, "Unknown upload_id"), (409, "The upload is not complete"),
              (413, "Too many rows, columns or bytes"), (422, "NaN, ragged rows, non-numeric cells ..."))
def create_dataset(body):
    """Upload an (n, d) numeric matrix, optional ground-truth labels and item ids.

    As JSON (``data``, small matrices), as a binary body (``application/x-npy``: a ``.npy`` float32 or
    float64 C-ordered matrix; ``application/vnd.apache.parquet`` or ``application/vnd.apache.arrow.stream``:
    a table of numeric columns or one fixed-size-list column, with optional ``label`` and ``item_id``
    columns; ``?name=``), or from a complete resumable upload (``upload_id``; ``POST /v1/uploads``).
    Binary bodies are bounded by ``SHOAL_MAX_UPLOAD_BYTES`` and do not take ``Idempotency-Key``.
    Labels and item ids of a ``.npy`` body follow in ``PATCH /v1/datasets/{id}``. See docs/datasets.md.
    """
    if body.get("upload_id") is not None:
        return _created(dataset_from_upload(body))
    X = body["data"]
    check_size(X)
    check_data_values(X)
    check_quota("max_stored_bytes", X.nbytes)
    store = get_store()
    meta = store.put_dataset(X, name=body.get("name"), labels=body.get("labels"), item_ids=body.get("item_ids"),
                             owner=tenant())
    settle_quota()
    if body.get("items") is not None:
        meta["has_items"] = store.put_items(meta["id"], [clean_item(it) for it in body["items"]])
    return _created(meta)


@blp.route("/<string:dataset_id>", methods=["PATCH"])
@blp.arguments(DatasetLabelsSchema)
@blp.response(200, DatasetSchema)
@problem_docs(blp, (404, "Unknown or expired dataset"),
              (409, "A job or session was created on the dataset, or it has labels or item ids already"),
              (422, "Lengths that are not the row count, labels that are not integers or strings"))
def set_dataset_labels(body, dataset_id):
    """Give a dataset uploaded as a binary body its labels and item ids (once, before any job or session uses it)."""
    store = get_store()
    meta = dataset_or_404(store, dataset_id)
    labels, item_ids = body.get("labels"), body.get("item_ids")
    if labels is not None:
        bad = [i for i, v in enumerate(labels) if isinstance(v, bool) or not isinstance(v, (int, str))]
        if bad:
            raise ApiError(422, "invalid_input", f"labels[{bad[0]}] must be an integer or a string",
                           errors={"/labels": [f"labels[{bad[0]}] must be an integer or a string"]})
    check_row_lists(meta["n_samples"], labels, item_ids)
    if meta["has_labels"] or meta["has_item_ids"] or store.dataset_users(dataset_id):
        raise ApiError(409, "dataset_labelled", f"dataset {dataset_id!r} has labels or item ids already, or a job "
                       "or session was created on it: upload it again to change them")
    if not store.set_dataset_aux(dataset_id, labels=labels, item_ids=item_ids):
        raise ApiError(404, "not_found", f"dataset {dataset_id!r} does not exist or has expired")
    return store.get_dataset_meta(dataset_id)


@blp.route("", methods=["GET"])
@blp.arguments(DatasetListArgsSchema, location="query")
@blp.response(200, DatasetListSchema)
@problem_docs(blp, (400, "Malformed page_token"))
def list_datasets(args):
    """Dataset metadata, newest first, with cursor pagination (``page_token``)."""
    check_page_token(args.get("page_token"))
    recs, token = get_store().list_datasets(page_size=args["page_size"], page_token=args.get("page_token"),
                                            **listing_scope())
    return {"datasets": recs, "next_page_token": token}


@blp.route("/<string:dataset_id>")
@blp.response(200, DatasetSchema)
@problem_docs(blp, (404, "Unknown or expired dataset"))
def get_dataset(dataset_id):
    """Dataset metadata (shape, checksum, timestamps)."""
    return dataset_or_404(get_store(), dataset_id)


@blp.route("/<string:dataset_id>", methods=["DELETE"])
@blp.response(204)
@problem_docs(blp, (404, "Unknown or expired dataset"),
              (409, "Jobs still queued or running, or sessions still open, on this dataset"))
def delete_dataset(dataset_id):
    """Delete a dataset; jobs already finished and completed sessions keep their results.

    While a job on it is QUEUED or RUNNING, or a session on it is INITIALIZING
    or ACTIVE, the answer is 409 ``dataset_in_use`` with their ids in ``jobs``
    and ``sessions``: cancel the jobs (``POST /v1/jobs/{id}/cancel``) or delete
    the sessions (``DELETE /v1/sessions/{id}``) first, so no worker loses its
    data mid-run.
    """
    store = get_store()
    dataset_or_404(store, dataset_id)
    # The check and the delete are one transaction (Store.delete_dataset): a job
    # or session created on the dataset meanwhile makes the check run again.
    try:
        deleted = store.delete_dataset(dataset_id, guard=refuse_if_in_use(store, dataset_id))
    except DatasetInUse as busy:
        counts = [f"{len(ids)} {what}" for ids, what in ((busy.jobs, "unfinished job(s)"),
                                                           (busy.sessions, "open session(s)")) if ids]
        raise ApiError(409, "dataset_in_use", f"dataset {dataset_id!r} is still used by "
                       f"{' and '.join(counts)}; cancel the jobs or delete the sessions first",
                       jobs=busy.jobs, sessions=busy.sessions) from busy
    if not deleted:
        raise ApiError(404, "not_found", f"dataset {dataset_id!r} does not exist or has expired")
    return ""


@blp.route("/<string:dataset_id>/items", methods=["PUT"])
@blp.arguments(ItemsRequestSchema)
@blp.response(200, ItemsInfoSchema)
@problem_docs(blp, (404, "Unknown or expired dataset"), (413, "Body too large"),
              (422, "Not one item per row, a bad image_url (javascript:, SVG, ...), text or fields too long"))
def put_items(body, dataset_id):
    """Replace the content people see of each row: ``text``, ``image_url``, ``fields`` (one object or null per row)."""
    store = get_store()
    meta = dataset_or_404(store, dataset_id)
    items = body["items"]
    if len(items) != meta["n_samples"]:
        detail = f"has {len(items)} values for {meta['n_samples']} rows"
        raise ApiError(422, "invalid_input", f"items {detail}", errors={"/items": [detail]})
    cleaned = [clean_item(it) for it in items]
    if not store.put_items(dataset_id, cleaned):
        raise ApiError(404, "not_found", f"dataset {dataset_id!r} does not exist or has expired")
    return {"dataset_id": dataset_id, "n_items": sum(it is not None for it in cleaned)}
