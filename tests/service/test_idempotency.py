"""Idempotency-Key on creating POSTs: a retried request gets the first response, not a second resource."""

import hashlib
import json

import pytest

PROBLEM = "application/problem+json"


def _job_body(did, **extra):
    return {"dataset_id": did, "method": "e2cp", "n_clusters": 3, **extra}


def _post(client, path, body, key):
    return client.post(path, data=json.dumps(body), content_type="application/json",
                       headers={"Idempotency-Key": key})


def test_a_retried_job_submission_creates_one_job(client, store, blobs_dataset):
    did = blobs_dataset[0]
    key = "retry-1-" + did
    first = _post(client, "/v1/jobs", _job_body(did), key)
    assert first.status_code == 202 and "Idempotent-Replayed" not in first.headers
    again = _post(client, "/v1/jobs", _job_body(did), key)
    assert again.status_code == 202 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json == first.json and again.headers["Location"] == first.headers["Location"]
    assert [u for u in store.dataset_users(did) if u[0] == "job"] == [("job", first.json["id"])]
    # Another key, or none, is another request.
    other = _post(client, "/v1/jobs", _job_body(did), key + "-b")
    plain = client.post("/v1/jobs", json=_job_body(did))
    assert len({first.json["id"], other.json["id"], plain.json["id"]}) == 3
    # Keys are per endpoint: the same key on sessions is a new request there.
    session = _post(client, "/v1/sessions", {"dataset_id": did, "budget": 5}, key)
    assert session.status_code == 201 and "Idempotent-Replayed" not in session.headers


def test_the_same_key_with_another_body_is_refused(client, store, blobs_dataset):
    did = blobs_dataset[0]
    key = "reuse-" + did
    assert _post(client, "/v1/jobs", _job_body(did), key).status_code == 202
    r = _post(client, "/v1/jobs", _job_body(did, n_clusters=2), key)
    assert r.status_code == 422 and r.mimetype == PROBLEM and r.json["code"] == "idempotency_key_reused"
    assert "header:Idempotency-Key" in r.json["errors"]
    assert len([u for u in store.dataset_users(did) if u[0] == "job"]) == 1


def test_a_failed_request_frees_its_key(client, store, blobs_dataset):
    did = blobs_dataset[0]
    key = "fix-" + did
    bad = _post(client, "/v1/jobs", _job_body(did, n_clusters=1000), key)
    assert bad.status_code == 422 and bad.json["code"] != "idempotency_key_reused"
    fixed = _post(client, "/v1/jobs", _job_body(did), key)
    assert fixed.status_code == 202 and "Idempotent-Replayed" not in fixed.headers


def test_a_request_still_running_answers_409(client, store, blobs_dataset):
    did = blobs_dataset[0]
    body = _job_body(did)
    raw = json.dumps(body).encode()
    # The first request has claimed the key and not answered yet (another process).
    assert store.claim_request("POST /v1/jobs", "slow-" + did, hashlib.sha256(raw).hexdigest()) is None
    r = _post(client, "/v1/jobs", body, "slow-" + did)
    assert r.status_code == 409 and r.json["code"] == "request_in_progress" and r.headers["Retry-After"] == "1"
    assert [u for u in store.dataset_users(did) if u[0] == "job"] == []


def test_a_claim_outlives_any_request_gunicorn_lets_run(store):
    """A request slower than the claim lost its key: a retry meanwhile ran the request twice."""
    from service import gunicorn_conf

    assert store.claim_request("POST /v1/jobs", "long-request", "f") is None
    assert store.r.ttl(store._request_key("POST /v1/jobs", "long-request")) > gunicorn_conf.timeout


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "two words"])
def test_a_malformed_key_is_a_400(client, blobs_dataset, key):
    r = client.post("/v1/jobs", json=_job_body(blobs_dataset[0]), headers={"Idempotency-Key": key})
    assert r.status_code == 400 and r.mimetype == PROBLEM and r.json["code"] == "invalid_idempotency_key"


def test_dataset_upload_replays_the_first_dataset(client):
    body = {"name": "idem", "data": [[1.0, 2.0], [3.0, 4.0]]}
    first = _post(client, "/v1/datasets", body, "upload-once")
    again = _post(client, "/v1/datasets", body, "upload-once")
    assert first.status_code == again.status_code == 201
    assert again.json["id"] == first.json["id"] and again.headers["Idempotent-Replayed"] == "true"
