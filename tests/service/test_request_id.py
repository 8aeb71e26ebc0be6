"""X-Request-ID: echoed on every response and named in every problem body."""

import re


def test_a_request_id_is_made_echoed_and_put_in_problem_bodies(client):
    ok = client.get("/healthz")
    made = ok.headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    assert client.get("/healthz").headers["X-Request-ID"] != made  # one per request
    missing = client.get("/v1/jobs/job_nope")
    assert missing.status_code == 404 and missing.json["request_id"] == missing.headers["X-Request-ID"]
    bad = client.post("/v1/datasets", json={"data": [[1.0, "x"]]})
    assert bad.status_code == 422 and bad.json["request_id"] == bad.headers["X-Request-ID"]


def test_the_clients_request_id_is_kept_unless_malformed(client):
    r = client.get("/v1/jobs/job_nope", headers={"X-Request-ID": "crowd-adapter-7f3a"})
    assert r.headers["X-Request-ID"] == "crowd-adapter-7f3a" and r.json["request_id"] == "crowd-adapter-7f3a"
    for bad in ("has space", "x" * 201):
        r = client.get("/healthz", headers={"X-Request-ID": bad})
        assert re.fullmatch(r"[0-9a-f]{32}", r.headers["X-Request-ID"])
