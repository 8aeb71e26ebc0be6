"""Active-clustering sessions: lease questions, post answers, read the model.

The web process only records answers and hands out questions from the pool
a worker computed; aggregation and re-clustering run on a worker.
"""

import math
import time
from datetime import datetime

import numpy as np

from flask import current_app, url_for
from flask_smorest import Blueprint
from marshmallow import ValidationError

from clustering.exceptions import InvalidInputError
from clustering.validation import ACTIVE_MIN_SAMPLES, check_n_clusters, check_urasc_n_clusters
from schemas.jobs import JobSchema
from schemas.sessions import (
    DEFAULT_LEASE_SECONDS,
    SESSION_PRESETS,
    SESSION_STRATEGIES,
    AnswersRequestSchema,
    AnswersResultSchema,
    ModelSchema,
    QuestionListArgsSchema,
    QuestionListSchema,
    QuestionsRequestSchema,
    QuestionsSchema,
    SessionCreateSchema,
    SessionListArgsSchema,
    SessionListSchema,
    SessionRefitSchema,
    SessionSchema,
    TripletParamsSchema,
    URASCParamsSchema,
)
from workers.annotator_store import AnnotatorStore
from workers.crowd import flag_reason
from workers.session_store import OPEN_STATES, PAIRWISE_ANSWERS, TRIPLET_ANSWERS, SessionStore, worker_quality_of
from workers.submit import send_session_update, start_session

from . import doc_headers, get_store, retry_after
from .auth import listing_scope, require_owned, tenant
from .limits import check_quota, settle_quota
from .callbacks import check_callback_url
from .constraints import validate_constraints
from .datasets import dataset_or_404
from .errors import ApiError, check_page_token, pointer_messages, problem_docs
from .idempotency import idempotent
from .jobs import job_view, submit_checked
from .methods import METHODS
from .presets import params_with_preset

blp = Blueprint("sessions", __name__, url_prefix="/v1/sessions",
                description="Active clustering: questions for people and crowds")


def _sessions():
    return SessionStore(get_store())


def session_or_404(ss, sid):
    """The session's record, or a 404 for an unknown, expired or another tenant's session."""
    return require_owned(ss.get(sid), "session", sid)


#: The constraint lists a session of each question type takes as seeds.
_SEED_KINDS = {"pairwise": {"must_link", "cannot_link"}, "triplet": {"triplets", "relative"}}


def seed_constraints(constraints, n_samples, question_type):
    """The known constraints of ``POST /v1/sessions`` as the answers a session's model takes.

    Parameters
    ----------
    constraints : dict or None
        The parsed ``constraints`` member (:class:`schemas.constraints.ConstraintsSchema`).
    n_samples : int
        Rows of the session's dataset.
    question_type : {"pairwise", "triplet"}

    Returns
    -------
    list of list
        Pairwise: ``[i, j, "must_link" | "cannot_link"]``; triplet:
        ``[a, b, c, answer]`` with the answer as given (a ``relative`` ab|c is a "yes").
        Contradictory seeds are kept: the model reports them as it reports answers.

    Raises
    ------
    ApiError
        422 ``unsupported_constraints`` for a list the question type does not
        take (weights and hierarchies are not taken either); 422 / 413 from
        :func:`service.constraints.validate_constraints` (index range,
        self-pairs, ``SHOAL_MAX_CONSTRAINTS``).
    """
    if not constraints:
        return []
    given = {k for k, v in constraints.items() if v is not None}
    for kind in sorted(given - _SEED_KINDS[question_type]):
        raise ApiError(422, "unsupported_constraints",
                       f"{question_type} sessions take {' and '.join(sorted(_SEED_KINDS[question_type]))} "
                       f"as known constraints, not {kind}",
                       errors={f"/constraints/{kind}": [f"not taken by {question_type} sessions"]})
    checked, _ = validate_constraints(constraints, n_samples)
    if question_type == "pairwise":
        return ([[i, j, "must_link"] for i, j in checked.get("must_link", [])]
                + [[i, j, "cannot_link"] for i, j in checked.get("cannot_link", [])])
    return ([[a, b, c, ans] for a, b, c, ans in checked.get("triplets", [])]
            + [[a, b, c, "yes"] for a, b, c in checked.get("relative", [])])


