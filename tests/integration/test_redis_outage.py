"""Redis restarted (with its data) while a worker runs a job or a session pass.

Redis is the broker and the store: while it restarts (a crash and its
supervisor's restart, a failover, the seconds it spends loading its data) a
worker cannot write progress, results or the job's end. The work must end
once Redis is back, not wait RUNNING for ``hard_time_limit +
visibility_timeout`` (about 3 h) until a read fails it as ``worker_lost``:
the worker is alive and beating, so no other worker takes its job over.
"""

import time

import numpy as np
import pytest
import redis

from scripts.stack import _redis_binary, _wait_port

from .helpers import own_stack, submit, upload, wait_done

pytestmark = pytest.mark.integration

ENV = {
    "SHOAL_SOFT_TIME_LIMIT": "100",
    "SHOAL_HARD_TIME_LIMIT": "120",
    "SHOAL_VISIBILITY_TIMEOUT": "600",
    "SHOAL_PROGRESS_INTERVAL": "0.2",
}


@pytest.fixture()
def outage_stack(tmp_path):
    with own_stack(ENV, tmp_path, web_workers=1) as stack_and_base:
        yield stack_and_base


def restart_redis(stack, down):
    """Snapshot Redis, SIGKILL it, keep it down ``down`` seconds, start it again on its port from the snapshot."""
    port = int(stack.redis_url.rsplit(":", 1)[1].split("/")[0])
    redis.Redis.from_url(stack.redis_url).save()
    stack.kill("redis")
    time.sleep(down)
    proc = stack._spawn("redis", [_redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--protected-mode", "yes", "--dir", str(stack.log_dir)])
    stack.procs = {"redis": stack.procs.pop("redis"), **stack.procs}  # stopped last, as before
    _wait_port(port, proc=proc)


def _store(stack):
    from workers.config import Settings
    from workers.store import Store

    return Store.from_settings(Settings(redis_url=stack.redis_url))


def test_a_job_running_while_redis_restarts_ends_once_redis_is_back(outage_stack):
    """The fit (about a second) ends while Redis is down: its result and end are written once Redis is
    back. Before, the first failed write (a progress report, the result) made the task fail the job,
    that write failed too, and the job stayed RUNNING with the worker alive (its running hash naming it)."""
    stack, base = outage_stack
    store = _store(stack)
    X = np.random.default_rng(0).standard_normal((2000, 5))
    jid = submit(base, dataset_id=upload(base, X), method="spectral", n_clusters=4).json()["id"]
    deadline = time.monotonic() + 60
    while store.get_job(jid)["state"] != "RUNNING":
        assert time.monotonic() < deadline, "job never started"
        time.sleep(0.02)
    restart_redis(stack, down=5)
    job = wait_done(base, jid, timeout=60)
    assert job["state"] == "SUCCEEDED", job


def test_a_session_pass_running_while_redis_restarts_is_done_once_redis_is_back(outage_stack):
    """The first pass fails on Redis mid-run: it is run again once Redis is back. Before, the failed
    pass's task ended with its slot held (for the hard time limit plus a minute) and nothing queued:
    the session stayed INITIALIZING, "re-clustering ... is running", with no questions to answer."""
    import requests

    from workers.session_store import SessionStore

    stack, base = outage_stack
    ss = SessionStore(_store(stack))
    X = np.random.default_rng(0).standard_normal((5000, 8))
    r = requests.post(base + "/v1/sessions", json={"dataset_id": upload(base, X), "budget": 50}, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    deadline = time.monotonic() + 60
    while ss.get(sid)["pass_started_at"] is None:
        assert time.monotonic() < deadline, "pass never started"
        time.sleep(0.01)
    restart_redis(stack, down=3)
    deadline = time.monotonic() + 60
    while ss.get(sid)["observed_revision"] != 0:
        assert time.monotonic() < deadline, f"no model after Redis came back: {ss.get(sid)}"
        time.sleep(0.1)
    view = requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()
    assert view["state"] == "ACTIVE", view
    leased = requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w"},
                           timeout=30).json()
    assert len(leased["questions"]) == 5, leased
    running = redis.Redis.from_url(stack.redis_url).keys("shoal:worker:*:running")
    assert running == [], running  # the pass's entry in its worker's running hash is gone with it


def test_a_job_picked_up_while_redis_restarts_starts_once_redis_is_back(tmp_path, monkeypatch):
    """The task got its message and Redis went away before it marked the job RUNNING: the task waits
    for Redis and runs the job. Before, the task failed (its message acknowledged) and the job stayed
    QUEUED with no task to run it, for good. The task runs in this process (Celery's ``apply``) on a
    Redis of its own, stopped and started again from its snapshot."""
    import threading

    from scripts.stack import Stack
    from workers import tasks
    from workers.config import Settings
    from workers.store import Store

    stack = Stack(log_dir=tmp_path)
    stack.env.pop("REDIS_URL", None)
    stack.redis_url = None
    stack.start_redis()
    try:
        store = Store.from_settings(Settings(redis_url=stack.redis_url))
        monkeypatch.setattr(tasks, "_store", store)
        did = store.put_dataset(np.random.default_rng(0).standard_normal((60, 2)), name="outage")["id"]
        jid = store.create_job(dataset_id=did, method="spectral", n_clusters=2, params={}, constraints={},
                               random_state=0)["id"]
        restarting = threading.Thread(target=restart_redis, args=(stack, 2))
        restarting.start()
        while store.ping():  # until it is down
            time.sleep(0.01)
        run = tasks.run_job.apply(args=[jid], task_id=jid)
        restarting.join()
        assert run.successful(), run.result
        assert store.get_job(jid)["state"] == "SUCCEEDED"
    finally:
        stack.stop()


def test_a_job_event_sent_while_redis_restarts_is_delivered_once_redis_is_back(tmp_path, monkeypatch):
    """``shoal.deliver_webhook`` reads the job's state when it runs: with Redis away the read failed and
    the task with it, without a retry, and the event was lost. It waits for Redis now."""
    import json
    import threading

    from scripts.stack import Stack
    from workers import tasks
    from workers.config import Settings
    from workers.store import Store

    from .helpers import WebhookReceiver

    stack = Stack(log_dir=tmp_path)
    stack.env.pop("REDIS_URL", None)
    stack.redis_url = None
    stack.start_redis()
    try:
        store = Store.from_settings(Settings(redis_url=stack.redis_url, callback_allow_private=True))
        monkeypatch.setattr(tasks, "_store", store)
        did = store.put_dataset(np.zeros((3, 2)), name="outage")["id"]
        jid = store.create_job(dataset_id=did, method="spectral", n_clusters=2, params={}, constraints={},
                               random_state=0)["id"]
        store.finish_job(jid, "CANCELLED")
        with WebhookReceiver() as hook:
            restarting = threading.Thread(target=restart_redis, args=(stack, 2))
            restarting.start()
            while store.ping():  # until it is down
                time.sleep(0.01)
            run = tasks.deliver_webhook.apply(args=[jid, hook.url])
            restarting.join()
            assert run.successful(), run.result
            _, body = hook.wait(lambda e: e["job_id"] == jid, timeout=10)
            assert json.loads(body)["type"] == "job.cancelled"
    finally:
        stack.stop()


def test_a_worker_of_two_processes_survives_a_redis_restart_mid_job(tmp_path):
    """A worker of two pool processes (the image's ``--concurrency 2``) running a task when Redis went
    away exited: ``CRITICAL Unrecoverable error: AttributeError("'NoneType' object has no attribute
    'hostname'")``, kombu's Redis channel closing after its transport was closed (its client gone)
    and rebuilding a connection pool to give back the unacknowledged message; the AttributeError is not
    a connection error, so the consumer did not retry, and the service had no worker left."""
    with own_stack(ENV, tmp_path, web_workers=1, concurrency=2) as (stack, base):
        store = _store(stack)
        did = upload(base, np.random.default_rng(0).standard_normal((3000, 5)))
        jid = submit(base, dataset_id=did, method="spectral", n_clusters=4).json()["id"]
        deadline = time.monotonic() + 60
        while store.get_job(jid)["state"] != "RUNNING":
            assert time.monotonic() < deadline, "job never started"
            time.sleep(0.02)
        restart_redis(stack, down=1)
        assert wait_done(base, jid, timeout=60)["state"] == "SUCCEEDED"
        time.sleep(3)
        assert stack.procs["worker1"].poll() is None, (tmp_path / "worker1.log").read_text()[-3000:]
        nxt = submit(base, dataset_id=did, method="spectral", n_clusters=4).json()["id"]
        assert wait_done(base, nxt, timeout=60)["state"] == "SUCCEEDED"
