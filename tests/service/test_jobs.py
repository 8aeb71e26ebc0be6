"""Job submission validation against a real Redis (no worker needed: jobs stay QUEUED)."""

import pytest

from clustering.validation import DENSE_AFFINITY_LIMIT

PROBLEM = "application/problem+json"


def _set_option_limit(monkeypatch, method, params, value):
    """Set the size limit of ``method``'s options ``params`` (its card's ``option_limits``) for one test."""
    from clustering.cards import CARDS

    for lim in CARDS[method].option_limits:
        if lim.param in params:
            monkeypatch.setattr(lim, "value", value)


def submit(client, did, **kw):
    body = {"dataset_id": did, "method": "e2cp", "n_clusters": 3}
    body.update(kw)
    return client.post("/v1/jobs", json=body)


def test_accepted_job_is_202_with_location_and_retry_after(client, blobs_dataset):
    did, _, _ = blobs_dataset
    r = submit(client, did, constraints={"must_link": [[0, 1]], "cannot_link": [[0, 2]]})
    assert r.status_code == 202
    assert r.headers["Location"] == f"/v1/jobs/{r.json['id']}"
    assert int(r.headers["Retry-After"]) >= 1
    assert r.json["state"] == "QUEUED" and r.json["done"] is False
    assert r.json["params"]["alpha"] == 0.6  # defaults filled in from the method schema
    got = client.get(r.headers["Location"])
    assert got.status_code == 200 and "Retry-After" in got.headers and got.headers.get("ETag")
    early = client.get(f"{r.headers['Location']}/result")
    assert early.status_code == 409 and early.json["state"] == "QUEUED" and "Retry-After" in early.headers
    again = client.get(r.headers["Location"], headers={"If-None-Match": got.headers["ETag"]})
    assert again.status_code == 304


@pytest.mark.parametrize(
    "override, status, pointer",
    [
        ({"constraints": {"must_link": [[0, 60]]}}, 422, "/constraints/must_link/0/1"),
        ({"constraints": {"cannot_link": [[1, 2], [5, 5]]}}, 422, "/constraints/cannot_link/1"),
        ({"constraints": {"must_link": [[0, 1.5]]}}, 422, "/constraints/must_link"),
        ({"constraints": {"must_link": [[0, -1]]}}, 422, "/constraints/must_link"),
        ({"constraints": {"must_link": [[0, 1]], "must_link_weights": [1.5]}}, 422,
         "/constraints/must_link_weights"),
        ({"n_clusters": 1}, 422, "/n_clusters"),
        ({"n_clusters": 61}, 422, "/n_clusters"),
        ({"n_clusters": 2.0}, 422, "/n_clusters"),
        ({"method": "kmeans++"}, 422, "/method"),
        ({"params": {"alpha": 2}}, 422, "/params/alpha"),
        ({"params": {"bogus": 1}}, 422, "/params/bogus"),
        ({"on_conflict": "ignore"}, 422, "/on_conflict"),
        ({"method": "ccskl", "params": {"sigma": -1.0}}, 422, "/params/sigma"),
        ({"method": "ccskl", "params": {"sigma": "widest"}}, 422, "/params/sigma"),
        ({"method": "ccskl", "params": {"restart_selection": "best"}}, 422, "/params/restart_selection"),
        ({"method": "cop_rf", "params": {"cannot_link_policy": "cover"}}, 422, "/params/cannot_link_policy"),
        ({"method": "cop_rf", "params": {"rca_components": 0}}, 422, "/params/rca_components"),
        ({"method": "cop_rf", "params": {"rca_components": 2.5}}, 422, "/params/rca_components"),
        ({"method": "cop_rf", "params": {"rca_components": "most"}}, 422, "/params/rca_components"),
        ({"method": "cop_rf", "params": {"rca_components": True}}, 422, "/params/rca_components"),
        ({"method": "cop_rf", "params": {"rca_components": 1.0}}, 422, "/params/rca_components"),
        ({"method": "cop_rf", "params": {"rca_components": 1e30}}, 422, "/params/rca_components"),
        ({"method": "cop_rf", "params": {"rca_components": 2001}}, 422, "/params/rca_components"),
        ({"method": "cop_rf", "params": {"rca_components": 10**400}}, 422, "/params/rca_components"),
        ({"method": "ccskl", "params": {"sigma": 10**400}}, 422, "/params/sigma"),
        ({"method": "spectral", "constraints": {"must_link": [[0, 1]]}}, 422, "/constraints"),
        ({"method": "cop_rf", "preset": "fastest"}, 422, "/preset"),
        ({"method": "e2cp", "preset": "rca_filtered"}, 422, "/preset"),
        ({"method": "cop_rf", "preset": "rca_filtered", "params": {"rca_components": 0}}, 422,
         "/params/rca_components"),
    ],
)
def test_invalid_jobs_are_rejected_with_a_pointer(client, blobs_dataset, override, status, pointer):
    did, _, _ = blobs_dataset
    r = submit(client, did, **override)
    assert r.status_code == status, r.json
    assert r.mimetype == PROBLEM
    assert pointer in r.json.get("errors", {}), r.json


