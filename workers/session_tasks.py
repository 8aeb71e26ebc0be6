"""Active-clustering sessions on the worker: aggregate answers, re-cluster, refill the question pool.

One pass per session at a time (``SessionStore.record_answers`` coalesces
bursts of answers into one running and one pending pass; each task runs one
pass and enqueues the next).
"""

import logging
import threading
import time
import uuid
from collections import Counter, OrderedDict

import numpy as np
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

from clustering._dcrc import ActiveDCRC
from clustering._crowd import majority_vote
from clustering._crowd_quality import CROWDKIT_MODELS
from clustering._metrics import clustering_scores, violated_constraints, violated_triplet_answers
from clustering._urasc import URASC

from . import liveness
from .celery_app import app
from .annotator_store import AnnotatorStore
from .crowd import aggregate, disagree, fit_crowdkit, fit_dawid_skene, gold_flags, with_gold, worker_reliability
from .integrations.tasks import after_pass as integrations_after_pass
from .session_store import DEFAULT_LEASE_SECONDS, PassSuperseded, SessionStore, worker_quality_of
from .submit import send_pass
from .records import problem, utcnow_iso
from .tasks import (REDIS_DOWN, _label_codes, deliver_session_webhook, get_store, result_map, through_outage,
                    through_outage_past_soft_limit, zscore)

log = logging.getLogger(__name__)

TO_BOOL = {"must_link": True, "cannot_link": False, "dont_know": None}
TRIPLET_CODES = {"yes": 1, "no": -1, "dont_know": 0}


def question_id(i, j):
    i, j = sorted((int(i), int(j)))
    return f"q_{i}_{j}"


def triplet_question_id(a, b, c):
    """Triplets keep their order: "a closer to b than to c?" (b and c are shown in this order)."""
    return f"t_{int(a)}_{int(b)}_{int(c)}"


def contradicted_answers(labels, closed):
    """The aggregated answers a session's labels go against.

    Pairwise: a "must_link" answer whose two items are in different
    clusters, or a "cannot_link" answer whose items share one. Triplet: a
    "yes" or "no" that differs from the answer the labels imply (DCRC's
    Eq. DC-1). People err and the model may overrule them (under
    ``k_growth="verify"`` each pairwise answer is one vote among several), so
    a client learns which questions to re-ask or review. Answers
    :meth:`URASC.tell` refused as conflicts are included when the labels go
    against them; the session lists them under ``conflicts`` too.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,), int
        The model's labels.
    closed : list of dict
        Closed question documents (as :meth:`SessionStore.replace_pool` returns them): ``items``
        ([i, j] or [a, b, c] row indices) and ``aggregated`` (an answer word;
        "dont_know" never appears in the output).

    Returns
    -------
    list of dict
        ``{"question_id", "items", "answer", "votes"}``, ordered by items.

    Notes
    -----
    Violation as in :func:`clustering._metrics.violated_constraints` and
    :func:`clustering._metrics.violated_triplet_answers`.
    """
    closed = sorted((q for q in closed if q["aggregated"] != "dont_know"), key=lambda q: tuple(q["items"]))
    pairs = [q for q in closed if len(q["items"]) == 2]
    triplets = [q for q in closed if len(q["items"]) == 3]
    violated = set()
    if pairs:
        kind = [1 if q["aggregated"] == "must_link" else -1 for q in pairs]
        flags = violated_constraints(labels, [q["items"] for q in pairs], kind)
        violated |= {q["question_id"] for q, v in zip(pairs, flags) if v}
    if triplets:
        flags = violated_triplet_answers(labels, [q["items"] for q in triplets],
                                         [TRIPLET_CODES[q["aggregated"]] for q in triplets])
        violated |= {q["question_id"] for q, v in zip(triplets, flags) if v}
    return [{"question_id": q["question_id"], "items": [int(v) for v in q["items"]], "answer": q["aggregated"],
             "votes": q["votes"]} for q in closed if q["question_id"] in violated]


def _load_X(store, rec):
    data = store.load_dataset(rec["dataset_id"])
    if data is None:
        raise LookupError(f"dataset {rec['dataset_id']} no longer exists")
    X, labels_true, item_ids = data
    if rec["params"].get("scale", "zscore") == "zscore":
        X = zscore(X)
    return X, labels_true


