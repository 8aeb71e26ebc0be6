"""Answers to a session over HTTP: per-item outcomes, the ModelUpToDate condition, the budget.

The worker's passes run here (``update_once``) on the test store, whose queue
no worker consumes, so the tests decide when a pass runs.
"""

import math
import time

import pytest

PROBLEM = "application/problem+json"


def _open(client, store, dataset_id, **options):
    """A session whose first pass ran (the pool is open); returns (sid, SessionStore)."""
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    r = client.post("/v1/sessions", json={"dataset_id": dataset_id, "n_clusters": 3, "budget": 30, **options})
    assert r.status_code == 201, r.json
    sid, ss = r.json["id"], SessionStore(store)
    update_once(store, ss, sid)
    ss.finish_update(sid)  # as the worker does after its pass
    return sid, ss


def _answer(client, sid, *items):
    """POST answers given as (question_id, answer, worker_id, assignment_id) tuples."""
    body = {"answers": [{k: v for k, v in zip(("question_id", "answer", "worker_id", "assignment_id"), it)
                         if v is not None} for it in items]}
    r = client.post(f"/v1/sessions/{sid}/answers", json=body)
    assert r.status_code == 200, r.json
    return r.json


def _condition(session, kind="ModelUpToDate"):
    return {c["type"]: c for c in session["conditions"]}[kind]


# ---------------------------------------------------------------- ModelUpToDate


def test_an_answer_that_closes_no_question_leaves_the_model_up_to_date(client, store, blobs_dataset):
    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=3)
    q = client.post(f"/v1/sessions/{sid}/questions", json={"count": 1, "worker_id": "w1"}).json["questions"][0]
    res = _answer(client, sid, (q["question_id"], "must_link", "w1", "a1"))
    assert res["results"][0]["outcome"] == "accepted" and res["revision"] == 1
    s = client.get(f"/v1/sessions/{sid}").json
    cond = _condition(s)
    assert (s["revision"], s["observed_revision"], cond["status"], cond["reason"]) == (1, 1, "True", None), s
    assert not store.r.exists(ss._key(sid, ":update"))  # and nothing was queued for it
    assert client.get(f"/v1/sessions/{sid}/model").json["observed_revision"] == 1


def test_a_pass_running_while_an_answer_closes_nothing_ends_up_to_date(client, store, blobs_dataset, monkeypatch):
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=2)
    q1, q2 = ss.lease(sid, 2, None)
    _answer(client, sid, (q1["question_id"], "must_link", "w1", "a1"), (q1["question_id"], "must_link", "w2", "a2"))
    s = client.get(f"/v1/sessions/{sid}").json  # q1 is waiting for the queued pass
    assert (s["revision"], s["observed_revision"]) == (1, 0) and _condition(s)["reason"].endswith("queued")
    pop = SessionStore.pop_ready

    def pop_then_answer(self, session_id):
        taken = pop(self, session_id)
        monkeypatch.setattr(SessionStore, "pop_ready", pop)
        _answer(client, sid, (q2["question_id"], "cannot_link", "w1", "a3"))  # closes nothing, meanwhile
        s = client.get(f"/v1/sessions/{sid}").json
        assert (s["revision"], s["observed_revision"], _condition(s)["status"]) == (2, 0, "False")
        return taken

    monkeypatch.setattr(SessionStore, "pop_ready", pop_then_answer)
    update_once(store, ss, sid)  # the pass read revision 1; it ends with nothing waiting
    s = client.get(f"/v1/sessions/{sid}").json
    assert (s["revision"], s["observed_revision"], _condition(s)["status"]) == (2, 2, "True"), s
    assert client.get(f"/v1/sessions/{sid}/model").json["observed_revision"] == 2


