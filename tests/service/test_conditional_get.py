"""Conditional GETs: If-None-Match compares weakly (RFC 9110 13.1.2) on every resource with an ETag."""

import pytest


@pytest.fixture()
def resources(client, store, blobs_dataset):
    """URLs of a queued job, a finished job's result and a session (each answers with an ETag)."""
    did = blobs_dataset[0]
    queued = client.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3}).json["id"]
    done = client.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3}).json["id"]
    store.start_job(done)
    store.save_result(done, {"job_id": done, "labels": [0] * 60})
    store.finish_job(done, "SUCCEEDED")
    session = client.post("/v1/sessions", json={"dataset_id": did}).json["id"]
    return [f"/v1/jobs/{queued}", f"/v1/jobs/{done}", f"/v1/jobs/{done}/result", f"/v1/sessions/{session}"]


@pytest.mark.parametrize("header, modified", [
    ("{etag}", False),
    ("W/{etag}", False),                 # weak comparison: W/"x" matches "x"
    ('W/"other", W/{etag}', False),
    ('"other", {etag}', False),
    ("*", False),                        # any current representation
    ('"other"', True),
    ('W/"other"', True),
])
def test_if_none_match_uses_weak_comparison(client, resources, header, modified):
    for url in resources:
        first = client.get(url)
        etag = first.headers["ETag"]
        assert first.status_code == 200 and etag.startswith('"'), url
        again = client.get(url, headers={"If-None-Match": header.format(etag=etag)})
        if modified:
            assert again.status_code == 200 and again.data == first.data, url
        else:  # RFC 9110 15.4.5: a 304 carries the ETag a 200 would have, and no body
            assert again.status_code == 304 and again.headers["ETag"] == etag and again.data == b"", url
            assert ("Retry-After" in again.headers) == ("Retry-After" in first.headers), url


def test_a_missing_resource_is_404_whatever_if_none_match_says(client):
    assert client.get("/v1/jobs/job_missing", headers={"If-None-Match": "*"}).status_code == 404
