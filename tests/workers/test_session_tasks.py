"""Session passes on the worker: model outputs, the base graph kept, passes killed midway."""

import numpy as np
import pytest

from workers.session_tasks import contradicted_answers, question_id

from .redis_relay import store_behind_lost_reply


def _passes_sent_since(store, before):
    """``(task id, args repr)`` of the ``shoal.session_update`` messages queued on the test store's broker
    (where no worker consumes them) since its short queue held ``before`` messages, oldest first."""
    import json

    queue = store.settings.queues["short"]
    new = store.r.lrange(queue, 0, store.r.llen(queue) - before - 1)[::-1]  # LPUSHed: newest first
    return [(h["id"], h["argsrepr"]) for h in (json.loads(m)["headers"] for m in new)
            if h["task"] == "shoal.session_update"]


def _answer_truthfully(ss, sid, y):
    """Lease five questions of session ``sid`` as worker "w" and answer each from the labels ``y``."""
    for q in ss.lease(sid, 5, "w"):
        a, b = q["items"]
        ss.record_answer(sid, q["question_id"], "must_link" if y[a] == y[b] else "cannot_link", "w",
                         q["question_id"], 0)


def _closed(i, j, aggregated, votes=None):
    return {"question_id": question_id(i, j), "items": [i, j], "status": "closed", "aggregated": aggregated,
            "votes": votes or [aggregated]}


def test_contradicted_answers_lists_the_aggregated_answers_the_labels_go_against():
    labels = np.array([0, 0, 1, 1, 2])
    closed = [
        _closed(3, 4, "cannot_link"),                       # apart: kept
        _closed(2, 3, "cannot_link", ["cannot_link", "must_link", "cannot_link"]),  # together: against
        _closed(0, 2, "must_link"),                         # apart: against
        _closed(0, 1, "must_link"),                         # together: kept
        _closed(1, 4, "dont_know", ["must_link", "cannot_link"]),  # never listed
    ]
    out = contradicted_answers(labels, closed)
    assert out == [
        {"question_id": "q_0_2", "items": [0, 2], "answer": "must_link", "votes": ["must_link"]},
        {"question_id": "q_2_3", "items": [2, 3], "answer": "cannot_link",
         "votes": ["cannot_link", "must_link", "cannot_link"]},
    ]
    assert contradicted_answers(np.zeros(5, dtype=int), closed) == [
        {"question_id": q, "items": it, "answer": "cannot_link", "votes": v}
        for q, it, v in (("q_2_3", [2, 3], closed[1]["votes"]), ("q_3_4", [3, 4], ["cannot_link"]))]


def test_no_closed_questions_no_contradictions():
    assert contradicted_answers(np.array([0, 1, 1]), []) == []
    assert contradicted_answers(np.array([0, 1, 1]), [_closed(0, 1, "dont_know")]) == []


def test_a_sessions_passes_in_one_worker_process_share_its_base_graph(client, store, blobs_dataset):
    """The pass after the first restores URASC on the graph the first one built (same object),
    and the saved state's labels equal a pass that rebuilds everything."""
    from workers import session_tasks
    from workers.session_store import SessionStore

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 20,
                                            "pool_size": 5}).json["id"]
    ss = SessionStore(store)
    session_tasks.update_once(store, ss, sid)
    graph = session_tasks._BASE_GRAPHS[sid]
    _answer_truthfully(ss, sid, blobs_dataset[2])
    saved = ss.load_state(sid)
    ready = ss.r.lrange(ss._key(sid, ":ready"), 0, -1)
    assert len(ready) == 5
    session_tasks.update_once(store, ss, sid)
    assert session_tasks._BASE_GRAPHS[sid] is graph
    kept = ss.load_state(sid)
    # the same pass with nothing kept: rebuilt graph, full restore
    session_tasks._BASE_GRAPHS.pop(sid)
    ss.save_state(sid, saved)
    ss.r.rpush(ss._key(sid, ":ready"), *ready)  # the same answers, told in the same order
    session_tasks.update_once(store, ss, sid)
    assert session_tasks._BASE_GRAPHS[sid] is not graph
    assert ss.load_state(sid)["labels"] == kept["labels"] and ss.load_state(sid)["answers"] == kept["answers"]


