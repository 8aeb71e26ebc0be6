"""A worker killed with SIGKILL mid-job: the job is redelivered and finishes, never stuck.

Runs on its own stack (Redis, worker, gunicorn) whose visibility timeout is
short, so Redis hands the unacknowledged task to a new worker within seconds.
A worker killed while its unacked-restore sweep holds kombu's Redis lock
leaves that lock behind, with the expiry the worker set; redelivery must still
come once it expires (``SHOAL_UNACKED_MUTEX_EXPIRE``), not after kombu's
default 300 s, by which time the job would have been failed as
``worker_lost`` after one attempt (seen once in CI).
"""

import threading
import time

import numpy as np
import pytest
import requests

from .helpers import own_stack, submit, upload, wait_done

pytestmark = pytest.mark.integration

FAST_REDELIVERY = {
    "SHOAL_SOFT_TIME_LIMIT": "10",
    "SHOAL_HARD_TIME_LIMIT": "12",
    "SHOAL_VISIBILITY_TIMEOUT": "15",
    "SHOAL_UNACKED_RESTORE_INTERVAL": "1",
    "SHOAL_MAX_ATTEMPTS": "3",
    "SHOAL_PROGRESS_INTERVAL": "0.2",
    "SHOAL_UNACKED_MUTEX_EXPIRE": "3",
}

#: kombu's Redis transport default ``unacked_mutex_key``.
RESTORE_LOCK = "unacked_mutex"


def restore_lock_expiry_ms(client, timeout=15.0):
    """The expiry (ms) a running worker's restore sweep gives its lock, read off MONITOR."""
    seen = {}

    def watch():
        with client.monitor() as m:
            for cmd in m.listen():
                words = cmd["command"].split()
                if words[:2] == ["SET", RESTORE_LOCK] and "PX" in words:
                    seen["px"] = int(words[words.index("PX") + 1])
                    return

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    t.join(timeout)
    assert "px" in seen, "no restore sweep seen"
    return seen["px"]


@pytest.fixture()
def fast_stack(tmp_path):
    with own_stack(FAST_REDELIVERY, tmp_path, web_workers=1) as stack_and_base:
        yield stack_and_base


@pytest.mark.parametrize("restore_lock_left", [False, True], ids=["clean-kill", "killed-mid-sweep"])
def test_sigkill_mid_job_is_redelivered(fast_stack, restore_lock_left):
    import redis

    from workers.config import Settings
    from workers.store import Store

    stack, base = fast_stack
    store = Store.from_settings(Settings(redis_url=stack.redis_url))
    client = redis.Redis.from_url(stack.redis_url)
    lock_ms = restore_lock_expiry_ms(client) if restore_lock_left else None
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
    if restore_lock_left:  # the lock as a worker SIGKILLed inside its restore sweep leaves it
        client.set(RESTORE_LOCK, "dead-worker-token", px=lock_ms)
    stack.start_worker(concurrency=1)
    job = wait_done(base, jid, timeout=120)
    assert job["attempts"] >= 2, job
    assert job["state"] == "SUCCEEDED" or job["error"]["code"] == "attempts_exhausted", job
    if job["state"] == "SUCCEEDED":
        res = requests.get(base + job["result_url"], timeout=30).json()
        assert len(res["labels"]) == 2000