def _pending_reason(rec):
    """Why the model is behind the latest answers: the last pass failed, or a pass is running or queued."""
    running = (f"re-clustering with the latest answers is running (started {rec['pass_started_at']})"
               if rec.get("pass_started_at") else None)
    if rec["state"] == "FAILED":
        detail = (rec.get("error") or {}).get("detail") or "unknown error"
        return f"re-clustering failed: {detail}" + (f"; {running}" if running else "")
    return running or "re-clustering with the latest answers is queued"


def session_view(ss, rec):
    sid = rec["id"]
    up_to_date = rec["observed_revision"] == rec["revision"]
    view = dict(rec)
    view["budget_remaining"] = max(rec["budget"] - rec["budget_used"], 0)
    view["budget_committed"] = committed(rec)
    view.setdefault("lease_seconds", DEFAULT_LEASE_SECONDS)
    view["worker_quality"] = worker_quality_of(rec)
    exhausted = rec["budget_used"] >= rec["budget"]
    view["conditions"] = [
        {"type": "ModelUpToDate", "status": str(up_to_date), "observed_revision": rec["observed_revision"],
         "reason": None if up_to_date else _pending_reason(rec)},
        {"type": "BudgetExhausted", "status": str(exhausted), "observed_revision": rec["observed_revision"],
         "reason": None if exhausted or view["budget_committed"] < rec["budget"] else
         "the rest of the budget is held by questions with all their answers, waiting for re-clustering: new "
         "answers are late unless the model leaves some of them unused"},
    ]
    view["disagreements"] = ss.reports(sid, "disagreements", 20)
    view["conflicts"] = ss.reports(sid, "conflicts", 20)
    view["model_url"] = url_for("sessions.get_model", session_id=sid)
    view["n_seeds"] = len(rec.get("seeds") or [])
    return view


def committed(rec):
    """Questions the model used plus those waiting for it (sessions from before the field: used only)."""
    return rec.get("budget_committed", rec["budget_used"])


def flagged_reasons(store, rec, workers):
    """The named workers among ``workers`` whose answers no longer count in the session.

    Parameters
    ----------
    store : workers.store.Store
    rec : dict
        The session's record (its ``worker_quality``).
    workers : iterable of str or None
        Worker ids (None: an anonymous answer, never flagged).

    Returns
    -------
    dict of str to str
        worker id -> :func:`workers.crowd.flag_reason`, for each worker gold flagged while the
        session has ``worker_quality.exclude_flagged``; empty without it (no Redis read then).
    """
    quality = worker_quality_of(rec)
    named = sorted({w for w in workers if w})
    if not quality["exclude_flagged"] or not named:
        return {}
    an = AnnotatorStore(store)
    reasons = {w: flag_reason(an.stats(rec["id"], w), quality) for w in named}
    return {w: r for w, r in reasons.items() if r}


def lease_retry_after(rec):
    """The ``Retry-After`` header of a lease that handed out no question.

    Parameters
    ----------
    rec : dict
        The session's record, as read before the lease.

    Returns
    -------
    dict of str to str
        Empty when no question will come by waiting: the budget is used up,
        or the session is COMPLETED (nothing left to ask) or FAILED (as its
        poll, which then carries no ``Retry-After`` either). While a pass is
        due (the first one, or questions with all their answers wait for the
        model, which then refills the pool and may leave budget unused), the
        seconds that pass is likely to take yet: the last pass's wall time
        (``last_pass_seconds``) less the time the running one has run, at
        least ``SHOAL_RETRY_AFTER``. Otherwise (every open question is held
        by other workers or was this worker's) ``SHOAL_RETRY_AFTER``.
    """
    if rec["state"] not in OPEN_STATES or rec["budget_used"] >= rec["budget"]:
        return {}
    seconds = int(current_app.config["SHOAL_RETRY_AFTER"])
    pass_due = rec["state"] == "INITIALIZING" or rec["observed_revision"] != rec["revision"] \
        or committed(rec) >= rec["budget"]
    if pass_due and rec.get("last_pass_seconds"):
        left = rec["last_pass_seconds"]
        if rec.get("pass_started_at"):
            started = datetime.fromisoformat(rec["pass_started_at"]).timestamp()
            left -= time.time() - started
        seconds = max(seconds, math.ceil(left))
    return {"Retry-After": str(seconds)}


def _item_ids_of(question, item_ids):
    """The client's ids of a question's items, or None when the dataset has none."""
    return [item_ids[i] for i in question["items"]] if item_ids else None