def test_the_model_lists_the_answered_pairs_and_the_certain_sets(client, store, blobs_dataset):
    """GET .../model carries the pairs the estimator was told and the certain sets, not the O(n^2)
    pairs the sets imply (which made long sessions' passes slow: bench/speed_session_pass.py)."""
    from workers import session_tasks
    from workers.session_store import SessionStore

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30,
                                            "pool_size": 10}).json["id"]
    ss = SessionStore(store)
    y = blobs_dataset[2]
    told = {}
    for round_ in range(3):
        session_tasks.update_once(store, ss, sid)
        for q in ss.lease(sid, 10, "w"):
            a, b = q["items"]
            told[(a, b)] = "must_link" if y[a] == y[b] else "cannot_link"
            ss.record_answer(sid, q["question_id"], told[(a, b)], "w", q["question_id"], round_)
    session_tasks.update_once(store, ss, sid)
    model = client.get(f"/v1/sessions/{sid}/model").json
    state = ss.load_state(sid)
    accepted = {(i, j): "must_link" if a == 1 else "cannot_link" for i, j, a in state["answers"]}
    assert accepted and set(accepted) <= set(told)
    assert {tuple(p) for p in model["must_link"]} == {p for p, a in accepted.items() if a == "must_link"}
    assert {tuple(p) for p in model["cannot_link"]} == {p for p, a in accepted.items() if a == "cannot_link"}
    assert model["certain_sets"] == state["certain_sets"] and len(model["certain_sets"]) == model["n_certain_sets"]
    members = [v for s in model["certain_sets"] for v in s]
    assert len(members) == len(set(members)) and all(len(set(y[s])) == 1 for s in model["certain_sets"])


def _answer_all(est, truth, rounds=30):
    for _ in range(rounds):
        qs = est.suggest_queries(5)
        if not qs:
            break
        est.tell([(q["i"], q["j"], truth(q["i"], q["j"])) for q in qs])
    est.update()
    return est


@pytest.mark.parametrize("k_growth", ["sets", "verify"])
def test_a_given_n_clusters_that_grew_is_reported_in_the_model(k_growth):
    """Every answer 'no' founds a certain set per sample asked: the paper's rule (U14) then grows a
    given K and the model says so; 'verify' keeps K and has nothing to report."""
    from clustering import URASC
    from workers.session_tasks import _model, model_warnings

    X = np.random.default_rng(0).normal(size=(30, 2))
    est = _answer_all(URASC(n_clusters=2, budget=12, k_growth=k_growth, random_state=0).fit(X),
                      lambda i, j: False)
    model = _model("s", 1, est, np.asarray(est.labels_), None, [], [])
    if k_growth == "sets":
        assert est.n_clusters_ > 2 and model["n_clusters"] == est.n_clusters_
        assert [w["code"] for w in model["warnings"]] == ["n_clusters_grew"]
        assert f"has {est.n_clusters_} clusters" in model["warnings"][0]["detail"]
    else:
        assert est.n_clusters_ == 2 and model["warnings"] == []
    # n_clusters unknown: growing is what the client asked for
    free = _answer_all(URASC(budget=12, k_growth=k_growth, random_state=0).fit(X), lambda i, j: False)
    assert model_warnings(free) == []
    assert free.n_clusters_ > 2 or k_growth == "verify"  # verify asks again before founding a set


class _Killed(BaseException):
    """Stands for the worker process dying mid-pass: nothing after it runs, no handler catches it."""


