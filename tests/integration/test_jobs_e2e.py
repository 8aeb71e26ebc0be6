"""End to end over HTTP: gunicorn -> Redis -> Celery worker -> result."""

import io
import json
import time

import numpy as np
import pytest
import requests
import scipy.sparse as sp
from sklearn.datasets import make_blobs

from .helpers import WebhookReceiver, signature_ok, submit, upload, wait_done

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def blobs(live):
    X, y = make_blobs(90, centers=[[0, 0], [6, 6], [-6, 6]], cluster_std=0.8, random_state=3)
    ids = [f"p{i}" for i in range(len(y))]
    return upload(live, X, y, ids), X, y


def _constraints(y, n, seed):
    rng = np.random.default_rng(seed)
    ml, cl = [], []
    while len(ml) + len(cl) < n:
        i, j = map(int, rng.choice(len(y), 2, replace=False))
        (ml if y[i] == y[j] else cl).append([i, j])
    return {"must_link": ml, "cannot_link": cl}


@pytest.mark.parametrize("method", ["spectral_learning", "e2cp", "cop_kmeans"])
def test_submit_poll_and_fetch_result(live, blobs, method):
    did, X, y = blobs
    constraints = _constraints(y, 30, 0)
    r = submit(live, dataset_id=did, method=method, n_clusters=3, constraints=constraints)
    job = wait_done(live, r.json()["id"])
    assert job["state"] == "SUCCEEDED", job
    assert job["progress"]["fraction"] == 1.0 and job["attempts"] == 1
    res = requests.get(live + job["result_url"], timeout=30).json()
    assert len(res["labels"]) == len(y) and res["item_ids"][5] == "p5"
    assert res["metrics"]["ari"] > 0.9
    assert res["constraint_satisfaction"] > 0.9
    lab = res["labels"]
    assert res["violated_constraints"] == {
        "must_link": [k for k, (i, j) in enumerate(constraints["must_link"]) if lab[i] != lab[j]],
        "cannot_link": [k for k, (i, j) in enumerate(constraints["cannot_link"]) if lab[i] == lab[j]]}
    n_violated = sum(map(len, res["violated_constraints"].values()))
    assert res["constraint_satisfaction"] == pytest.approx(1 - n_violated / 30)
    assert set(res["metrics"]) == {"ari", "nmi", "f_measure", "v_measure", "jaccard"}
    assert res["timings"]["fit_seconds"] > 0


def test_affinity_endpoint_serves_top_k_json_and_npz(live, blobs):
    did, X, y = blobs
    job = wait_done(live, submit(live, dataset_id=did, method="e2cp", n_clusters=3,
                                 constraints=_constraints(y, 20, 1)).json()["id"])
    aff = requests.get(f"{live}{job['affinity_url']}?top_k=5", timeout=30).json()
    assert aff["n_samples"] == len(y) and all(len(r) <= 5 for r in aff["indices"])
    assert all(i not in row for i, row in enumerate(aff["indices"]))  # no self-affinity
    assert all(v == sorted(v, reverse=True) for v in aff["values"])
    raw = requests.get(f"{live}{job['affinity_url']}?format=npz", timeout=30)
    M = sp.load_npz(io.BytesIO(raw.content))
    assert M.shape == (len(y), len(y))
    assert abs(M - M.T).max() < 1e-12
    top = np.sort(M.toarray()[0])[::-1][:5]
    np.testing.assert_allclose(top, aff["values"][0][:5])


def test_contradictions_are_kept_and_reported(live, blobs):
    did, X, y = blobs
    c = _constraints(y, 20, 2)
    a, b = c["must_link"][0]
    c["cannot_link"].append([b, a])  # contradicts a must-link
    job = wait_done(live, submit(live, dataset_id=did, method="spectral_learning", n_clusters=3,
                                 constraints=c).json()["id"])
    assert job["state"] == "SUCCEEDED" and job["n_conflicts"] == 1
    res = requests.get(live + job["result_url"], timeout=30).json()
    assert res["n_conflicts"] == 1
    assert res["conflicts"][0]["cannot_link"] == [b, a]
    assert res["conflicts"][0]["cannot_link_item_ids"] == [f"p{b}", f"p{a}"]


def test_cop_kmeans_fails_with_the_conflict_list(live, blobs):
    did, X, y = blobs
    c = {"must_link": [[0, 1], [1, 2]], "cannot_link": [[2, 0]]}
    job = wait_done(live, submit(live, dataset_id=did, method="cop_kmeans", n_clusters=3,
                                 constraints=c).json()["id"])
    assert job["state"] == "FAILED"
    assert job["error"]["code"] == "infeasible_constraints"
    assert job["error"]["conflicts"][0]["cannot_link"] == [2, 0]