#: URASC base graphs of recent sessions in this worker process, newest last:
#: session id -> ``URASC.base_graph_`` (URASC checks that it fits the data).
_BASE_GRAPHS = OrderedDict()
_BASE_GRAPHS_KEPT = 4


def _estimator(rec, X, state, answers_follow=False):
    """The session's estimator: URASC (pairwise) or ActiveDCRC (triplet), new or from its saved state.

    ``answers_follow``: answers are told next and the estimator re-clusters
    after them, so URASC need not redo its spectral step on restoring
    (``URASC.from_state(..., defer_recluster=True)``; ActiveDCRC always defers).
    URASC's base graph is kept in this process for the session's next pass
    (``base_graph=``): rebuilding it took 2.4 s of a 4.6 s pass on letter.
    """
    triplet = rec["question_type"] == "triplet"
    if state is not None and triplet:
        return ActiveDCRC.from_state(X, state)
    if state is not None:
        est = URASC.from_state(X, state, defer_recluster=answers_follow, base_graph=_BASE_GRAPHS.get(rec["id"]))
    else:
        params = {k: v for k, v in rec["params"].items() if k not in ("scale", "pool_size")}
        seeds = rec.get("seeds") or []
        if seeds and not triplet and params.get("seed_sample") is None:
            # URASC takes a pair once one of its rows is certain: start from the row the pairs name most
            params["seed_sample"] = int(Counter(v for i, j, _ in seeds for v in (i, j)).most_common(1)[0][0])
        # room for every seed: they are told as answers, and the session counts them apart (_tell_seeds)
        est = (ActiveDCRC if triplet else URASC)(n_clusters=rec["n_clusters"], budget=rec["budget"] + len(seeds),
                                                  strategy=rec["strategy"], random_state=rec["random_state"],
                                                  **params).fit(X)
    if not triplet:
        _keep_base_graph(rec["id"], est)
    return est


def _keep_base_graph(sid, est):
    if est.base_graph_ is None:
        return
    _BASE_GRAPHS[sid] = est.base_graph_
    _BASE_GRAPHS.move_to_end(sid)
    while len(_BASE_GRAPHS) > _BASE_GRAPHS_KEPT:
        _BASE_GRAPHS.popitem(last=False)


def _told(q, answer):
    """One aggregated answer in the shape the estimator's ``tell`` takes."""
    if q["type"] == "triplet":
        return (*q["items"], answer)
    return (q["items"][0], q["items"][1], TO_BOOL[answer])


def _tell_seeds(est, rec, first):
    """Tell the model the session's known constraints it can take now; the number it recorded.

    Triplet sessions take every seed at the first pass. URASC takes a pair
    only once one of its rows is in a certain set (it asks about a row against
    a set), so each pass tells the seeds that have become usable, repeatedly
    while some are recorded (a recorded must-link makes its other row certain).
    Seeds the model does not record (implied, duplicate, conflict) are not
    counted; those that go against the certain sets (a must-link across two
    sets, a cannot-link inside one) are reported under ``conflicts``.

    Parameters
    ----------
    est : clustering.URASC or clustering.ActiveDCRC
    rec : dict
        The session record (``seeds``).
    first : bool
        Whether this is the session's first pass.

    Returns
    -------
    recorded : int
        Seeds recorded by the model in this pass (``counters.seeded``).
    conflicts : list of dict
        URASC's conflicts among the seeds told, as ``conflicts`` reports.
    """
    seeds = rec.get("seeds") or []
    if not seeds:
        return 0, []
    if rec["question_type"] == "triplet":
        return (sum(o == "accepted" for o in est.tell([tuple(s) for s in seeds])) if first else 0), []
    told = {(min(i, j), max(i, j)) for i, j, _ in est.answers_.tolist()}
    left = [(i, j, a) for i, j, a in seeds if (min(i, j), max(i, j)) not in told]
    recorded, unused = 0, []
    while left:
        certain = {v for members in est.certain_sets_ for v in members}
        now = [t for t in left if t[0] in certain or t[1] in certain]
        if not now:
            break
        left = [t for t in left if not (t[0] in certain or t[1] in certain)]
        outcomes = est.tell_known(now)
        recorded += outcomes.count("accepted")
        unused += [t for t, o in zip(now, outcomes) if o != "accepted"]
    set_of = {v: k for k, members in enumerate(est.certain_sets_) for v in members}
    conflicts = [{"question_id": None, "items": [i, j], "answer": a,
                  "reason": "a known constraint (seed) that contradicts the certain sets; not used"}
                 for i, j, a in unused
                 if i in set_of and j in set_of and (set_of[i] == set_of[j]) != (a == "must_link")]
    return recorded, conflicts


