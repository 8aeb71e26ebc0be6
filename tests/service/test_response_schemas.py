"""Real bodies of the routes schemathesis cannot reach (they need a finished job or a dataset)
validate against the committed openapi.yaml, which must document them."""

from pathlib import Path

import numpy as np
import pytest
import schemathesis

SPEC = schemathesis.openapi.from_path(Path(__file__).resolve().parents[2] / "openapi.yaml")


def _documented(path, method, content_type="application/json"):
    response = SPEC.raw_schema["paths"][path][method]["responses"]["200"]
    assert "schema" in response.get("content", {}).get(content_type, {}), (path, method, content_type, response)
    return SPEC[path][method.upper()]


@pytest.fixture()
def e2cp_job(store, blobs_dataset):
    """A SUCCEEDED e2cp job with a stored sparse affinity."""
    did, X, _ = blobs_dataset
    jid = store.create_job(dataset_id=did, method="e2cp", n_clusters=3, params={}, constraints={},
                           random_state=0)["id"]
    store.start_job(jid)
    A = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    store.save_result(jid, {"job_id": jid, "labels": [0] * len(X)}, affinity=np.where(A > 1e-3, A, 0.0))
    store.finish_job(jid, "SUCCEEDED")
    return jid


def test_the_affinity_top_k_body_is_documented_and_conforms(client, e2cp_job):
    r = client.get(f"/v1/jobs/{e2cp_job}/affinity?top_k=3")
    assert r.status_code == 200 and r.json["format"] == "top_k_rows" and len(r.json["indices"][0]) == 3
    _documented("/v1/jobs/{job_id}/affinity", "get").validate_response(r)


def test_the_affinity_npz_body_is_documented(client, e2cp_job):
    r = client.get(f"/v1/jobs/{e2cp_job}/affinity?format=npz")
    assert r.status_code == 200 and r.mimetype == "application/octet-stream" and r.data[:2] == b"PK"
    _documented("/v1/jobs/{job_id}/affinity", "get", "application/octet-stream")


@pytest.mark.parametrize("constraints", [
    {"must_link": [[0, 1], [1, 2]], "cannot_link": [[0, 2]]},
    {"triplets": [[0, 1, 2, "yes"], [0, 2, 1, "yes"]], "relative": [[3, 4, 5]], "hierarchy": [[6, 7], 8]},
    {},
])
def test_the_constraint_check_body_is_documented_and_conforms(client, blobs_dataset, constraints):
    r = client.post("/v1/constraints/check", json={"dataset_id": blobs_dataset[0], "constraints": constraints})
    assert r.status_code == 200, r.json
    if constraints.get("triplets"):
        assert r.json["relative"]["feasible"] is False and r.json["relative"]["conflicting"]
    if constraints.get("cannot_link"):
        assert r.json["conflicts"][0]["must_link_chain_item_ids"]  # the dataset has item ids
    _documented("/v1/constraints/check", "post").validate_response(r)


def test_a_range_past_the_npz_is_a_416_problem_with_its_content_range(client, e2cp_job):
    # The problem handler rebuilt every HTTP error without the exception's headers: the 416 lost the
    # Content-Range: bytes */<length> RFC 9110 15.5.17 asks for, and its code was the catch-all http_error.
    size = len(client.get(f"/v1/jobs/{e2cp_job}/affinity?format=npz").data)
    part = client.get(f"/v1/jobs/{e2cp_job}/affinity?format=npz", headers={"Range": "bytes=0-9"})
    assert part.status_code == 206 and len(part.data) == 10
    r = client.get(f"/v1/jobs/{e2cp_job}/affinity?format=npz", headers={"Range": f"bytes={size + 10}-"})
    assert r.status_code == 416 and r.mimetype == "application/problem+json"
    assert r.json["code"] == "range_not_satisfiable" and r.json["title"] == "Range not satisfiable"
    assert r.headers["Content-Range"] == f"bytes */{size}"


def test_the_probe_bodies_are_documented_and_conform(client, live):
    import requests

    r = client.get("/healthz")
    assert r.status_code == 200 and r.json == {"status": "ok"}
    _documented("/healthz", "get").validate_response(r)
    ready = requests.get(f"{live}/readyz", timeout=30)
    assert ready.status_code == 200 and ready.json()["workers"] >= 1
    _documented("/readyz", "get").validate_response(ready)


def _big_dataset(store, n):
    """An n x 1 dataset stored directly (over the test service's SHOAL_MAX_ROWS upload limit)."""
    return store.put_dataset(np.arange(float(n))[:, None], name=f"rows-{n}")["id"]


@pytest.mark.parametrize("code, method, n, constraints, params, members", [
    ("dataset_too_large_for_method", "cop_rf", 20_001, None, {}, {"method", "max_samples", "n_samples"}),
    ("constraints_too_large_for_method", "e2cp", 40_000, {"must_link": [[i, i + 1] for i in range(0, 4002, 2)]}, {},
     {"method", "max_propagation", "n_samples", "n_constrained_samples"}),
    ("constraints_too_large_for_option", "spectral_learning", 7_100,
     {"must_link": [[i, i + 1] for i in range(7_099)]}, {"closure": True},
     {"method", "max_closure_pairs", "n_closure_pairs"}),
])
def test_the_size_limit_problems_conform_to_the_documented_problem(client, store, code, method, n, constraints,
                                                                    params, members):
    # Problem is documented with additionalProperties: false, and these 422s carry members it did not list:
    # every one of them violated the committed openapi.yaml.
    body = {"dataset_id": _big_dataset(store, n), "method": method, "n_clusters": 2, "params": params}
    if constraints:
        body["constraints"] = constraints
    r = client.post("/v1/jobs", json=body)
    assert r.status_code == 422 and r.json["code"] == code, r.json
    assert members <= set(r.json)
    SPEC["/v1/jobs"]["POST"].validate_response(r)


def test_a_204_has_no_content_type(client, e2cp_job, blobs_dataset):
    # The DELETEs answered Content-Type: application/json with an empty body (flask-smorest jsonifies 204s).
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0]}).json["id"]
    for url in (f"/v1/jobs/{e2cp_job}", f"/v1/sessions/{sid}", f"/v1/datasets/{blobs_dataset[0]}"):
        r = client.delete(url)
        assert r.status_code == 204 and r.data == b"", (url, r.status_code)
        assert "Content-Type" not in r.headers, (url, r.headers)