def test_a_question_closed_while_a_pass_runs_keeps_the_model_behind(client, store, blobs_dataset, monkeypatch):
    """Answers that close a question after the pass took the waiting ones: that pass's
    model does not reflect them, so the session stays not up to date (a next pass is due)."""
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0])
    q1, q2 = ss.lease(sid, 2, None)
    _answer(client, sid, (q1["question_id"], "must_link", "w1", "a1"))
    pop = SessionStore.pop_ready

    def pop_then_answer(self, session_id):
        taken = pop(self, session_id)
        monkeypatch.setattr(SessionStore, "pop_ready", pop)
        _answer(client, sid, (q2["question_id"], "must_link", "w1", "a2"))  # another request, meanwhile
        return taken

    monkeypatch.setattr(SessionStore, "pop_ready", pop_then_answer)
    update_once(store, ss, sid)
    s = client.get(f"/v1/sessions/{sid}").json
    assert (s["revision"], s["observed_revision"], _condition(s)["status"]) == (2, 1, "False"), s
    update_once(store, ss, sid)
    s = client.get(f"/v1/sessions/{sid}").json
    assert (s["observed_revision"], _condition(s)["status"]) == (2, "True")


# ---------------------------------------------------------------- one worker, one answer per question


def test_a_worker_answers_a_question_once(client, store, blobs_dataset):
    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=3)
    qid = ss.lease(sid, 1, None)[0]["question_id"]
    res = _answer(client, sid, (qid, "must_link", "w1", "x1"), (qid, "must_link", "w1", "x2"),
                  (qid, "cannot_link", "w1", "x3"), (qid, "must_link", "w1", "x1"))
    assert [x["outcome"] for x in res["results"]] == ["accepted", "rejected", "rejected", "duplicate"]
    assert "w1 already answered" in res["results"][1]["reason"] and "x1" in res["results"][1]["reason"]
    # the rejected assignments are not recorded: retried, they are rejected again
    again = _answer(client, sid, (qid, "must_link", "w1", "x2"))
    assert again["results"][0]["outcome"] == "rejected"
    assert ss.question(sid, qid)["n_answers"] == 1 and ss.question(sid, qid)["status"] == "open"
    # answers without a worker_id are not tracked per worker
    res = _answer(client, sid, (qid, "must_link", None, "y1"), (qid, "must_link", None, "y2"))
    assert [x["outcome"] for x in res["results"]] == ["accepted", "accepted"]
    assert ss.question(sid, qid)["status"] == "ready"


def test_leasing_never_hands_a_worker_a_question_it_answered(client, store, blobs_dataset):
    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=3, pool_size=4)
    first = ss.lease(sid, 1, None)[0]["question_id"]  # answered without a lease
    assert _answer(client, sid, (first, "must_link", "w1", "a1"))["results"][0]["outcome"] == "accepted"
    leased = client.post(f"/v1/sessions/{sid}/questions", json={"count": 10, "worker_id": "w1"}).json["questions"]
    assert len(leased) == 3 and first not in [q["question_id"] for q in leased]
    assert first in [q["question_id"] for q in ss.lease(sid, 10, "w2")]


def test_an_assignment_id_used_on_another_question_is_rejected_naming_it(client, store, blobs_dataset):
    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=2)
    q1, q2 = (q["question_id"] for q in ss.lease(sid, 2, None))
    res = _answer(client, sid, (q1, "must_link", "w1", "a1"), (q2, "must_link", "w1", "a1"),
                  (q1, "cannot_link", "w1", "a1"))
    assert [x["outcome"] for x in res["results"]] == ["accepted", "rejected", "duplicate"]
    assert res["results"][1]["reason"] == f"assignment_id 'a1' was already used for question {q1}"
    assert ss.question(sid, q2)["n_answers"] == 0


# ---------------------------------------------------------------- the budget


