"""The annotator page: ``/annotate/<token>``, one question at a time, for a person with a link.

The token is a capability (signed with ``SHOAL_ANNOTATOR_SECRET``, or a secret Shoal keeps in
Redis): it names one session, one link and the worker, and grants leasing and answering there
only. The page's JSON endpoint (``POST /annotate/<token>/step``) takes the session and the worker
from the token, never from the request, and the link's record (expiry, revocation) is read on
every request. The page is a Jinja template (autoescaped) and one plain script that puts every
string of the items into the page as text (``textContent``), under a Content-Security-Policy
that runs no inline script and loads nothing but from Shoal itself, plus images.
"""

import time
from collections import OrderedDict

import numpy as np
from flask import Blueprint, current_app, render_template, request, url_for
from itsdangerous import BadSignature, URLSafeSerializer
from marshmallow import RAISE, Schema, ValidationError, fields, validate

from schemas.annotators import WORKER_ID
from workers.annotator_store import AnnotatorStore
from workers.session_store import DEFAULT_LEASE_SECONDS, OPEN_STATES, SessionStore

from . import get_store
from .errors import ApiError, pointer_messages
from .page_headers import page_headers
from .sessions import committed, flagged_reasons, lease_retry_after, question_content, record_answers

blp = Blueprint("annotate", __name__, url_prefix="/annotate", template_folder="templates",
                static_folder="static", static_url_path="/assets")

#: Headers of every response under ``/annotate``: no inline script, nothing from other hosts but
#: images (an item's ``image_url``), no framing, and no Referer (the URL holds the token).
SECURITY_HEADERS = {**page_headers(), "Cache-Control": "no-store"}
#: Most features shown per row when it has no content.
MAX_FEATURES = 12
LABELS = {"pairwise": [("must_link", "Same", "1", "S"), ("cannot_link", "Different", "2", "D"),
                       ("dont_know", "Don't know", "3", "K")],
          "triplet": [("yes", "B", "1", "B"), ("no", "C", "2", "C"), ("dont_know", "Don't know", "3", "K")]}
PROMPTS = {"pairwise": "Do these two belong to the same group?",
           "triplet": "Which is more like the top item (A): B or C?"}


def _serializer():
    cfg = current_app.config
    secret = AnnotatorStore(get_store()).secret(cfg.get("SHOAL_ANNOTATOR_SECRET", ""))
    return URLSafeSerializer(secret, salt="shoal.annotator")


def make_token(sid, link_id, worker_id):
    """The signed token of a link: the capability in its URL.

    Parameters
    ----------
    sid : str
        The session the link answers in.
    link_id : str
        The link's record id (``lnk_...``): its expiry and revocation are read from it.
    worker_id : str or None
        The worker it answers as; None for a study link whose worker the URL names.

    Returns
    -------
    str
        URL-safe text, signed with ``SHOAL_ANNOTATOR_SECRET`` (or the secret kept in Redis); any
        change to it fails the signature (401 ``invalid_link``).
    """
    return _serializer().dumps({"s": sid, "l": link_id, "w": worker_id})


def link_url(rec):
    """The page URL of a link.

    Parameters
    ----------
    rec : dict
        The link's record (``session_id``, ``id``, ``worker_id``).

    Returns
    -------
    str
        Absolute URL of ``/annotate/<token>`` on the request's host.
    """
    return url_for("annotate.page", token=make_token(rec["session_id"], rec["id"], rec["worker_id"]),
                   _external=True)


def _authorise(token):
    """``(session_id, link record, worker_id)`` of a valid token; an ``ApiError`` otherwise."""
    try:
        claims = _serializer().loads(token)
        sid, link_id, worker = claims["s"], claims["l"], claims["w"]
    except (BadSignature, KeyError, TypeError):
        raise ApiError(401, "invalid_link", "this link is not valid: check that it was copied whole") from None
    rec = AnnotatorStore(get_store()).link(sid, link_id)
    if rec is None:
        raise ApiError(404, "session_gone", "this link's session no longer exists")
    if rec["revoked_at"]:
        raise ApiError(410, "link_revoked", "this link was withdrawn by the people who sent it")
    if time.time() >= rec["expires_ts"]:
        raise ApiError(410, "link_expired", f"this link expired at {rec['expires_at']}")
    return sid, rec, worker


@blp.after_request
def _secure(response):
    response.headers.update(SECURITY_HEADERS)
    if request.endpoint == "annotate.static":
        response.headers["Cache-Control"] = "public, max-age=3600"
    return response


