"""Jobs: submit (202 + Location + Retry-After), poll, result, affinity, cancel, list."""

import hashlib
import io

import numpy as np
from flask import send_file, url_for
from flask_smorest import Blueprint
from marshmallow import ValidationError

from clustering.cards import CARDS, option_limits
from clustering.exceptions import InvalidInputError
from clustering.validation import check_n_clusters
from schemas.jobs import (
    AffinityArgsSchema,
    AffinitySchema,
    JobCreateSchema,
    JobListArgsSchema,
    JobListSchema,
    JobSchema,
    PredictRequestSchema,
)
from schemas.results import ResultSchema
from workers.store import load_affinity
from workers.submit import submit_job

from . import doc_headers, get_store, retry_after
from .auth import listing_scope, require_owned, tenant
from .limits import check_quota, settle_quota
from .callbacks import check_callback_url
from .constraints import pairwise_conflicts, present_kinds, relative_feasibility, validate_constraints
from .datasets import check_data_values, check_size, dataset_or_404
from .errors import ApiError, check_page_token, pointer_messages, problem_docs
from .idempotency import idempotent
from .methods import METHODS
from .presets import params_with_preset

blp = Blueprint("jobs", __name__, url_prefix="/v1/jobs", description="Clustering jobs")

DONE = ("SUCCEEDED", "FAILED", "CANCELLED")


def job_view(rec):
    """Public view of a job record (no internal timestamps)."""
    jid = rec["id"]
    view = {k: v for k, v in rec.items() if not k.endswith("_ts")}
    view["done"] = rec["state"] in DONE
    view["result_url"] = url_for("jobs.get_result", job_id=jid) if rec["state"] == "SUCCEEDED" else None
    has_matrix = "affinity" in METHODS.get(rec["method"], {}).get("outputs", ())
    view["affinity_url"] = (url_for("jobs.get_affinity", job_id=jid)
                            if rec["state"] == "SUCCEEDED" and has_matrix else None)
    return view


def job_or_404(store, job_id):
    """The job's record, or a 404 for an unknown, expired or another tenant's job."""
    return require_owned(store.get_job(job_id), "job", job_id)


def _check_option_limits(method, params, preset_params, body, size):
    """422 ``dataset_too_large_for_option`` when a chosen option cannot run on a dataset this size.

    The pointer is ``/params/<field>`` for a value the client gave and ``/preset`` for one that the
    preset filled in, so the client knows which part of the request to change.
    """
    over = [o for o in option_limits(CARDS[method], params) if size[o[2]] > o[3]]
    if not over:
        return
    preset, given = body.get("preset"), body.get("params") or {}
    errors, from_preset = {}, []
    for f, _, axis, limit in over:
        if f in preset_params and f not in given:
            from_preset.append(f)
            errors.setdefault("/preset", []).append(
                f"preset {preset!r} sets {f}={params[f]!r}: at most {limit} {axis}")
        else:
            errors[f"/params/{f}"] = [f"at most {limit} {axis} with {params[f]!r}"]
    detail = "; ".join(f"{f}={params[f]!r} {what}: at most {limit} {axis} (the dataset has {size[axis]})"
                       for f, what, axis, limit in over)
    if from_preset:
        detail += (f". Preset {preset!r} sets {', '.join(from_preset)}: override "
                   f"{'it' if len(from_preset) == 1 else 'them'} in params, or leave the preset out")
    raise ApiError(422, "dataset_too_large_for_option", detail, errors=errors)


def _check_row_limit(method, meta):
    """422 ``dataset_too_large_for_method`` when the dataset has more rows than ``method``'s ``max_samples``.

    The limit (``GET /v1/methods``) is the largest dataset whose job fits one worker's memory and
    time: above it the worker would be killed and the job redelivered until ``attempts_exhausted``.
    """
    limit = METHODS[method].get("max_samples")
    n = meta["n_samples"]
    if limit is None or n <= limit:
        return
    reason = METHODS[method]["max_samples_reason"]
    raise ApiError(422, "dataset_too_large_for_method",
                   f"method {method!r} runs on at most {limit} rows and dataset {meta['id']} has {n}: {reason}",
                   errors={"/dataset_id": [f"at most {limit} rows with method {method!r} (the dataset has {n})"]},
                   method=method, max_samples=limit, n_samples=n)


