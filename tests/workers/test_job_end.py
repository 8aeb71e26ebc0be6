"""A job's end written through a Redis outage keeps its event (``workers.tasks.end_job``)."""

import numpy as np
import pytest

from workers.tasks import end_job, time_limit_error

from .redis_relay import store_behind_lost_reply


def _running_job(store):
    did = store.put_dataset(np.zeros((3, 2)), name="job-end")["id"]
    jid = store.create_job(dataset_id=did, method="e2cp", n_clusters=2, params={}, constraints={},
                           random_state=0)["id"]
    assert store.start_job(jid, task_id=jid, worker="w:1")["state"] == "RUNNING"
    return jid


@pytest.mark.parametrize("state", ["SUCCEEDED", "FAILED"])
def test_an_end_whose_reply_redis_lost_still_returns_the_record_the_event_needs(store, state):
    """The end went through, its reply was lost; the retry found the job ended and answered None, so
    ``run_job`` sent no ``job.<state>`` event: it was lost for good."""
    jid = _running_job(store)
    error = None if state == "SUCCEEDED" else time_limit_error(store.settings)
    cut, relay = store_behind_lost_reply(store, f'"{state}"'.encode())
    try:
        rec = end_job(cut, jid, state, error=error)
        assert relay.lost
    finally:
        relay.close()
    assert rec is not None and rec["state"] == state and rec["error"] == error
    assert store.get_job(jid)["state"] == state


def test_an_end_another_one_beat_is_not_taken_for_ours(store):
    jid = _running_job(store)
    store.finish_job(jid, "FAILED", error=time_limit_error(store.settings))
    assert end_job(store, jid, "SUCCEEDED") is None
    assert store.get_job(jid)["state"] == "FAILED"


def test_a_cancel_that_ended_a_job_as_its_worker_started_it_is_not_taken_for_the_worker_end(store):
    """A cancel that read the job QUEUED just before the worker started it ends it CANCELLED (and queues
    its ``job.cancelled`` event); the worker, seeing the cancel flag, ended it CANCELLED too, found the
    job CANCELLED without an error, took that end for its own whose reply was lost, and sent the event a
    second time (4 jobs of 150 cancelled right after their submission over HTTP got two events)."""
    from workers.store import Store

    did = store.put_dataset(np.zeros((3, 2)), name="job-end")["id"]
    jid = store.create_job(dataset_id=did, method="e2cp", n_clusters=2, params={}, constraints={},
                           random_state=0)["id"]

    class WorkerStartsAfterTheRead(Store):
        def _read(self, job_id):
            rec = super()._read(job_id)
            if rec["state"] == "QUEUED":  # the worker's start, between the cancel's read and its end
                assert store.start_job(job_id, task_id=jid, worker="w:1")["state"] == "RUNNING"
            return rec

    cancelled = WorkerStartsAfterTheRead(store.r, store.settings).request_cancel(jid)
    assert cancelled["state"] == "CANCELLED" and store.cancel_requested(jid)
    assert end_job(store, jid, "CANCELLED") is None  # the worker's end: not its own, no second event
    assert store.get_job(jid)["state"] == "CANCELLED"
