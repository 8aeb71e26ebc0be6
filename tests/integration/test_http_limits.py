"""Requests gunicorn refuses before Flask sees them still get RFC 9457 problem+json (real gunicorn)."""

import socket
from urllib.parse import urlparse

import pytest
import requests

pytestmark = pytest.mark.integration

PROBLEM = "application/problem+json"


@pytest.mark.parametrize("what, request_kwargs, status, code", [
    ("a URL longer than gunicorn's request line limit", {"path": "/v1/jobs/" + "j" * 5000}, 414, "uri_too_long"),
    ("a header field larger than gunicorn's limit", {"headers": {"X-Big": "h" * 9000}}, 431,
     "header_fields_too_large"),
    ("more header fields than gunicorn takes", {"headers": {f"X-F{i}": "1" for i in range(120)}}, 431,
     "header_fields_too_large"),
])
def test_requests_gunicorn_refuses_get_problem_json(live, what, request_kwargs, status, code):
    r = requests.get(live + request_kwargs.get("path", "/healthz"), headers=request_kwargs.get("headers"),
                     timeout=30)
    assert r.status_code == status, what
    assert r.headers["Content-Type"] == PROBLEM, (what, r.text[:200])
    body = r.json()
    assert (body["status"], body["code"]) == (status, code) and body["detail"], body


def test_a_malformed_request_line_gets_problem_json(live):
    url = urlparse(live)
    with socket.create_connection((url.hostname, url.port), timeout=30) as s:
        s.sendall(b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n")
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0].startswith(b"HTTP/1.1 400 "), head
    assert b"Content-Type: application/problem+json" in head.split(b"\r\n")
    assert b'"code": "bad_request"' in body and b"<html>" not in body


def _chunks(*parts):
    """A request body sent with Transfer-Encoding: chunked (no Content-Length): requests streams a generator."""
    yield from parts


def test_a_chunked_body_over_the_byte_limit_is_a_413(live):
    # Werkzeug cuts a body of unknown length at MAX_CONTENT_LENGTH without saying so: the first 64 MiB
    # were parsed as JSON and the client got 400 "Invalid JSON body" for a body that was too large.
    mib = b"a" * (1 << 20)
    body = _chunks(b'{"data": [[0, 1], [1, 2]], "name": "', *[mib] * 65, b'"}')
    r = requests.post(f"{live}/v1/datasets", data=body, headers={"Content-Type": "application/json"}, timeout=120)
    assert r.status_code == 413, r.text[:300]
    assert r.headers["Content-Type"] == PROBLEM and r.json()["code"] == "too_large"


def test_a_chunked_body_that_is_not_json_is_a_415(live):
    # The media-type check looked at Content-Length only: a chunked text/plain body was read as no body (422).
    r = requests.post(f"{live}/v1/datasets", data=_chunks(b'{"data": [[0, 1], [1, 2]]}'),
                      headers={"Content-Type": "text/plain"}, timeout=30)
    assert r.status_code == 415, r.text[:300]
    assert r.json()["code"] == "unsupported_media_type"


def test_a_chunked_json_body_is_taken_as_a_sized_one(live):
    r = requests.post(f"{live}/v1/datasets", data=_chunks(b'{"data": [[0, 1], ', b'[1, 2]]}'),
                      headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 201, r.text[:300]
    assert (r.json()["n_samples"], r.json()["n_features"]) == (2, 2)
    deep = requests.post(f"{live}/v1/datasets", data=_chunks(b"[" * 600, b"]" * 600),
                         headers={"Content-Type": "application/json"}, timeout=30)
    assert deep.status_code == 400 and deep.json()["code"] == "json_too_deep"


@pytest.mark.parametrize("coding", [b"gzip, chunked", b"deflate, chunked"])
def test_a_body_in_a_transfer_coding_other_than_chunked_is_a_501(live, coding):
    # gunicorn takes gzip, deflate and compress transfer codings and decodes only chunked: the body still
    # gzip-coded was parsed as it came (a 400 "Invalid JSON body" if gzipped, a 201 if it was not). RFC 9112
    # 6.1: a transfer coding the server does not understand is a 501.
    import gzip

    url = urlparse(live)
    body = gzip.compress(b'{"data": [[0, 1], [1, 2]]}')
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    with socket.create_connection((url.hostname, url.port), timeout=30) as s:
        s.sendall(b"POST /v1/datasets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: " + coding + b"\r\nConnection: close\r\n\r\n" + chunked)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0].startswith(b"HTTP/1.1 501 "), raw[:300]
    assert b"Content-Type: application/problem+json" in head.split(b"\r\n")
    assert b'"code": "transfer_coding_not_implemented"' in payload


@pytest.mark.parametrize("what, chunks, shut", [
    ("a chunk size that is not hex", b"zz\r\nabc\r\n0\r\n\r\n", False),
    ("a chunk longer than its size", b"3\r\nabcdef\r\n0\r\n\r\n", False),
    ("a body cut off mid-chunk", b'5\r\n{"da\r\n', True),
])
def test_a_malformed_chunked_body_is_a_400_not_a_500(live, what, chunks, shut):
    # gunicorn raises its parse errors (InvalidChunkSize, ChunkMissingTerminator, NoMoreData) while the
    # application reads the body: they reached the catch-all as a 500 "unexpected error". A sized body cut
    # short was already a 400 (werkzeug's ClientDisconnected).
    url = urlparse(live)
    with socket.create_connection((url.hostname, url.port), timeout=30) as s:
        s.sendall(b"POST /v1/datasets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + chunks)
        if shut:
            s.shutdown(socket.SHUT_WR)
        raw = b""
        while chunk := s.recv(65536):
            raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0].startswith(b"HTTP/1.1 400 "), (what, raw[:300])
    assert b"Content-Type: application/problem+json" in head.split(b"\r\n")
    assert b'"code": "bad_request"' in payload, what
