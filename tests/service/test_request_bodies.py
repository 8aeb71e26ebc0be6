"""Request bodies at the edges: nesting depth and the hierarchy's depth limit."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clustering.validation import MAX_HIERARCHY_DEPTH
from service.body import MAX_JSON_DEPTH, json_depth

PROBLEM = "application/problem+json"


def caterpillar(n_leaves):
    """[[[0, 1], 2], ..., n - 1]: nests n - 1 levels deep."""
    tree = [0, 1]
    for i in range(2, n_leaves):
        tree = [tree, i]
    return tree


def _depth(obj):
    if isinstance(obj, list):
        return 1 + max(map(_depth, obj), default=0)
    if isinstance(obj, dict):
        return 1 + max(map(_depth, obj.values()), default=0)
    return 0


_text = st.text(alphabet='[]{}"\\ab\n\u00e9', max_size=6)
_json = st.recursive(st.none() | st.integers() | st.floats(allow_nan=False) | _text,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
                     max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_json, st.booleans())
def test_json_depth_is_the_nesting_depth_whatever_the_strings_hold(obj, ascii_only):
    raw = json.dumps(obj, ensure_ascii=ascii_only, indent=None if ascii_only else 1).encode()
    assert json_depth(raw) == _depth(obj)


@pytest.mark.parametrize("path", ["/v1/datasets", "/v1/jobs", "/v1/sessions/x/answers", "/v1/constraints/check",
                                  "/v1/sessions", "/v1/jobs/x/predict", "/v1/sessions/x/questions"])
@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 2000, 100_000])
def test_a_body_nested_too_deeply_is_a_400_on_every_json_endpoint(client, path, depth):
    r = client.post(path, data="[" * depth + "]" * depth, content_type="application/json")
    assert r.status_code == 400 and r.mimetype == PROBLEM, r.json
    assert r.json["code"] == "json_too_deep" and str(MAX_JSON_DEPTH) in r.json["detail"]


def test_a_body_at_the_depth_limit_is_parsed(client):
    deep = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    r = client.post("/v1/datasets", data=deep, content_type="application/json")
    assert r.status_code == 422 and r.json["code"] == "invalid_input"  # parsed: a list, not an object


@pytest.fixture(scope="module")
def long_dataset(store):
    """MAX_HIERARCHY_DEPTH + 2 rows: room for a caterpillar one level deeper than allowed."""
    from service import create_app

    c = create_app({"TESTING": True, "SHOAL_STORE": store}).test_client()
    r = c.post("/v1/datasets", json={"data": (np.arange(MAX_HIERARCHY_DEPTH + 2.0) ** 2)[:, None].tolist()})
    assert r.status_code == 201, r.json
    return r.json["id"]


def _recon(client, did, hierarchy, path="/v1/jobs"):
    body = {"dataset_id": did, "constraints": {"hierarchy": hierarchy}}
    if path == "/v1/jobs":
        body.update(method="recon", n_clusters=2)
    return client.post(path, json=body)


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/constraints/check"])
def test_a_hierarchy_at_the_depth_limit_is_accepted_one_level_deeper_is_a_422(client, long_dataset, path):
    ok = _recon(client, long_dataset, caterpillar(MAX_HIERARCHY_DEPTH + 1), path)
    assert ok.status_code in (200, 202), ok.json
    bad = _recon(client, long_dataset, caterpillar(MAX_HIERARCHY_DEPTH + 2), path)
    assert bad.status_code == 422 and bad.mimetype == PROBLEM
    (msg,) = bad.json["errors"]["/constraints/hierarchy"]
    assert f"at most {MAX_HIERARCHY_DEPTH} levels" in msg


@pytest.mark.parametrize("hierarchy", [5, True, "0", {"a": [0, 1]}, [], [3]])
def test_a_hierarchy_that_is_not_a_tree_of_lists_is_a_422(client, long_dataset, hierarchy):
    r = _recon(client, long_dataset, hierarchy)
    assert r.status_code == 422 and "/constraints/hierarchy" in r.json["errors"], r.json


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "identity, gzip"])
@pytest.mark.parametrize("compressed", [True, False])
def test_a_content_encoded_body_is_a_415_naming_identity(client, coding, compressed):
    # The service decodes no content coding: a gzip body was parsed as JSON (400 "Invalid JSON body") and a
    # plain body labelled gzip was taken as it was (201), the declared coding ignored. RFC 9110 15.5.16: 415
    # with Accept-Encoding naming the codings the server takes.
    import gzip

    raw = json.dumps({"data": [[0.0, 1.0], [1.0, 0.0]]}).encode()
    r = client.post("/v1/datasets", data=gzip.compress(raw) if compressed else raw,
                    headers={"Content-Type": "application/json", "Content-Encoding": coding})
    assert r.status_code == 415 and r.mimetype == PROBLEM, r.json
    assert r.json["code"] == "unsupported_content_encoding" and r.headers["Accept-Encoding"] == "identity"


def test_an_identity_content_encoding_is_taken(client):
    r = client.post("/v1/datasets", json={"data": [[0.0, 1.0], [1.0, 0.0]]},
                    headers={"Content-Encoding": "identity"})
    assert r.status_code == 201, r.json


_DIGITS = "9" * 5000  # longer than Python's int_max_str_digits (4300): json.loads raised a bare ValueError


@pytest.mark.parametrize("path, body, pointer", [
    ("/v1/datasets", '{"data": [[1, 2], [3, %s]]}' % _DIGITS, "/data/1/1"),
    ("/v1/datasets", '{"data": [[1, 2], [3, -%s]]}' % _DIGITS, "/data/1/1"),
    ("/v1/jobs", '{"dataset_id": "ds_x", "method": "e2cp", "n_clusters": %s}' % _DIGITS, "/n_clusters"),
    ("/v1/sessions/x/questions", '{"count": %s}' % _DIGITS, "/count"),
    ("/v1/constraints/check", '{"dataset_id": "ds_x", "constraints": {"must_link": [[0, %s]]}}' % _DIGITS,
     "/constraints/must_link/0/1"),
])
def test_an_integer_longer_than_pythons_digit_limit_is_a_422_at_its_field(client, path, body, pointer):
    # The decoder's "Exceeds the limit (4300 digits) for integer string conversion" is a ValueError, not the
    # JSONDecodeError webargs turns into a 400: every JSON endpoint answered 500.
    r = client.post(path, data=body, content_type="application/json")
    assert r.status_code == 422 and r.mimetype == PROBLEM, (r.status_code, r.get_data()[:300])
    code = "invalid_constraints" if pointer.startswith("/constraints/") else "invalid_input"
    assert r.json["code"] == code and list(r.json["errors"]) == [pointer], r.json


def test_digits_inside_a_string_are_only_a_string(client):
    r = client.post("/v1/datasets", data='{"data": [[1, 2], [3, 4]], "name": "%s"}' % _DIGITS,
                    content_type="application/json")
    assert r.status_code == 422 and list(r.json["errors"]) == ["/name"], r.json  # the name's own length limit


def test_a_body_of_long_digit_runs_is_scanned_in_linear_time(client):
    # check_long_integers looked for a run of more than 4300 digits with re.search([0-9]{4301}), which tries
    # every start inside every run: a body of 4300-digit integers (each one legal) took ~2 s of CPU per MB,
    # 130 s for one 64 MiB request, against 0.02 s per MB to parse it.
    import time

    body = '{"data": [%s]}' % ", ".join(["1" * 4300] * 1000)  # 4.3 MB, no integer over the limit
    started = time.process_time()
    r = client.post("/v1/datasets", data=body, content_type="application/json")
    took = time.process_time() - started
    assert r.status_code == 422, r.json  # ints beyond float64 (not the digit limit)
    assert took < 3, f"{took:.1f} s of CPU to answer a 4.3 MB body"


@pytest.mark.parametrize("raw, key", [
    (b'{"dataset_id": "ds_0", "method": "spectral", "method": "cop_rf", "n_clusters": 2}', "method"),
    (b'{"dataset_id": "ds_0", "method": "spectral", "n_clusters": 2, "params": {"a": 1, "a": 2}}', "a"),
])
def test_a_duplicate_key_is_a_400_naming_it_not_the_last_one_silently(client, raw, key):
    r = client.post("/v1/jobs", data=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.mimetype == "application/problem+json", r.data
    assert r.json["code"] == "duplicate_key" and r.json["key"] == key and repr(key) in r.json["detail"]


def test_a_constraint_body_too_long_for_the_limit_is_a_413_before_it_is_parsed(client, app):
    import time

    n = app.config["SHOAL_MAX_CONSTRAINTS"]
    pairs = ",".join(["[10000,10001]"] * (5 * n))
    raw = ('{"dataset_id": "ds_0", "method": "spectral", "n_clusters": 2, "constraints": {"must_link": ['
           + pairs + "]}}").encode()
    start = time.perf_counter()
    r = client.post("/v1/jobs", data=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json["code"] == "too_large", r.data[:300]
    assert time.perf_counter() - start < 1.0  # not parsed: parsing alone takes seconds
    r = client.post("/v1/constraints/check", data=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 413