def question_content(store, rec, questions):
    """Each question's ``content``: per item, its row's content (:mod:`schemas.items`) or None.

    Parameters
    ----------
    store : workers.store.Store
    rec : dict
        The session's record (its ``dataset_id``).
    questions : list of dict
        Question documents with ``items`` (row indices).

    Returns
    -------
    list of list of (dict or None)
        One list per question, one entry per item, read in one round trip; all None when the
        dataset has no content (or was deleted).
    """
    rows = sorted({i for q in questions for i in q["items"]})
    content = dict(zip(rows, store.get_items(rec["dataset_id"], rows)))
    return [[content[i] for i in q["items"]] for q in questions]


def with_items(store, rec, item_ids, questions):
    """Give each question what names and shows its items: ``item_ids`` and ``content`` (in place).

    The one place both ``POST`` (the lease) and ``GET /v1/sessions/{id}/questions`` fill them in.

    Parameters
    ----------
    store : workers.store.Store
    rec : dict
        The session's record.
    item_ids : list of str or None
        The dataset's item ids (``SessionStore.item_ids``), None when it has none.
    questions : list of dict
        Question documents with ``items``.

    Returns
    -------
    list of dict
        ``questions``, each with ``item_ids`` (see :func:`_item_ids_of`) and ``content``
        (see :func:`question_content`).
    """
    for q, content in zip(questions, question_content(store, rec, questions)):
        q["item_ids"] = _item_ids_of(q, item_ids)
        q["content"] = content
    return questions


@blp.route("", methods=["POST"])
@idempotent(blp)
@blp.arguments(SessionCreateSchema)
@blp.response(201, SessionSchema, headers=doc_headers("Location", "Retry-After"))
@problem_docs(blp, (404, "Unknown dataset"), (422, "Invalid session or callback_url"))
def create_session(body):
    """Open a session on a dataset; a worker computes the first model and question pool."""
    store = get_store()
    meta = dataset_or_404(store, body["dataset_id"], "/dataset_id")
    n = meta["n_samples"]
    check_callback_url(body["callback_url"])
    triplet = body["question_type"] == "triplet"
    strategies = SESSION_STRATEGIES[body["question_type"]]
    strategy = body["strategy"] or strategies[0]
    if strategy not in strategies:
        raise ApiError(422, "unsupported_strategy",
                       f"{body['question_type']} sessions take strategy {' or '.join(strategies)}",
                       errors={"/strategy": [f"must be one of {', '.join(strategies)} with question_type "
                                             f"{body['question_type']!r}"]})
    if triplet and body["n_clusters"] is None:
        raise ApiError(422, "invalid_n_clusters", "triplet sessions need n_clusters (DCRC does not grow K)",
                       errors={"/n_clusters": ["required with question_type 'triplet'"]})
    if n < ACTIVE_MIN_SAMPLES:
        detail = f"dataset {meta['id']} has {n} rows, at least {ACTIVE_MIN_SAMPLES} are required for a session"
        raise ApiError(422, "dataset_too_small", detail, errors={"/dataset_id": [detail]})
    try:
        k = check_n_clusters(body["n_clusters"], n, allow_none=True)
        if not triplet:  # URASC (urasc and random) needs K < n; ActiveDCRC takes K <= n
            check_urasc_n_clusters(k, n)
    except InvalidInputError as exc:
        raise ApiError.from_invalid(exc, "invalid_n_clusters") from exc
    kind, preset = body["question_type"], body["preset"]
    presets = {p["name"]: p["params"] for p in SESSION_PRESETS if p["question_type"] == kind}
    merged = params_with_preset(presets, preset, body["params"], f"{kind} sessions have no preset {preset!r}",
                                f"{kind} sessions have no presets")
    try:
        params = (TripletParamsSchema if triplet else URASCParamsSchema)().load(merged)
    except ValidationError as exc:
        raise ApiError(422, "invalid_params", "invalid session parameters",
                       errors=pointer_messages(exc.messages, "/params")) from exc
    params.update(scale=body["scale"], pool_size=body["pool_size"])
    seeds = seed_constraints(body["constraints"], n, kind)
    check_quota("max_open_sessions")
    ss = SessionStore(store)
    rec = ss.create(dataset_id=meta["id"], strategy=strategy, n_clusters=k, budget=body["budget"],
                    question_type=body["question_type"], answers_per_question=body["answers_per_question"],
                    lease_seconds=body["lease_seconds"],
                    aggregation=body["aggregation"], worker_quality=body["worker_quality"],
                    params=params, preset=preset, random_state=body["random_state"],
                    callback_url=body["callback_url"], seeds=seeds, owner=tenant())
    settle_quota()
    start_session(ss, rec["id"])
    return session_view(ss, rec), 201, {"Location": url_for("sessions.get_session", session_id=rec["id"]),
                                        **retry_after()}


