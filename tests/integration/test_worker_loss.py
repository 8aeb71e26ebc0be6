"""A worker killed with SIGKILL mid-job: the job is redelivered and finishes, never stuck.

Runs on its own stack (Redis, worker, gunicorn) whose visibility timeout is
short, so Redis hands the unacknowledged task to a new worker within seconds.
"""

import time

import numpy as np
import pytest
import requests

from scripts.stack import Stack, wait_ready

from .helpers import submit, upload, wait_done

pytestmark = pytest.mark.integration

FAST_REDELIVERY = {
    "SHOAL_SOFT_TIME_LIMIT": "10",
    "SHOAL_HARD_TIME_LIMIT": "12",
    "SHOAL_VISIBILITY_TIMEOUT": "15",
    "SHOAL_UNACKED_RESTORE_INTERVAL": "1",
    "SHOAL_MAX_ATTEMPTS": "3",
    "SHOAL_PROGRESS_INTERVAL": "0.2",
}


@pytest.fixture()
def fast_stack(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    st = Stack(env={**FAST_REDELIVERY}, log_dir=tmp_path)
    st.env.pop("REDIS_URL", None)
    st.redis_url = None
    st.start_redis()
    st.start_worker(concurrency=1)
    base = st.start_web(workers=1)
    wait_ready(base, timeout=90)
    del env
    yield st, base
    st.stop()


def test_sigkill_mid_job_is_redelivered(fast_stack):
    from workers.config import Settings
    from workers.store import Store

    stack, base = fast_stack
    store = Store.from_settings(Settings(redis_url=stack.redis_url))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5))  # dense spectral clustering: a few seconds of work
    did = upload(base, X)
    jid = submit(base, dataset_id=did, method="spectral", n_clusters=4).json()["id"]
    deadline = time.monotonic() + 60
    while store.get_job(jid)["state"] != "RUNNING":
        assert time.monotonic() < deadline, "job never started"
        time.sleep(0.02)
    stack.kill("worker1")  # SIGKILL the whole worker process group mid-job
    assert store.get_job(jid)["state"] == "RUNNING"
    stack.start_worker(concurrency=1)
    job = wait_done(base, jid, timeout=120)
    assert job["attempts"] >= 2, job
    assert job["state"] == "SUCCEEDED" or job["error"]["code"] == "attempts_exhausted", job
    if job["state"] == "SUCCEEDED":
        res = requests.get(base + job["result_url"], timeout=30).json()
        assert len(res["labels"]) == 2000