def _check_constraint_limits(method, params, n, checked):
    """422 when the constraints are larger than one of ``method``'s constraint limits (its card's
    ``constraint_limits``; the values are the catalogue's, ``GET /v1/methods``), naming the limit's pointer.

    Parameters
    ----------
    method : str
    params : dict
        The job's loaded parameters: a limit of a boolean option holds only when it is true.
    n : int
        Rows of the dataset.
    checked : dict
        The validated constraints (:func:`validate_constraints`).
    """
    for lim in CARDS[method].constraint_limits:
        limit = METHODS[method].get(lim.name)
        if limit is None or (lim.param is not None and not params.get(lim.param)):
            continue
        size = lim.measure(checked, n, limit)
        if size is None or size["size"] <= limit:
            continue
        words = {"method": method, "limit": limit, **size}
        raise ApiError(422, lim.code, lim.detail.format(**words), errors={lim.pointer: [lim.message.format(**words)]},
                       method=method, **{lim.name: limit}, **{k: size[k] for k in lim.reported})


def _check_method(body, meta):
    method = body["method"]
    if method not in METHODS:
        raise ApiError(422, "unknown_method", f"unknown method {method!r}",
                       errors={"/method": [f"must be one of {', '.join(sorted(METHODS))}"]})
    n_samples, n_features = meta["n_samples"], meta["n_features"]
    presets = {p["name"]: p["params"] for p in METHODS[method]["presets"]}
    preset = body.get("preset")
    merged = params_with_preset(presets, preset, body.get("params") or {},
                                f"method {method!r} has no preset {preset!r}", f"{method} has no presets")
    try:
        params = METHODS[method]["params"]().load(merged)
    except ValidationError as exc:
        raise ApiError(422, "invalid_params", f"invalid parameters for method {method!r}",
                       errors=pointer_messages(exc.messages, "/params")) from exc
    _check_row_limit(method, meta)
    _check_option_limits(method, params, presets.get(preset, {}), body,
                         {"rows": n_samples, "columns": n_features})
    card = CARDS[method]
    if body["n_clusters"] is None and not card.chooses_n_clusters:
        choosers = ", ".join(sorted(m for m, c in CARDS.items() if c.chooses_n_clusters))
        raise ApiError(422, "invalid_n_clusters", f"n_clusters may be null only with a method that chooses K "
                       f"({choosers})", errors={"/n_clusters": [f"required with method {method!r} (null only with "
                                                                f"{choosers})"]})
    try:
        check_n_clusters(body["n_clusters"], n_samples, allow_none=card.chooses_n_clusters)
    except InvalidInputError as exc:
        raise ApiError.from_invalid(exc, "invalid_n_clusters") from exc
    kinds = present_kinds(body.get("constraints"))
    mixed = [group for group in card.exclusive_constraints if kinds & set(group)]
    if len(mixed) > 1:
        what = " and ".join("/".join(g) for g in mixed)
        raise ApiError(422, f"{method}_mixed_constraints", f"method {method!r} takes {what} constraints apart: send "
                       "one kind, not both", errors={"/constraints": [f"{what} constraints together with {method}"]})
    accepted = set(METHODS[method]["constraints"])
    for kind in sorted(present_kinds(body.get("constraints")) - accepted):
        what = ", ".join(sorted(accepted)) or "no constraints"
        raise ApiError(422, "unsupported_constraints", f"method {method!r} does not use {kind} constraints "
                       f"(it accepts: {what})", errors={"/constraints": [f"{kind} not supported by {method}"]})
    return params


def _relative_conflict_errors(conflicting):
    """``errors`` of a rejected relative conflict: each constraint of the conflicting set at its pointer.

    A hierarchy's ab|c constraints have no list position: they are named at ``/constraints/hierarchy``.
    """
    errors = {}
    for c in conflicting:
        pointer = f"/constraints/{c['field']}" + ("" if c["index"] is None else f"/{c['index']}")
        what = f"its ab|c constraint {c['items']}" if c["index"] is None else f"{c['field']}[{c['index']}]"
        errors.setdefault(pointer, []).append(f"{what} is in a set of {len(conflicting)} relative constraints "
                                              "that no hierarchy satisfies together")
    return errors