@pytest.mark.parametrize("constraints, pointer", [
    ({"must_link": [[0, 1]], "must_link_weights": [0.5, 0.5]}, "/constraints/must_link_weights"),
    ({"cannot_link": [[0, 1]], "cannot_link_weights": []}, "/constraints/cannot_link_weights"),
    ({"must_link_weights": [0.5]}, "/constraints/must_link_weights"),
    ({"must_link": [[0, 1]], "must_link_weights": [1.5]}, "/constraints/must_link_weights"),
    ({"must_link": [[0]]}, "/constraints/must_link"),
    ({"must_link": [[0, -1]]}, "/constraints/must_link"),
    ({"must_link": [[0, 60]]}, "/constraints/must_link/0/1"),  # invalid_constraints already
])
@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/constraints/check"])
def test_every_constraint_problem_is_invalid_constraints(client, blobs_dataset, path, constraints, pointer):
    # Weights of another length than their pairs (and the schema's other constraint checks) answered
    # invalid_input, while an index out of range or a self-pair answers invalid_constraints.
    body = {"dataset_id": blobs_dataset[0], "method": "e2cp", "n_clusters": 3, "constraints": constraints}
    if path == "/v1/constraints/check":
        body = {"dataset_id": body["dataset_id"], "constraints": constraints}
    r = client.post(path, json=body)
    assert r.status_code == 422 and r.mimetype == PROBLEM
    assert r.json["code"] == "invalid_constraints" and list(r.json["errors"]) == [pointer], r.json
    assert r.json["type"].endswith("/invalid-constraints")


def test_errors_in_constraints_and_elsewhere_are_invalid_input(client, blobs_dataset):
    r = submit(client, blobs_dataset[0], on_conflict="ignore",
               constraints={"must_link": [[0, 1]], "must_link_weights": [0.5, 0.5]})
    assert r.status_code == 422 and r.json["code"] == "invalid_input"
    assert set(r.json["errors"]) == {"/on_conflict", "/constraints/must_link_weights"}, r.json


def test_unknown_dataset_is_404(client):
    r = submit(client, "ds_missing")
    assert r.status_code == 404 and r.mimetype == PROBLEM


def test_conflicts_are_kept_by_default_and_rejected_on_request(client, blobs_dataset):
    did, _, _ = blobs_dataset
    c = {"must_link": [[0, 1], [1, 2]], "cannot_link": [[3, 4], [2, 0]]}
    kept = submit(client, did, constraints=c)
    assert kept.status_code == 202 and kept.json["n_conflicts"] == 1
    rej = submit(client, did, constraints=c, on_conflict="reject")
    assert rej.status_code == 422 and rej.json["code"] == "contradictory_constraints"
    (conflict,) = rej.json["conflicts"]
    assert conflict["cannot_link"] == [2, 0] and conflict["cannot_link_index"] == 1
    chain = conflict["must_link_chain"]
    assert chain[0] == 2 and chain[-1] == 0 and len(chain) == 3
    assert conflict["must_link_chain_item_ids"] == [f"item-{i}" for i in chain]


def test_a_rejected_contradiction_points_at_the_constraints_in_errors(client, blobs_dataset):
    """A 422 for invalid input maps JSON pointers to messages in ``errors`` (api.md, "Errors"), also when
    the constraints contradict each other under on_conflict "reject"."""
    did, _, _ = blobs_dataset
    c = {"must_link": [[0, 1], [1, 2]], "cannot_link": [[3, 4], [2, 0]]}
    rej = submit(client, did, constraints=c, on_conflict="reject")
    assert rej.status_code == 422 and rej.json["code"] == "contradictory_constraints"
    assert list(rej.json["errors"]) == ["/constraints/cannot_link/1"], rej.json
    assert str(rej.json["conflicts"][0]["must_link_chain"]) in rej.json["errors"]["/constraints/cannot_link/1"][0]
    rel = {"hierarchy": [[0, 1], [2, 3]], "relative": [[4, 5, 6], [0, 2, 1]]}  # 0 2 | 1 against the tree's 01|2
    rej = submit(client, did, method="recon", n_clusters=2, constraints=rel, on_conflict="reject")
    assert rej.status_code == 422 and rej.json["code"] == "contradictory_constraints"
    assert set(rej.json["errors"]) == {"/constraints/relative/1", "/constraints/hierarchy"}, rej.json


def test_the_job_keeps_the_count_of_conflicts_beyond_those_it_lists(client, blobs_dataset):
    # 150 cannot-links inside one must-link chain: every one contradicted, 100 of them listed.
    did, _, _ = blobs_dataset
    c = {"must_link": [[i, i + 1] for i in range(59)],
         "cannot_link": [[i, j] for i in range(10) for j in range(10, 25)]}
    r = submit(client, did, constraints=c)
    assert r.status_code == 202 and r.json["n_conflicts"] == 150
    assert client.get(r.headers["Location"]).json["n_conflicts"] == 150
    assert client.post("/v1/constraints/check", json={"dataset_id": did, "constraints": c}).json["n_conflicts"] == 150