def test_answers_once_the_budget_is_used_up_are_late_and_the_counters_add_up(client, store, blobs_dataset):
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0], budget=3, strategy="random", pool_size=10)
    ss.replace_pool(sid, [{"question_id": f"q{k}", "type": "pairwise", "items": [2 * k, 2 * k + 1]}
                          for k in range(5)], 0)
    leased = {w: client.post(f"/v1/sessions/{sid}/questions", json={"count": 2, "worker_id": w}).json["questions"]
              for w in ("w1", "w2", "w3")}
    # three questions of budget: never more than three in flight, so nobody is handed work that can only be late
    assert [len(qs) for qs in leased.values()] == [2, 1, 0]
    untracked = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5}).json["questions"]
    assert {q["question_id"] for q in untracked} == {"q0", "q1", "q2"}  # the three in flight, nothing new
    leased["w1"] = leased["w1"][:1]
    leased["w3"] = [{"question_id": "q3"}]  # answered by id, without a lease
    for w, qs in leased.items():
        assert _answer(client, sid, (qs[0]["question_id"], "must_link", w, f"{w}-0"))["results"][0]["outcome"] \
            == "accepted"
    s = client.get(f"/v1/sessions/{sid}").json
    assert s["budget_committed"] == 3 and s["budget_used"] == 0 and _condition(s, "BudgetExhausted")["reason"]
    # the three questions waiting for the model hold the whole budget: nothing more is handed out ...
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w5"})
    assert r.json["questions"] == [] and r.headers["Retry-After"] == str(max(1, math.ceil(s["last_pass_seconds"])))
    # ... and answers to the other questions are late, with the reason
    res = _answer(client, sid, *[(q, "cannot_link", "w4", f"w4-{q}") for q in ("q1", "q4")])
    assert [x["outcome"] for x in res["results"]] == ["late"] * 2
    assert all("budget" in x["reason"] for x in res["results"])
    update_once(store, ss, sid)
    s = client.get(f"/v1/sessions/{sid}").json
    c = s["counters"]
    assert s["state"] == "COMPLETED" and s["budget_used"] == 3 and s["budget_committed"] == 3
    assert c["questions_closed"] == s["budget_used"] + c["questions_unused"] == 3
    assert c["answers_received"] == c["accepted"] + c["duplicate"] + c["late"] + c["rejected"] == 5
    assert client.get(f"/v1/sessions/{sid}/model").json["n_questions_used"] == 3
    # no question is left open once the budget is used up; later answers are late, with the reason
    assert client.get(f"/v1/sessions/{sid}/questions?status=open").json["questions"] == []
    res = _answer(client, sid, ("q1", "must_link", "w9", "w9-0"))
    assert res["results"][0]["outcome"] == "late" and res["results"][0]["reason"]


def test_questions_the_model_did_not_use_are_counted_and_say_why(client, store, blobs_dataset):
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0], budget=5, strategy="random")
    same_pair = [{"question_id": "q_a", "type": "pairwise", "items": [3, 7]},
                 {"question_id": "q_b", "type": "pairwise", "items": [7, 3]}]
    ss.replace_pool(sid, same_pair, 0)
    _answer(client, sid, ("q_a", "must_link", "w1", "a1"), ("q_b", "must_link", "w1", "a2"))
    assert client.get(f"/v1/sessions/{sid}").json["budget_committed"] == 2
    update_once(store, ss, sid)
    s = client.get(f"/v1/sessions/{sid}").json
    c = s["counters"]
    assert (s["budget_used"], s["budget_committed"], c["questions_closed"], c["questions_unused"]) == (1, 1, 2, 1)
    closed = {q["question_id"]: q for q in
              client.get(f"/v1/sessions/{sid}/questions?status=closed").json["questions"]}
    assert (closed["q_a"]["model_outcome"], closed["q_b"]["model_outcome"]) == ("accepted", "duplicate")
    assert s["state"] == "ACTIVE" and s["budget_remaining"] == 4


# ---------------------------------------------------------------- input


@pytest.mark.parametrize("field", ["worker_id", "assignment_id"])
def test_empty_worker_and_assignment_ids_are_422(client, store, blobs_dataset, field):
    sid, ss = _open(client, store, blobs_dataset[0])
    qid = ss.lease(sid, 1, None)[0]["question_id"]
    r = client.post(f"/v1/sessions/{sid}/answers",
                    json={"answers": [{"question_id": qid, "answer": "must_link", field: ""}]})
    assert r.status_code == 422 and r.mimetype == PROBLEM and f"/answers/0/{field}" in r.json["errors"], r.json
    assert ss.question(sid, qid)["n_answers"] == 0


@pytest.mark.parametrize("body", ["null", "[]", "3", '"x"'])
def test_a_lease_request_that_is_not_an_object_is_422(client, store, blobs_dataset, body):
    sid, _ = _open(client, store, blobs_dataset[0])
    r = client.post(f"/v1/sessions/{sid}/questions", data=body, content_type="application/json")
    assert r.status_code == 422 and r.mimetype == PROBLEM and "/" in r.json["errors"], r.json