def _pool_entry(q, question_type):
    if question_type == "triplet":
        items = [int(v) for v in q["items"]]
        qid = triplet_question_id(*items)
    else:
        items = [int(v) for v in q["pair"]]
        qid = question_id(*items)
    return {"question_id": qid, "type": question_type, "items": items, "sample": q.get("sample"),
            "score": None if q.get("score") is None or not np.isfinite(q["score"]) else float(q["score"])}


def model_warnings(est):
    """What a client should know about a session's model that its fields do not say.

    Parameters
    ----------
    est : URASC or ActiveDCRC
        The session's fitted estimator.

    Returns
    -------
    warnings : list of dict
        ``{"code": str, "detail": str}`` each; empty when there is nothing to
        report. ``n_clusters_grew``: the session was given ``n_clusters`` and
        the model has more clusters, because answers founded more certain sets
        than that (every pair of sets answered "different"); the URASC spec
        (urasc.md, U14 and edge case 11) grows K then, and asks that it be
        reported. Only wrong "no" answers do this; ``k_growth="verify"`` (the
        ``noisy_answers`` preset) keeps a given ``n_clusters`` fixed instead.
    """
    out = []
    given = getattr(est, "n_clusters", None)
    if isinstance(est, URASC) and given is not None and int(est.n_clusters_) > int(given):
        out.append({"code": "n_clusters_grew", "detail": (
            f"n_clusters was given as {int(given)}, but the answers founded {len(est.certain_sets_)} certain "
            f"sets that were each answered 'different' from the others, so the model has "
            f"{int(est.n_clusters_)} clusters (URASC grows K to the number of certain sets). Some 'no' "
            "answers are likely wrong: review the certain sets, or use the noisy_answers preset "
            "(k_growth 'verify'), which keeps a given n_clusters fixed.")})
    return out


def _model(sid, revision, est, labels, labels_true, closed, workers, used=None):
    """The session's model document; ``used``: the questions it used (seeds apart), default all answers."""
    used = est.n_questions_ if used is None else used
    model = {"session_id": sid, "observed_revision": revision, "labels": labels.tolist(),
             "n_clusters": int(est.n_clusters_), "n_questions_used": int(used),
             "contradicted_answers": contradicted_answers(labels, closed), "workers": workers,
             "warnings": model_warnings(est),
             "metrics": clustering_scores(_label_codes(labels_true), labels) if labels_true is not None else None}
    if isinstance(est, URASC):
        # The answered pairs and the sets, not URASC's derived must_link_ / cannot_link_: those hold
        # every pair inside (and, under the paper's rule, across) the certain sets, O(n^2) pairs
        # (segment after 1400 answers: 620 000 pairs, most of a 2.9 s pass spent writing them).
        told = est.answers_
        model.update(n_certain_sets=len(est.certain_sets_), certain_sets=est.certain_sets_,
                     must_link=told[told[:, 2] == 1, :2].tolist(), cannot_link=told[told[:, 2] == 0, :2].tolist())
    else:
        words = {code: word for word, code in TRIPLET_CODES.items()}
        model["triplets"] = [[*map(int, t), words[int(a)]] for t, a in zip(est.triplets_, est.triplet_answer_)]
    return model


