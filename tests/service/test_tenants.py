"""Tenants (service.auth, workers.tenancy): each key sees only its tenant's records.

The cross-tenant matrix is generated from ``openapi.yaml``: every operation is tried by
tenant B on tenant A's dataset, jobs and session, and must answer 404 (or, for a listing,
show none of A's ids), with every Redis key of A's records unchanged. A new route is in the
matrix as soon as it is in the spec; one with a request body needs its body in ``BODIES``
(the test says so).
"""

import json
import uuid
from pathlib import Path

import numpy as np
import pytest
import yaml

from service import create_app
from workers.session_store import SessionStore

ROOT = Path(__file__).resolve().parents[2]
SPEC = yaml.safe_load((ROOT / "openapi.yaml").read_text())

KEY_A = "tenant-a:" + "a" * 24
KEY_B = "tenant-b:" + "b" * 24
ADMIN = "ops:" + "z" * 24


def _auth(entry):
    return {"Authorization": f"Bearer {entry.split(':', 1)[1]}"}


A, B, OPS = _auth(KEY_A), _auth(KEY_B), _auth(ADMIN)


@pytest.fixture()
def tenants(store):
    app = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_MAX_ROWS": 5000, "SHOAL_RATE_LIMITS": False,
                      "SHOAL_API_KEYS": f"{KEY_A},{KEY_B}", "SHOAL_ADMIN_KEYS": ADMIN})
    return app.test_client()


@pytest.fixture()
def resources_of_a(tenants, store):
    """Tenant A's dataset, a SUCCEEDED DCRC job (result, model, affinity), a QUEUED job and a session."""
    from sklearn.datasets import make_blobs

    from workers import registry

    X, y = make_blobs(40, centers=[[0, 0], [8, 8]], cluster_std=0.5, random_state=0)
    r = tenants.post("/v1/datasets", json={"data": X.tolist(), "labels": y.tolist(),
                                           "item_ids": [f"i{i}" for i in range(40)]}, headers=A)
    assert r.status_code == 201, r.json
    did = r.json["id"]
    rng = np.random.default_rng(0)
    trip = []
    while len(trip) < 40:
        a, b, c = map(int, rng.choice(40, 3, replace=False))
        if y[a] == y[b] != y[c]:
            trip.append([a, b, c, "yes"])
    est = registry.build("dcrc", n_clusters=2, params={}, random_state=0)
    est.fit(X, **registry.fit_kwargs("dcrc", {"triplets": trip}))
    done = store.create_job(dataset_id=did, method="dcrc", n_clusters=2, params={}, constraints={},
                            random_state=0, owner="tenant-a")["id"]
    store.start_job(done)
    store.save_result(done, {"job_id": done, "labels": est.labels_.tolist()}, affinity=np.eye(40))
    store.save_model_state(done, registry.model_state("dcrc", est))
    store.finish_job(done, "SUCCEEDED")
    r = tenants.post("/v1/jobs", json={"dataset_id": did, "method": "spectral", "n_clusters": 2}, headers=A)
    assert r.status_code == 202, r.json
    queued = r.json["id"]
    ses = SessionStore(store).create(dataset_id=did, strategy="urasc", n_clusters=2, budget=10,
                                     question_type="pairwise", answers_per_question=1, params={},
                                     random_state=0, owner="tenant-a")["id"]
    up = tenants.post("/v1/uploads", json={"content_type": "application/x-npy", "length": 1000}, headers=A)
    assert up.status_code == 201, up.json
    return {"dataset_id": did, "job_id": done, "queued_job_id": queued, "session_id": ses, "upload_id": up.json["id"]}


def _snapshot(store, ids):
    """Every Redis key naming one of ``ids``, with its serialized value (DUMP) and whether it expires."""
    out = {}
    for rid in ids:
        for key in store.r.scan_iter(match=f"shoal:*{rid}*", count=1000):
            out[key] = (store.r.dump(key), store.r.ttl(key) > 0)
    return out


