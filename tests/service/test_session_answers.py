"""Answers to a session over HTTP: per-item outcomes, the ModelUpToDate condition, the budget.

The worker's passes run here (``update_once``) on the test store, whose queue
no worker consumes, so the tests decide when a pass runs.
"""

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