def test_constraint_check_endpoint(client, blobs_dataset):
    did, _, _ = blobs_dataset
    ok = client.post("/v1/constraints/check", json={"dataset_id": did,
                                                    "constraints": {"must_link": [[0, 1]], "cannot_link": [[0, 2]]}})
    assert ok.status_code == 200 and ok.json["consistent"] is True
    bad = client.post("/v1/constraints/check", json={"dataset_id": did,
                                                     "constraints": {"must_link": [[0, 1]], "cannot_link": [[1, 0]]}})
    assert bad.json["consistent"] is False and bad.json["conflicts"][0]["must_link_chain"] == [1, 0]


def test_cancel_queued_job_is_immediate_and_idempotent(client, blobs_dataset):
    did, _, _ = blobs_dataset
    jid = submit(client, did).json["id"]
    for _ in range(2):
        r = client.post(f"/v1/jobs/{jid}/cancel")
        assert r.status_code == 202 and r.json["state"] == "CANCELLED" and r.json["done"]
    res = client.get(f"/v1/jobs/{jid}/result")
    assert res.status_code == 409 and res.json["state"] == "CANCELLED"


def test_a_finished_job_can_be_deleted_an_unfinished_one_not(client, store, blobs_dataset):
    did, _, _ = blobs_dataset
    jid = submit(client, did).json["id"]
    r = client.delete(f"/v1/jobs/{jid}")
    assert r.status_code == 409 and r.json["code"] == "job_not_finished"
    assert client.get(f"/v1/jobs/{jid}").json["state"] == "QUEUED"
    assert store.start_job(jid)["state"] == "RUNNING"
    assert client.delete(f"/v1/jobs/{jid}").status_code == 409
    store.save_result(jid, {"job_id": jid, "labels": [0] * 60})
    assert store.finish_job(jid, "SUCCEEDED")["state"] == "SUCCEEDED"

    assert client.delete(f"/v1/jobs/{jid}").status_code == 204
    assert client.get(f"/v1/jobs/{jid}").status_code == 404
    assert client.get(f"/v1/jobs/{jid}/result").status_code == 404
    assert client.delete(f"/v1/jobs/{jid}").status_code == 404
    assert not store.r.keys(f"shoal:job:{jid}*")
    assert ("job", jid) not in store.dataset_users(did)
    assert jid not in [j["id"] for j in client.get("/v1/jobs?page_size=100").json["jobs"]]
    assert client.get(f"/v1/datasets/{did}").status_code == 200  # the dataset stays


def test_list_jobs_paginates_without_repeats(client, blobs_dataset):
    did, _, _ = blobs_dataset
    ids = {submit(client, did).json["id"] for _ in range(5)}
    seen, token = [], None
    while True:
        q = "/v1/jobs?page_size=2" + (f"&page_token={token}" if token else "")
        page = client.get(q).json
        seen += [j["id"] for j in page["jobs"]]
        token = page["next_page_token"]
        if not token:
            break
    assert ids <= set(seen) and len(seen) == len(set(seen))
    assert client.get("/v1/jobs?page_token=garbage").status_code == 400
    queued = client.get("/v1/jobs?state=CANCELLED&page_size=100").json["jobs"]
    assert all(j["state"] == "CANCELLED" for j in queued)


def _all_pages(client, url):
    seen, token = [], None
    while True:
        page = client.get(url + (f"&page_token={token}" if token else "")).json
        seen.append(page)
        token = page["next_page_token"]
        if not token:
            return seen


