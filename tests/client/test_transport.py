"""The client's retry pauses: Retry-After in seconds or as a date, else backoff with jitter."""

import email.utils
import time

import httpx
import pytest

from shoal_client import RateLimited, ServerError, ServiceUnavailable
from shoal_client._http import MAX_PAUSE, Transport, retry_after_seconds
from shoal_client.errors import error_for


def test_retry_after_is_read_as_seconds_or_an_http_date():
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "7"})) == 7.0
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < retry_after_seconds(httpx.Response(429, headers={"Retry-After": date})) <= 30
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "soon"})) is None
    assert retry_after_seconds(httpx.Response(503)) is None


def test_backoff_doubles_with_jitter_and_retry_after_wins():
    t = Transport("http://127.0.0.1:9", backoff=0.5)
    try:
        for attempt in range(4):
            pauses = {t.pause(attempt) for _ in range(50)}
            ceiling = 0.5 * 2 ** attempt
            assert all(ceiling / 2 <= p <= ceiling for p in pauses) and len(pauses) > 1
        assert t.pause(30) <= MAX_PAUSE
        assert t.pause(0, httpx.Response(503, headers={"Retry-After": "3"})) == 3.0
        assert t.pause(0, httpx.Response(429, headers={"Retry-After": "9999"})) == MAX_PAUSE
    finally:
        t.close()


@pytest.mark.parametrize("status, cls", [(503, ServiceUnavailable), (429, RateLimited), (500, ServerError)])
def test_statuses_map_to_their_exceptions(status, cls):
    e = error_for(status, {"status": status, "code": "x", "detail": "why", "errors": {"/a": ["bad"]}})
    assert type(e) is cls and e.status == status and e.field == "/a" and "why" in str(e)