def test_a_late_answer_past_the_budget_frees_its_lease_slot(client, store, blobs_dataset):
    """Otherwise a question kept in the pool after a pass left budget unused stays held by a
    worker whose answer was refused, and nobody else is handed it (a crowd stalled so)."""
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0], budget=2, strategy="random")
    pool = [{"question_id": qid, "type": "pairwise", "items": items}
            for qid, items in (("q_a", [3, 7]), ("q_b", [7, 3]), ("q_c", [4, 9]), ("q_d", [3, 7]))]
    ss.replace_pool(sid, pool, 0)
    held = {w: [q["question_id"] for q in ss.lease(sid, 1, w)] for w in ("w1", "w2", "w3")}
    assert held == {"w1": ["q_a"], "w2": ["q_b"], "w3": []}  # two questions of budget, two in flight
    _answer(client, sid, ("q_a", "must_link", "w1", "a1"), ("q_b", "must_link", "w2", "a2"))
    update_once(store, ss, sid)  # q_b repeats q_a: unused, so one question of the budget is free again
    assert client.get(f"/v1/sessions/{sid}").json["budget_committed"] == 1
    ss.replace_pool(sid, pool[2:], 1)
    assert [q["question_id"] for q in ss.lease(sid, 1, "w3")] == ["q_c"]
    _answer(client, sid, ("q_d", "must_link", "w5", "a5"))  # answered by id, without a lease: the budget is full
    res = _answer(client, sid, ("q_c", "must_link", "w3", "a3"))
    assert res["results"][0]["outcome"] == "late" and "budget" in res["results"][0]["reason"]
    update_once(store, ss, sid)  # q_d repeats q_a: unused again
    assert client.get(f"/v1/sessions/{sid}").json["budget_committed"] == 1
    ss.replace_pool(sid, [pool[2]], 2)  # q_c suggested again
    assert [q["question_id"] for q in ss.lease(sid, 1, "w4")] == ["q_c"]


def test_a_completed_session_withdraws_unfinished_questions_which_reopen_with_their_answers(
        client, store, blobs_dataset):
    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=3)
    q = ss.lease(sid, 1, None)[0]
    _answer(client, sid, (q["question_id"], "must_link", "w1", "a1"))
    ss.replace_pool(sid, [], 1, final=True)  # what a pass does when the session completes
    assert ss.question(sid, q["question_id"])["status"] == "withdrawn"
    res = _answer(client, sid, (q["question_id"], "must_link", "w2", "a2"))
    assert (res["results"][0]["outcome"], res["results"][0]["reason"]) == (
        "late", "the question was withdrawn (no longer asked)")
    ss.replace_pool(sid, [q], 2)  # suggested again: it reopens with the answer it had
    assert ss.question(sid, q["question_id"])["n_answers"] == 1
    res = _answer(client, sid, (q["question_id"], "must_link", "w1", "a3"), (q["question_id"], "must_link", "w2", "a4"))
    assert [x["outcome"] for x in res["results"]] == ["rejected", "accepted"]


def test_polls_of_a_session_whose_model_is_behind_say_when_to_retry(client, store, blobs_dataset):
    """As a job's poll does: Retry-After while the model is behind the answers, none once it caught up."""
    r = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "n_clusters": 3, "budget": 30})
    assert r.status_code == 201 and r.headers["Retry-After"] == "1"
    sid = r.json["id"]  # no worker consumes this store's queue: the first pass has not run
    assert client.get(f"/v1/sessions/{sid}").headers["Retry-After"] == "1"
    model = client.get(f"/v1/sessions/{sid}/model")
    assert model.status_code == 409 and model.json["code"] == "model_not_ready" and model.headers["Retry-After"] == "1"
    sid, ss = _open(client, store, blobs_dataset[0])
    assert "Retry-After" not in client.get(f"/v1/sessions/{sid}").headers
    q = ss.lease(sid, 1, "w1")[0]
    _answer(client, sid, (q["question_id"], "must_link", "w1", "a1"))  # closes it: the model is behind now
    assert client.get(f"/v1/sessions/{sid}").headers["Retry-After"] == "1"


