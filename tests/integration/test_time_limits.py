"""A job or session pass the hard time limit kills (its process stuck in one long C call, deaf to the soft limit).

Celery's pool kills the process, acknowledges the message and calls the task's
``on_failure`` in the worker's main process; nothing else ends the record. Before,
the job stayed RUNNING (its live worker still naming it) until a read failed it
as ``worker_lost``, ``visibility_timeout + 60`` s after the hard limit (2 h by
default), holding its dataset all along.
"""

import time

import numpy as np
import pytest
import requests

from .helpers import WebhookReceiver, own_stack, submit, upload, wait_done

pytestmark = pytest.mark.integration

#: E2CP's sparse LU on 6000 rows, and URASC's first pass on 30 000, hold one call of several seconds:
#: the soft limit's exception cannot interrupt it, so the hard limit kills the process.
ENV = {
    "SHOAL_SOFT_TIME_LIMIT": "1",
    "SHOAL_HARD_TIME_LIMIT": "2",
    "SHOAL_VISIBILITY_TIMEOUT": "600",
    "SHOAL_MAX_ROWS": "30000",
    "SHOAL_CALLBACK_ALLOW_PRIVATE": "1",
}


@pytest.fixture()
def short_limit_stack(tmp_path):
    with own_stack(ENV, tmp_path, web_workers=1) as stack_and_base:
        yield stack_and_base


def test_a_job_killed_at_the_hard_time_limit_fails_at_once(short_limit_stack):
    stack, base = short_limit_stack
    n = 6000
    X = np.random.default_rng(0).standard_normal((n, 5))
    pairs = np.random.default_rng(1).choice(n, (100, 2), replace=False)
    with WebhookReceiver() as hook:
        jid = submit(base, dataset_id=upload(base, X), method="e2cp", n_clusters=5,
                     constraints={"must_link": pairs.tolist()}, callback_url=hook.url).json()["id"]
        job = wait_done(base, jid, timeout=60)
        assert job["state"] == "FAILED" and job["error"]["code"] == "time_limit", job
        hook.wait(lambda e: e["job_id"] == jid and e["type"] == "job.failed", timeout=30)
    time.sleep(1)
    import redis

    running = redis.Redis.from_url(stack.redis_url).keys("shoal:worker:*:running")
    assert running == [], running
    # the worker goes on: the next job runs
    small = upload(base, X[:200])
    ok = wait_done(base, submit(base, dataset_id=small, method="spectral", n_clusters=3).json()["id"], timeout=60)
    assert ok["state"] == "SUCCEEDED", ok
    assert requests.get(f"{base}/readyz", timeout=10).status_code == 200


def test_a_session_pass_killed_at_the_hard_time_limit_fails_the_session_and_frees_its_slot(short_limit_stack):
    """Before, the session stayed INITIALIZING ("re-clustering ... is running") with its slot held by the
    killed task, and once the slot expired nothing was queued: no questions, ever."""
    import redis

    stack, base = short_limit_stack
    X = np.random.default_rng(0).standard_normal((30000, 8))
    with WebhookReceiver() as hook:
        r = requests.post(f"{base}/v1/sessions", json={"dataset_id": upload(base, X), "budget": 50,
                                                         "callback_url": hook.url}, timeout=60)
        assert r.status_code == 201, r.text
        sid = r.json()["id"]
        deadline = time.monotonic() + 60
        while (view := requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json())["state"] != "FAILED":
            assert time.monotonic() < deadline, view
            time.sleep(0.2)
        assert view["error"]["code"] == "session_update_failed" and "TimeLimitExceeded" in view["error"]["detail"]
        hook.wait(lambda e: e["session_id"] == sid and e["type"] == "session.failed", timeout=30)
    client = redis.Redis.from_url(stack.redis_url)
    assert client.get(f"shoal:session:{sid}:update") is None  # the slot is free
    assert client.keys("shoal:worker:*:running") == []