def pass_stats(model, n_answers, started):
    """What a committed pass measured, for the session's page (``/ui/sessions/{id}``).

    Parameters
    ----------
    model : dict
        The model the pass saved (:func:`_model`).
    n_answers : int
        Answers recorded when the pass read them.
    started : float
        Unix time the pass started.

    Returns
    -------
    dict
        ``revision`` (the answers' revision the pass read), ``at`` (ISO time the pass ended),
        ``n_questions_used``, ``n_clusters``, ``n_answers``, ``n_workers``, ``ari`` (of the labels
        against the dataset's ground truth; null without one) and ``agreement``: the crowd's, the
        fraction of workers' informative answers that match the other workers' strict majority on
        the same question, over all workers (:func:`workers.crowd.worker_reliability`; null before any
        question had two informative answers).
    """
    compared = sum(w["compared"] for w in model["workers"])
    agreed = sum(round((w["agreement"] or 0.0) * w["compared"]) for w in model["workers"])
    return {"revision": model["observed_revision"], "at": utcnow_iso(), "seconds": round(time.time() - started, 3),
            "n_questions_used": model["n_questions_used"], "n_clusters": model["n_clusters"],
            "n_answers": int(n_answers), "n_workers": len(model["workers"]),
            "ari": (model["metrics"] or {}).get("ari"),
            "agreement": round(agreed / compared, 4) if compared else None}


def update_once(store, ss, sid, token=None):
    """One pass: tell aggregated answers, re-cluster, refill the pool, save.

    Each question that got its answers is closed with the aggregated answer
    (a question with two different informative answers, :func:`workers.crowd.disagree`,
    is reported under ``disagreements`` with
    its ``tie_breakers``, the answers it got beyond ``answers_per_question``
    because they tied, and ``tied``, whether its informative votes still tie:
    :meth:`SessionStore.record_answers`) and what the estimator did with it (``model_outcome``: ``accepted``, or
    ``implied`` / ``duplicate`` / ``conflict`` / ``rejected`` /
    ``over_budget``, which the model did not use and the session counts under
    ``questions_unused``). Once the budget is used up, or nothing is left to
    ask, the session is COMPLETED and its open questions are withdrawn.

    Parameters
    ----------
    store : workers.store.Store
    ss : workers.session_store.SessionStore
    sid : str
    token : str, optional
        The task running the pass, which must hold the session's slot to
        write the pool and to commit (None: not checked).

    Returns
    -------
    state : {"ACTIVE", "COMPLETED"}
        The session's new state.
    observed_revision : int or None
        The revision the model reflects (None: the session was deleted meanwhile).

    Raises
    ------
    workers.session_store.PassSuperseded
        The slot went to another pass meanwhile (this task's worker was taken
        for lost): nothing of this pass is committed.
    """
    started = time.time()
    rec = ss.get(sid)
    ss.update(sid, pass_started_at=utcnow_iso(started))
    revision = rec["revision"]
    X, labels_true = _load_X(store, rec)
    state = ss.load_state(sid)
    ready = ss.pop_ready(sid)
    est = _estimator(rec, X, state, answers_follow=bool(ready))
    deltas, reports, closing = Counter(), [], []
    deltas["seeded"], seed_conflicts = _tell_seeds(est, rec, first=state is None)
    deltas["conflicts"] += len(seed_conflicts)
    reports += [("conflicts", c) for c in seed_conflicts]
    answers = ss.all_answers(sid, rec)
    quality = worker_quality_of(rec)
    flags = gold_flags(AnnotatorStore(store).stats(sid), quality)
    excluded = {w for w, g in flags.items() if g["flagged"]} if quality["exclude_flagged"] else set()
    counted = [(qid, a) for qid, a in answers if a.get("worker_id") not in excluded] if excluded else answers
    dawid_skene = fit_dawid_skene(counted)  # also estimates each worker's accuracy under "majority"
    if ready:
        method = rec.get("aggregation", "one_coin")
        model = dawid_skene if method == "one_coin" else fit_crowdkit(counted, method, rec["random_state"]) \
            if method in CROWDKIT_MODELS else None
        agg = aggregate(counted, ready, model)
        closing = [q for q in ss.questions(sid, ready) if q is not None]
        told = [_told(q, agg[q["question_id"]][0]) for q in closing]
        outcomes = est.tell(told)
        for q, (i, j, *rest), outcome in zip(closing, told, outcomes):
            qid = q["question_id"]
            answer, votes = agg[qid]
            q.update(status="closed", aggregated=answer, votes=votes, model_outcome=outcome)
            if disagree(votes):
                deltas["disagreements"] += 1
                reports.append(("disagreements", {"question_id": qid, "items": q["items"], "votes": votes,
                                                  "aggregated": answer, "tie_breakers": q.get("tie_breakers", 0),
                                                  "tied": majority_vote(votes) == "dont_know"}))
            if outcome != "accepted":
                deltas["questions_unused"] += 1
            if outcome == "conflict":  # URASC (pairwise) only: (i, j, answer)
                deltas["conflicts"] += 1
                reports.append(("conflicts", {"question_id": qid, "items": [i, j],
                                              "answer": {True: "must_link", False: "cannot_link"}.get(rest[0]),
                                              "reason": "contradicts earlier answers; not used"}))
        deltas["questions_closed"] += len(closing)
        est.update()
    pool_size = int(rec["params"].get("pool_size", 20))
    queries = est.suggest_queries(pool_size)
    pool = [_pool_entry(q, rec["question_type"]) for q in queries]
    used = est.n_questions_ - rec["counters"].get("seeded", 0) - deltas["seeded"]  # seeds cost no question
    done = used >= rec["budget"] or not pool
    if not ss.holds_update(sid, token):
        raise PassSuperseded(sid)
    docs = ss.replace_pool(sid, pool, revision, rec.get("lease_seconds", DEFAULT_LEASE_SECONDS), final=done)
    docs.update((q["question_id"], q) for q in closing)
    closed = [q for q in docs.values() if q["status"] == "closed"]
    # The commit point: the state with the taken questions' answers, their closed documents and the
    # counters in one transaction (a pass killed before it is redone from the state before).
    ss.commit_pass(sid, est.get_state(), closing, dict(deltas), reports, token=token)
    labels = np.asarray(est.labels_, dtype=np.int64)
    workers = with_gold(worker_reliability(answers, dawid_skene), flags, excluded)
    model = _model(sid, revision, est, labels, labels_true, closed, workers, used)
    model["excluded_answers"] = len(answers) - len(counted)
    ss.save_model(sid, model)
    ss.record_pass(sid, revision, pass_stats(model, len(answers), started))
    if ss.get_projection(sid) is None:  # the rows do not change: mapped once
        mapped = result_map(sid, X, None, rec["random_state"])
        if mapped is not None:
            ss.save_projection(sid, mapped)
    state = "COMPLETED" if done else "ACTIVE"
    observed = ss.finish_pass(sid, revision, used, state=state, error=None, pass_started_at=None,
                              last_pass_seconds=round(time.time() - started, 3))
    return state, observed