def test_a_partly_answered_question_no_longer_suggested_can_still_be_leased(client, store, blobs_dataset):
    """It stays open with its answers (paid for): it must stay leasable, after the suggested questions,
    until it has its answers; a question without answers is withdrawn instead."""
    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=2)
    pool = [{"question_id": f"q{k}", "type": "pairwise", "items": [2 * k, 2 * k + 1]} for k in range(3)]
    ss.replace_pool(sid, pool, 0)
    assert [q["question_id"] for q in ss.lease(sid, 1, "w1")] == ["q0"]
    _answer(client, sid, ("q0", "must_link", "w1", "a1"))
    ss.replace_pool(sid, pool[2:], 1)  # the next pass suggests only q2
    assert ss.question(sid, "q1")["status"] == "withdrawn"
    assert [q["question_id"] for q in ss.lease(sid, 5, "w2")] == ["q2", "q0"]
    res = _answer(client, sid, ("q0", "must_link", "w2", "a2"))
    assert res["results"][0]["outcome"] == "accepted" and ss.question(sid, "q0")["status"] == "ready"
    ss.replace_pool(sid, pool[2:], 2)
    assert [q["question_id"] for q in ss.lease(sid, 5, "w3")] == ["q2"]  # q0 has its answers


def test_a_retry_of_answers_whose_request_died_queues_the_pass_they_need(client, store, blobs_dataset):
    """The request recorded an answer that closed a question and died before queueing the pass (its
    gunicorn worker killed, Redis gone a moment): its client's retry is a duplicate, and still queues
    the pass, so the question does not wait for good (it did when it held the last of the budget)."""
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0], budget=1)
    q = client.post(f"/v1/sessions/{sid}/questions", json={"count": 1, "worker_id": "w1"}).json["questions"][0]
    assert ss.record_answer(sid, q["question_id"], "must_link", "w1", "a1", 0, 1) == "accepted:ready"  # then died
    assert not store.r.exists(ss._key(sid, ":update"))
    res = _answer(client, sid, (q["question_id"], "must_link", "w1", "a1"))
    assert res["results"][0]["outcome"] == "duplicate"
    assert store.r.exists(ss._key(sid, ":update")), "no pass queued for the waiting question"
    update_once(store, ss, sid)
    s = client.get(f"/v1/sessions/{sid}").json
    assert (s["state"], s["budget_used"], s["counters"]["questions_closed"]) == ("COMPLETED", 1, 1), s
    # answers that close nothing while no question waits queue nothing
    ss.finish_update(sid)
    _answer(client, sid, (q["question_id"], "must_link", "w2", "a2"))
    assert not store.r.exists(ss._key(sid, ":update"))


class _WorkerKilled(BaseException):
    """What the request sees where its gunicorn worker was killed (nothing after it runs)."""


def _killed(*args, **kwargs):
    raise _WorkerKilled


def _post_then_die(client, sid, monkeypatch, *items):
    """POST answers whose request dies once Redis has them, where it would queue the pass they need
    (if it has anything left to do there)."""
    import service.sessions

    with monkeypatch.context() as m:
        m.setattr(service.sessions, "send_session_update", _killed)
        try:
            _answer(client, sid, *items)
        except _WorkerKilled:
            pass


def test_a_retry_of_answers_whose_request_died_during_a_pass_queues_the_next_pass(
        client, store, blobs_dataset, monkeypatch):
    """The answer closed a question after the running pass took the waiting ones, and the request died
    before marking the next pass due: its client's retry is a duplicate, and must mark it (it found the
    slot held and queued nothing, so the question waited until some later answer closed another)."""
    sid, ss = _open(client, store, blobs_dataset[0])
    q1, q2 = (q["question_id"] for q in ss.lease(sid, 2, None))
    assert ss.claim_update(sid, "pass-1") and ss.pop_ready(sid) == []  # a pass running, nothing waited
    _post_then_die(client, sid, monkeypatch, (q1, "must_link", "w1", "a1"))
    res = _answer(client, sid, (q1, "must_link", "w1", "a1"))
    assert res["results"][0]["outcome"] == "duplicate" and res["revision"] == 1
    assert ss.take_pending(sid), "the pass running does not know that the question waits for the next"
    assert store.r.get(ss._key(sid, ":update")) == b"pass-1"  # the running pass keeps its slot
    s = client.get(f"/v1/sessions/{sid}").json
    assert (s["counters"]["accepted"], s["counters"]["duplicate"], s["budget_committed"]) == (1, 1, 1), s
    # a retry of answers whose question a running pass took marks nothing
    ss.finish_update(sid, "pass-1")
    _answer(client, sid, (q2, "must_link", "w1", "a2"))  # queues a pass (no worker consumes the test queue)
    ss.finish_update(sid)
    assert ss.claim_update(sid, "pass-2") and ss.pop_ready(sid) == [q1, q2]
    _answer(client, sid, (q2, "must_link", "w1", "a2"))
    assert not ss.take_pending(sid)


