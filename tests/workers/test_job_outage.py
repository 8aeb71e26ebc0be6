"""A job run by ``shoal.run_job`` through Redis outages: a start whose reply Redis lost, the soft time
limit reached while the task waits for Redis (:func:`workers.tasks.through_outage`).

The task runs in this process (Celery's ``apply``) on the test Redis behind a
:class:`RedisRelay`, which drops the connections at a chosen request: the outage comes
at that request, not after a delay.
"""

import numpy as np

from workers import tasks

from .redis_relay import store_behind_lost_reply


def _job(store):
    did = store.put_dataset(np.random.default_rng(0).standard_normal((40, 2)), name="job-outage")["id"]
    return store.create_job(dataset_id=did, method="spectral", n_clusters=2, params={}, constraints={},
                            random_state=0)["id"]


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
