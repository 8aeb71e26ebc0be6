"""A ``POST /v1/jobs`` whose gunicorn worker dies between writing the job and sending its task.

Killing gunicorn workers under a stream of job submissions left jobs QUEUED
with no task in the queue (2 of 8 killed requests: a new gunicorn worker's
first send opens the broker connection, a wide window): such a job never ran,
had no expiry (records expire once finished) and held its dataset
(``DELETE`` answered 409 ``dataset_in_use``). A live worker's heartbeat now
sends the task of a job still unsent ``UNSENT_GRACE`` seconds after its
creation (longer than gunicorn lets a request run).
"""

import time

import numpy as np
import pytest
import redis
import requests

from .helpers import own_stack, submit, upload, wait_done

pytestmark = pytest.mark.integration

ENV = {
    "SHOAL_SOFT_TIME_LIMIT": "100",
    "SHOAL_HARD_TIME_LIMIT": "120",
    "SHOAL_VISIBILITY_TIMEOUT": "600",
    "SHOAL_WORKER_HEARTBEAT_TTL": "1",
    "SHOAL_WORKER_LOST_AFTER": "2",
}


@pytest.fixture()
def beat_stack(tmp_path):
    with own_stack(ENV, tmp_path, web_workers=1) as stack_and_base:
        yield stack_and_base


def test_a_job_whose_request_died_before_sending_its_task_is_sent_by_a_live_worker(beat_stack):
    from workers.config import Settings
    from workers.liveness import UNSENT_GRACE
    from workers.store import Store

    stack, base = beat_stack
    store = Store.from_settings(Settings(redis_url=stack.redis_url))
    client = redis.Redis.from_url(stack.redis_url)
    did = upload(base, np.random.default_rng(0).standard_normal((60, 2)))
    # a job submitted over HTTP is sent, and not left for the sweep
    sent = submit(base, dataset_id=did, method="spectral", n_clusters=2).json()["id"]
    assert wait_done(base, sent)["state"] == "SUCCEEDED"
    assert client.zscore("shoal:jobs:unsent", sent) is None
    # what the dead request left: the record (Store.create_job, its first step) and no task
    jid = store.create_job(dataset_id=did, method="spectral", n_clusters=2, params={}, constraints={},
                           random_state=0)["id"]
    time.sleep(3)
    assert store.get_job(jid)["state"] == "QUEUED"  # within the grace: its request may still send it
    client.zadd("shoal:jobs:unsent", {jid: time.time() - UNSENT_GRACE - 1})  # the grace has passed
    job = wait_done(base, jid, timeout=60)
    assert job["state"] == "SUCCEEDED" and job["attempts"] == 1, job
    assert client.zcard("shoal:jobs:unsent") == 0
    assert requests.delete(f"{base}/v1/datasets/{did}", timeout=30).status_code == 204