@blp.route("", methods=["GET"])
@blp.arguments(SessionListArgsSchema, location="query")
@blp.response(200, SessionListSchema)
@problem_docs(blp, (400, "Malformed page_token"))
def list_sessions(args):
    """Sessions, newest first, with cursor pagination (``page_token``), optionally of one ``state`` or dataset."""
    check_page_token(args.get("page_token"))
    ss = _sessions()
    recs, token = ss.list(state=args.get("state"), dataset_id=args.get("dataset_id"), page_size=args["page_size"],
                          page_token=args.get("page_token"), **listing_scope())
    return {"sessions": [session_view(ss, r) for r in recs], "next_page_token": token}


@blp.route("/<string:session_id>", methods=["GET"])
@blp.etag
@blp.response(200, SessionSchema, headers=doc_headers("Retry-After"))
@problem_docs(blp, (404, "Unknown session"))
def get_session(session_id):
    """Revision, budget, counters, disagreements and the ModelUpToDate condition.

    While the model is behind the answers (``ModelUpToDate`` false, the
    session not FAILED) the response carries ``Retry-After``, as a job's poll does.
    """
    ss = _sessions()
    view = session_view(ss, session_or_404(ss, session_id))
    behind = any(c["type"] == "ModelUpToDate" and c["status"] == "False" for c in view["conditions"])
    if behind and view["state"] != "FAILED":
        return view, 200, retry_after()
    return view


@blp.route("/<string:session_id>", methods=["DELETE"])
@blp.response(204)
@problem_docs(blp, (404, "Unknown session"))
def delete_session(session_id):
    """Delete a session: its answers, questions, model and state (the dataset stays).

    A re-clustering pass that is running finishes on the worker; what it writes is
    discarded and no further webhook event is sent. Answers posted afterwards get 404.
    """
    ss = _sessions()
    session_or_404(ss, session_id)
    if not ss.delete(session_id):
        raise ApiError(404, "not_found", f"session {session_id!r} does not exist or has expired")
    return ""


@blp.route("/<string:session_id>/questions", methods=["GET"])
@blp.arguments(QuestionListArgsSchema, location="query")
@blp.response(200, QuestionListSchema)
@problem_docs(blp, (400, "Malformed page_token"), (404, "Unknown session"))
def list_questions(args, session_id):
    """Every question of the session with its recorded answers and, once closed, the aggregated one.

    By question id, with cursor pagination and an optional ``status``. A crowd
    platform can approve or review each assignment against the aggregate, or
    audit what the model was told.
    """
    check_page_token(args.get("page_token"))
    store = get_store()
    ss = SessionStore(store)
    rec = session_or_404(ss, session_id)
    questions, token = ss.page_questions(session_id, status=args.get("status"), page_size=args["page_size"],
                                         page_token=args.get("page_token"))
    with_items(store, rec, ss.item_ids(rec) if questions else None, questions)
    return {"questions": questions, "next_page_token": token}


