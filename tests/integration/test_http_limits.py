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
