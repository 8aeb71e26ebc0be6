"""Typed exceptions carrying the service's RFC 9457 ``application/problem+json`` fields."""

from __future__ import annotations

from typing import Any, Mapping

__all__ = [
    "ShoalError", "BadRequest", "AuthenticationError", "NotFound", "Conflict", "ValidationFailed",
    "PayloadTooLarge", "RateLimited", "ServerError", "ServiceUnavailable", "ConnectionFailed", "Timeout",
    "JobFailed", "SessionFailed", "error_for",
]


class ShoalError(Exception):
    """An error answered by the service (or met on the way to it).

    Parameters
    ----------
    problem : mapping, optional
        The problem document (``type``, ``title``, ``status``, ``detail``, ``code``, ``errors``, ...).
    status : int, optional
        HTTP status; defaults to ``problem["status"]``.
    message : str, optional
        The text of the exception; defaults to ``detail`` (else ``title``).

    Attributes
    ----------
    status : int or None
        HTTP status code (None when no answer arrived).
    type, title, detail, code : str or None
        The problem's members of the same names; ``code`` is the stable machine-readable one
        (``"not_found"``, ``"invalid_params"``, ...).
    errors : dict of str to list of str
        JSON pointer of each invalid member (``"/params/n_estimators"``) -> messages; empty when none.
    field : str or None
        The first pointer of ``errors`` (the member to fix), or None.
    request_id : str or None
        The request's ``X-Request-ID``: quote it when reporting a problem.
    problem : dict
        The whole problem document, with members specific to the code (``conflicts``, ``jobs``, ...).
    """

    def __init__(self, problem: Mapping[str, Any] | None = None, *, status: int | None = None,
                 message: str | None = None) -> None:
        self.problem: dict[str, Any] = dict(problem or {})
        self.status: int | None = status if status is not None else self.problem.get("status")
        self.type: str | None = self.problem.get("type")
        self.title: str | None = self.problem.get("title")
        self.detail: str | None = self.problem.get("detail")
        self.code: str | None = self.problem.get("code")
        self.errors: dict[str, list[str]] = dict(self.problem.get("errors") or {})
        self.request_id: str | None = self.problem.get("request_id")
        text = message or self.detail or self.title or "Shoal error"
        if self.status is not None:
            text = f"{self.status} {self.code or ''}: {text}".replace(" :", ":")
        if self.errors:
            text += " (" + "; ".join(f"{p}: {', '.join(m)}" for p, m in self.errors.items()) + ")"
        super().__init__(text)

    @property
    def field(self) -> str | None:
        """The JSON pointer of the first invalid member, or None."""
        return next(iter(self.errors), None)


class BadRequest(ShoalError):
    """400: the request could not be read (malformed JSON, page token, ``Idempotency-Key``)."""


class AuthenticationError(ShoalError):
    """401: the service needs an API key (``Shoal(api_key=...)``) and got none or an unknown one."""


class NotFound(ShoalError):
    """404: the dataset, job or session does not exist or has expired."""


class Conflict(ShoalError):
    """409: the resource is not in a state for this request (result not ready, dataset in use, ...)."""


class ValidationFailed(ShoalError):
    """422: the request was read but is invalid; ``errors`` names each member and why."""


class PayloadTooLarge(ShoalError):
    """413: too many rows, columns, cells, bytes or constraints."""


class RateLimited(ShoalError):
    """429: too many requests (raised once the retries, which honour ``Retry-After``, are spent)."""


class ServerError(ShoalError):
    """5xx: the service failed (raised once the retries of a 503 are spent)."""


class ServiceUnavailable(ServerError):
    """503: Redis or the queue is down (raised once the retries are spent)."""


class ConnectionFailed(ShoalError, ConnectionError):
    """No answer: the connection failed on every attempt (``Shoal(max_retries=...)``)."""


class Timeout(ShoalError, TimeoutError):
    """A wait (``Job.wait(timeout=...)``) or every attempt of a request ran out of time."""


class JobFailed(ShoalError):
    """A job ended FAILED or CANCELLED instead of SUCCEEDED.

    Attributes
    ----------
    job_id : str
    state : str
        ``"FAILED"`` or ``"CANCELLED"``.
    problem : dict
        The job's ``error`` (a problem document with ``code`` and ``detail``); empty when cancelled.
        ``status``, ``code``, ``detail`` and ``errors`` are the error's (e.g. 422
        ``infeasible_constraints`` with ``problem["conflicts"]``), not those of an HTTP answer.
    """

    def __init__(self, job_id: str, state: str, error: Mapping[str, Any] | None = None) -> None:
        self.job_id, self.state = job_id, state
        detail = (error or {}).get("detail") or f"job {job_id} ended {state}"
        super().__init__(error, message=f"job {job_id} ended {state}: {detail}")


class SessionFailed(ShoalError):
    """A session ended FAILED (a re-clustering pass failed); ``problem`` is the session's ``error``."""

    def __init__(self, session_id: str, error: Mapping[str, Any] | None = None) -> None:
        self.session_id = session_id
        detail = (error or {}).get("detail") or "unknown error"
        super().__init__(error, message=f"session {session_id} FAILED: {detail}")


_BY_STATUS: dict[int, type[ShoalError]] = {
    400: BadRequest, 401: AuthenticationError, 403: AuthenticationError, 404: NotFound, 409: Conflict,
    413: PayloadTooLarge, 422: ValidationFailed, 429: RateLimited, 503: ServiceUnavailable,
}


def error_for(status: int, problem: Mapping[str, Any] | None) -> ShoalError:
    """The exception of a status code and its problem document.

    Parameters
    ----------
    status : int
        HTTP status of the answer (4xx or 5xx).
    problem : mapping or None
        The parsed ``application/problem+json`` body (None when the body was not one).

    Returns
    -------
    ShoalError
        An instance of the subclass for ``status`` (:class:`ServerError` for other 5xx,
        :class:`ShoalError` for other codes).
    """
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ShoalError)
    return cls(problem or {"status": status, "title": f"HTTP {status}"}, status=status)
