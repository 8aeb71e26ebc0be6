"""Optional API keys (service.auth): off by default, then every route but the probes and docs needs one."""

import pytest

from service import create_app
from service.auth import load_keys

KEY = "k" * 15 + "1"
OTHER = "s3cr3t-for-the-crowd-adapter"


@pytest.fixture()
def locked(store, tmp_path):
    keys_file = tmp_path / "keys"
    keys_file.write_text(f"# the crowd adapter's key\n\n{OTHER}\n")
    app = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_API_KEYS": f" {KEY} ,",
                      "SHOAL_API_KEYS_FILE": str(keys_file)})
    return app.test_client()


def test_without_keys_configured_no_key_is_needed(client):
    assert client.get("/v1/methods").status_code == 200


@pytest.mark.parametrize("headers, detail", [
    ({}, "needs an API key"),
    ({"Authorization": "Bearer wrong-key-wrong-key"}, "not valid"),
    ({"Authorization": f"Basic {KEY}"}, "needs an API key"),
    ({"Authorization": "Bearer "}, "needs an API key"),
    ({"Authorization": f"Bearer {KEY[:-1]}"}, "not valid"),
])
def test_a_missing_or_wrong_key_is_a_401_problem_before_the_body_is_read(locked, headers, detail):
    r = locked.post("/v1/datasets", data=b"[[1, 2", headers={**headers, "Content-Type": "application/json"})
    assert r.status_code == 401 and r.mimetype == "application/problem+json", r.data
    assert r.json["code"] == "unauthorized" and detail in r.json["detail"] and r.json["request_id"]
    assert r.headers["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("key", [KEY, OTHER])
def test_any_configured_key_opens_the_api(locked, key):
    auth = {"Authorization": f"Bearer {key}"}
    r = locked.post("/v1/datasets", json={"data": [[0.0, 1.0], [1.0, 0.0]]}, headers=auth)
    assert r.status_code == 201, r.json
    assert locked.get(f"/v1/datasets/{r.json['id']}", headers={"Authorization": f"bearer {key}"}).status_code == 200
    assert locked.get("/metrics", headers=auth).status_code == 200
    assert locked.get("/metrics").status_code == 401


@pytest.mark.parametrize("path", ["/healthz", "/openapi.yaml", "/openapi.json", "/docs",
                                  "/docs/assets/swagger-ui.css"])
def test_probes_and_docs_stay_open(locked, path):
    assert locked.get(path).status_code == 200


def test_the_openapi_document_describes_the_bearer_scheme(locked):
    spec = locked.get("/openapi.json").json
    assert spec["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    assert spec["paths"]["/healthz"]["get"]["security"] == []


@pytest.mark.parametrize("keys, message", [("short", "at least 16"), (f"{KEY} x{KEY}", "whitespace")])
def test_weak_or_mangled_keys_stop_the_process_from_starting(keys, message):
    with pytest.raises(ValueError, match=message):
        load_keys(keys)


def test_an_unreadable_keys_file_is_named(tmp_path):
    with pytest.raises(ValueError, match="SHOAL_API_KEYS_FILE"):
        load_keys("", str(tmp_path / "missing"))


@pytest.mark.parametrize("keys, file_text", [("", "# the key goes here\n\n"), ("", ""), (" , ", None)])
def test_keys_asked_for_but_none_given_stop_the_process_instead_of_leaving_the_api_open(
        store, tmp_path, keys, file_text):
    """A keys file that is mounted but empty (the secret not filled in) or SHOAL_API_KEYS holding only
    separators asks for keys and names none: starting without authentication would open every route."""
    keys_file = ""
    if file_text is not None:
        keys_file = tmp_path / "keys"
        keys_file.write_text(file_text)
    with pytest.raises(ValueError, match="no API key"):
        create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_API_KEYS": keys,
                    "SHOAL_API_KEYS_FILE": str(keys_file)})


class _Unreadable:
    """A request body that must not be read."""

    def read(self, *args):
        raise AssertionError("the body was read before the API key was checked")

    readline = read


def test_a_chunked_body_without_a_key_is_refused_unread(locked):
    # service.body.size_chunked_body reads a chunked body to size it: it runs after the key check.
    chunked = {"wsgi.input": _Unreadable(), "wsgi.input_terminated": True, "HTTP_TRANSFER_ENCODING": "chunked"}
    r = locked.post("/v1/datasets", content_type="application/json", environ_overrides=chunked)
    assert r.status_code == 401 and r.json["code"] == "unauthorized"
    keyed = locked.post("/v1/datasets", content_type="application/json", environ_overrides=chunked,
                        headers={"Authorization": f"Bearer {KEY}"})
    assert keyed.status_code == 400 and "AssertionError" in keyed.json["detail"]  # with a key it is read


def test_idempotency_keys_are_per_api_key(locked):
    """Two clients that pick the same Idempotency-Key are two requests: the second was answered with
    the first client's dataset (a replay) and created nothing, though it came with another API key."""
    body = {"data": [[0.0, 1.0], [1.0, 0.0]]}
    mine, theirs = ({"Authorization": f"Bearer {k}", "Idempotency-Key": "1"} for k in (KEY, OTHER))
    first = locked.post("/v1/datasets", json=body, headers=mine)
    other = locked.post("/v1/datasets", json=body, headers=theirs)
    again = locked.post("/v1/datasets", json=body, headers=mine)
    assert first.status_code == other.status_code == again.status_code == 201
    assert "Idempotent-Replayed" not in other.headers and other.json["id"] != first.json["id"]
    assert again.headers["Idempotent-Replayed"] == "true" and again.json["id"] == first.json["id"]