def test_cluster_sizes_count_every_cluster_also_the_empty_ones(live):
    # Three distinct points five times each: COP-KMeans asked for four clusters fills three.
    X = np.repeat([[0.0, 0.0], [5.0, 5.0], [-5.0, 5.0]], 5, axis=0)
    did = upload(live, X)
    job = wait_done(live, submit(live, dataset_id=did, method="cop_kmeans", n_clusters=4).json()["id"])
    assert job["state"] == "SUCCEEDED", job["error"]
    res = requests.get(live + job["result_url"], timeout=30).json()
    assert res["n_clusters"] == 4 and len(set(res["labels"])) == 3
    assert res["cluster_sizes"] == np.bincount(res["labels"], minlength=4).tolist()


def test_zscore_scaling_does_not_change_the_stored_dataset(live, blobs):
    did, X, y = blobs
    before = requests.get(f"{live}/v1/datasets/{did}", timeout=30).json()["checksum"]
    job = wait_done(live, submit(live, dataset_id=did, method="spectral", n_clusters=3, scale="zscore").json()["id"])
    assert job["state"] == "SUCCEEDED"
    assert requests.get(f"{live}/v1/datasets/{did}", timeout=30).json()["checksum"] == before


def test_data_at_the_magnitude_limit_runs_on_every_method_and_session(live, blobs):
    """Values up to 1e100 run on the worker (1e308 crashed the graph methods, COP-RF, ReCon and pairwise
    sessions; it is now refused at upload), and z-scoring them gives the clustering of the unscaled data."""
    from sklearn.metrics import adjusted_rand_score

    from clustering.validation import MAX_ABS_VALUE

    did, X, y = blobs
    big = upload(live, X * (MAX_ABS_VALUE / np.abs(X).max()), y)
    pairs = _constraints(y, 20, seed=7)
    relative = [[int(i), int(j), int(k)] for i, j, k in np.random.default_rng(7).choice(len(y), (300, 3))
                if y[i] == y[j] != y[k] and i != j][:40]
    runs = [("spectral", {}), ("e2cp", pairs), ("ccskl", pairs), ("spectral_learning", pairs),
            ("cop_kmeans", pairs), ("cop_rf", pairs), ("recon", {"relative": relative})]
    jobs = {m: submit(live, dataset_id=big, method=m, n_clusters=3, constraints=c or None,
                      params={"n_estimators": 40, "filter_repeats": 20} if m == "cop_rf" else {}).json()["id"]
            for m, c in runs}
    scaled = {d: submit(live, dataset_id=d, method="spectral", n_clusters=3, scale="zscore").json()["id"]
              for d in (big, did)}
    session = requests.post(f"{live}/v1/sessions", json={"dataset_id": big, "n_clusters": 3, "budget": 5,
                                                         "scale": "none"}, timeout=30)
    assert session.status_code == 201, session.text

    def labels(jid):
        job = wait_done(live, jid)
        assert job["state"] == "SUCCEEDED", (job["method"], job["error"])
        return requests.get(f"{live}{job['result_url']}", timeout=30).json()["labels"]

    for m, jid in jobs.items():
        assert adjusted_rand_score(y, labels(jid)) > 0.9, m
    assert adjusted_rand_score(labels(scaled[big]), labels(scaled[did])) == 1.0
    sid = session.json()["id"]
    deadline = time.monotonic() + 60
    while (s := requests.get(f"{live}/v1/sessions/{sid}", timeout=30).json())["state"] == "INITIALIZING":
        assert time.monotonic() < deadline, s
        time.sleep(0.1)
    assert s["state"] == "ACTIVE", s.get("error")
    model = requests.get(f"{live}/v1/sessions/{sid}/model", timeout=30)
    assert model.status_code == 200 and len(model.json()["labels"]) == len(y), model.text


def test_callback_is_signed_standard_webhook(live, blobs):
    did, X, y = blobs
    with WebhookReceiver() as hook:
        jid = submit(live, dataset_id=did, method="spectral", n_clusters=3, callback_url=hook.url).json()["id"]
        wait_done(live, jid)
        headers, body = hook.wait(lambda e: e.get("job_id") == jid)
        assert json.loads(body)["state"] == "SUCCEEDED" and json.loads(body)["type"] == "job.succeeded"
        assert signature_ok(headers, body)


def test_the_event_of_a_job_without_a_result_has_no_result_url(live, blobs):
    """As in the job's view: a FAILED (or CANCELLED) job has no result, its result URL answers 409."""
    did, X, y = blobs
    with WebhookReceiver() as hook:
        failed = submit(live, dataset_id=did, method="cop_kmeans", n_clusters=2, callback_url=hook.url,
                        constraints={"cannot_link": [[0, 1], [1, 2], [0, 2]]}).json()["id"]
        ok = submit(live, dataset_id=did, method="spectral", n_clusters=3, callback_url=hook.url).json()["id"]
        assert wait_done(live, failed)["state"] == "FAILED"
        job = wait_done(live, ok)
        _, body = hook.wait(lambda e: e.get("job_id") == failed)
        assert json.loads(body)["type"] == "job.failed" and json.loads(body)["result_url"] is None
        _, body = hook.wait(lambda e: e.get("job_id") == ok)
        assert json.loads(body)["result_url"] == job["result_url"]


