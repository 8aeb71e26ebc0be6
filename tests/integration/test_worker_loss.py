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


#: A broker that would redeliver only after 15 minutes: recovery must come from the heartbeats.
HEARTBEAT_RECOVERY = {
    "SHOAL_SOFT_TIME_LIMIT": "280",
    "SHOAL_HARD_TIME_LIMIT": "300",
    "SHOAL_VISIBILITY_TIMEOUT": "900",
    "SHOAL_WORKER_HEARTBEAT_TTL": "1",
    "SHOAL_WORKER_LOST_AFTER": "2",
    "SHOAL_PROGRESS_INTERVAL": "0.2",
}


@pytest.fixture()
def slow_broker_stack(tmp_path):
    with own_stack(HEARTBEAT_RECOVERY, tmp_path, web_workers=1) as stack_and_base:
        yield stack_and_base


def _store(stack):
    from workers.config import Settings
    from workers.store import Store

    return Store.from_settings(Settings(redis_url=stack.redis_url))


def _wait(what, check, timeout):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_a_lost_workers_job_is_run_again_long_before_the_broker_would(slow_broker_stack):
    """SIGKILL of the whole worker mid-job: a live worker's heartbeat re-dispatches the job within
    seconds (the broker's visibility timeout, 900 s here and 2 h by default, is not waited for)."""
    stack, base = slow_broker_stack
    store = _store(stack)
    X = np.random.default_rng(0).standard_normal((2000, 5))
    jid = submit(base, dataset_id=upload(base, X), method="spectral", n_clusters=4).json()["id"]
    _wait("job never started", lambda: store.get_job(jid)["state"] == "RUNNING", 60)
    stack.kill("worker1")
    killed = time.monotonic()
    stack.start_worker(concurrency=1)
    job = wait_done(base, jid, timeout=120)
    assert job["state"] == "SUCCEEDED" and job["attempts"] == 2, job
    assert time.monotonic() - killed < 120
    assert len(requests.get(base + job["result_url"], timeout=30).json()["labels"]) == 2000


def test_a_lost_workers_session_pass_is_run_again_long_before_the_broker_would(slow_broker_stack):
    """SIGKILL of the whole worker mid-pass: the session's slot goes to a new pass, which builds
    the model and the question pool (without heartbeats the slot would be held for the hard limit
    and the pass redelivered after the visibility timeout)."""
    from workers.session_store import SessionStore

    stack, base = slow_broker_stack
    ss = SessionStore(_store(stack))
    X = np.random.default_rng(0).standard_normal((3000, 8))
    r = requests.post(base + "/v1/sessions", json={"dataset_id": upload(base, X), "budget": 50}, timeout=30)
    sid = r.json()["id"]
    _wait("pass never started", lambda: ss.get(sid)["pass_started_at"] is not None, 60)
    stack.kill("worker1")
    assert ss.get(sid)["observed_revision"] == -1  # killed before the pass ended
    stack.start_worker(concurrency=1)
    _wait("no model after the worker was lost", lambda: ss.get(sid)["observed_revision"] == 0, 120)
    view = requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()
    assert view["state"] == "ACTIVE", view
    leased = requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w"},
                           timeout=30).json()
    assert len(leased["questions"]) == 5, leased
