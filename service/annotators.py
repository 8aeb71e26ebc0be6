"""Annotator links, gold questions and per-worker tallies of a session: the API side of the page.

``POST /v1/sessions/{id}/annotators`` issues a link (a capability URL to :mod:`service.annotate`),
``GET`` lists them, ``DELETE .../annotators/{link_id}`` revokes one; ``POST .../gold`` sets the
gold questions the page mixes in; ``GET .../workers`` reports each worker's answers, time per
answer, accuracy on gold and agreement with the aggregated answers.
"""

from flask_smorest import Blueprint

from schemas.annotators import (
    GoldRequestSchema,
    GoldSchema,
    LinkCreateSchema,
    LinkListSchema,
    LinkSchema,
    WorkerListSchema,
)
from workers.annotator_store import AnnotatorStore
from workers.session_store import SessionStore

from . import get_store
from .annotate import link_url
from .errors import ApiError, problem_docs
from .sessions import session_or_404

blp = Blueprint("annotators", __name__, url_prefix="/v1/sessions",
                description="Annotator links (pages for people), gold questions, per-worker quality")

INFORMATIVE = {"must_link", "cannot_link", "yes", "no"}


def _view(rec):
    out = {k: rec.get(k) for k in ("id", "session_id", "worker_id", "created_at", "expires_at", "quota",
                                    "completion_url", "instructions", "revoked_at")}
    out["url"] = link_url(rec)
    return out


@blp.route("/<string:session_id>/annotators", methods=["POST"])
@blp.arguments(LinkCreateSchema)
@blp.response(201, LinkSchema)
@problem_docs(blp, (404, "Unknown session"), (422, "Invalid worker_id, expires_in, quota or completion_url"))
def create_link(body, session_id):
    """Issue a signed, expiring page link for one worker (or, with ``worker_id`` null, for workers the URL names).

    The link grants leasing and answering in this session as that worker, and nothing else.
    With ``worker_id`` null, the page takes the worker from the URL parameter ``PROLIFIC_PID``
    (or ``worker_id``): add ``?PROLIFIC_PID={{%PROLIFIC_PID%}}`` in Prolific's study URL.
    """
    store = get_store()
    session_or_404(SessionStore(store), session_id)
    rec = AnnotatorStore(store).create_link(session_id, worker_id=body["worker_id"], expires_in=body["expires_in"],
                                            quota=body["quota"], completion_url=body["completion_url"],
                                            instructions=body["instructions"])
    return _view(rec), 201


@blp.route("/<string:session_id>/annotators", methods=["GET"])
@blp.response(200, LinkListSchema)
@problem_docs(blp, (404, "Unknown session"))
def list_links(session_id):
    """The session's links, oldest first, revoked ones included (with ``revoked_at``)."""
    store = get_store()
    session_or_404(SessionStore(store), session_id)
    return {"links": [_view(r) for r in AnnotatorStore(store).links(session_id)]}


@blp.route("/<string:session_id>/annotators/<string:link_id>", methods=["DELETE"])
@blp.response(204)
@problem_docs(blp, (404, "Unknown session or link"))
def revoke_link(session_id, link_id):
    """Revoke a link: its page and its answers stop at once (answers already given stay)."""
    store = get_store()
    session_or_404(SessionStore(store), session_id)
    if AnnotatorStore(store).revoke(session_id, link_id) is None:
        raise ApiError(404, "not_found", f"link {link_id!r} does not exist in session {session_id!r}")
    return ""


@blp.route("/<string:session_id>/gold", methods=["POST"])
@blp.arguments(GoldRequestSchema)
@blp.response(200, GoldSchema)
@problem_docs(blp, (404, "Unknown session"), (422, "Items out of range or of the wrong arity, or a wrong answer word"))
def set_gold(body, session_id):
    """Replace the session's gold questions: pairs or triplets with known answers, one in ``every`` on the page.

    Gold answers score the worker (``GET .../workers``) and are never told to the model.
    """
    store = get_store()
    rec = session_or_404(SessionStore(store), session_id)
    n = (store.get_dataset_meta(rec["dataset_id"]) or {}).get("n_samples")
    arity, words = (2, ("must_link", "cannot_link")) if rec["question_type"] == "pairwise" else (3, ("yes", "no"))
    errors = {}
    for i, q in enumerate(body["questions"]):
        if len(q["items"]) != arity:
            errors[f"/questions/{i}/items"] = [f"{rec['question_type']} questions have {arity} items"]
        elif n is not None and max(q["items"]) >= n:
            errors[f"/questions/{i}/items"] = [f"item {max(q['items'])} is out of range (dataset has {n} rows)"]
        if q["answer"] not in words:
            errors[f"/questions/{i}/answer"] = [f"must be one of {', '.join(words)}"]
    if errors:
        raise ApiError(422, "invalid_gold", "invalid gold questions", errors=errors)
    AnnotatorStore(store).set_gold(session_id, body)
    return body


@blp.route("/<string:session_id>/workers", methods=["GET"])
@blp.response(200, WorkerListSchema)
@problem_docs(blp, (404, "Unknown session"))
def list_workers(session_id):
    """Per worker: answers on pages, mean seconds per answer, accuracy on gold, agreement with the aggregate."""
    store = get_store()
    ss = SessionStore(store)
    session_or_404(ss, session_id)
    stats = AnnotatorStore(store).stats(session_id)
    agree = {}
    token = None
    while True:
        page, token = ss.page_questions(session_id, status="closed", page_size=500, page_token=token)
        for q in page:
            if len(q["answers"]) < 2 or q["aggregated"] not in INFORMATIVE:
                continue
            for a in q["answers"]:
                if a["answer"] in INFORMATIVE and a.get("worker_id"):
                    n_ok = agree.setdefault(a["worker_id"], [0, 0])
                    n_ok[0] += 1
                    n_ok[1] += a["answer"] == q["aggregated"]
        if token is None:
            break
    out = []
    for w in sorted(set(stats) | set(agree)):
        s = stats.get(w, {})
        n, ok = agree.get(w, (0, 0))
        answers, ga = s.get("answers", 0), s.get("gold_answered", 0)
        out.append({"worker_id": w, "answers": answers,
                    "seconds_per_answer": round(s["ms"] / answers / 1000, 3) if answers else None,
                    "gold_answered": ga, "gold_correct": s.get("gold_correct", 0),
                    "gold_accuracy": round(s["gold_correct"] / ga, 4) if ga else None,
                    "agreement": round(ok / n, 4) if n else None, "agreement_n": n})
    return {"workers": out}