@blp.route("", methods=["POST"])
@idempotent(blp)
@blp.arguments(JobCreateSchema)
@blp.response(202, JobSchema, headers=doc_headers("Location", "Retry-After"))
@problem_docs(blp, (404, "Unknown dataset"),
              (413, "Too many constraints"),
              (422, "Invalid method, parameters, constraints or callback_url, or a dataset larger than the "
                    "method's max_samples"),
              (503, "Queue unavailable"))
def create_job(body):
    """Submit a clustering job; poll the returned ``Location``."""
    store = get_store()
    meta = dataset_or_404(store, body["dataset_id"], "/dataset_id")
    rec = submit_checked(store, body, meta)
    headers = {"Location": url_for("jobs.get_job", job_id=rec["id"]), **retry_after()}
    return job_view(rec), 202, headers


def submit_checked(store, body, meta, **record):
    """Check a job's method, parameters and constraints against its dataset, then queue it.

    Parameters
    ----------
    store : workers.store.Store
    body : dict
        A loaded :class:`schemas.jobs.JobCreateSchema` body (``method``,
        ``n_clusters``, ``params``, ``preset``, ``constraints``,
        ``on_conflict``, ``scale``, ``random_state``, ``callback_url``).
    meta : dict
        The dataset's metadata.
    **record
        Further fields of the job record (``session_id``).

    Returns
    -------
    dict
        The QUEUED job's record.

    Raises
    ------
    ApiError
        422 / 413 as ``POST /v1/jobs`` answers them; 429 over a quota; 503
        when the queue is unreachable.
    """
    n = meta["n_samples"]
    params = _check_method(body, meta)
    check_callback_url(body.get("callback_url"))
    checked, counts = validate_constraints(body.get("constraints"), n)
    _check_constraint_limits(body["method"], params, n, checked)
    item_ids = store.get_item_ids(meta["id"]) if meta.get("has_item_ids") else None
    conflicts, n_conflicts = pairwise_conflicts(checked, item_ids)
    if n_conflicts and body["on_conflict"] == "reject":
        first = conflicts[0]
        raise ApiError(422, "contradictory_constraints",
                       f"{n_conflicts} cannot-link constraint(s) contradict must-link chains, e.g. "
                       f"cannot_link {first['cannot_link']} vs must-link chain {first['must_link_chain']}",
                       errors={f"/constraints/cannot_link/{c['cannot_link_index']}":
                               [f"contradicts the must-link chain {c['must_link_chain']}"] for c in conflicts},
                       conflicts=conflicts, n_conflicts=n_conflicts)
    if body["on_conflict"] == "reject":
        relative = relative_feasibility(checked, n, item_ids)
        if relative is not None and not relative["feasible"]:
            raise ApiError(422, "contradictory_constraints",
                           f"no hierarchy satisfies these relative constraints; a "
                           f"{'minimal ' if relative['minimal'] else ''}conflicting set has "
                           f"{len(relative['conflicting'])} of them"
                           f"{'' if relative['minimal'] else ' (not proven minimal: the search is bounded)'}",
                           errors=_relative_conflict_errors(relative["conflicting"]), relative=relative)
    check_quota("max_active_jobs")
    rec = submit_job(store, dataset_id=meta["id"], method=body["method"], n_clusters=body["n_clusters"],
                     params=params, preset=body.get("preset"), constraints=checked,
                     random_state=body["random_state"],
                     on_conflict=body["on_conflict"],
                     scale=body["scale"] or CARDS[body["method"]].default_scale,
                     callback_url=body.get("callback_url"),
                     n_constraints=counts, conflicts=conflicts, n_conflicts=n_conflicts,
                     n_features=meta["n_features"], owner=tenant(), **record)
    settle_quota()
    return rec


@blp.route("", methods=["GET"])
@blp.arguments(JobListArgsSchema, location="query")
@blp.response(200, JobListSchema)
@problem_docs(blp, (400, "Malformed page_token"))
def list_jobs(args):
    """Jobs, newest first, with cursor pagination (``page_token``), optionally of one ``state`` or dataset."""
    check_page_token(args.get("page_token"))
    recs, token = get_store().list_jobs(state=args.get("state"), dataset_id=args.get("dataset_id"),
                                        page_size=args["page_size"], page_token=args.get("page_token"),
                                        **listing_scope())
    return {"jobs": [job_view(r) for r in recs], "next_page_token": token}