@blp.route("/<string:session_id>/questions", methods=["POST"])
@blp.arguments(QuestionsRequestSchema)
@blp.response(200, QuestionsSchema, headers=doc_headers("Retry-After"))
@problem_docs(blp, (404, "Unknown session"))
def lease_questions(body, session_id):
    """A batch of the next most useful questions (several workers can answer in parallel).

    An empty batch carries ``Retry-After`` while waiting can bring questions:
    about the time the re-clustering pass that is due needs yet (the last
    pass's ``last_pass_seconds`` less the time the running one has run), else
    ``SHOAL_RETRY_AFTER`` (1 s); none once the budget is used up or the
    session is COMPLETED or FAILED. A worker gold flagged in a session with
    ``worker_quality.exclude_flagged`` is handed none, ever (``worker_excluded``
    says why; no ``Retry-After``).
    """
    store = get_store()
    ss = SessionStore(store)
    rec = session_or_404(ss, session_id)
    item_ids = ss.item_ids(rec)
    remaining = max(rec["budget"] - rec["budget_used"], 0)
    # While questions waiting for the model hold the rest of the budget, their answers would be late:
    # nothing is handed out (Retry-After: the pass may leave some of them unused).
    # A worker gold flagged under worker_quality.exclude_flagged is handed nothing, and no Retry-After:
    # waiting brings it no question.
    excluded = flagged_reasons(store, rec, [body["worker_id"]]).get(body["worker_id"])
    questions = ss.lease(session_id, body["count"], body["worker_id"],
                         answers_per_question=rec["answers_per_question"],
                         lease_seconds=rec.get("lease_seconds", DEFAULT_LEASE_SECONDS)) \
        if committed(rec) < rec["budget"] and excluded is None else []
    vocab = list(PAIRWISE_ANSWERS if rec["question_type"] == "pairwise" else TRIPLET_ANSWERS)
    out = with_items(store, rec, item_ids, [{"question_id": q["question_id"], "type": q["type"], "items": q["items"],
                                              "answers": vocab} for q in questions])
    headers = {} if out or excluded else lease_retry_after(rec)
    return {"questions": out, "revision": rec["revision"], "budget_remaining": remaining,
            "worker_excluded": excluded}, 200, headers


@blp.route("/<string:session_id>/answers", methods=["POST"])
@blp.arguments(AnswersRequestSchema)
@blp.response(200, AnswersResultSchema)
@problem_docs(blp, (404, "Unknown session"))
def post_answers(body, session_id):
    """Record a batch of answers; each item gets an outcome (accepted, duplicate, late, rejected)."""
    ss = _sessions()
    return record_answers(ss, session_or_404(ss, session_id), body["answers"])


def record_answers(ss, rec, answers):
    """Record answers to a session's questions and queue the pass they make due.

    Parameters
    ----------
    ss : SessionStore
    rec : dict
        The session's record, as read for this request.
    answers : list of dict
        ``question_id``, ``answer`` and optionally ``worker_id`` and ``assignment_id``.

    Returns
    -------
    dict
        ``results`` (one per answer: ``question_id``, ``assignment_id``, ``outcome``, ``reason``)
        and ``revision``, as ``POST /v1/sessions/{id}/answers`` answers.

    Raises
    ------
    ApiError
        404 when the session was deleted meanwhile.
    """
    session_id = rec["id"]
    vocab = PAIRWISE_ANSWERS if rec["question_type"] == "pairwise" else TRIPLET_ANSWERS
    flagged = flagged_reasons(ss.store, rec, [a.get("worker_id") for a in answers])
    results, valid, given = [], [], []  # valid: the result items of the answers given to the store
    for a in answers:
        item = {"question_id": a["question_id"], "assignment_id": a.get("assignment_id"), "reason": None}
        if a.get("worker_id") in flagged:  # fills no slot of the question; counted as rejected
            item["outcome"], item["reason"] = "rejected", flagged[a["worker_id"]]
        elif a["answer"] not in vocab:
            item["outcome"], item["reason"] = "rejected", f"answer must be one of {', '.join(vocab)}"
        else:
            valid.append(item)
            given.append(a)
        results.append(item)
    # One atomic step records the answers and counts them (counters, revision): a request that dies
    # before or after it leaves nothing uncounted, and its client's retry finds the answers duplicate.
    # a flagged worker's lease on a question it answered now frees its slot at once, not after lease_seconds
    for worker in flagged:
        ss.release(session_id, sorted({a["question_id"] for a in answers if a.get("worker_id") == worker}), worker)
    recorded = ss.record_answers(session_id, given, rec["revision"], rec["answers_per_question"],
                                 refused=len(results) - len(valid))
    if recorded is None:
        raise ApiError(404, "not_found", f"session {session_id!r} was deleted while the answers were recorded")
    for item, outcome in zip(valid, recorded.outcomes):
        item["outcome"], _, reason = outcome.partition(":")
        if item["outcome"] != "accepted":
            item["reason"] = reason or None
    # The step took the session's slot for this task when a pass is due (also when a request that
    # recorded answers died before it queued the pass they need: its client's retry).
    if recorded.enqueue:
        send_session_update(ss, session_id, recorded.enqueue)
    return {"results": results, "revision": recorded.revision}