@pytest.mark.parametrize("dies_in", ["tell", "update", "replace_pool", "save_model"])
def test_a_pass_killed_midway_loses_no_answer_and_counts_none_twice(client, store, blobs_dataset, monkeypatch,
                                                                    dies_in):
    """The redelivered pass after a worker was killed mid-pass tells the model every question the
    killed pass took: they end closed, used and counted once, whatever the point the pass died at."""
    from clustering._urasc import URASC
    from workers import session_tasks
    from workers.session_store import SessionStore

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30,
                                            "pool_size": 5}).json["id"]
    ss = SessionStore(store)
    session_tasks.update_once(store, ss, sid)
    y = blobs_dataset[2]
    leased = ss.lease(sid, 5, "w")
    for q in leased:
        a, b = q["items"]
        assert ss.record_answer(sid, q["question_id"], "must_link" if y[a] == y[b] else "cannot_link", "w",
                                q["question_id"], 0) == "accepted:ready"
    owner = SessionStore if dies_in in ("replace_pool", "save_model") else URASC
    real = getattr(owner, dies_in)

    def die(*args, **kwargs):
        real(*args, **kwargs)
        raise _Killed

    monkeypatch.setattr(owner, dies_in, die)
    with pytest.raises(_Killed):
        session_tasks.update_once(store, ss, sid)
    monkeypatch.setattr(owner, dies_in, real)
    session_tasks.update_once(store, ss, sid)  # the task, redelivered
    rec = ss.get(sid)
    qids = sorted(q["question_id"] for q in leased)
    docs = ss.questions(sid, qids)
    assert [d["status"] for d in docs] == ["closed"] * 5, docs
    assert rec["counters"]["questions_closed"] == 5, rec["counters"]
    assert rec["budget_used"] + rec["counters"]["questions_unused"] == 5, rec
    assert rec["budget_committed"] == rec["budget_used"]
    told = {tuple(sorted(p[:2])) for p in ss.load_state(sid)["answers"]}
    assert {tuple(sorted(d["items"])) for d in docs if d["model_outcome"] == "accepted"} <= told
    assert rec["observed_revision"] == rec["revision"]
    assert not store.r.exists(ss._key(sid, ":taken"))


def test_a_pass_takes_the_slot_as_older_code_left_it(client, store, blobs_dataset):
    """Code before the per-task slot wrote "running", naming no task: a pass must not wait for it to
    expire (an hour in production) when the worker that wrote it was killed by the upgrade."""
    from workers.session_store import SessionStore

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30}).json["id"]
    ss = SessionStore(store)
    store.r.set(ss._key(sid, ":update"), b"running", ex=3600)
    assert ss.claim_update(sid, "task-1")
    assert not ss.claim_update(sid, "task-2")  # a slot held by a task id stays that task's


def test_a_pass_whose_slot_was_handed_over_writes_nothing(client, store, blobs_dataset):
    """A worker whose heartbeat stalled (its host cut off from Redis for a while, or paused) is taken
    for lost and its pass's slot handed to a new pass (workers.liveness), yet its own pass may still
    come to its end: it must not commit beside the new one (its questions counted twice, the pool and
    the model written by two passes)."""
    from workers import session_tasks
    from workers.session_store import SessionStore

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30,
                                            "pool_size": 5}).json["id"]
    ss = SessionStore(store)
    session_tasks.update_once(store, ss, sid)
    _answer_truthfully(ss, sid, blobs_dataset[2])
    store.r.set(ss._key(sid, ":update"), "pass-1")
    before = ss.get(sid)
    assert ss.hand_over_update(sid, "pass-1", "pass-2")  # what recover_worker does
    session_tasks._run_pass(store, ss, sid, "pass-1")  # the stalled worker's pass goes on
    rec = ss.get(sid)
    assert rec["counters"] == before["counters"] and rec["observed_revision"] == before["observed_revision"]
    assert store.r.get(ss._key(sid, ":update")) == b"pass-2"
    session_tasks._run_pass(store, ss, sid, "pass-2")
    rec = ss.get(sid)
    assert rec["counters"]["questions_closed"] == 5 and rec["observed_revision"] == rec["revision"], rec
    assert not store.r.exists(ss._key(sid, ":update"))


