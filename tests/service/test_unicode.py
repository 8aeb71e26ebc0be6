"""Strings that are not Unicode text (lone UTF-16 surrogates) are a 422 naming the field, never a 500."""

import pytest

from service.body import has_lone_surrogate


@pytest.mark.parametrize("raw, lone", [
    (b'"a"', False),
    (b'"\\ud800"', True),
    (b'"\\udc00x"', True),
    (b'"\\ud83d"', True),
    (b'"\\ud83d\\n"', True),
    (b'"\\ud83d\\ud83d\\ude00"', True),
    (b'"x\\ud800\\udc00\\udc00"', True),
    (b'"\\\\\\ud800"', True),  # an escaped backslash, then a lone surrogate
    (b'"a\xed\xa0\x80"', True),  # a surrogate written as UTF-8 bytes
    (b'"\\ud83d\\ude00"', False),  # a pair: one character (an emoji)
    (b'"\\\\ud800"', False),  # a backslash followed by the letters ud800
    (b'"\\u00e9\\\\"', False),
    (b'"\\ud800\\\\\\udc00"', True),  # lone high, a backslash, lone low: not a pair
    (b'"\\\\\\ud83d\\ude00"', False),
    (b'"\\uD83D\\uDE00\\uDBFF\\uDFFF"', False),
])
def test_lone_surrogates_are_found_in_the_raw_body(raw, lone):
    assert has_lone_surrogate(raw) is lone


def test_the_raw_scan_agrees_with_the_decoder():
    """Random strings of escapes, backslashes and letters: lone surrogates found exactly when the decoded
    text cannot be encoded."""
    import json
    import random

    rng = random.Random(0)
    parts = [b"\\ud800", b"\\udbff", b"\\udc00", b"\\uDFFF", b"\\\\", b"u", b"d800", b"\\u00e9", b"x", b"\\n"]
    for _ in range(5000):
        raw = b'"' + b"".join(rng.choice(parts) for _ in range(rng.randint(1, 8))) + b'"'
        try:
            json.loads(raw).encode("utf-8")
            lone = False
        except UnicodeEncodeError:
            lone = True
        assert has_lone_surrogate(raw) is lone, raw


def _post(client, path, raw):
    return client.post(path, data=raw, content_type="application/json")


@pytest.fixture()
def session(client, store, blobs_dataset):
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5}).json["id"]
    update_once(store, SessionStore(store), sid)
    return sid


def test_a_worker_id_with_a_lone_surrogate_is_named_on_lease_and_answers(client, session):
    r = _post(client, f"/v1/sessions/{session}/questions", b'{"count": 2, "worker_id": "w\\ud800"}')
    assert r.status_code == 422 and r.json["code"] == "invalid_unicode", r.json
    assert list(r.json["errors"]) == ["/worker_id"]
    qid = client.post(f"/v1/sessions/{session}/questions", json={"count": 1}).json["questions"][0]["question_id"]
    raw = ('{"answers": [{"question_id": "%s", "answer": "must_link", "worker_id": "w",'
           ' "assignment_id": "a\\udfff"}]}' % qid).encode()
    r = _post(client, f"/v1/sessions/{session}/answers", raw)
    assert r.status_code == 422 and list(r.json["errors"]) == ["/answers/0/assignment_id"], r.json
    assert client.get(f"/v1/sessions/{session}").json["counters"]["answers_received"] == 0  # nothing recorded


@pytest.mark.parametrize("raw, pointer", [
    (b'{"data": [[1, 2], [3, 4]], "item_ids": ["a", "b\\ud800"]}', "/item_ids/1"),
    (b'{"data": [[1, 2], [3, 4]], "name": "\xed\xa0\x80"}', "/name"),
    (b'{"data": [[1, 2], [3, 4]], "na\\udc00me": "x"}', "/na\udc00me"),
])
def test_datasets_refuse_text_that_is_not_unicode(client, raw, pointer):
    r = _post(client, "/v1/datasets", raw)
    assert r.status_code == 422 and r.json["code"] == "invalid_unicode", r.json
    assert list(r.json["errors"]) == [pointer]


def test_surrogate_pairs_are_ordinary_text(client):
    r = _post(client, "/v1/datasets", b'{"data": [[1, 2], [3, 4]], "item_ids": ["\\ud83d\\ude00", "b"]}')
    assert r.status_code == 201, r.json
    assert client.get(f"/v1/datasets/{r.json['id']}").status_code == 200


@pytest.mark.parametrize("escape", [b"\\\\", b"\\ud83d\\ude00"], ids=["backslashes", "pairs"])
def test_the_scan_of_a_large_body_full_of_escapes_stays_fast(escape):
    """A body of escapes (with a surrogate-range one, which turns on the exact scan) must not cost a web
    worker seconds where parsing it takes a fraction of one: the exact scan walked every escape in Python,
    7.9 s for 64 MiB of escaped backslashes (JSON parse: 0.2 s)."""
    import time

    size = 32 << 20
    raw = b'{"name": "' + escape * (size // len(escape)) + b'\\ud800"}'
    start = time.perf_counter()
    assert has_lone_surrogate(raw)
    assert time.perf_counter() - start < 1.5


def test_naming_the_field_passes_over_a_large_matrix_quickly():
    """Once the scan found a lone surrogate, the parsed body is walked for its pointer: the numbers of a
    large data matrix (and ASCII item ids) must not each cost a step in Python (9 s for 10 million cells,
    which parse in 2.6 s)."""
    import json
    import time

    from service.body import _first_non_text

    rows = 250_000
    body = json.loads('{"data": [' + ",".join(["[1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5]"] * rows)
                      + '], "item_ids": [' + ",".join(['"id"'] * rows) + '], "name": "x\\ud800"}')
    start = time.perf_counter()
    assert _first_non_text(body) == "/name"
    assert time.perf_counter() - start < 1.0
    assert _first_non_text(json.loads('[1, {"a": ["b", "\\u00e9", "\\udc00"]}]')) == "/1/a/2"
    assert _first_non_text(json.loads('{"x": ["\\ud800"], "a/\\udc00": 1}')) == "/a~1\udc00"