@blp.route("/<string:session_id>/model", methods=["GET"])
@blp.etag
@blp.response(200, ModelSchema)
@problem_docs(blp, (404, "Unknown session"), (409, "No model yet, or the session failed before its first one"))
def get_model(session_id):
    """Labels and derived constraints at ``observed_revision``."""
    store = get_store()
    ss = SessionStore(store)
    rec = session_or_404(ss, session_id)
    model = ss.get_model(session_id)
    if model is None and rec["state"] == "FAILED":
        detail = (rec.get("error") or {}).get("detail") or "unknown error"
        raise ApiError(409, "session_failed", f"the session failed before its first model: {detail}",
                       state=rec["state"], error=rec.get("error"))
    if model is None:
        raise ApiError(409, "model_not_ready", "the first model of this session is still being computed",
                       state=rec["state"], headers=retry_after())
    # The record's observed_revision moves past the model's when later answers closed no question
    # (they change nothing the model uses); the model written by a pass still ending is newer.
    model["observed_revision"] = max(model["observed_revision"], rec["observed_revision"])
    model["item_ids"] = ss.item_ids(rec)
    return model


#: The constraint kinds a refit of each question type sends to its method.
_REFIT_KINDS = {"pairwise": "pairwise", "triplet": "triplets"}


def _as_parsed(constraints):
    """Job constraints (JSON lists) in the form :class:`schemas.constraints.ConstraintsSchema` loads; empty
    lists left out."""
    out = {k: v for k, v in constraints.items() if v}
    if "triplets" in out:
        rows = out["triplets"]
        out["triplets"] = (np.asarray([r[:3] for r in rows], dtype=np.int64).reshape(-1, 3), [r[3] for r in rows])
    return out


@blp.route("/<string:session_id>/refit", methods=["POST"])
@idempotent(blp)
@blp.arguments(SessionRefitSchema)
@blp.response(202, JobSchema, headers=doc_headers("Location", "Retry-After"))
@problem_docs(blp, (404, "Unknown session, or its dataset expired"),
              (409, "No model yet, or the session failed before its first one"),
              (413, "Too many constraints"),
              (422, "A method that does not take the session's answers, or invalid parameters or callback_url"),
              (503, "Queue unavailable"))
def refit_session(body, session_id):
    """Cluster the session's dataset afresh with its answers: a job (``method`` auto by default).

    The job takes the session's known constraints and every closed
    question's aggregated answer as they are now (``dont_know`` left out;
    answers the session's model refused as conflicts or found implied are
    in), runs on a worker like any job (poll the ``Location``; its
    ``session_id`` names the session) and its result, with ``auto``, says
    which method, settings and K the answers chose and why. The session
    goes on unchanged.
    """
    store = get_store()
    ss = SessionStore(store)
    rec = session_or_404(ss, session_id)
    if ss.get_model(session_id) is None:
        if rec["state"] == "FAILED":
            detail = (rec.get("error") or {}).get("detail") or "unknown error"
            raise ApiError(409, "session_failed", f"the session failed before its first model: {detail}",
                           state=rec["state"], error=rec.get("error"))
        raise ApiError(409, "model_not_ready", "the session has no answers closed yet: its first model is still "
                       "being computed", state=rec["state"], headers=retry_after())
    kind = _REFIT_KINDS[rec["question_type"]]
    method = body["method"]
    if method in METHODS and kind not in METHODS[method]["constraints"]:
        raise ApiError(422, "unsupported_constraints",
                       f"method {method!r} does not take the answers of a {rec['question_type']} session "
                       f"({kind} constraints)", errors={"/method": [f"must take {kind} constraints"]})
    meta = dataset_or_404(store, rec["dataset_id"])
    constraints, _ = ss.answered_constraints(session_id, rec)
    job = {"method": method, "n_clusters": body.get("n_clusters", rec["n_clusters"]), "params": body["params"],
           "preset": body["preset"], "constraints": _as_parsed(constraints), "on_conflict": "keep", "scale": body["scale"],
           "random_state": body.get("random_state", rec["random_state"]), "callback_url": body["callback_url"]}
    out = submit_checked(store, job, meta, session_id=session_id)
    return job_view(out), 202, {"Location": url_for("jobs.get_job", job_id=out["id"]), **retry_after()}