def _through_lost_reply(store, trigger):
    """A SessionStore on the test Redis behind a lost reply (:func:`store_behind_lost_reply`; and the relay, to close)."""
    from workers.session_store import SessionStore

    cut, relay = store_behind_lost_reply(store, trigger)
    return SessionStore(cut), relay


@pytest.mark.parametrize("step", ["hand_over", "acquire"])
def test_a_slot_step_whose_reply_redis_lost_is_not_taken_for_refused(client, store, blobs_dataset, step):
    """A pass ends by handing its slot to the next pass (or taking it back for one), through Redis
    outages (:func:`workers.tasks.through_outage`). Redis gone right after the step, its reply lost: the
    retry found the slot already the new task's, answered False, and the pass queued nothing: the slot
    held for a task never sent until it expired (hard time limit + 60 s), the answers waiting untold."""
    from workers.session_store import SessionStore
    from workers.tasks import through_outage

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30}).json["id"]
    ss = SessionStore(store)
    slot = ss._key(sid, ":update")
    store.r.delete(slot)
    if step == "hand_over":
        assert ss.claim_update(sid, "pass-1")
    cut, relay = _through_lost_reply(store, b"pass-2")
    try:
        if step == "hand_over":
            ok = through_outage(cut.hand_over_update, sid, "pass-1", "pass-2")
        else:
            ok = through_outage(cut.acquire_update, sid, "pass-2")
        assert relay.lost
    finally:
        relay.close()
    assert store.r.get(slot) == b"pass-2" and ok


def test_a_pending_pass_whose_flag_redis_lost_the_reply_of_is_still_queued(client, store, blobs_dataset):
    """Answers came during a pass (the pending flag set): the pass ends by taking the flag and handing
    its slot to a new task. Redis gone right after the flag was taken, its reply lost: the retry found
    the flag gone, answered False, and the pass freed its slot with nothing queued: the answers waited
    unused until more answers came (none, once the budget was used). The task goes to the broker of the
    test store's Redis, where no worker consumes it."""
    from workers import session_tasks
    from workers.session_store import SessionStore

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30}).json["id"]
    ss = SessionStore(store)
    slot = ss._key(sid, ":update")
    store.r.delete(slot)
    assert ss.claim_update(sid, "pass-1") and not ss.request_update(sid, "answers")  # the flag is set
    rec = ss.get(sid)
    before = store.r.llen(store.settings.queues["short"])
    cut, relay = _through_lost_reply(store, b":update_pending")
    try:
        session_tasks._close_pass(cut, sid, "pass-1", rec, ("ACTIVE", rec["observed_revision"]), 0.1)
        assert relay.lost
    finally:
        relay.close()
    token = store.r.get(slot)
    assert token not in (None, b"pass-1")  # handed to the next pass, which is queued
    assert _passes_sent_since(store, before) == [(token.decode(), repr([sid]))]


def test_a_pass_commit_whose_reply_redis_lost_counts_its_questions_once(client, store, blobs_dataset):
    """A pass's commit went through and Redis lost its reply: redis-py, its WATCH gone, ran the
    transaction again, which read the counters the commit had written and added the pass's deltas a
    second time (``questions_closed`` 10 for 5 questions, in the session's view)."""
    from workers import session_tasks
    from workers.session_store import SessionStore
    from workers.tasks import through_outage

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30,
                                            "pool_size": 5}).json["id"]
    ss = SessionStore(store)
    session_tasks.update_once(store, ss, sid)
    _answer_truthfully(ss, sid, blobs_dataset[2])
    cut, relay = _through_lost_reply(store, b'"questions_closed"')  # the commit's MULTI ... EXEC
    try:
        through_outage(session_tasks.update_once, cut.store, cut, sid)
        assert relay.lost
    finally:
        relay.close()
    rec = ss.get(sid)
    assert rec["counters"]["questions_closed"] == 5, rec["counters"]
    assert rec["budget_used"] + rec["counters"]["questions_unused"] == 5, rec
    assert rec["observed_revision"] == rec["revision"]


