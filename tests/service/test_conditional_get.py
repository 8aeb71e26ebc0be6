"""Conditional GETs: If-None-Match compares weakly (RFC 9110 13.1.2) on every resource with an ETag."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist


@pytest.fixture()
def resources(client, store, blobs_dataset):
    """URLs of a queued job, a finished job's result and affinity (JSON, .npz) and a session (each answers
    with an ETag)."""
    did, X, _ = blobs_dataset
    queued = client.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3}).json["id"]
    done = client.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3}).json["id"]
    store.start_job(done)
    store.save_result(done, {"job_id": done, "labels": [0] * 60}, affinity=np.exp(-cdist(X, X, "sqeuclidean")))
    store.finish_job(done, "SUCCEEDED")
    session = client.post("/v1/sessions", json={"dataset_id": did}).json["id"]
    return [f"/v1/jobs/{queued}", f"/v1/jobs/{done}", f"/v1/jobs/{done}/result", f"/v1/sessions/{session}",
            f"/v1/jobs/{done}/affinity", f"/v1/jobs/{done}/affinity?format=npz"]


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


def test_each_form_of_an_affinity_has_its_own_etag(client, resources):
    # The affinity had no ETag: a poller fetched the whole matrix again each time.
    affinity = resources[4]
    forms = ("", "?top_k=3", "?format=npz", "?format=npz&top_k=3")
    tags = {q: client.get(affinity + q).headers["ETag"] for q in forms}
    assert tags["?format=npz"] == tags["?format=npz&top_k=3"]  # top_k does not change the .npz
    assert len({tags[""], tags["?top_k=3"], tags["?format=npz"]}) == 3, tags
    assert client.get(affinity, headers={"If-None-Match": tags["?format=npz"]}).status_code == 200
    r = client.get(affinity + "?format=npz", headers={"If-None-Match": tags["?format=npz"]})
    assert r.status_code == 304 and r.data == b"" and "Content-Type" not in r.headers


def test_a_missing_resource_is_404_whatever_if_none_match_says(client):
    assert client.get("/v1/jobs/job_missing", headers={"If-None-Match": "*"}).status_code == 404
