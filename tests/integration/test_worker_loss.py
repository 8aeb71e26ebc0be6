"""A worker killed with SIGKILL mid-job: the job is redelivered and finishes, never stuck."""

import time

import numpy as np
import pytest
import requests

from .helpers import submit, upload, wait_done

pytestmark = pytest.mark.integration


def test_sigkill_mid_job_is_redelivered(live, stack, store):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 5))  # dense spectral clustering: a few seconds of work
    did = upload(live, X)
    jid = submit(live, dataset_id=did, method="spectral", n_clusters=4).json()["id"]
    deadline = time.monotonic() + 60
    while store.get_job(jid)["state"] != "RUNNING":
        assert time.monotonic() < deadline, "job never started"
        time.sleep(0.02)
    victim = next(name for name in stack.procs if name.startswith("worker"))
    stack.kill(victim)  # SIGKILL the whole worker process group mid-job
    assert store.get_job(jid)["state"] == "RUNNING"
    stack.start_worker(concurrency=1)
    job = wait_done(live, jid, timeout=120)
    assert job["attempts"] >= 2, job
    assert job["state"] == "SUCCEEDED" or job["error"]["code"] == "attempts_exhausted", job
    if job["state"] == "SUCCEEDED":
        res = requests.get(live + job["result_url"], timeout=30).json()
        assert len(res["labels"]) == 2000
