"""A job run by ``shoal.run_job`` through Redis outages: a start whose reply Redis lost, the soft time
limit reached while the task waits for Redis (:func:`workers.tasks.through_outage`).

The task runs in this process (Celery's ``apply``) on the test Redis behind a
:class:`RedisRelay`, which drops the connections at a chosen request: the outage comes
at that request, not after a delay.
"""

import threading

import numpy as np
import pytest
from celery.exceptions import TimeLimitExceeded

from workers import tasks

from .redis_relay import soft_limit_once_redis_is_down, store_behind_lost_reply, store_behind_outage


def _job(store, method="spectral"):
    did = store.put_dataset(np.random.default_rng(0).standard_normal((40, 2)), name="job-outage")["id"]
    return store.create_job(dataset_id=did, method=method, n_clusters=2, params={}, constraints={},
                            random_state=0)["id"]


def _run_past_soft_limit(store, monkeypatch, jid, trigger):
    """Run job ``jid``'s task in this process on a store behind a relay that goes down at the first
    request holding ``trigger``; the soft time limit comes in that outage, then Redis answers again."""
    cut, relay = store_behind_outage(store, trigger)
    monkeypatch.setattr(tasks, "_store", cut)
    try:
        with soft_limit_once_redis_is_down(relay) as reached:
            tasks.run_job.apply(args=[jid], task_id=jid)
        assert reached.is_set()
    finally:
        relay.close()


def test_a_start_whose_reply_redis_lost_runs_the_job_once(store, monkeypatch):
    """The start went through (RUNNING, attempt 1), its reply was lost. redis-py ran the transaction
    again, which found the attempt counted, took it for another delivery's start and answered None:
    the task returned, its message acknowledged, and the job stayed RUNNING with no task running it
    until a read failed it as ``worker_lost`` (hard time limit + visibility timeout later, about 3 h)."""
    jid = _job(store)
    cut, relay = store_behind_lost_reply(store, b'"RUNNING"')
    monkeypatch.setattr(tasks, "_store", cut)
    try:
        run = tasks.run_job.apply(args=[jid], task_id=jid)
        assert relay.lost
    finally:
        relay.close()
    assert run.successful(), run.result
    job = store.get_job(jid)
    assert job["state"] == "SUCCEEDED" and job["attempts"] == 1, job


def test_the_soft_limit_reached_waiting_for_redis_to_start_the_job_fails_it(store, monkeypatch):
    """Redis went away as the task read the job: the soft limit came in ``start_job``'s wait and ended the
    task, its message acknowledged; the job stayed QUEUED, off ``jobs:unsent``, with no task to run it,
    for good. It is FAILED (``time_limit``) once Redis answers."""
    jid = _job(store)
    store.mark_sent(jid)
    _run_past_soft_limit(store, monkeypatch, jid, b"HGETALL")
    job = store.get_job(jid)
    assert job["state"] == "FAILED" and job["error"] == tasks.time_limit_error(store.settings), job
    assert job["attempts"] == 0


def test_the_soft_limit_reached_waiting_for_redis_to_end_the_job_still_ends_it(store, monkeypatch):
    """The result was saved and Redis went away: the soft limit came in the wait to write the end and
    ended the task; the job stayed RUNNING under its live worker for ``hard_time_limit +
    visibility_timeout`` (about 3 h), until a read failed it as ``worker_lost``. Its end is written
    once Redis answers."""
    jid = _job(store, "cop_kmeans")  # no affinity: the result's write is one request, the last before the end
    _run_past_soft_limit(store, monkeypatch, jid, b"fit_seconds")
    job = store.get_job(jid)
    assert job["state"] == "SUCCEEDED" and store.get_result(jid)["job_id"] == jid, job


@pytest.mark.parametrize("started", [True, False])
def test_a_job_whose_task_the_hard_limit_killed_with_redis_away_ends_once_redis_answers(store, monkeypatch,
                                                                                      started):
    """The hard limit came while Redis was away (the soft limit's handling waiting for it): the
    worker's ``on_failure`` could not write the end, and the job stayed RUNNING for about 3 h (until a
    read failed it as ``worker_lost``), or QUEUED for good when the limit came before its start."""
    jid = _job(store)
    if started:
        assert store.start_job(jid, task_id=jid, worker="w:1")["state"] == "RUNNING"
    cut, relay = store_behind_outage(store, b"never sent")
    relay.cut()
    monkeypatch.setattr(tasks, "_store", cut)
    try:
        tasks._end_job_at_hard_limit(tasks.run_job, TimeLimitExceeded(2), jid, [jid], {}, None)
        assert store.get_job(jid)["state"] == ("RUNNING" if started else "QUEUED")  # not written yet
        relay.restore()
        for waiting in threading.enumerate():
            if waiting.name == f"shoal-hard-limit-{jid}":
                waiting.join(60)
    finally:
        relay.close()
    job = store.get_job(jid)
    assert job["state"] == "FAILED" and job["error"] == tasks.time_limit_error(store.settings), job


def test_a_predict_job_past_its_soft_time_limit_fails_as_time_limit(client, store, blobs_dataset, dcrc_job,
                                                                     monkeypatch):
    """The soft limit came while a prediction waited for Redis to read its rows: the job was FAILED as
    ``predict_failed`` ("SoftTimeLimitExceeded: "), where a clustering job says ``time_limit``."""
    r = client.post(f"/v1/jobs/{dcrc_job[0]}/predict", json={"data": blobs_dataset[1][:5].tolist()})
    assert r.status_code == 202, r.json
    jid = r.json["id"]
    _run_past_soft_limit(store, monkeypatch, jid, b":model")  # Redis goes away once the model is read
    job = store.get_job(jid)
    assert job["state"] == "FAILED" and job["error"] == tasks.time_limit_error(store.settings), job