@pytest.mark.parametrize("kind", ["jobs", "sessions"])
def test_list_by_dataset_gives_that_datasets_records_newest_first(client, blobs_dataset, kind):
    did = blobs_dataset[0]
    other = client.post("/v1/datasets", json={"data": [[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [3.0, 1.0]]}).json["id"]
    body = {"method": "e2cp", "n_clusters": 2} if kind == "jobs" else {"budget": 5}
    mine = [client.post(f"/v1/{kind}", json=dict(body, dataset_id=did)).json["id"] for _ in range(5)]
    theirs = [client.post(f"/v1/{kind}", json=dict(body, dataset_id=other)).json["id"] for _ in range(2)]
    if kind == "jobs":
        assert client.post(f"/v1/jobs/{mine[1]}/cancel").json["state"] == "CANCELLED"
    pages = _all_pages(client, f"/v1/{kind}?page_size=2&dataset_id={did}")
    listed = [r["id"] for p in pages for r in p[kind]]
    assert [len(p[kind]) for p in pages][:2] == [2, 2]
    assert listed[:5] == mine[::-1] and not set(listed) & set(theirs)  # newest first, no repeats
    assert all(r["dataset_id"] == did for p in pages for r in p[kind])
    assert [r["id"] for r in client.get(f"/v1/{kind}?dataset_id={other}").json[kind]] == theirs[::-1]
    if kind == "jobs":
        cancelled = client.get(f"/v1/jobs?dataset_id={did}&state=CANCELLED").json["jobs"]
        assert [r["id"] for r in cancelled] == [mine[1]]
    assert client.get(f"/v1/{kind}?dataset_id=ds_unknown").json == {kind: [], "next_page_token": None}


def test_methods_catalogue_is_served_whole(client):
    import json

    from service.methods import catalogue

    # the response schema (documented in openapi.yaml) drops no key of the catalogue
    assert client.get("/v1/methods").json == json.loads(json.dumps(catalogue()))


def test_methods_catalogue_lists_parameters(client):
    methods = {m["id"]: m for m in client.get("/v1/methods").json["methods"]}
    assert {"spectral", "spectral_learning", "e2cp", "cop_kmeans"} <= set(methods)
    alpha = next(p for p in methods["e2cp"]["params"] if p["name"] == "alpha")
    assert alpha["default"] == 0.6 and alpha["maximum"] == 0.95
    sigma = next(p for p in methods["ccskl"]["params"] if p["name"] == "sigma")
    assert sigma["default"] == "auto" and sigma["choices"] == ["auto", "select"]
    rca = next(p for p in methods["cop_rf"]["params"] if p["name"] == "rca_components")
    assert rca["type"] == "integer or string" and rca["choices"] == ["all"] and rca["minimum"] == 1
    assert rca["default"] is None and rca["nullable"] is True


@pytest.mark.parametrize("method, params", [
    ("ccskl", {"sigma": "select", "weighting": "none"}),
    ("ccskl", {"sigma": 0.7, "restart_selection": "inertia"}),
    ("cop_rf", {"cannot_link_policy": "separate", "affinity_samples": "in_bag", "pseudo_samples": "marginal"}),
    ("cop_rf", {"rca_components": "all", "n_neighbors": "select", "drop_violated": True}),
    ("cop_rf", {"rca_components": 3}),
])
def test_method_options_are_accepted_as_given(client, blobs_dataset, method, params):
    did, _, _ = blobs_dataset
    r = submit(client, did, method=method, params=params)
    assert r.status_code == 202, r.json
    assert {k: r.json["params"][k] for k in params} == params


def test_every_catalogue_preset_is_a_job_accepted_as_given(client, blobs_dataset):
    did, _, _ = blobs_dataset
    methods = client.get("/v1/methods").json["methods"]
    presets = [(m, p) for m in methods for p in m["presets"]]
    assert any(m["id"] == "cop_rf" for m, _ in presets)
    # the dense-only options' row limit is quoted where clients read the preset
    assert all(f"{DENSE_AFFINITY_LIMIT} rows" in p["description"] for m, p in presets if m["id"] == "cop_rf")
    for m, preset in presets:
        defaults = {p["name"]: p["default"] for p in m["params"]}
        assert preset["description"] and any(defaults[k] != v for k, v in preset["params"].items()), preset
        r = submit(client, did, method=m["id"], params=preset["params"])
        assert r.status_code == 202, (preset["name"], r.json)
        assert {k: r.json["params"][k] for k in preset["params"]} == preset["params"]
        by_name = submit(client, did, method=m["id"], preset=preset["name"])
        assert by_name.status_code == 202 and by_name.json["params"] == r.json["params"], by_name.json
        # the record says which preset the params came from (and that the first job named none)
        assert client.get(f"/v1/jobs/{by_name.json['id']}").json["preset"] == preset["name"]
        assert client.get(f"/v1/jobs/{r.json['id']}").json["preset"] is None


def test_params_given_beside_a_preset_override_it(client, blobs_dataset):
    did, _, _ = blobs_dataset
    r = submit(client, did, method="cop_rf", preset="rca_filtered", params={"drop_violated": False})
    assert r.status_code == 202, r.json
    assert r.json["params"]["drop_violated"] is False and r.json["params"]["rca_components"] == "all"


def test_relative_constraints_check_reports_a_minimal_conflict(client, blobs_dataset):
    did, _, _ = blobs_dataset
    body = {"dataset_id": did, "constraints": {
        "relative": [[0, 1, 2], [3, 4, 5]],
        "triplets": [[0, 2, 1, "yes"], [6, 7, 8, "dont_know"], [3, 5, 4, "no"]]}}
    r = client.post("/v1/constraints/check", json=body)
    assert r.status_code == 200, r.json
    rel = r.json["relative"]
    assert r.json["consistent"] is False and rel["feasible"] is False
    got = {(c["field"], c["index"]) for c in rel["conflicting"]}
    assert got == {("relative", 0), ("triplets", 0)}  # 01|2 and 02|1 cannot both hold
    assert rel["conflicting"][0]["item_ids"][0] == "item-0"
    ok = client.post("/v1/constraints/check", json={"dataset_id": did, "constraints": {
        "relative": [[0, 1, 2], [0, 1, 3]]}})
    assert ok.json["consistent"] is True and ok.json["relative"]["conflicting"] == []


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/hook", "http://[::1]/hook", "http://10.1.2.3/hook",
                                 "http://169.254.169.254/latest/meta-data", "http://localhost:5000/",
                                 "https://metadata.google.internal/"])
