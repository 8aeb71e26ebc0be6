"""Session passes on a stack with short time limits: a crowd answering for longer than the
limits, and the worker's pool process killed mid-pass.

Runs on its own stack (Redis, one worker, gunicorn) whose soft and hard time
limits are a few seconds, so what a production worker meets after an hour of
continuous answers happens here within seconds.
"""

import os
import signal
import subprocess
import threading
import time

import pytest
import requests
from sklearn.datasets import make_blobs

from .helpers import own_stack, upload

pytestmark = pytest.mark.integration

SHORT_LIMITS = {
    "SHOAL_SOFT_TIME_LIMIT": "3",
    "SHOAL_HARD_TIME_LIMIT": "5",
    "SHOAL_VISIBILITY_TIMEOUT": "8",
    "SHOAL_UNACKED_RESTORE_INTERVAL": "1",
    "SHOAL_UNACKED_MUTEX_EXPIRE": "3",
    "SHOAL_MAX_ROWS": "5000",
}


@pytest.fixture(scope="module")
def short_stack(tmp_path_factory):
    with own_stack(SHORT_LIMITS, tmp_path_factory.mktemp("short")) as stack_and_base:
        yield stack_and_base


def _session(base, X, y, **options):
    did = upload(base, X, y)
    r = requests.post(f"{base}/v1/sessions", json={"dataset_id": did, "pool_size": 10, **options}, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    deadline = time.monotonic() + 30
    while requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()["state"] == "INITIALIZING":
        assert time.monotonic() < deadline, "the first pass never ended"
        time.sleep(0.1)
    return sid


def _truth(y, items):
    return "must_link" if y[items[0]] == y[items[1]] else "cannot_link"


def _settled(base, sid, timeout=30):
    """The session once its model is up to date and no pass runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()
        if s["observed_revision"] == s["revision"] and s["pass_started_at"] is None:
            return s
        time.sleep(0.1)
    raise AssertionError(f"session {sid} not up to date after {timeout} s: {s}")


def _closed_questions(base, sid):
    out, token = [], None
    while True:
        params = {"status": "closed", "page_size": 100, **({"page_token": token} if token else {})}
        page = requests.get(f"{base}/v1/sessions/{sid}/questions", params=params, timeout=30).json()
        out += page["questions"]
        token = page["next_page_token"]
        if token is None:
            return out


def test_a_crowd_answering_for_longer_than_the_time_limit_never_fails_the_session(short_stack):
    """Passes of a fraction of a second each, queued back to back by a crowd answering for twice
    the soft time limit: the session stays ACTIVE and its model takes every closed question (one
    task looping over the passes ran into the soft limit and failed the session)."""
    _, base = short_stack
    X, y = make_blobs(1500, centers=6, n_features=8, cluster_std=2.0, random_state=0)
    sid = _session(base, X, y, budget=1000)
    stop = time.monotonic() + 2 * float(SHORT_LIMITS["SHOAL_SOFT_TIME_LIMIT"])
    failed = []

    def crowd(worker):
        while time.monotonic() < stop and not failed:
            qs = requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 1, "worker_id": worker},
                               timeout=30).json()["questions"]
            for q in qs:
                requests.post(f"{base}/v1/sessions/{sid}/answers", timeout=30, json={"answers": [
                    {"question_id": q["question_id"], "answer": _truth(y, q["items"]), "worker_id": worker}]})
            time.sleep(0.02)

    threads = [threading.Thread(target=crowd, args=(f"w{k}",)) for k in range(3)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        s = requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()
        if s["state"] == "FAILED":
            failed.append(s["error"])
        time.sleep(0.2)
    for t in threads:
        t.join()
    assert not failed, failed
    s = _settled(base, sid)
    assert s["state"] == "ACTIVE", s["error"]
    closed = len(_closed_questions(base, sid))
    assert closed == s["counters"]["accepted"] > 10, s["counters"]
    assert s["counters"]["questions_closed"] == closed
    assert s["budget_used"] + s["counters"]["questions_unused"] == closed


def _pool_processes(stack):
    """Pids of the worker's pool (child) processes."""
    out = subprocess.run(["pgrep", "-P", str(stack.procs["worker1"].pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def test_a_pool_process_killed_mid_pass_loses_no_answer(short_stack):
    """SIGKILL of the process running a triplet session's pass (a DCRC refit on 2000 rows): the
    task comes back and the model ends with every answer the killed pass had taken."""
    stack, base = short_stack
    X, y = make_blobs(2000, centers=5, n_features=10, cluster_std=3.0, random_state=1)
    sid = _session(base, X, y, budget=100, question_type="triplet", n_clusters=5)
    qs = requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 10, "worker_id": "w"},
                       timeout=30).json()["questions"]
    answers = [{"question_id": q["question_id"], "worker_id": "w", "assignment_id": f"a-{q['question_id']}",
                "answer": "yes" if y[q["items"][0]] == y[q["items"][1]] else "no"} for q in qs]
    r = requests.post(f"{base}/v1/sessions/{sid}/answers", json={"answers": answers}, timeout=30)
    assert [x["outcome"] for x in r.json()["results"]] == ["accepted"] * len(qs)
    deadline = time.monotonic() + 20
    while not requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()["pass_started_at"]:
        assert time.monotonic() < deadline, "the pass never started"
        time.sleep(0.01)
    time.sleep(0.3)  # into the refit
    s = requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()
    assert s["pass_started_at"] and s["observed_revision"] < s["revision"], "the pass ended before the kill"
    for pid in _pool_processes(stack):
        os.kill(pid, signal.SIGKILL)
    s = _settled(base, sid)
    assert s["state"] == "ACTIVE", s
    closed = _closed_questions(base, sid)
    assert sorted(q["question_id"] for q in closed) == sorted(q["question_id"] for q in qs)
    assert s["counters"]["questions_closed"] == len(qs)
    assert s["budget_used"] + s["counters"]["questions_unused"] == len(qs)
    model = requests.get(f"{base}/v1/sessions/{sid}/model", timeout=30).json()
    told = {tuple(t[:3]) for t in model["triplets"]}
    assert {tuple(q["items"]) for q in closed if q["model_outcome"] == "accepted"} <= told
    assert len(told) == model["n_questions_used"] == s["budget_used"]