def _notify(sid, url, state, revision):
    """Queue the webhook event of a pass that ended in ``state`` with the model
    at ``revision`` (no ``url``: nothing). Never raises: a lost event must not
    keep the session's update slot."""
    if not url:
        return
    kind = {"ACTIVE": "model_updated", "COMPLETED": "completed", "FAILED": "failed"}[state]
    try:
        deliver_session_webhook.delay(sid, url, {"type": f"session.{kind}", "session_id": sid, "state": state,
                                                 "observed_revision": revision,
                                                 "model_url": f"/v1/sessions/{sid}/model"})
    except Exception:  # noqa: BLE001
        log.exception("session %s: webhook event not queued", sid)


def _end_pass_at_hard_limit(task, exc, task_id, args, kwargs, einfo):
    """``on_failure`` of :func:`session_update`: a pass whose process the hard time limit killed
    fails the session, as a pass failing in its process does.

    Celery calls it in the worker's main process after killing the pool
    process, and acknowledges the message. The pass had committed nothing;
    it held the session's slot until the slot expired, a minute later, with
    nothing queued: a new session stayed INITIALIZING, "re-clustering ...
    is running", for good. Now the session is FAILED with the error, the
    pass is counted and announced, and the slot goes to the pass pending
    answers need, or is freed. Nothing is done unless the task still holds
    the slot; other failures are the task's own to handle. Redis not
    answering, a thread of the main process does it once Redis answers
    (:func:`_end_killed_pass_when_back`; the handler gave up, and the session
    kept its slot until it expired, with no pass queued after it), as for a
    job (:func:`workers.tasks._end_job_at_hard_limit`).

    Parameters
    ----------
    task : celery.Task
    exc : Exception
    task_id : str
        The task, which held the slot.
    args : list
        ``[session_id]``.
    kwargs, einfo
        Unused.
    """
    if not isinstance(exc, TimeLimitExceeded):
        return
    sid = args[0]
    try:
        ss = SessionStore(get_store())
        try:
            _end_killed_pass(ss, sid, task_id)
        except REDIS_DOWN as down:
            log.warning("session %s: Redis unreachable (%s): pass %s ended after its hard time limit once it "
                        "answers", sid, down, task_id)
            threading.Thread(target=_end_killed_pass_when_back, args=(ss, sid, task_id),
                             name=f"shoal-hard-limit-{sid}", daemon=True).start()
    except Exception:  # noqa: BLE001 - never into the pool's timeout handling
        log.exception("session %s: pass %s not ended after its hard time limit", sid, task_id)