def test_a_job_cancelled_while_queued_sends_its_job_cancelled_event(live, blobs):
    did, X, y = blobs
    # The worker runs one task at a time: a long COP-RF keeps the second job QUEUED until it is cancelled.
    blocker = submit(live, dataset_id=did, method="cop_rf", n_clusters=3, constraints=_constraints(y, 20, 2),
                     params={"n_estimators": 5000, "filter_repeats": 5000}).json()["id"]
    with WebhookReceiver() as hook:
        jid = submit(live, dataset_id=did, method="spectral", n_clusters=3, callback_url=hook.url).json()["id"]
        r = requests.post(f"{live}/v1/jobs/{jid}/cancel", timeout=30)
        assert r.status_code == 202 and r.json()["state"] == "CANCELLED"
        requests.post(f"{live}/v1/jobs/{blocker}/cancel", timeout=30)
        headers, body = hook.wait(lambda e: e.get("job_id") == jid, timeout=60)
        assert json.loads(body)["type"] == "job.cancelled" and json.loads(body)["state"] == "CANCELLED"
        assert signature_ok(headers, body)
        time.sleep(1)  # the queued run_job message still reaches the worker: it must not send a second event
        assert [json.loads(b)["job_id"] for _, b in hook.received].count(jid) == 1
    assert wait_done(live, blocker)["state"] == "CANCELLED"


def test_jobs_that_end_without_their_worker_send_their_event_once(live, blobs):
    """attempts_exhausted (found by the worker picking the job up) and worker_lost (found when the
    record is read) end a job no worker reports: the store queues its job.failed event."""
    from workers.config import Settings
    from workers.store import PREFIX, Store

    did, X, y = blobs
    store = Store.from_settings(Settings.from_env())  # the live stack's Redis: its worker delivers
    with WebhookReceiver() as hook:
        def job():
            return store.create_job(dataset_id=did, method="spectral", n_clusters=3, params={}, constraints={},
                                    random_state=0, callback_url=hook.url)["id"]

        exhausted, lost = job(), job()  # records only: no run_job message, so only this test starts them
        store.r.hset(f"{PREFIX}job:{exhausted}", "attempts", json.dumps(store.settings.max_attempts))
        assert store.start_job(exhausted) is None
        assert store.start_job(lost)["state"] == "RUNNING"
        store.r.hset(f"{PREFIX}job:{lost}", "started_ts", json.dumps(time.time() - 10**6))
        for jid, code in ((exhausted, "attempts_exhausted"), (lost, "worker_lost")):
            assert store.get_job(jid)["error"]["code"] == code
            headers, body = hook.wait(lambda e: e.get("job_id") == jid, timeout=60)
            assert json.loads(body)["type"] == "job.failed" and signature_ok(headers, body)
        assert store.start_job(exhausted) is None and store.get_job(lost)["state"] == "FAILED"
        time.sleep(1)  # ended once, announced once
        assert sorted(json.loads(b)["job_id"] for _, b in hook.received) == sorted([exhausted, lost])


def test_a_refused_callback_is_retried_under_the_same_webhook_id(live, blobs):
    did, X, y = blobs
    with WebhookReceiver(fail_first=1) as hook:
        jid = submit(live, dataset_id=did, method="spectral", n_clusters=3, callback_url=hook.url).json()["id"]
        wait_done(live, jid)
        headers, body = hook.wait(lambda e: e.get("job_id") == jid, timeout=60)  # first retry after 5 s
        (first_headers, first_body), = hook.failed
        assert json.loads(first_body)["job_id"] == jid and first_body == body
        assert headers["webhook-id"] == first_headers["webhook-id"] and signature_ok(headers, body)
        assert [h["webhook-id"] for h, _ in hook.received].count(headers["webhook-id"]) == 1

def test_the_event_of_a_job_deleted_before_its_retry_is_still_sent(live, blobs):
    """``shoal.deliver_webhook`` read the job when each attempt ran: a job its client deleted (polling
    saw it end, fetched the result and deleted it) before an attempt got through had its event dropped.
    Here the first attempt is answered 503 once the job is gone, and the retry sent nothing."""
    import threading

    did, X, y = blobs
    hold = threading.Event()
    with WebhookReceiver(fail_first=1, hold=hold) as hook:
        jid = submit(live, dataset_id=did, method="spectral", n_clusters=3, callback_url=hook.url).json()["id"]
        assert wait_done(live, jid)["state"] == "SUCCEEDED"
        deadline = time.monotonic() + 60
        while not hook.failed and time.monotonic() < deadline:  # the first attempt, held unanswered
            time.sleep(0.05)
        assert requests.delete(f"{live}/v1/jobs/{jid}", timeout=30).status_code == 204
        hold.set()  # now it gets its 503: the retry comes 5 s later
        headers, body = hook.wait(lambda e: e.get("job_id") == jid, timeout=60)
        (_, first_body), = hook.failed
        assert body == first_body and json.loads(body)["type"] == "job.succeeded"
        assert json.loads(body)["result_url"] == f"/v1/jobs/{jid}/result" and signature_ok(headers, body)