@blp.route("/<string:job_id>", methods=["GET"])
@blp.etag
@blp.response(200, JobSchema, headers=doc_headers("Retry-After"))
@problem_docs(blp, (404, "Unknown or expired job"))
def get_job(job_id):
    """Job state and progress; ``Retry-After`` while not done."""
    rec = job_or_404(get_store(), job_id)
    view = job_view(rec)
    return (view, 200, retry_after()) if not view["done"] else view


def _result_or_error(store, job_id):
    rec = job_or_404(store, job_id)
    if rec["state"] != "SUCCEEDED":
        detail = f"job {job_id} is {rec['state']}; results exist only for SUCCEEDED jobs"
        headers = retry_after() if rec["state"] in ("QUEUED", "RUNNING") else {}
        raise ApiError(409, "result_not_available", detail, headers=headers, state=rec["state"],
                       **({"job_error": rec["error"]} if rec.get("error") else {}))
    return rec


@blp.route("/<string:job_id>/result", methods=["GET"])
@blp.etag
@blp.response(200, ResultSchema)
@problem_docs(blp, (404, "Unknown or expired job"), (409, "Job not SUCCEEDED (yet)"))
def get_result(job_id):
    """Labels, metrics against ground truth, conflicts and method-specific outputs."""
    store = get_store()
    _result_or_error(store, job_id)
    result = store.get_result(job_id)
    if result is None:
        raise ApiError(404, "not_found", f"the result of job {job_id} has expired")
    return result


@blp.route("/<string:job_id>/affinity", methods=["GET"])
@blp.etag
@blp.arguments(AffinityArgsSchema, location="query")
@blp.response(200, AffinitySchema)
@blp.doc(responses={"200": {"description": "JSON (format=json), or the stored sparse matrix as a .npz file "
                                           "(format=npz, scipy.sparse.load_npz reads it)",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Affinity"}},
                                        "application/octet-stream": {"schema": {"type": "string",
                                                                                "format": "binary"}}},
                            "headers": {"ETag": "ETAG"}}})  # replaces the 200 that @blp.etag documents
@problem_docs(blp, (404, "Unknown job or no learned matrix"), (409, "Job not SUCCEEDED (yet)"))
def get_affinity(args, job_id):
    """Learned affinity / kernel: top-k entries per row (JSON) or the stored sparse matrix (.npz).

    A stored affinity never changes: its ETag, one per form (``.npz``, or JSON with its ``top_k``),
    gets a 304 for a matching ``If-None-Match``.
    """
    store = get_store()
    _result_or_error(store, job_id)
    raw = store.get_affinity_bytes(job_id)
    if raw is None:
        raise ApiError(404, "not_found", f"job {job_id} has no learned affinity or kernel")
    blp.set_etag({"job_id": job_id, "affinity_sha256": hashlib.sha256(raw).hexdigest(), "format": args["format"],
                  "top_k": args["top_k"] if args["format"] == "json" else None})
    if args["format"] == "npz":
        return send_file(io.BytesIO(raw), mimetype="application/octet-stream", as_attachment=True,
                         download_name=f"{job_id}-affinity.npz")
    M = load_affinity(raw).tocsr()
    k = args["top_k"]
    indices, values = [], []
    for i in range(M.shape[0]):
        s, e = M.indptr[i], M.indptr[i + 1]
        d, c = M.data[s:e], M.indices[s:e]
        mask = c != i
        d, c = d[mask], c[mask]
        order = np.lexsort((c, -d))[:k]
        indices.append(c[order].tolist())
        values.append([float(v) for v in d[order]])
    return {"job_id": job_id, "n_samples": int(M.shape[0]), "top_k": k, "format": "top_k_rows",
            "indices": indices, "values": values}


@blp.route("/<string:job_id>/predict", methods=["POST"])
@idempotent(blp, document_409=False)
@blp.arguments(PredictRequestSchema)
@blp.response(202, JobSchema, headers=doc_headers("Location", "Retry-After"))
@problem_docs(blp, (404, "Unknown or expired job"),
              (409, "Job not SUCCEEDED (yet), or a request with this Idempotency-Key still running"),
              (422, "Rows do not fit the model"))