#: A valid body for each operation that takes one, naming tenant A's records (filled in per case).
BODIES = {
    ("post", "/v1/datasets"): lambda ids: {"data": [[0.0, 1.0], [1.0, 0.0]]},
    ("post", "/v1/jobs"): lambda ids: {"dataset_id": ids["dataset_id"], "method": "spectral", "n_clusters": 2},
    ("post", "/v1/jobs/{job_id}/predict"): lambda ids: {"data": [[0.0, 0.0]]},
    ("post", "/v1/sessions"): lambda ids: {"dataset_id": ids["dataset_id"], "budget": 10},
    ("post", "/v1/sessions/{session_id}/questions"): lambda ids: {"count": 1, "worker_id": "w1"},
    ("post", "/v1/sessions/{session_id}/answers"): lambda ids: {"answers": [{"question_id": "q1", "answer": "yes"}]},
    ("post", "/v1/sessions/{session_id}/refit"): lambda ids: {},
    ("post", "/v1/constraints/check"): lambda ids: {"dataset_id": ids["dataset_id"],
                                                    "constraints": {"must_link": [[0, 1]]}},
    ("post", "/v1/admin/keys"): lambda ids: {"tenant": "tenant-b"},
    ("post", "/v1/admin/keys/{key_id}/rotate"): lambda ids: {},
    ("put", "/v1/admin/tenants/{tenant}/limits"): lambda ids: {"max_active_jobs": 1000},
    ("put", "/v1/datasets/{dataset_id}/items"): lambda ids: {"items": [{"text": "a"}] * 40},  # A has 40 rows
    ("post", "/v1/sessions/{session_id}/annotators"): lambda ids: {"worker_id": "w1"},
    ("post", "/v1/sessions/{session_id}/gold"): lambda ids: {"questions": [{"items": [0, 1], "answer": "must_link"}]},
    ("patch", "/v1/datasets/{dataset_id}"): lambda ids: {"labels": [0] * 40},
    ("post", "/v1/sessions/{session_id}/integrations"): lambda ids: {
        "platform": "label_studio", "url": "http://127.0.0.1:9", "token_env": "SHOAL_INTEGRATION_TOKEN_LS"},
    ("post", "/v1/uploads"): lambda ids: {"content_type": "application/x-npy", "length": 10},
    ("patch", "/v1/uploads/{upload_id}"): lambda ids: b"\x93NUMPY",  # bytes: sent as the raw body
}
#: Headers a raw (bytes) body goes with.
RAW_HEADERS = {"Content-Type": "application/offset+octet-stream", "Upload-Offset": "0"}
#: Path parameters that name a tenant's record, and which of A's records each case uses.
RECORD_PARAMS = ("dataset_id", "job_id", "session_id", "upload_id")
#: Operations that create a record of the caller's own (B's dataset): not one of A's.
CREATES_OWN = {("post", "/v1/datasets"), ("post", "/v1/uploads")}

OPERATIONS = sorted((method, path) for path, ops in SPEC["paths"].items() for method in ops
                    if method in ("get", "post", "put", "patch", "delete"))


def _param_names(method, path):
    op = SPEC["paths"][path][method]
    return {p.get("name") for p in op.get("parameters", [])}


def test_the_matrix_covers_every_operation_of_the_spec():
    assert len(OPERATIONS) >= 25
    with_body = {(m, p) for m, p in OPERATIONS if "requestBody" in SPEC["paths"][p][m]}
    assert with_body <= set(BODIES), f"give a body for {sorted(with_body - set(BODIES))} in BODIES"