def _end_killed_pass(ss, sid, task_id):
    """The end :func:`_end_pass_at_hard_limit` gives the pass of task ``task_id``, which the hard time
    limit killed: the session FAILED, the pass counted and announced, the slot handed on or freed;
    nothing unless the task still holds the slot. Its first steps raise while Redis does not answer
    (the later ones wait for it, :func:`_fail_pass`, :func:`_close_pass`)."""
    liveness.untrack(ss.r, liveness.current_worker_name(), f"session:{sid}", task_id)
    rec = ss.get(sid)
    if rec is None or not ss.holds_update(sid, task_id):
        return
    limit = ss.settings.hard_time_limit
    outcome = _fail_pass(ss, sid, rec, f"TimeLimitExceeded: the pass ran longer than {limit} s")
    _close_pass(ss, sid, task_id, rec, outcome, float(limit))


def _end_killed_pass_when_back(ss, sid, task_id):
    """:func:`_end_killed_pass` once Redis answers, in a thread of the worker's main process started by
    :func:`_end_pass_at_hard_limit` (every step is safe to run again)."""
    try:
        through_outage(_end_killed_pass, ss, sid, task_id)
    except Exception:  # noqa: BLE001 - a thread of its own: logged
        log.exception("session %s: pass %s not ended after its hard time limit", sid, task_id)


@app.task(name="shoal.session_update", bind=True, acks_late=True, reject_on_worker_lost=True,
          on_failure=_end_pass_at_hard_limit)
def session_update(self, sid):
    """Bring a session's model and question pool up to date: one pass (coalesced).

    Runs only as the task holding the session's slot (or, the slot having
    expired, taking it); answers that arrived during the pass are handled by
    a next task, enqueued here, so each task's time limits bound one pass.
    While Redis cannot be reached the task waits for it
    (:func:`workers.tasks.through_outage`), and a pass that Redis left
    midway is run again (it commits all or nothing); a task that ended
    there kept the slot for ``hard_time_limit`` with no pass queued.

    The soft time limit reached in a wait for Redis before the pass began
    hands the slot to a new task once Redis answers (it runs the pass with
    time limits of its own); reached in a wait after the pass, the task
    waits on and ends the pass (:func:`_close_pass`). Either way the task
    used to end holding the slot, no pass queued, until the slot expired
    (``hard_time_limit + 60`` s after the claim), and nothing queued the
    pass after that until more answers closed a question. Reached in the
    pass itself (also in its waits) it fails the pass, as any error does.
    """
    store = get_store()
    ss = SessionStore(store)
    token = self.request.id or uuid.uuid4().hex
    worker, unit = liveness.current_worker_name(), f"session:{sid}"
    try:
        # False: another task holds the slot: it runs the pass these answers need
        if through_outage(ss.claim_update, sid, token):
            # if this worker is lost, a live one resumes the pass
            through_outage(liveness.track, ss.r, worker, unit, token)
            _run_pass(store, ss, sid, token)
    except SoftTimeLimitExceeded:  # waiting for Redis before the pass began (the waits after it go on past it)
        log.warning("session %s: soft time limit reached waiting for Redis before pass %s: handed on", sid, token)
        _next_pass(ss, sid, token)
    finally:
        through_outage_past_soft_limit(liveness.untrack, ss.r, worker, unit, token)


