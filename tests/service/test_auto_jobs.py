"""``method: "auto"`` on the wire: what is accepted, and the 422s (real Redis, no worker)."""

PROBLEM = "application/problem+json"


def _submit(client, did, **kw):
    body = {"dataset_id": did, "method": "auto", "n_clusters": 3,
            "constraints": {"must_link": [[0, 1]], "cannot_link": [[0, 2]]}}
    body.update(kw)
    return client.post("/v1/jobs", json=body)


def test_auto_job_is_accepted_with_defaults_and_scale_left_to_it(client, blobs_dataset):
    did, _, _ = blobs_dataset
    r = _submit(client, did)
    assert r.status_code == 202, r.json
    assert r.json["params"]["budget_factor"] == 5.0 and r.json["params"]["n_folds"] == 5
    assert r.json["scale"] == "auto"
    assert _submit(client, did, scale="zscore").json["scale"] == "zscore"


def test_other_methods_keep_scale_none_when_unset(client, blobs_dataset):
    did, _, _ = blobs_dataset
    r = _submit(client, did, method="e2cp")
    assert r.status_code == 202 and r.json["scale"] == "none"


def test_n_clusters_null_only_with_auto(client, blobs_dataset):
    did, _, _ = blobs_dataset
    ok = _submit(client, did, n_clusters=None)
    assert ok.status_code == 202 and ok.json["n_clusters"] is None
    bad = _submit(client, did, method="ccskl", n_clusters=None)
    assert bad.status_code == 422 and bad.headers["Content-Type"] == PROBLEM
    assert bad.json["code"] == "invalid_n_clusters" and "/n_clusters" in bad.json["errors"]


def test_pairwise_and_relative_together_are_auto_mixed_constraints(client, blobs_dataset):
    did, _, _ = blobs_dataset
    r = _submit(client, did, constraints={"must_link": [[0, 1]], "relative": [[0, 1, 2]]})
    assert r.status_code == 422 and r.headers["Content-Type"] == PROBLEM
    assert r.json["code"] == "auto_mixed_constraints" and "/constraints" in r.json["errors"]
    trip = _submit(client, did, constraints={"triplets": [[0, 1, 2, "yes"]]})
    assert trip.status_code == 202


def test_auto_params_are_validated(client, blobs_dataset):
    did, _, _ = blobs_dataset
    for params, pointer in (({"budget_factor": 50}, "/params/budget_factor"),
                            ({"n_folds": 1}, "/params/n_folds"),
                            ({"candidates": ["rf-def", "kmeans"]}, "/params/candidates/1"),
                            ({"candidates": []}, "/params/candidates"),
                            ({"tie_break": "coin"}, "/params/tie_break")):
        r = _submit(client, did, params=params)
        assert r.status_code == 422, params
        assert any(k.startswith(pointer) for k in r.json["errors"]), (params, r.json["errors"])
