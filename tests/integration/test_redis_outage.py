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