def test_a_retry_of_answers_whose_request_died_enqueueing_the_pass_queues_it(
        client, store, blobs_dataset, monkeypatch):
    """The request took the session's re-clustering slot for its task and died before the task reached
    the queue: the slot named a task that did not exist, so the question waited until the slot expired
    (an hour and a minute by default) and its client's retry, finding the slot held, queued nothing."""
    import workers.broker
    from workers.session_tasks import update_once

    class Broker:
        def send_task(self, *args, **kwargs):
            raise _WorkerKilled

    sid, ss = _open(client, store, blobs_dataset[0])
    q = ss.lease(sid, 1, None)[0]["question_id"]
    with monkeypatch.context() as m:
        m.setattr(workers.broker, "producer", lambda settings: Broker())
        with pytest.raises(_WorkerKilled):
            _answer(client, sid, (q, "must_link", "w1", "a1"))
    dead = store.r.get(ss._key(sid, ":update")).decode()
    res = _answer(client, sid, (q, "must_link", "w1", "a1"))
    assert res["results"][0]["outcome"] == "duplicate" and res["revision"] == 1
    holder = store.r.get(ss._key(sid, ":update")).decode()
    assert holder != dead, "the slot still names the task that was never queued"
    assert not ss.claim_update(sid, dead)  # had it been queued after all, it would run nothing
    assert ss.claim_update(sid, holder)
    update_once(store, ss, sid, holder)
    s = client.get(f"/v1/sessions/{sid}").json
    assert (s["counters"]["questions_closed"], s["observed_revision"], s["revision"]) == (1, 1, 1), s


# ---------------------------------------------------------------- ties


def test_a_leased_question_no_longer_suggested_stays_leasable_and_in_flight(client, store, blobs_dataset):
    """Kept open for the workers holding it, it left the pool: once answered it waited out of reach for
    its other answers until a later pass, and it held no budget, so with one question of budget left
    another question was leased, took it, and the second holder's answer came back late (the first one's
    wasted)."""
    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=2, budget=1, strategy="random")
    pool = [{"question_id": f"q{k}", "type": "pairwise", "items": [2 * k, 2 * k + 1]} for k in range(2)]
    ss.replace_pool(sid, pool, 0)
    assert _lease_ids(client, sid, "w1", 1) == _lease_ids(client, sid, "w2", 1) == ["q0"]
    ss.replace_pool(sid, pool[1:], 1)  # the next pass suggests only q1: q0 stays open for w1 and w2
    assert ss.question(sid, "q0")["status"] == "open"
    assert client.post(f"/v1/sessions/{sid}/questions", json={"count": 5}).json["questions"][0]["question_id"] \
        == "q0"
    _answer(client, sid, ("q0", "must_link", "w1", "a1"))
    assert _lease_ids(client, sid, "w3") == []  # q0 holds the last question of the budget, w2 its other slot
    res = _answer(client, sid, ("q0", "must_link", "w2", "a2"))
    assert res["results"][0]["outcome"] == "accepted" and ss.question(sid, "q0")["status"] == "ready"


def test_every_key_of_a_session_expires_after_answers(client, store, blobs_dataset):
    """The assignments hash and the ready list, created by answers after the pass that set the session's
    TTLs, had none: a session whose questions never closed (or whose passes failed) left them in Redis
    for good once the rest of it had expired."""
    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=2)
    q0, q1 = (q["question_id"] for q in ss.lease(sid, 2, None))
    _answer(client, sid, (q0, "must_link", "w1", "a1"), (q0, "must_link", "w2", "a2"),
            (q1, "dont_know", "w1", "a3"))
    assert ss.question(sid, q0)["status"] == "ready"  # no worker consumes this store's queue: it waits
    keys = list(store.r.scan_iter(match=ss._key(sid, "*")))
    assert {ss._key(sid, ":assignments").encode(), ss._key(sid, ":ready").encode()} <= set(keys)
    assert {k.decode(): store.r.ttl(k) for k in keys if store.r.ttl(k) < 0} == {}