def predict(body, job_id):
    """Assign new rows with a fitted inductive model (DCRC); runs as a job on a worker.

    The predict job keeps a copy of the model taken now: deleting the fitted
    job afterwards does not affect it. The fitted job's dataset is not needed:
    a model predicts after its dataset was deleted.
    """
    store = get_store()
    parent = _result_or_error(store, job_id)
    if "predict" not in METHODS.get(parent["method"], {}).get("outputs", ()):
        raise ApiError(422, "predict_not_supported", f"method {parent['method']!r} cannot assign new rows; "
                       "methods with 'predict' in their outputs can (see GET /v1/methods)")
    # The fitted job keeps its dataset's width: the dataset itself may be deleted by now (jobs made
    # before it did not keep it and read the dataset).
    d = parent.get("n_features") or dataset_or_404(store, parent["dataset_id"])["n_features"]
    X = body["data"]
    check_size(X, min_rows=1)
    check_data_values(X)
    if X.shape[1] != d:
        raise ApiError(422, "invalid_input", f"data has {X.shape[1]} columns, the model was fitted on {d}",
                       errors={"/data": [f"rows must have {d} values"]})
    ids = body.get("item_ids")
    if ids is not None and len(ids) != X.shape[0]:
        raise ApiError(422, "invalid_input", f"item_ids has {len(ids)} values for {X.shape[0]} rows",
                       errors={"/item_ids": ["one id per row"]})
    model = store.get_model_bytes(job_id)
    if model is None:  # deleted or expired since _result_or_error read it
        raise ApiError(404, "not_found", f"job {job_id!r} does not exist or has expired")
    check_quota("max_active_jobs")
    check_quota("max_stored_bytes", X.nbytes)
    rows = store.put_dataset(X, name=f"predict:{job_id}", item_ids=ids, owner=tenant())
    rec = submit_job(store, dataset_id=rows["id"], method=parent["method"], n_clusters=parent["n_clusters"],
                     params=parent["params"], constraints={}, random_state=parent["random_state"],
                     scale=parent.get("scale", "none"), kind="predict", parent_job_id=job_id, model=model,
                     n_features=X.shape[1], owner=tenant())
    settle_quota()
    headers = {"Location": url_for("jobs.get_job", job_id=rec["id"]), **retry_after()}
    return job_view(rec), 202, headers


@blp.route("/<string:job_id>", methods=["DELETE"])
@blp.response(204)
@problem_docs(blp, (404, "Unknown or expired job"), (409, "Job still QUEUED or RUNNING"))
def delete_job(job_id):
    """Delete a finished job with its result, affinity and model (before its TTL would).

    A job still QUEUED or RUNNING answers 409 ``job_not_finished``: cancel it
    first (``POST /v1/jobs/{id}/cancel``) and delete it once ``done``. A
    predict job's rows go with it, unless a job on them is still QUEUED or
    RUNNING or a session on them is open (then they stay, as their
    ``DELETE`` would answer 409). Predict jobs already requested on a
    deleted job still run: each holds a copy of the model. The dataset stays.
    """
    store = get_store()
    job_or_404(store, job_id)
    outcome = store.delete_job(job_id)
    if outcome == "missing":
        raise ApiError(404, "not_found", f"job {job_id!r} does not exist or has expired")
    if outcome == "unfinished":
        raise ApiError(409, "job_not_finished", f"job {job_id!r} is still queued or running; cancel it "
                       "(POST /v1/jobs/{id}/cancel) and delete it once it is done")
    return ""


@blp.route("/<string:job_id>/cancel", methods=["POST"])
@blp.response(202, JobSchema)
@problem_docs(blp, (404, "Unknown or expired job"))
def cancel_job(job_id):
    """Best-effort, idempotent cancellation.

    A QUEUED job is CANCELLED at once (and its ``callback_url`` gets the
    ``job.cancelled`` event); a RUNNING one ends when its worker next checks.
    """
    store = get_store()
    job_or_404(store, job_id)
    rec = store.request_cancel(job_id)
    if rec is None:
        raise ApiError(404, "not_found", f"job {job_id!r} does not exist or has expired")
    return job_view(rec), 202
