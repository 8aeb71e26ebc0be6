"""callback_url at submission: malformed URLs are a 422 for jobs and sessions, in every deployment."""

import pytest

from tests.workers.test_callbacks import MALFORMED

PROBLEM = "application/problem+json"

# The ones marshmallow's Url field lets through (all those of the bug report among them); the
# shared check must name the reason. The field itself refuses the others ("Not a valid URL.").
SCHEMA_REFUSES = ("ftp:", "http://[::1/", "http://example.org:http/", "http://0x7f.0.0.1/", "http://0177.0.0.1/",
                  "http://127.1/", "http://1.2.3.4.5/")


@pytest.fixture(params=[False, True], ids=["public-only", "private-allowed"])
def deployment(request, store):
    from service import create_app

    return create_app({"TESTING": True, "SHOAL_STORE": store,
                       "SHOAL_CALLBACK_ALLOW_PRIVATE": request.param}).test_client()


@pytest.mark.parametrize("url, reason", MALFORMED)
def test_a_malformed_callback_url_is_a_422_for_jobs_and_sessions(deployment, store, blobs_dataset, url, reason):
    did = blobs_dataset[0]
    before = store.r.zcard("shoal:jobs")
    job = deployment.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3,
                                            "callback_url": url})
    session = deployment.post("/v1/sessions", json={"dataset_id": did, "callback_url": url})
    for r in (job, session):
        assert r.status_code == 422 and r.mimetype == PROBLEM, r.json
        (msg,) = r.json["errors"]["/callback_url"]
        if not url.startswith(SCHEMA_REFUSES):
            assert reason in msg and r.json["code"] == "invalid_callback_url", msg
    assert store.r.zcard("shoal:jobs") == before


def test_credentials_in_a_callback_url_are_refused_and_not_echoed(client, blobs_dataset):
    r = client.post("/v1/jobs", json={"dataset_id": blobs_dataset[0], "method": "e2cp", "n_clusters": 3,
                                      "callback_url": "https://user:s3cret@example.org/hook"})
    assert r.status_code == 422 and "credentials" in r.json["detail"]
    assert "s3cret" not in r.get_data(as_text=True)