def _run_pass(store, ss, sid, token):
    """The body of :func:`session_update`, run as task ``token`` holding the slot."""
    rec = through_outage(ss.get, sid)
    if rec is None:
        through_outage_past_soft_limit(ss.finish_update, sid, token)
        return
    failure, started = None, time.monotonic()
    try:
        # a pass Redis left midway is done again from the start: it commits all or nothing (commit_pass)
        outcome = through_outage(update_once, store, ss, sid, token)
    except PassSuperseded:  # the pass that has the slot now redoes this one's work, and ends it
        log.warning("session %s: pass %s superseded (its worker was taken for lost)", sid, token)
        if not through_outage_past_soft_limit(ss.exists, sid):
            through_outage_past_soft_limit(ss.delete, sid)
        return
    except Exception as exc:  # noqa: BLE001 - a failing pass must not wedge the session
        failure = exc
    # from here on the pass is decided: its end is written whatever the time (through_outage_past_soft_limit)
    if not through_outage_past_soft_limit(ss.exists, sid):  # deleted during the pass: drop what it wrote back
        through_outage_past_soft_limit(ss.delete, sid)
        return
    if failure is not None:
        log.error("session %s update failed", sid, exc_info=failure)
        outcome = _fail_pass(ss, sid, rec, f"{type(failure).__name__}: {failure}")
    _close_pass(ss, sid, token, rec, outcome, time.monotonic() - started)


def _fail_pass(ss, sid, rec, detail):
    """Leave the session FAILED by a pass that failed (``detail`` says why); returns the pass's
    outcome, ``("FAILED", observed_revision)``: the last good model's."""
    through_outage_past_soft_limit(ss.update, sid, state="FAILED", pass_started_at=None,
                                   error=problem("session_update_failed", "Re-clustering failed", 500, detail))
    return "FAILED", rec["observed_revision"]


def _close_pass(ss, sid, token, rec, outcome, seconds):
    """Count and announce the pass of task ``token``, which ended in ``outcome`` (state, observed
    revision) after ``seconds``; then hand its slot to the pass pending answers need, or free it.
    Redis away, each step waits for it, also past the soft time limit."""
    wait = through_outage_past_soft_limit
    wait(ss.count_pass, outcome[0], seconds)
    _notify(sid, rec.get("callback_url"), *outcome)
    integrations_after_pass(ss, sid)  # connectors send the next batch
    if wait(ss.take_pending, sid, uuid.uuid4().hex):
        _next_pass(ss, sid, token)
        return
    wait(ss.finish_update, sid, token)
    # Answers that arrived between the check and the release set the flag
    # while the slot was still ours: take the slot back for one more pass.
    if wait(ss.take_pending, sid, uuid.uuid4().hex):
        new = uuid.uuid4().hex
        wait(ss.list_unsent, sid, new)  # see _next_pass
        if wait(ss.acquire_update, sid, new):
            _enqueue_pass(ss, sid, new)


def _next_pass(ss, sid, token):
    """Hand the slot of task ``token`` to a new task and enqueue it (Redis away: once it answers,
    also past the soft time limit).

    The new task is listed as unsent first (``SessionStore.list_unsent``): a
    process killed between the hand-over and the send left the slot with a
    task never sent, which the lost worker's recovery did not see (it hands
    on only the slot of the task it lost), until the slot expired (an hour),
    and the questions of that pass waiting for good when nothing was left to
    answer. A live worker sends it now (:func:`workers.liveness.dispatch_unsent`).
    """
    new = uuid.uuid4().hex
    through_outage_past_soft_limit(ss.list_unsent, sid, new)
    if through_outage_past_soft_limit(ss.hand_over_update, sid, token, new):
        _enqueue_pass(ss, sid, new)


def _enqueue_pass(ss, sid, token):
    """Enqueue the pass of task ``token`` (which holds the slot) on the broker of ``ss``'s settings, as
    the service does (:func:`workers.submit.send_pass`), and note it sent; if the queue is unreachable,
    free the slot: the next answers that close a question queue a pass."""
    try:
        send_pass(ss.settings, sid, token)
    except Exception:  # noqa: BLE001
        log.exception("session %s: next pass not queued", sid)
        through_outage_past_soft_limit(ss.finish_update, sid, token)
        return
    through_outage_past_soft_limit(ss.mark_sent, sid, token)