def test_callback_to_a_private_host_is_refused_unless_allowed(store, blobs_dataset, url):
    from service import create_app

    did, _, _ = blobs_dataset
    for allow, status in ((False, 422), (True, 202)):
        app = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_CALLBACK_ALLOW_PRIVATE": allow})
        r = submit(app.test_client(), did, callback_url=url)
        assert r.status_code == status, r.json
        if status == 422:
            assert r.mimetype == PROBLEM and "/callback_url" in r.json["errors"]


def test_callback_to_a_public_host_is_accepted(store, blobs_dataset):
    from service import create_app

    did, _, _ = blobs_dataset
    app = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_CALLBACK_ALLOW_PRIVATE": False})
    for url in ("https://hooks.example.com/shoal", "http://93.184.216.34:8080/hook"):
        assert submit(app.test_client(), did, callback_url=url).status_code == 202


@pytest.mark.parametrize("params, field", [({"n_neighbors": "select"}, "n_neighbors"),
                                           ({"affinity_samples": "in_bag"}, "affinity_samples")])
def test_dense_only_cop_rf_option_on_a_dataset_above_the_limit_is_a_422(client, blobs_dataset, monkeypatch,
                                                                        params, field):
    did, X, _ = blobs_dataset
    assert submit(client, did, method="cop_rf", params=params).status_code == 202
    _set_option_limit(monkeypatch, "cop_rf", ("affinity_samples", "n_neighbors"), len(X) - 1)
    r = submit(client, did, method="cop_rf", params=params)
    assert r.status_code == 422 and r.mimetype == PROBLEM
    assert list(r.json["errors"]) == [f"/params/{field}"] and str(len(X)) in r.json["detail"]
    assert submit(client, did, method="cop_rf").status_code == 202  # the default options are fine


def test_cop_rf_with_more_trees_than_the_rows_allow_is_a_422(client, blobs_dataset, monkeypatch):
    """rows x n_estimators stops at COP_RF_MAX_TREE_ROWS (every tree's leaf of every row is kept)."""
    did, X, _ = blobs_dataset
    _set_option_limit(monkeypatch, "cop_rf", ("n_estimators",), len(X) * 10 - 1)
    r = submit(client, did, method="cop_rf", params={"n_estimators": 10})
    assert r.status_code == 422 and r.mimetype == PROBLEM
    assert r.json["code"] == "dataset_too_large_for_option" and list(r.json["errors"]) == ["/params/n_estimators"]
    assert f"at most {len(X) - 1} rows" in r.json["errors"]["/params/n_estimators"][0] and str(len(X)) in r.json["detail"]
    assert submit(client, did, method="cop_rf", params={"n_estimators": 9}).status_code == 202


def test_ccskl_sigma_select_on_a_dataset_above_its_limit_is_a_422(client, blobs_dataset, monkeypatch):
    """sigma="select" (9 widths x 5 folds) stops at CCSKL_SELECT_MAX_SAMPLES rows; the other widths do not."""
    did, X, _ = blobs_dataset
    assert submit(client, did, method="ccskl", params={"sigma": "select"}).status_code == 202
    _set_option_limit(monkeypatch, "ccskl", ("sigma",), len(X) - 1)
    r = submit(client, did, method="ccskl", params={"sigma": "select"})
    assert r.status_code == 422 and r.mimetype == PROBLEM
    assert r.json["code"] == "dataset_too_large_for_option" and list(r.json["errors"]) == ["/params/sigma"]
    assert str(len(X)) in r.json["detail"] and "9 widths" in r.json["detail"], r.json
    for params in ({}, {"sigma": "auto"}, {"sigma": 1.0}):
        assert submit(client, did, method="ccskl", params=params).status_code == 202


def test_a_preset_too_large_for_the_dataset_points_at_the_preset(client, blobs_dataset, monkeypatch):
    did, X, _ = blobs_dataset
    _set_option_limit(monkeypatch, "cop_rf", ("affinity_samples", "n_neighbors"), len(X) - 1)
    r = submit(client, did, method="cop_rf", preset="rca_filtered")
    assert r.status_code == 422 and r.mimetype == PROBLEM
    assert list(r.json["errors"]) == ["/preset"] and len(r.json["errors"]["/preset"]) == 2, r.json
    assert "rca_filtered" in r.json["detail"] and str(len(X)) in r.json["detail"]
    # one dense option given by the client: that one points at /params, the other still at /preset
    r = submit(client, did, method="cop_rf", preset="rca_filtered", params={"n_neighbors": "select"})
    assert r.status_code == 422 and sorted(r.json["errors"]) == ["/params/n_neighbors", "/preset"], r.json
    # both overridden: the rest of the preset runs
    r = submit(client, did, method="cop_rf", preset="rca_filtered",
               params={"n_neighbors": "auto", "affinity_samples": "all"})
    assert r.status_code == 202 and r.json["params"]["rca_components"] == "all", r.json


def test_rca_on_a_dataset_wider_than_its_limit_is_a_422(client, blobs_dataset, monkeypatch):
    did, X, _ = blobs_dataset
    _set_option_limit(monkeypatch, "cop_rf", ("rca_components",), X.shape[1] - 1)
    r = submit(client, did, method="cop_rf", params={"rca_components": "all"})
    assert r.status_code == 422 and r.mimetype == PROBLEM
    assert list(r.json["errors"]) == ["/params/rca_components"] and str(X.shape[1]) in r.json["detail"]
    assert submit(client, did, method="cop_rf").status_code == 202
    _set_option_limit(monkeypatch, "cop_rf", ("rca_components",), X.shape[1])
    assert submit(client, did, method="cop_rf", params={"rca_components": 1}).status_code == 202