@pytest.mark.parametrize("method, path", OPERATIONS, ids=[f"{m.upper()} {p}" for m, p in OPERATIONS])
def test_tenant_b_gets_404_for_tenant_a_resources_and_changes_nothing(tenants, store, resources_of_a, method, path):
    ids = resources_of_a
    a_ids = list(ids.values())
    before = _snapshot(store, a_ids)
    cases = []
    if "{job_id}" in path:
        cases = [path.replace("{job_id}", ids["job_id"]), path.replace("{job_id}", ids["queued_job_id"])]
    else:
        filled = path
        for name in RECORD_PARAMS:
            filled = filled.replace("{" + name + "}", ids.get(name, ""))
        filled = filled.replace("{key_id}", "key_" + "0" * 32).replace("{tenant}", "tenant-a")
        cases = [filled]
    body = BODIES.get((method, path))
    names_a_record = any("{" + n + "}" in path for n in RECORD_PARAMS) or (
        body is not None and not isinstance(body(ids), bytes) and "dataset_id" in json.dumps(body(ids))
        and (method, path) not in CREATES_OWN)
    for url in cases:
        queries = [""]
        if "dataset_id" in _param_names(method, path):
            queries.append(f"?dataset_id={ids['dataset_id']}")
        for q in queries:
            kwargs = {"headers": B}
            if body is not None and isinstance(body(ids), bytes):
                kwargs = {"headers": {**B, **RAW_HEADERS}, "data": body(ids)}
            elif body is not None:
                kwargs["json"] = body(ids)
            r = getattr(tenants, method)(url + q, **kwargs)
            if path.startswith("/v1/admin/"):
                assert r.status_code == 403 and r.json["code"] == "insufficient_scope", (url, r.status_code)
            elif names_a_record:
                assert r.status_code == 404, (method, url, r.status_code, r.data[:300])
                assert r.mimetype == "application/problem+json" and r.json["code"] == "not_found"
            else:
                # /readyz: no worker listens on the test store's database
                assert r.status_code < 500 or path == "/readyz", (method, url, r.status_code)
                if (method, path) in CREATES_OWN:
                    assert r.status_code == 201
            text = r.get_data(as_text=True)
            sent = url + q + json.dumps(kwargs.get("json"))  # a 404 names the id it was asked for
            assert not any(rid in text for rid in a_ids if rid not in sent), (method, url, text[:300])
    assert _snapshot(store, a_ids) == before, f"{method.upper()} {path} changed a record of tenant A"
    # A still sees its own records
    assert tenants.get(f"/v1/datasets/{ids['dataset_id']}", headers=A).status_code == 200
    assert tenants.get(f"/v1/sessions/{ids['session_id']}", headers=A).status_code == 200


def test_tenant_a_sees_its_own_records_and_lists_only_them(tenants, resources_of_a):
    ids = resources_of_a
    mine = tenants.post("/v1/datasets", json={"data": [[0.0, 1.0], [1.0, 0.0]]}, headers=B).json["id"]
    listed = {d["id"] for d in tenants.get("/v1/datasets?page_size=100", headers=A).json["datasets"]}
    assert ids["dataset_id"] in listed and mine not in listed
    of_b = {d["id"] for d in tenants.get("/v1/datasets?page_size=100", headers=B).json["datasets"]}
    assert mine in of_b and ids["dataset_id"] not in of_b
    jobs = {j["id"] for j in tenants.get(f"/v1/jobs?dataset_id={ids['dataset_id']}", headers=A).json["jobs"]}
    assert {ids["job_id"], ids["queued_job_id"]} <= jobs
    assert tenants.get(f"/v1/jobs/{ids['job_id']}/result", headers=A).status_code == 200
    assert tenants.get(f"/v1/jobs/{ids['job_id']}/affinity", headers=A).status_code == 200
    assert tenants.post(f"/v1/jobs/{ids['queued_job_id']}/cancel", headers=A).json["state"] == "CANCELLED"