@blp.get("/<token>")
def page(token):
    """The page for a link; a page that says why when the link is invalid, expired or revoked."""
    try:
        sid, rec, worker = _authorise(token)
    except ApiError as exc:
        return render_template("annotate_error.html", code=exc.code, detail=exc.detail), exc.status
    if worker is None:
        named = request.args.get("PROLIFIC_PID") or request.args.get("worker_id")
        try:
            worker = WORKER_ID(named) if named else None
        except ValidationError:
            worker = None
        if worker is None:
            return render_template("annotate_error.html", code="no_worker",
                                   detail="this link needs your participant id (PROLIFIC_PID or worker_id in "
                                          "the address)"), 400
        token = make_token(sid, rec["id"], worker)
    ss = SessionStore(get_store())
    session = ss.get(sid)
    if session is None:
        return render_template("annotate_error.html", code="session_gone",
                               detail="this link's session no longer exists"), 404
    kind = session["question_type"]
    first = _step(sid, rec, worker, {"answers": [], "next": True, "held": 0})  # saves the page a round trip
    return render_template("annotate.html", step_url=url_for("annotate.step", token=token), kind=kind, first=first,
                           prompt=PROMPTS[kind], answers=LABELS[kind], worker=worker, link_id=rec["id"],
                           instructions=rec.get("instructions"),
                           undo_seconds=current_app.config["SHOAL_ANNOTATE_UNDO_SECONDS"])


class _PageAnswerSchema(Schema):
    class Meta:
        unknown = RAISE

    question_id = fields.String(required=True, validate=validate.Length(min=1, max=200))
    answer = fields.String(required=True, validate=validate.Length(max=50))
    ms = fields.Integer(load_default=0, validate=validate.Range(min=0, max=24 * 3600 * 1000))


class _StepSchema(Schema):
    class Meta:
        unknown = RAISE

    answers = fields.List(fields.Nested(_PageAnswerSchema), load_default=list, validate=validate.Length(max=50))
    next = fields.Boolean(load_default=True)
    held = fields.Integer(load_default=0, validate=validate.Range(min=0, max=1))


@blp.post("/<token>/step")
def step(token):
    """Send the page's answers (retries are duplicates: one assignment id per worker and question),
    and get the next question, or how long to wait, or that the worker is done."""
    sid, link, worker = _authorise(token)
    if worker is None:
        raise ApiError(403, "no_worker", "this link names no worker: open it with PROLIFIC_PID or worker_id")
    try:
        body = _StepSchema().load(request.get_json(silent=True) or {})
    except ValidationError as exc:
        raise ApiError(422, "invalid_input", "invalid step", errors=pointer_messages(exc.messages)) from exc
    out = _step(sid, link, worker, body)
    headers = {"Retry-After": str(out["wait_seconds"])} if out["wait_seconds"] else {}
    return out, 200, headers


def _step(sid, link, worker, body):
    """Record ``body["answers"]``, then the next question (``body["next"]``) or why there is none."""
    store = get_store()
    ss, an = SessionStore(store), AnnotatorStore(store)
    rec = ss.get(sid)
    if rec is None:
        raise ApiError(404, "session_gone", "this link's session no longer exists")
    gold = an.gold(sid)
    # flagged before these answers: they are rejected, gold ones too (no slot filled, no tally)
    flag = flagged_reasons(store, rec, [worker]).get(worker)
    results, tallies = _record(ss, an, rec, worker, body["answers"], gold, flag)
    an.tally(sid, worker, tallies)
    stats = an.stats(sid, worker)
    if results:
        rec = ss.get(sid) or rec  # the counters after these answers
    if flag is None and any("gold_correct" in t for t in tallies):  # these gold answers may flag it
        flag = flagged_reasons(store, rec, [worker]).get(worker)
    out = {"results": results, "question": None, "wait_seconds": None, "done": None,
           "completion_url": link.get("completion_url")}
    left = None if link["quota"] is None else link["quota"] - stats["answers"] - body["held"]
    if flag is not None:
        out["done"] = "flagged"  # the page says its answers no longer count; no more questions
    elif left is not None and left <= 0:
        out["done"] = "quota"
    elif body["next"]:
        out["question"], wait = _next_question(store, ss, an, rec, worker, stats, gold)
        if out["question"] is None:
            if wait:
                out["wait_seconds"] = int(wait)
            else:
                out["done"] = "session"
    budget_left = max(rec["budget"] - rec["budget_used"], 0)
    out["progress"] = {"answered": stats["answers"], "left_in_quota": left, "quota": link["quota"],
                       "budget": rec["budget"], "budget_remaining": budget_left}
    return out


