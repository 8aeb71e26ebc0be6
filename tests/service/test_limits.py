"""Rate limits and quotas per tenant (service.limits): 429 problem+json with Retry-After and RateLimit headers."""

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from service import create_app


def _key():
    return uuid.uuid4().hex + uuid.uuid4().hex[:8]


@pytest.fixture()
def limited(store):
    a, b, ops = _key(), _key(), _key()
    app = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_RATE_LIMITS": True, "SHOAL_RATE_PER_KEY": 5, "SHOAL_RATE_BURST": 10,
                      "SHOAL_RATE_PER_IP": 1000, "SHOAL_RATE_IP_BURST": 2000,
                      "SHOAL_API_KEYS": f"ta-{a[:6]}:{a},tb-{b[:6]}:{b}", "SHOAL_ADMIN_KEYS": ops})
    auth = {name: {"Authorization": f"Bearer {k}"} for name, k in (("a", a), ("b", b), ("ops", ops))}
    return app.test_client(), auth, f"ta-{a[:6]}"


def test_a_key_over_its_burst_gets_429_with_retry_after_and_ratelimit_headers(limited):
    client, auth, _ = limited
    answers = [client.get("/v1/methods", headers=auth["a"]) for _ in range(12)]
    codes = [r.status_code for r in answers]
    assert codes[:10] == [200] * 10 and codes[10:] == [429, 429], codes
    ok, refused = answers[0], answers[10]
    assert ok.headers["RateLimit-Policy"].startswith('"key";q=10;w=2')
    assert ok.headers["RateLimit"].startswith('"key";r=9;t=')
    assert refused.mimetype == "application/problem+json" and refused.json["code"] == "rate_limited"
    assert 1 <= int(refused.headers["Retry-After"]) <= 3  # the window is 2 s (limits rounds its reset up)
    assert refused.headers["RateLimit"].startswith('"key";r=0;')
    # another tenant's key is not held back, and the probes never are
    assert client.get("/v1/methods", headers=auth["b"]).status_code == 200
    assert client.get("/healthz").status_code == 200


def test_a_tenants_own_rate_replaces_the_default(limited):
    client, auth, tenant = limited
    r = client.put(f"/v1/admin/tenants/{tenant}/limits", json={"requests_per_second": 50, "burst": 30},
                   headers=auth["ops"])
    assert r.status_code == 200 and r.json["burst"] == 30, r.json
    codes = [client.get("/v1/methods", headers=auth["a"]).status_code for _ in range(25)]
    assert codes == [200] * 25


def test_a_tenant_over_its_job_quota_gets_429_quota_exceeded(limited):
    client, auth, tenant = limited
    assert client.put(f"/v1/admin/tenants/{tenant}/limits", json={"max_active_jobs": 1, "burst": 100},
                      headers=auth["ops"]).status_code == 200
    did = client.post("/v1/datasets", json={"data": [[0.0, 1.0], [1.0, 0.0], [5.0, 5.0]]},
                      headers=auth["a"]).json["id"]
    body = {"dataset_id": did, "method": "spectral", "n_clusters": 2}
    first = client.post("/v1/jobs", json=body, headers=auth["a"])
    assert first.status_code == 202, first.json
    second = client.post("/v1/jobs", json=body, headers=auth["a"])
    assert second.status_code == 429 and second.json["code"] == "quota_exceeded", second.json
    assert second.json["quota"] == "max_active_jobs" and second.json["used"] == 1
    assert second.headers["Retry-After"] and second.headers["RateLimit-Policy"] == '"max_active_jobs";q=1'
    # once the job ended it no longer counts
    client.post(f"/v1/jobs/{first.json['id']}/cancel", headers=auth["a"])
    assert client.post("/v1/jobs", json=body, headers=auth["a"]).status_code == 202


def test_a_tenant_over_its_stored_bytes_gets_429(limited):
    client, auth, tenant = limited
    client.put(f"/v1/admin/tenants/{tenant}/limits", json={"max_stored_bytes": 100, "burst": 100},
               headers=auth["ops"])
    assert client.post("/v1/datasets", json={"data": [[0.0] * 4] * 3}, headers=auth["a"]).status_code == 201
    r = client.post("/v1/datasets", json={"data": [[0.0] * 4] * 3}, headers=auth["a"])
    assert r.status_code == 429 and r.json["quota"] == "max_stored_bytes" and r.json["used"] == 96
    view = client.get(f"/v1/admin/tenants/{tenant}/limits", headers=auth["ops"]).json
    assert view["stored_bytes"] == 96 and view["max_stored_bytes"] == 100


def test_concurrent_requests_never_take_a_tenant_past_its_quota(limited):
    """Check and record are one step: 12 jobs posted at once against a quota of 3 start exactly 3."""
    client, auth, tenant = limited
    client.put(f"/v1/admin/tenants/{tenant}/limits", json={"max_active_jobs": 3, "burst": 100},
               headers=auth["ops"])
    did = client.post("/v1/datasets", json={"data": [[0.0, 1.0], [1.0, 0.0], [5.0, 5.0]]},
                      headers=auth["a"]).json["id"]
    body = {"dataset_id": did, "method": "spectral", "n_clusters": 2}
    keys = [client.post("/v1/admin/keys", json={"tenant": tenant}, headers=auth["ops"]).json["key"] for _ in range(6)]
    start = threading.Barrier(12)

    def post(i):  # two at a time per key: the most a key may have in progress in one process
        start.wait()
        return client.post("/v1/jobs", json=body, headers={"Authorization": f"Bearer {keys[i % 6]}"})

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(post, range(12)))
    codes = sorted((r.status_code, r.json.get("code", "")) for r in answers)
    assert codes == [(202, "")] * 3 + [(429, "quota_exceeded")] * 9, codes
    view = client.get(f"/v1/admin/tenants/{tenant}/limits", headers=auth["ops"]).json
    assert view["active_jobs"] == 3, view