def test_keys_are_made_listed_by_prefix_rotated_and_revoked_by_an_admin_key(tenants, store):
    crowd = f"crowd-{uuid.uuid4().hex[:8]}"
    r = tenants.post("/v1/admin/keys", json={"tenant": crowd, "scopes": ["read"], "name": "dashboard"},
                     headers=OPS)
    assert r.status_code == 201, r.json
    made, kid = r.json["key"], r.json["id"]
    assert made.startswith(r.json["prefix"]) and len(r.json["prefix"]) == 12
    # stored hashed: the text is in no Redis key or value
    assert not [k for k in store.r.scan_iter(match="shoal:apikey*") if made.encode() in k
                or made.encode() in (store.r.dump(k) or b"")]
    listed = tenants.get(f"/v1/admin/keys?tenant={crowd}", headers=OPS).json["keys"]
    assert [k["id"] for k in listed] == [kid] and "key" not in listed[0] and "digest" not in listed[0]
    auth = {"Authorization": f"Bearer {made}"}
    assert tenants.get("/v1/datasets", headers=auth).status_code == 200
    r = tenants.post("/v1/datasets", json={"data": [[0.0], [1.0]]}, headers=auth)
    assert r.status_code == 403 and r.json["code"] == "insufficient_scope"  # read scope only
    assert tenants.get("/v1/admin/keys", headers=auth).status_code == 403
    new = tenants.post(f"/v1/admin/keys/{kid}/rotate", json={}, headers=OPS).json["key"]
    assert tenants.get("/v1/datasets", headers=auth).status_code == 401
    auth = {"Authorization": f"Bearer {new}"}
    assert tenants.get("/v1/datasets", headers=auth).status_code == 200
    assert tenants.delete(f"/v1/admin/keys/{kid}", headers=OPS).status_code == 204
    assert tenants.get("/v1/datasets", headers=auth).status_code == 401
    assert tenants.get(f"/v1/admin/keys/{kid}", headers=OPS).status_code == 404


def test_a_made_key_owns_what_it_makes_for_its_tenant(tenants, resources_of_a):
    made = tenants.post("/v1/admin/keys", json={"tenant": "tenant-a"}, headers=OPS).json["key"]
    auth = {"Authorization": f"Bearer {made}"}
    assert tenants.get(f"/v1/datasets/{resources_of_a['dataset_id']}", headers=auth).status_code == 200


def test_a_bare_configured_key_is_a_tenant_of_its_own(store):
    bare = "c" * 20
    app = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_RATE_LIMITS": False,
                      "SHOAL_API_KEYS": f"{bare},{KEY_A}"})
    c = app.test_client()
    did = c.post("/v1/datasets", json={"data": [[0.0], [1.0]]}, headers={"Authorization": f"Bearer {bare}"}).json["id"]
    assert c.get(f"/v1/datasets/{did}", headers=A).status_code == 404


def test_without_keys_every_record_is_visible_as_before(client, caplog):
    import logging

    with caplog.at_level(logging.WARNING, logger="service.auth"):
        create_app({"TESTING": True, "SHOAL_RATE_LIMITS": False})
    assert "no API keys configured" in caplog.text
    did = client.post("/v1/datasets", json={"data": [[0.0], [1.0]]}).json["id"]
    assert client.get(f"/v1/datasets/{did}").status_code == 200
    assert client.get("/v1/admin/keys").status_code == 403


def test_every_write_leaves_one_json_audit_line_without_the_key(tenants, caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="shoal.audit"):
        r = tenants.post("/v1/datasets", json={"data": [[0.0], [1.0]]}, headers=A)
        tenants.get(f"/v1/datasets/{r.json['id']}", headers=A)
    lines = [json.loads(rec.getMessage()) for rec in caplog.records if rec.name == "shoal.audit"]
    assert len(lines) == 1
    assert lines[0]["tenant"] == "tenant-a" and lines[0]["id"] == r.json["id"] and lines[0]["status"] == 201
    assert lines[0]["route"] == "/v1/datasets" and lines[0]["key"].startswith("cfg:")
    assert "a" * 24 not in caplog.text