def _record(ss, an, rec, worker, answers, gold, flag=None):
    """Record the page's answers: gold ones are scored (never told to the model), the rest recorded.

    ``flag``: why the worker's answers no longer count (:func:`.sessions.flagged_reasons`), or None;
    with one, gold answers are rejected with it (the session's answers are, by :func:`record_answers`).
    """
    prefix = f"page:{worker}:"
    model, results, tallies = [], [], []
    for a in answers:
        assignment = prefix + a["question_id"]
        if a["question_id"].startswith("gold-") and flag is not None:
            results.append({"question_id": a["question_id"], "outcome": "rejected", "reason": flag})
        elif a["question_id"].startswith("gold-"):
            idx = a["question_id"][5:]
            q = gold["questions"][int(idx)] if idx.isdigit() and int(idx) < len(gold["questions"]) else None
            if q is None:
                results.append({"question_id": a["question_id"], "outcome": "rejected", "reason": "unknown question"})
                continue
            results.append({"question_id": a["question_id"], "outcome": "accepted", "reason": None})
            tallies.append({"assignment_id": assignment, "ms": a["ms"], "gold_correct": a["answer"] == q["answer"]})
        else:
            model.append({"question_id": a["question_id"], "answer": a["answer"], "worker_id": worker,
                          "assignment_id": assignment, "ms": a["ms"]})
    if model:
        recorded = record_answers(ss, rec, [{k: v for k, v in m.items() if k != "ms"} for m in model])
        for m, r in zip(model, recorded["results"]):
            results.append({"question_id": r["question_id"], "outcome": r["outcome"], "reason": r["reason"]})
            if r["outcome"] != "rejected":
                tallies.append({"assignment_id": m["assignment_id"], "ms": m["ms"]})
    return results, tallies


def _next_question(store, ss, an, rec, worker, stats, gold):
    """``(question for the page, None)`` or ``(None, seconds to wait or None when done)``."""
    sid = rec["id"]
    every, golds, first, served = gold["every"], gold["questions"], gold.get("first", 0), stats["served"]
    # the next gold question not shown to the worker yet (its answer may still be held on the page)
    idx = max(stats["gold_served"], stats["gold_answered"])
    due = served < first or (every and served >= first and (served - first) % every == every - 1)
    if golds and due and idx < len(golds) and rec["state"] in OPEN_STATES:
        an.count_served(sid, worker, gold=True)
        return _for_page(store, rec, {"question_id": f"gold-{idx}", "items": golds[idx]["items"]}), None
    qs = ss.lease(sid, 1, worker, answers_per_question=rec["answers_per_question"],
                  lease_seconds=rec.get("lease_seconds", DEFAULT_LEASE_SECONDS)) \
        if committed(rec) < rec["budget"] else []
    if qs:
        an.count_served(sid, worker)
        return _for_page(store, rec, qs[0]), None
    wait = lease_retry_after(rec).get("Retry-After")
    return None, wait


def _for_page(store, rec, q):
    """A question as the page shows it: per item its content, or its features when it has none."""
    content = question_content(store, rec, [q])[0]
    feats = _features(store, rec["dataset_id"], [i for i, c in zip(q["items"], content) if c is None])
    letters = "AB" if len(q["items"]) == 2 else "ABC"
    ids = SessionStore(store).item_ids(rec)
    return {"question_id": q["question_id"], "type": rec["question_type"],
            "lease_seconds": rec.get("lease_seconds", DEFAULT_LEASE_SECONDS),
            "items": [{"label": letter, "row": i, "item_id": ids[i] if ids else None, "content": _ordered(c),
                       "features": None if c else feats.get(i)}
                      for letter, i, c in zip(letters, q["items"], content)]}


def _ordered(content):
    """Content with its ``fields`` as ``[[name, value], ...]``: the page shows them in the order uploaded
    (a JSON object's keys are sorted on the way out)."""
    if not content or not content.get("fields"):
        return content
    return {**content, "fields": [[k, v] for k, v in content["fields"].items()]}


_MATRICES = OrderedDict()  # dataset id -> (X, mean, std), the few last used


def _features(store, did, rows):
    """``{row: [{"name", "value", "z"}, ...]}``: a row's first features with z-scores against their columns."""
    if not rows:
        return {}
    cached = _MATRICES.get(did)
    if cached is None:
        loaded = store.load_dataset(did)
        if loaded is None:
            return {}
        X = np.array(loaded[0][:, :MAX_FEATURES])
        cached = (X, X.mean(axis=0), X.std(axis=0))
        _MATRICES[did] = cached
        while len(_MATRICES) > 4:
            _MATRICES.popitem(last=False)
    X, mean, std = cached
    z = (X[rows] - mean) / np.where(std > 0, std, 1.0)
    return {r: [{"name": f"x{j + 1}", "value": float(f"{X[r, j]:.4g}"), "z": round(float(z[k, j]), 2)}
                for j in range(X.shape[1])] for k, r in enumerate(rows)}