def _lease_ids(client, sid, worker, count=5):
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": count, "worker_id": worker})
    assert r.status_code == 200, r.json
    return [q["question_id"] for q in r.json["questions"]]


def test_a_tie_gets_one_more_answer_which_breaks_it_and_the_report_says_so(client, store, blobs_dataset):
    """1 must_link, 1 cannot_link, 1 dont_know of three: closed as it was, the question became dont_know
    and still used a question of the budget. It stays open for one more worker instead, holds no budget
    meanwhile, and is reported as a tie that got an extra answer."""
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=3, aggregation="majority",
                    strategy="random", budget=5)
    ss.replace_pool(sid, [{"question_id": "q0", "type": "pairwise", "items": [0, 1]},
                          {"question_id": "q1", "type": "pairwise", "items": [2, 3]}], 0)
    res = _answer(client, sid, ("q0", "must_link", "w1", "a1"), ("q0", "cannot_link", "w2", "a2"),
                  ("q0", "dont_know", "w3", "a3"))
    assert [x["outcome"] for x in res["results"]] == ["accepted"] * 3
    q = ss.question(sid, "q0")
    assert (q["status"], q["n_answers"], q["tie_breakers"]) == ("open", 3, 1), q
    s = client.get(f"/v1/sessions/{sid}").json
    assert s["budget_committed"] == 0 and _condition(s)["status"] == "True"  # nothing waits for a pass
    assert not store.r.exists(ss._key(sid, ":update"))
    # one slot for the tie-breaker: the first new worker gets it, the next one does not, nor anyone who answered
    assert _lease_ids(client, sid, "w4") == ["q0", "q1"]
    assert _lease_ids(client, sid, "w5") == ["q1"] and _lease_ids(client, sid, "w1") == ["q1"]
    listed = client.get(f"/v1/sessions/{sid}/questions?status=open").json["questions"]
    assert {x["question_id"]: x["tie_breakers"] for x in listed} == {"q0": 1, "q1": 0}
    res = _answer(client, sid, ("q0", "must_link", "w4", "a4"))
    assert res["results"][0]["outcome"] == "accepted" and ss.question(sid, "q0")["status"] == "ready"
    assert client.get(f"/v1/sessions/{sid}").json["budget_committed"] == 1
    assert _answer(client, sid, ("q0", "cannot_link", "w5", "a5"))["results"][0]["reason"] == \
        "the question already has its answers"
    update_once(store, ss, sid)
    s = client.get(f"/v1/sessions/{sid}").json
    closed = client.get(f"/v1/sessions/{sid}/questions?status=closed").json["questions"]
    assert [(x["question_id"], x["aggregated"], x["n_answers"], x["tie_breakers"]) for x in closed] == \
        [("q0", "must_link", 4, 1)]
    assert s["disagreements"] == [{"question_id": "q0", "items": [0, 1], "aggregated": "must_link",
                                   "votes": ["must_link", "cannot_link", "dont_know", "must_link"],
                                   "tie_breakers": 1, "tied": False}]
    c = s["counters"]
    assert c["questions_closed"] == s["budget_used"] + c["questions_unused"] == 1 and c["disagreements"] == 1
    assert c["answers_received"] == c["accepted"] + c["duplicate"] + c["late"] + c["rejected"] == 5


def test_a_tie_closes_tied_after_answers_per_question_extra_answers(client, store, blobs_dataset):
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=2, aggregation="majority",
                    strategy="random", budget=5)
    ss.replace_pool(sid, [{"question_id": "q0", "type": "pairwise", "items": [0, 1]}], 0)
    _answer(client, sid, ("q0", "must_link", "w1", "a1"), ("q0", "cannot_link", "w2", "a2"))
    ss.replace_pool(sid, [], 1, final=True)  # withdrawn while it waits for its tie-breaker ...
    ss.replace_pool(sid, [{"question_id": "q0", "type": "pairwise", "items": [0, 1]}], 1)
    q = ss.question(sid, "q0")  # ... it reopens still waiting for it
    assert (q["status"], q["n_answers"], q["tie_breakers"]) == ("open", 2, 1), q
    assert _lease_ids(client, sid, "w3") == ["q0"] and _lease_ids(client, sid, "w4") == []
    _answer(client, sid, ("q0", "dont_know", "w3", "a3"))  # still tied: one more
    assert ss.question(sid, "q0")["tie_breakers"] == 2 and _lease_ids(client, sid, "w4") == ["q0"]
    res = _answer(client, sid, ("q0", "dont_know", "w4", "a4"))  # two extra answers: it closes, tied
    assert res["results"][0]["outcome"] == "accepted" and ss.question(sid, "q0")["status"] == "ready"
    update_once(store, ss, sid)
    q = ss.question(sid, "q0")
    assert (q["status"], q["aggregated"], q["n_answers"], q["tie_breakers"]) == ("closed", "dont_know", 4, 2)
    report = client.get(f"/v1/sessions/{sid}").json["disagreements"]
    assert [(r["question_id"], r["tie_breakers"], r["tied"]) for r in report] == [("q0", 2, True)]


