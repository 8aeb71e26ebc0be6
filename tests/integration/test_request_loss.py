"""A request whose gunicorn worker dies between writing its work and sending the task.

Killing gunicorn workers under a stream of job submissions left jobs QUEUED
with no task in the queue (2 of 8 killed requests: a new gunicorn worker's
first send opens the broker connection, a wide window): such a job never ran,
had no expiry (records expire once finished) and held its dataset
(``DELETE`` answered 409 ``dataset_in_use``). A live worker's heartbeat now
sends the task of a job still unsent ``UNSENT_GRACE`` seconds after its
creation (longer than gunicorn lets a request run). The same for
``POST /v1/sessions`` (a session INITIALIZING for good, holding its dataset)
and for ``POST .../answers`` that took the session's re-clustering slot for a
pass (the slot held until it expired, and the questions of that pass waiting
for good when nothing was left to answer). Here the grace is
``SHOAL_UNSENT_GRACE`` seconds.
"""

import time

import numpy as np
import pytest
import redis
import requests
from sklearn.datasets import make_blobs

from scripts.stack import wait_up_to_date

from .helpers import own_stack, submit, upload, wait_done

pytestmark = pytest.mark.integration

ENV = {
    "SHOAL_SOFT_TIME_LIMIT": "100",
    "SHOAL_HARD_TIME_LIMIT": "120",
    "SHOAL_VISIBILITY_TIMEOUT": "600",
    "SHOAL_WORKER_HEARTBEAT_TTL": "1",
    "SHOAL_WORKER_LOST_AFTER": "2",
    "SHOAL_UNSENT_GRACE": "6",  # longer than the job test's wait within the grace (3 s)
}


@pytest.fixture(scope="module")
def beat_stack(tmp_path_factory):
    with own_stack(ENV, tmp_path_factory.mktemp("request-loss"), web_workers=1) as stack_and_base:
        yield stack_and_base


def _session_store(stack):
    from workers.config import Settings
    from workers.session_store import SessionStore
    from workers.store import Store

    return SessionStore(Store.from_settings(Settings(redis_url=stack.redis_url)))


def _blobs(base):
    X, _ = make_blobs(60, centers=[[0, 0], [8, 8], [-8, 8]], cluster_std=0.6, random_state=1)
    return upload(base, X)


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


def test_a_session_whose_request_died_before_sending_its_first_pass_gets_it_from_a_live_worker(beat_stack):
    """``POST /v1/sessions`` killed between the record and the first pass's task: the session stayed
    INITIALIZING with no questions, for good, and its dataset's ``DELETE`` answered 409 until it expired."""
    from schemas.sessions import URASCParamsSchema

    stack, base = beat_stack
    ss = _session_store(stack)
    did = _blobs(base)
    # what the dead request left: create_session's record (SessionStore.create), and no task
    params = {**URASCParamsSchema().load({}), "scale": "zscore", "pool_size": 10}
    sid = ss.create(dataset_id=did, strategy="urasc", n_clusters=3, budget=20, question_type="pairwise",
                    answers_per_question=1, params=params, random_state=0)["id"]
    assert requests.delete(f"{base}/v1/datasets/{did}", timeout=30).status_code == 409  # the session holds it
    s = wait_up_to_date(base, sid)
    assert s["state"] == "ACTIVE" and s["observed_revision"] == 0, s
    lease = requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 3, "worker_id": "w1"}, timeout=30)
    assert len(lease.json()["questions"]) == 3, lease.text
    assert ss.r.zcard("shoal:sessions:unsent") == 0
    assert requests.delete(f"{base}/v1/sessions/{sid}", timeout=30).status_code == 204
    assert requests.delete(f"{base}/v1/datasets/{did}", timeout=30).status_code == 204


def test_a_pass_whose_answers_request_died_before_sending_it_is_sent_by_a_live_worker(beat_stack):
    """``POST .../answers`` killed after its answers took the session's slot for a pass and before it sent
    the task: the slot stayed held until it expired (the hard time limit and a minute: 3 min here, an hour
    by default) with the answered question waiting, and for good when nothing was left to answer (here the
    answer commits the whole budget: no question is leased any more, so no later answer queues the pass)."""
    stack, base = beat_stack
    ss = _session_store(stack)
    did = _blobs(base)
    r = requests.post(f"{base}/v1/sessions", json={"dataset_id": did, "budget": 1, "n_clusters": 3}, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert wait_up_to_date(base, sid)["state"] == "ACTIVE"
    [q] = ss.lease(sid, 1, "w1")
    # what the dead request left: its answers recorded, with the slot taken for a pass (post_answers' step),
    # and no task
    rec = ss.get(sid)
    done = ss.record_answers(sid, [{"question_id": q["question_id"], "answer": "must_link", "worker_id": "w1",
                                    "assignment_id": "a1"}], rec["revision"], rec["answers_per_question"])
    assert done.outcomes == ["accepted:ready"] and done.enqueue
    assert requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 3, "worker_id": "w2"},
                         timeout=30).json()["questions"] == []  # nothing left to answer
    s = wait_up_to_date(base, sid)
    assert (s["state"], s["revision"], s["observed_revision"], s["budget_used"]) == ("COMPLETED", 1, 1, 1), s
    assert not ss.r.exists(ss._key(sid, ":update")) and ss.r.zcard("shoal:sessions:unsent") == 0