@pytest.mark.parametrize("reached_in", ["start", "end"])
def test_a_pass_past_its_soft_limit_waiting_for_redis_hands_its_slot_on(client, store, blobs_dataset, monkeypatch,
                                                                        reached_in):
    """The soft limit came while the pass's task waited for Redis, at its start (reading the session
    after claiming the slot) or at its end (after the pass was written): the task ended holding the
    session's slot, with the pass never run or the pass the answers meanwhile asked for never queued,
    until the slot expired (hard time limit + 60 s), and nothing queued one after that. Once Redis
    answers, the slot goes to a new task now, queued on the test store's broker."""
    from workers import session_scripts, session_tasks, tasks
    from workers.session_store import SessionStore

    from .redis_relay import soft_limit_once_redis_is_down, store_behind_outage

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30,
                                            "pool_size": 5}).json["id"]
    ss = SessionStore(store)
    slot = ss._key(sid, ":update")
    store.r.set(slot, "pass-1")  # as the request that queued task pass-1 left it
    if reached_in == "end":
        store.r.set(ss._key(sid, ":update_pending"), b"1")  # answers came during the pass
    for script in (session_scripts.SLOT_LUA, session_scripts.FINISH_PASS_LUA):
        store.r.script_load(script)  # the trigger is the script's call, not a load after a NOSCRIPT
    before = store.r.llen(store.settings.queues["short"])
    cut, relay = store_behind_outage(store, b"claim" if reached_in == "start" else b"last_pass_seconds")
    monkeypatch.setattr(tasks, "_store", cut)
    try:
        with soft_limit_once_redis_is_down(relay) as reached:
            session_tasks.session_update.apply(args=[sid], task_id="pass-1")
        assert reached.is_set()
    finally:
        relay.close()
    token = store.r.get(slot)
    assert token not in (None, b"pass-1") and _passes_sent_since(store, before) == [(token.decode(), repr([sid]))]
    rec = ss.get(sid)
    assert rec["observed_revision"] == (0 if reached_in == "end" else -1), rec


def test_a_pass_the_hard_limit_killed_with_redis_away_ends_once_redis_answers(client, store, blobs_dataset,
                                                                             monkeypatch):
    """The hard limit came while Redis was away (the soft limit's hand-over waiting for it, or a Redis
    restart at that moment): the worker's ``on_failure`` could not read the session and gave up, so the
    session kept its slot until it expired, with no pass queued after it: a new session stayed
    INITIALIZING, with no questions, for good. As a job's end (``_end_job_at_hard_limit``), the end is
    written once Redis answers: FAILED (``session_update_failed``), the pass the answers asked for queued."""
    import threading

    from celery.exceptions import TimeLimitExceeded

    from workers import session_tasks, tasks
    from workers.session_store import SessionStore

    from .redis_relay import store_behind_outage

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30}).json["id"]
    ss = SessionStore(store)
    slot = ss._key(sid, ":update")
    store.r.delete(slot)
    assert ss.claim_update(sid, "pass-1")  # the pass that the hard limit kills
    store.r.set(ss._key(sid, ":update_pending"), b"1")  # answers came during the pass
    before = store.r.llen(store.settings.queues["short"])
    cut, relay = store_behind_outage(store, b"never sent")
    relay.cut()
    monkeypatch.setattr(tasks, "_store", cut)
    try:
        session_tasks._end_pass_at_hard_limit(session_tasks.session_update, TimeLimitExceeded(2), "pass-1", [sid],
                                              {}, None)
        assert ss.get(sid)["state"] == "INITIALIZING" and store.r.get(slot) == b"pass-1"  # not written yet
        relay.restore()
        for waiting in threading.enumerate():
            if waiting.name == f"shoal-hard-limit-{sid}":
                waiting.join(60)
    finally:
        relay.close()
    rec = ss.get(sid)
    assert rec["state"] == "FAILED" and rec["error"]["code"] == "session_update_failed", rec
    token = store.r.get(slot)
    assert token not in (None, b"pass-1") and _passes_sent_since(store, before) == [(token.decode(), repr([sid]))]