def _rows_dataset(store, n):
    """An n x 1 dataset on a service that accepts it (the app fixture stops at 5000 rows)."""
    from service import create_app

    client = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_MAX_ROWS": 100_000}).test_client()
    r = client.post("/v1/datasets", json={"data": [[float(i % 7)] for i in range(n)]})
    assert r.status_code == 201, r.json
    return client, r.json["id"]


def test_catalogue_shows_each_method_row_limit(client):
    from clustering.validation import COP_RF_AUTO_MAX_SAMPLES, E2CP_MAX_SAMPLES

    methods = {m["id"]: m for m in client.get("/v1/methods").json["methods"]}
    limits = {k: m["max_samples"] for k, m in methods.items()}
    assert limits == {k: None for k in methods} | {"e2cp": E2CP_MAX_SAMPLES, "cop_rf": COP_RF_AUTO_MAX_SAMPLES}
    for k in ("e2cp", "cop_rf"):
        assert "GiB" in methods[k]["max_samples_reason"]  # says why, and what to use instead
    assert all(m["max_samples_reason"] is None for k, m in methods.items() if limits[k] is None)
    from clustering.validation import SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS

    closure = {k: m["max_closure_pairs"] for k, m in methods.items()}
    assert closure == {k: None for k in methods} | {"spectral_learning": SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS}


@pytest.mark.parametrize("method", ["e2cp", "cop_rf"])
def test_a_dataset_over_the_method_row_limit_is_refused_and_one_at_it_is_accepted(store, method):
    from service.methods import METHODS

    limit = METHODS[method]["max_samples"]
    client, over = _rows_dataset(store, limit + 1)
    r = client.post("/v1/jobs", json={"dataset_id": over, "method": method, "n_clusters": 3})
    assert r.status_code == 422 and r.mimetype == PROBLEM, r.json
    assert r.json["code"] == "dataset_too_large_for_method"
    assert list(r.json["errors"]) == ["/dataset_id"]
    assert r.json["method"] == method and r.json["max_samples"] == limit and r.json["n_samples"] == limit + 1
    assert f"at most {limit} rows" in r.json["detail"] and method in r.json["detail"]
    assert "spectral_learning" in r.json["detail"]  # what to use instead
    # another method takes the same dataset
    assert client.post("/v1/jobs", json={"dataset_id": over, "method": "spectral_learning",
                                         "n_clusters": 3}).status_code == 202
    _, at = _rows_dataset(store, limit)
    r = client.post("/v1/jobs", json={"dataset_id": at, "method": method, "n_clusters": 3})
    assert r.status_code == 202, r.json


