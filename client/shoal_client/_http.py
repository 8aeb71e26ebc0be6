"""HTTP transport: one ``httpx.Client``, problem+json errors, retries with backoff and jitter."""

from __future__ import annotations

import email.utils
import logging
import random
import time
from typing import Any, Callable, Mapping
from urllib.parse import quote

import httpx

from ._version import __version__
from .errors import ConnectionFailed, ShoalError, Timeout, error_for

log = logging.getLogger("shoal_client")

#: Statuses retried (after ``Retry-After`` when the answer has one): Redis or the queue down, rate limited.
RETRY_STATUSES = frozenset({429, 503})
#: The longest single pause between two attempts, seconds (a larger ``Retry-After`` is cut to it).
MAX_PAUSE = 60.0


def retry_after_seconds(response: httpx.Response) -> float | None:
    """The pause a response asks for in ``Retry-After`` (seconds or an HTTP date), or None.

    Parameters
    ----------
    response : httpx.Response

    Returns
    -------
    float or None
        Seconds to wait (0 or more), None without a readable header.
    """
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _problem(response: httpx.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class Transport:
    """Requests to one Shoal service, each retried through transient failures.

    Parameters
    ----------
    base_url : str
        ``scheme://host:port`` of the service (a path prefix is kept).
    api_key : str, optional
        Sent as ``Authorization: Bearer <key>``.
    timeout : float
        Seconds per attempt (connect, read, write).
    max_retries : int
        Attempts after the first, for a connection error, a timeout, a 503, a 429 or a 409
        ``request_in_progress``. Only requests safe to repeat are retried after a connection
        error: GET, DELETE and POSTs that carry an ``Idempotency-Key`` or are marked ``safe``.
    backoff : float
        First pause in seconds; it doubles with every attempt (at most ``MAX_PAUSE``); each pause
        is drawn uniformly from its upper half (jitter), so clients that failed together do not
        retry together. ``Retry-After`` replaces it when the answer has one.
    transport : httpx.BaseTransport, optional
        For tests or proxies: passed to ``httpx.Client``.
    """

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 30.0,
                 max_retries: int = 3, backoff: float = 0.5, transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        headers = {"User-Agent": f"shoal-client/{__version__}", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.base_url = base_url.rstrip("/")
        self.max_retries, self.backoff, self.sleep = max_retries, backoff, sleep
        self.http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout, transport=transport)

    def close(self) -> None:
        """Close the connection pool."""
        self.http.close()

    def pause(self, attempt: int, response: httpx.Response | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1``: the answer's ``Retry-After``, else the backoff."""
        hinted = retry_after_seconds(response) if response is not None else None
        if hinted is not None:
            return min(hinted, MAX_PAUSE)
        ceiling = min(self.backoff * 2 ** attempt, MAX_PAUSE)
        return random.uniform(ceiling / 2, ceiling)

    def request(self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None,
                headers: Mapping[str, str] | None = None, idempotency_key: str | None = None,
                safe: bool | None = None, ok: tuple[int, ...] = (), gone_ok: bool = False) -> httpx.Response:
        """Send a request, retrying transient failures; raise the typed error of a 4xx / 5xx.

        Parameters
        ----------
        method, path : str
            HTTP method and path below ``base_url`` (``"/v1/jobs"``).
        json : object, optional
            Request body (sent as JSON).
        params : mapping, optional
            Query parameters (None values left out).
        headers : mapping, optional
            Extra headers (``If-None-Match``).
        idempotency_key : str, optional
            Sent as ``Idempotency-Key`` with every attempt: the service answers a repeated POST with
            its first response instead of creating the resource again.
        safe : bool, optional
            Whether repeating the request after a connection error is harmless; default: GET,
            DELETE, or any request with ``idempotency_key``.
        ok : tuple of int
            Error statuses returned instead of raised (``409`` for a caller that waits on it).
        gone_ok : bool
            Return a 404 met on a retry (a DELETE whose first attempt went through).

        Returns
        -------
        httpx.Response
            A 2xx or 304 answer, or one whose status is in ``ok``.

        Raises
        ------
        ShoalError
            The subclass for the status (:func:`shoal_client.errors.error_for`), with the problem's fields.
        ConnectionFailed
            No answer after ``1 + max_retries`` attempts (or after one, for a request not ``safe``).
        Timeout
            Every attempt timed out.
        """
        if safe is None:
            safe = method in ("GET", "HEAD", "DELETE") or idempotency_key is not None
        sent = dict(headers or {})
        if idempotency_key is not None:
            sent["Idempotency-Key"] = idempotency_key
        query = {k: v for k, v in (params or {}).items() if v is not None}
        attempt = 0
        while True:
            try:
                response = self.http.request(method, path, json=json, params=query, headers=sent)
            except httpx.TransportError as exc:
                if not safe or attempt >= self.max_retries:
                    cls = Timeout if isinstance(exc, httpx.TimeoutException) else ConnectionFailed
                    raise cls(message=f"{method} {path}: {type(exc).__name__}: {exc or 'no answer'} "
                                      f"(after {attempt + 1} attempt(s))") from exc
                wait = self.pause(attempt)
                log.info("%s %s: %s, attempt %d again in %.2f s", method, path, type(exc).__name__,
                         attempt + 2, wait)
                self.sleep(wait)
                attempt += 1
                continue
            status = response.status_code
            if status < 400 or status in ok or (gone_ok and status == 404 and attempt > 0):
                return response
            problem = _problem(response)
            in_progress = status == 409 and (problem or {}).get("code") == "request_in_progress"
            if (status in RETRY_STATUSES or in_progress) and attempt < self.max_retries:
                wait = self.pause(attempt, response)
                log.info("%s %s: %d, attempt %d again in %.2f s", method, path, status, attempt + 2, wait)
                self.sleep(wait)
                attempt += 1
                continue
            raise error_for(status, problem)


def seg(value: str) -> str:
    """An id as one path segment (``/`` and every other reserved character percent-encoded)."""
    return quote(str(value), safe="")


def jsonable(value: Any) -> Any:
    """``value`` with numpy arrays and scalars (nested in lists, tuples and dicts) as plain JSON types."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


__all__ = ["Transport", "ShoalError", "jsonable", "retry_after_seconds", "seg"]