def test_a_question_waiting_for_its_tie_breaker_holds_its_place_in_the_budget(client, store, blobs_dataset):
    """It is in flight: with one question of budget left nobody is handed another question, and its
    tie-breaker closes it within the budget."""
    from workers.session_tasks import update_once

    sid, ss = _open(client, store, blobs_dataset[0], answers_per_question=2, strategy="random", budget=1)
    ss.replace_pool(sid, [{"question_id": f"q{k}", "type": "pairwise", "items": [2 * k, 2 * k + 1]}
                          for k in range(3)], 0)
    _answer(client, sid, ("q0", "must_link", "w1", "a1"), ("q0", "cannot_link", "w2", "a2"))
    assert _lease_ids(client, sid, "w3") == ["q0"]
    assert client.post(f"/v1/sessions/{sid}/questions", json={"count": 5}).json["questions"][0]["question_id"] \
        == "q0"
    _answer(client, sid, ("q0", "cannot_link", "w3", "a3"))
    update_once(store, ss, sid)
    s = client.get(f"/v1/sessions/{sid}").json
    assert (s["state"], s["budget_used"], s["counters"]["questions_closed"]) == ("COMPLETED", 1, 1), s
    assert ss.question(sid, "q0")["aggregated"] == "cannot_link"


# ---------------------------------------------------------------- Retry-After of an empty lease


def test_an_empty_lease_says_to_retry_after_the_pass_that_is_due(client, store, blobs_dataset):
    """Questions waiting for the model hold the budget: nothing is handed out until the pass ends,
    which takes about as long as the last one did (a triplet session on 20000 rows: 35 s, not 1)."""
    from workers.records import utcnow_iso

    sid, ss = _open(client, store, blobs_dataset[0], budget=1)
    q = ss.lease(sid, 1, "w1")[0]
    _answer(client, sid, (q["question_id"], "must_link", "w1", "a1"))
    ss.update(sid, last_pass_seconds=12.5)  # a pass as long as a large session's
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w2"})
    assert r.json["questions"] == [] and r.headers["Retry-After"] == "13"  # queued: the whole pass
    started = time.time() - 4
    ss.update(sid, pass_started_at=utcnow_iso(started))  # running for 4 s
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w2"})
    assert r.json["questions"] == []
    assert math.ceil(12.5 - (time.time() - started)) <= int(r.headers["Retry-After"]) <= math.ceil(12.5 - 4)
    ss.update(sid, pass_started_at=utcnow_iso(time.time() - 60))  # overdue: poll as usual
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w2"})
    assert r.headers["Retry-After"] == "1"


def test_an_empty_lease_of_a_session_that_will_ask_nothing_more_has_no_retry_after(client, store, blobs_dataset):
    """A COMPLETED session whose budget is not used up (nothing was left to ask) hands out nothing
    ever again: Retry-After told every worker to poll it forever."""
    sid, ss = _open(client, store, blobs_dataset[0], budget=5)
    ss.replace_pool(sid, [], 0, final=True)
    ss.update(sid, state="COMPLETED")  # what a pass does when nothing is left to ask
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w1"})
    assert r.status_code == 200 and r.json["questions"] == [] and r.json["budget_remaining"] == 5
    assert "Retry-After" not in r.headers
    # an ACTIVE session whose open questions other workers hold: retry after SHOAL_RETRY_AFTER
    sid, ss = _open(client, store, blobs_dataset[0], pool_size=2)
    assert len(ss.lease(sid, 5, "w1")) == 2
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w2"})
    assert r.json["questions"] == [] and r.headers["Retry-After"] == "1"
