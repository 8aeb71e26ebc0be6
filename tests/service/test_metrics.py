"""GET /metrics: Prometheus counters kept in Redis by the store, exact across processes."""

from tests.integration.helpers import metric, metric_values


def _scrape(client):
    r = client.get("/metrics")
    assert r.status_code == 200 and r.mimetype == "text/plain"
    assert "version=" in r.headers["Content-Type"]  # the exposition format prometheus_client writes
    return metric_values(r.get_data(as_text=True))


def test_jobs_are_counted_from_submission_to_their_end(client, store, blobs_dataset):
    did = blobs_dataset[0]
    before = _scrape(client)
    ids = [client.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3}).json["id"]
           for _ in range(3)]
    mid = _scrape(client)
    for name in ("shoal_jobs_submitted_total", "shoal_jobs_unfinished"):
        assert metric(mid, name, method="e2cp") - metric(before, name, method="e2cp") == 3
    assert metric(mid, "shoal_redis_up") == 1

    assert client.post(f"/v1/jobs/{ids[0]}/cancel").json["state"] == "CANCELLED"
    assert store.start_job(ids[1])["state"] == "RUNNING"
    assert store.finish_job(ids[1], "SUCCEEDED")["state"] == "SUCCEEDED"
    assert store.finish_job(ids[1], "FAILED") is None  # a second end is not counted
    after = _scrape(client)

    def delta(name, **labels):
        return metric(after, name, **labels) - metric(before, name, **labels)

    assert delta("shoal_jobs_finished_total", method="e2cp", state="CANCELLED") == 1
    assert delta("shoal_jobs_finished_total", method="e2cp", state="SUCCEEDED") == 1
    assert delta("shoal_jobs_finished_total", method="e2cp", state="FAILED") == 0
    assert delta("shoal_jobs_unfinished", method="e2cp") == 1
    assert delta("shoal_job_run_seconds_count", method="e2cp") == 1  # the cancelled job never ran
    assert 0 <= delta("shoal_job_run_seconds_sum", method="e2cp") < 60
    # Nothing consumes the test store's queue: the last job's message is still waiting.
    assert metric(after, "shoal_queue_messages", queue=store.settings.queues["long"]) >= 1


def test_sessions_and_answers_are_counted_by_outcome(client, blobs_dataset):
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    did = blobs_dataset[0]
    before = _scrape(client)
    sid = client.post("/v1/sessions", json={"dataset_id": did, "budget": 5}).json["id"]
    store = client.application.config["SHOAL_STORE"]
    update_once(store, SessionStore(store), sid)  # the worker's pass, run here: it opens the pool
    q = client.post(f"/v1/sessions/{sid}/questions", json={"count": 1}).json["questions"][0]
    body = {"answers": [{"question_id": q["question_id"], "answer": "must_link", "assignment_id": "a1"},
                        {"question_id": q["question_id"], "answer": "must_link", "assignment_id": "a1"},
                        {"question_id": q["question_id"], "answer": "maybe", "assignment_id": "a2"}]}
    assert [r["outcome"] for r in client.post(f"/v1/sessions/{sid}/answers", json=body).json["results"]] == [
        "accepted", "duplicate", "rejected"]
    after = _scrape(client)

    def delta(name, **labels):
        return metric(after, name, **labels) - metric(before, name, **labels)

    assert delta("shoal_sessions_created_total", question_type="pairwise") == 1
    assert [delta("shoal_session_answers_total", outcome=o) for o in ("accepted", "duplicate", "rejected", "late")] \
        == [1, 1, 1, 0]


def test_redis_down_is_reported_not_raised(store):
    """A scrape while Redis is unreachable still answers 200, with shoal_redis_up 0 only."""
    from dataclasses import replace

    from service import create_app
    from workers.store import Store

    down = Store.from_settings(replace(store.settings, redis_url="redis://127.0.0.1:1/0"))
    values = _scrape(create_app({"TESTING": True, "SHOAL_STORE": down}).test_client())
    assert values == {("shoal_redis_up", ()): 0.0}


def test_work_redispatched_after_a_lost_worker_is_counted(client, store, blobs_dataset):
    from workers import liveness
    from workers.session_store import SessionStore

    before = _scrape(client)
    body = {"dataset_id": blobs_dataset[0], "method": "e2cp", "n_clusters": 3}
    jid = client.post("/v1/jobs", json=body).json["id"]
    store.start_job(jid, task_id=jid, worker="lost:1")
    assert store.requeue_lost_job(jid, "lost:1", jid, "task-2")
    assert not store.requeue_lost_job(jid, "lost:1", jid, "task-3")  # once only
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5}).json["id"]
    store.r.set(SessionStore(store)._key(sid, ":update"), "pass-1")
    liveness.track(store.r, "lost:2", f"session:{sid}", "pass-1")
    assert liveness.recover_worker(store, "lost:2") == [f"session:{sid}"]
    after = _scrape(client)
    assert metric(after, "shoal_jobs_redispatched_total", method="e2cp") - metric(
        before, "shoal_jobs_redispatched_total", method="e2cp") == 1
    assert metric(after, "shoal_session_passes_redispatched_total") - metric(
        before, "shoal_session_passes_redispatched_total") == 1
