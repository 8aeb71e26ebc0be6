"""``Shoal``: the entry point, one connection pool to one service."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import httpx

from ._http import Transport
from .datasets import Datasets
from .jobs import Jobs
from .sessions import Sessions


class Shoal:
    """A client of one Shoal service.

    Parameters
    ----------
    base_url : str
        Where the service listens, e.g. ``"http://127.0.0.1:8000"``.
    api_key : str, optional
        Sent as ``Authorization: Bearer <key>`` (needed when the service sets ``SHOAL_API_KEYS``).
    timeout : float
        Seconds per attempt of a request (connect, read, write); waiting for a job is not bounded
        by it (see :meth:`shoal_client.Job.wait`).
    max_retries : int
        Attempts after the first for a connection error, a timeout, a 503 (Redis or queue down), a
        429, or a 409 ``request_in_progress``, with exponential backoff and jitter (0.5 s, doubling)
        or the answer's ``Retry-After``. Creating requests carry an ``Idempotency-Key`` (a UUID per
        call, the same for its retries), so a retry never creates a second dataset, job or session.
    transport : httpx.BaseTransport, optional
        Passed to ``httpx.Client`` (a proxy, a mounted test app).

    Attributes
    ----------
    datasets : Datasets
        ``create``, ``get``, ``list``, ``delete``.
    jobs : Jobs
        ``submit``, ``get``, ``list``.
    sessions : Sessions
        ``create``, ``get``, ``list``, ``delete``.

    Examples
    --------
    ::

        from shoal_client import Shoal

        with Shoal("http://127.0.0.1:8000") as shoal:
            ds = shoal.datasets.create(X, y)
            result = shoal.jobs.submit(ds, method="cop_rf", n_clusters=3, must_link=[[0, 1]]).wait()
            print(result.labels, result.metrics)
    """

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 30.0,
                 max_retries: int = 3, *, transport: httpx.BaseTransport | None = None) -> None:
        self._t = Transport(base_url, api_key=api_key, timeout=timeout, max_retries=max_retries,
                            transport=transport)
        self.base_url = self._t.base_url
        self.datasets = Datasets(self._t)
        self.jobs = Jobs(self._t)
        self.sessions = Sessions(self._t)

    def methods(self) -> dict[str, Any]:
        """Every method and session strategy with its parameters, defaults, presets and row limit
        (``GET /v1/methods``)."""
        methods: dict[str, Any] = self._t.request("GET", "/v1/methods").json()
        return methods

    def ready(self) -> dict[str, Any]:
        """``GET /readyz``: Redis and a worker answer (:class:`ServiceUnavailable` when not)."""
        ready: dict[str, Any] = self._t.request("GET", "/readyz").json()
        return ready

    def close(self) -> None:
        """Close the connection pool."""
        self._t.close()

    def __enter__(self) -> Shoal:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Shoal({self.base_url!r})"