def test_e2cp_constraints_naming_too_many_rows_are_refused_at_submission(store):
    """E2CP's two n x c propagation factors: rows x constrained rows is bounded before the job is queued
    (refused by fit on the worker otherwise); at the bound it is accepted."""
    from service.methods import METHODS

    limit = METHODS["e2cp"]["max_propagation"]
    n = METHODS["e2cp"]["max_samples"]
    client, did = _rows_dataset(store, n)
    c = limit // n  # the most distinct constrained rows allowed here
    ok = [[2 * k, 2 * k + 1] for k in range(c // 2)]
    body = {"dataset_id": did, "method": "e2cp", "n_clusters": 3}
    over = client.post("/v1/jobs", json={**body, "constraints": {"must_link": ok, "cannot_link": [[c, c + 1]]}})
    assert over.status_code == 422 and over.mimetype == PROBLEM, over.json
    assert over.json["code"] == "constraints_too_large_for_method" and list(over.json["errors"]) == ["/constraints"]
    assert over.json["n_constrained_samples"] == c + 2 - c % 2 and over.json["max_propagation"] == limit
    assert f"at most {c} distinct rows" in over.json["errors"]["/constraints"][0]
    assert client.post("/v1/jobs", json={**body, "constraints": {"must_link": ok}}).status_code == 202


def test_spectral_learning_closure_over_its_limit_is_refused_at_submission(client, blobs_dataset, monkeypatch):
    """closure=true overwrites every pair inside a must-link group and between cannot-linked groups:
    above max_closure_pairs (GET /v1/methods) a 422 at /params/closure before the job is queued;
    at the limit, or with closure=false, the same constraints are accepted."""
    from service.methods import METHODS

    did, _, _ = blobs_dataset
    # groups 0..9 and 20..29 by chained must-links (45 pairs each), one cannot-link between them (100)
    ml = [[i, i + 1] for i in range(9)] + [[i, i + 1] for i in range(20, 29)]
    constraints = {"must_link": ml, "cannot_link": [[0, 25]]}
    body = {"method": "spectral_learning", "constraints": constraints}
    monkeypatch.setitem(METHODS["spectral_learning"], "max_closure_pairs", 189)
    r = submit(client, did, params={"closure": True}, **body)
    assert r.status_code == 422 and r.mimetype == PROBLEM, r.json
    assert r.json["code"] == "constraints_too_large_for_option" and list(r.json["errors"]) == ["/params/closure"]
    assert r.json["n_closure_pairs"] == 190 and r.json["max_closure_pairs"] == 189
    assert "closure=false" in r.json["detail"]
    assert submit(client, did, params={"closure": False}, **body).status_code == 202
    monkeypatch.setitem(METHODS["spectral_learning"], "max_closure_pairs", 190)
    assert submit(client, did, params={"closure": True}, **body).status_code == 202


def test_the_row_limit_comes_before_a_preset_option_limit(store):
    """rca_filtered's dense options stop at 3000 rows; on a dataset over cop_rf's own limit the
    client is told that no option of cop_rf runs there."""
    from service.methods import METHODS

    limit = METHODS["cop_rf"]["max_samples"]
    client, over = _rows_dataset(store, limit + 1)
    r = client.post("/v1/jobs", json={"dataset_id": over, "method": "cop_rf", "preset": "rca_filtered",
                                      "n_clusters": 3})
    assert r.status_code == 422 and r.json["code"] == "dataset_too_large_for_method", r.json


def test_constraint_check_says_whether_the_relative_conflict_is_minimal(client, store):
    """The subset is shrunk under a work bound; when the bound stops it, the report must not claim minimality."""
    n = 1502
    ds = client.post("/v1/datasets", json={"data": [[float(i), 0.0] for i in range(n)]}).json["id"]
    small = client.post("/v1/constraints/check", json={"dataset_id": ds, "constraints": {
        "relative": [[0, 1, 2], [0, 2, 1], [3, 4, 5]]}}).json["relative"]
    assert small["minimal"] is True and [c["index"] for c in small["conflicting"]] == [0, 1]
    # a chain x0-x1-...-xL kept apart from y, each link followed by a redundant skip x_i x_i+2 | y,
    # closed by y x0 | xL: long conflict cycles, many of them
    L, y = n - 2, n - 1
    rel = [t for i in range(L) for t in ([[i, i + 1, y]] + ([[i, i + 2, y]] if i < L - 1 else []))]
    rel.append([y, 0, L])
    r = client.post("/v1/constraints/check", json={"dataset_id": ds, "constraints": {"relative": rel}})
    assert r.status_code == 200
    out = r.json["relative"]
    assert out["feasible"] is False and out["minimal"] is False
    idx = sorted(c["index"] for c in out["conflicting"])
    # still conflicting, and not minimal indeed: a skip can go (the chain around it remains)
    sub = [rel[i] for i in idx]
    assert client.post("/v1/constraints/check", json={"dataset_id": ds, "constraints": {
        "relative": sub}}).json["relative"]["feasible"] is False
    given = {tuple(t) for t in sub}
    skip = next(t for t in sub if t[1] == t[0] + 2 and (t[0], t[0] + 1, y) in given
                and (t[0] + 1, t[0] + 2, y) in given)  # the two links it skips are there too
    fewer = [t for t in sub if t != skip]
    assert client.post("/v1/constraints/check", json={"dataset_id": ds, "constraints": {
        "relative": fewer}}).json["relative"]["feasible"] is False


def test_constraint_check_holds_relative_constraints_against_the_hierarchy(client, store, blobs_dataset):
    """ReCon takes a hierarchy as the ab|c constraints it stands for: a triplet against it is a conflict."""
    from service import create_app

    did, _, _ = blobs_dataset
    tree = [[0, 1], [2, 3]]  # stands for 01|2 and 23|0
    body = {"dataset_id": did, "constraints": {"hierarchy": tree, "relative": [[4, 5, 6], [0, 2, 1]]}}
    r = client.post("/v1/constraints/check", json=body)
    assert r.status_code == 200, r.json
    rel = r.json["relative"]
    assert r.json["consistent"] is False and rel["feasible"] is False and rel["minimal"] is True
    got = sorted((c["field"], c["index"], tuple(c["items"])) for c in rel["conflicting"])
    assert got[-1] == ("relative", 1, (0, 2, 1)) and len(got) == 2
    assert got[0][:2] == ("hierarchy", None) and set(got[0][2][:2]) == {0, 1}  # 01|2, from the tree
    agreeing = {"dataset_id": did, "constraints": {"hierarchy": tree, "relative": [[0, 1, 2], [2, 3, 0]]}}
    assert client.post("/v1/constraints/check", json=agreeing).json["consistent"] is True
    job = submit(client, did, method="recon", n_clusters=2, on_conflict="reject", constraints=body["constraints"])
    assert job.status_code == 422 and job.json["code"] == "contradictory_constraints", job.json
    small = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_MAX_CONSTRAINTS": 3}).test_client()
    big = small.post("/v1/constraints/check", json=body)  # 2 listed + 2 from the tree > 3
    assert big.status_code == 413, big.json
    assert big.mimetype == PROBLEM and "/constraints/hierarchy" in big.json["errors"]
    alone = small.post("/v1/constraints/check", json={"dataset_id": did, "constraints": {"hierarchy": tree}})
    assert alone.status_code == 200 and alone.json["consistent"] is True
    # reported as with lists beside it (it had no "relative", which the schema promises with a hierarchy)
    assert alone.json["relative"] == {"feasible": True, "n_relative": 2, "minimal": True, "conflicting": []}


def test_a_hierarchy_counts_as_its_relative_constraints_against_the_limit_for_every_job(store, blobs_dataset):
    # Only the conflict search (the check, on_conflict "reject" beside triplets or relative) counted the ab|c
    # constraints a hierarchy stands for: a ReCon job with "keep", or with the tree alone, took a tree of
    # 2000 leaves in pairs (999 000 of them, 5x SHOAL_MAX_CONSTRAINTS) and its worker built and fitted them all.
    from service import create_app

    did, _, _ = blobs_dataset
    small = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_MAX_CONSTRAINTS": 4}).test_client()
    tree = [[0, 1], [2, 3], [4, 5]]  # stands for 01|2, 01|4, 23|0, 23|4, 45|0, 45|2: six
    bodies = [({"hierarchy": tree}, "keep"), ({"hierarchy": tree}, "reject"),
              ({"hierarchy": [[0, 1], [2, 3]], "relative": [[6, 7, 8]] * 3}, "keep")]  # 2 + 3
    for constraints, on_conflict in bodies:
        job = submit(small, did, method="recon", n_clusters=2, on_conflict=on_conflict, constraints=constraints)
        check = small.post("/v1/constraints/check", json={"dataset_id": did, "constraints": constraints})
        for r in (job, check):
            assert r.status_code == 413 and r.mimetype == PROBLEM, (constraints, on_conflict, r.json)
            assert list(r.json["errors"]) == ["/constraints/hierarchy"], r.json
    fits = {"hierarchy": [[0, 1], [2, 3]], "relative": [[6, 7, 8]] * 2}  # 2 + 2, at the limit
    assert submit(small, did, method="recon", n_clusters=2, constraints=fits).status_code == 202
    assert small.post("/v1/constraints/check", json={"dataset_id": did, "constraints": fits}).status_code == 200


def _forged_token(text):
    import base64

    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


@pytest.mark.parametrize("forged", ['[NaN, "job_x"]', '["nan", "job_x"]', '[Infinity, "job_x"]', '[true, "job_x"]',
                                    '[1.5, null]', '[1.5, ["job_x"]]'])
@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/datasets", "/v1/sessions", "/v1/jobs?dataset_id=ds_x"])
def test_a_forged_page_token_is_a_400_not_a_503(client, path, forged):
    # decode_token took a NaN timestamp ("nan" or NaN), which Redis refused as a score range: 503
    # "unavailable, retry later" (with Retry-After) for a request that can never succeed.
    sep = "&" if "?" in path else "?"
    r = client.get(f"{path}{sep}page_token={_forged_token(forged)}")
    assert r.status_code == 400, r.json
    assert r.mimetype == PROBLEM and r.json["code"] == "bad_page_token"


def test_a_page_token_the_api_returned_still_pages(client, blobs_dataset):
    did, _, _ = blobs_dataset
    for _ in range(3):
        submit(client, did)
    first = client.get("/v1/jobs?page_size=1").json
    second = client.get(f"/v1/jobs?page_size=1&page_token={first['next_page_token']}")
    assert second.status_code == 200 and second.json["jobs"][0]["id"] != first["jobs"][0]["id"]


@pytest.mark.parametrize("params, pointer", [({"a/b": 1}, "/params/a~1b"), ({"c~d": 1}, "/params/c~0d"),
                                             ({"~/": 1}, "/params/~0~1")])
def test_error_pointers_escape_slash_and_tilde_in_field_names(client, blobs_dataset, params, pointer):
    # RFC 6901: "/" in a member name is written "~1" and "~" is "~0"; "/params/a/b" names member "b" of "a".
    did, _, _ = blobs_dataset
    r = submit(client, did, params=params)
    assert r.status_code == 422 and list(r.json["errors"]) == [pointer], r.json
    top = client.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3, "x/y": 1})
    assert top.status_code == 422 and list(top.json["errors"]) == ["/x~1y"], top.json


@pytest.mark.parametrize("dataset_id", ["", "d" * 101, "d" * 100_000])
def test_the_constraint_check_refuses_a_dataset_id_no_dataset_can_have(client, dataset_id):
    # It took any string: "" was a 404, and a 100 000-character id was looked up in Redis and echoed whole in the
    # 404's detail. Jobs and sessions refuse both with a 422 at /dataset_id.
    body = {"constraints": {"must_link": [[0, 1]]}}
    for path in ("/v1/constraints/check", "/v1/jobs"):
        r = client.post(path, json={"dataset_id": dataset_id, "method": "e2cp", "n_clusters": 2, **body}
                        if path == "/v1/jobs" else {"dataset_id": dataset_id, **body})
        assert r.status_code == 422 and "/dataset_id" in r.json["errors"], (path, r.status_code)
        assert len(r.get_data()) < 2000
