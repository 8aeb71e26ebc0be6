"""One error shape for everything: RFC 9457 ``application/problem+json``.

Validation errors carry ``errors``: JSON pointer of each invalid field ->
messages. A dataset deleted while a job or session was being created on it
-> 404. Redis or broker unavailable -> 503. Anything unexpected -> 500
with a generic body (the details go to the log, not to the client).
"""

import logging

from flask import current_app, json, request
from werkzeug.exceptions import HTTPException

from schemas.problems import ProblemSchema
from workers.dataset_store import DatasetGone
from workers.records import decode_token
from workers.store import StoreError
from workers.submit import QueueError

from . import request_id

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"


class ApiError(Exception):
    """Raise from a view to answer with a problem document.

    Parameters
    ----------
    status : int
    code : str
        Stable machine-readable code (``"invalid_constraints"``, ...).
    detail : str
    errors : dict of str to list of str, optional
        JSON pointer -> messages.
    headers : dict, optional
        Extra response headers (e.g. ``Retry-After``).
    **extra
        More members (e.g. ``conflicts``).
    """

    def __init__(self, status, code, detail, *, title=None, errors=None, headers=None, **extra):
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail
        self.title = title or _TITLES.get(status, "Error")
        self.errors, self.headers, self.extra = errors, headers or {}, extra


    @classmethod
    def from_invalid(cls, exc, code, prefix=""):
        """422 from a :class:`clustering.exceptions.InvalidInputError`, pointing at
        ``{prefix}/{field}/{index...}`` so HTTP and ``fit`` report the same reason."""
        pointer = f"{prefix}/{exc.field}" + "".join(f"/{i}" for i in (exc.index or ()))
        return cls(422, code, str(exc), errors={pointer: [str(exc)]})


def problem_docs(blp, *responses):
    """Document ``(status, description)`` error responses as problem+json on a view."""

    def decorate(view):
        for status, description in reversed(responses):
            view = blp.alt_response(status, schema=ProblemSchema, content_type=PROBLEM_JSON,
                                    description=description)(view)
        return view

    return decorate


_TITLES = {
    400: "Bad request", 401: "Unauthorized", 403: "Forbidden", 404: "Not found", 405: "Method not allowed",
    409: "Conflict",
    413: "Payload too large", 415: "Unsupported media type", 416: "Range not satisfiable", 422: "Invalid input",
    429: "Too many requests", 501: "Not implemented", 503: "Service unavailable", 500: "Internal server error",
}


#: JSON pointer of a request member -> the code of a 422 about it alone (see :func:`_member_code`).
_MEMBER_CODES = {"/constraints": "invalid_constraints"}


def _member_code(code, errors):
    """The code of a 422 ``invalid_input`` whose ``errors`` all lie in one member of :data:`_MEMBER_CODES`.

    The service's own constraint checks (index range, self-pairs: :mod:`service.constraints`) answer
    ``invalid_constraints``; the schema's (weights of another length than their pairs or outside (0, 1],
    malformed or negative indices) and the body's (an over-long integer) answered ``invalid_input``.

    Parameters
    ----------
    code : str
        The code the problem was raised with.
    errors : dict of str to list of str or None
        JSON pointer -> messages.

    Returns
    -------
    str
        The member's code when ``code`` is ``invalid_input`` and every pointer is the member or inside
        it; ``code`` otherwise (also for errors in two members).
    """
    if code != "invalid_input" or not errors:
        return code
    for member, member_specific in _MEMBER_CODES.items():
        if all(p == member or p.startswith(member + "/") for p in errors):
            return member_specific
    return code


def problem_response(status, code, detail, *, title=None, errors=None, headers=None, **extra):
    if status == 422:
        code = _member_code(code, errors)
    body = {
        "type": f"https://shoal.dev/problems/{code.replace('_', '-')}",
        "title": title or _TITLES.get(status, "Error"),
        "status": status,
        "detail": detail,
        "code": code,
        "instance": request.path,
    }
    rid = request_id.current()
    if rid:
        body["request_id"] = rid
    if errors:
        body["errors"] = errors
    body.update(extra)
    resp = current_app.response_class(json.dumps(body), status=status, mimetype=PROBLEM_JSON)
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def pointer_token(name):
    """A member name as a JSON pointer token (RFC 6901: ``~`` -> ``~0``, ``/`` -> ``~1``; ``a/b`` is ``a~1b``)."""
    return str(name).replace("~", "~0").replace("/", "~1")


def pointer_messages(messages, prefix=""):
    """Flatten marshmallow's nested messages into ``{json_pointer: [msg, ...]}``.

    Parameters
    ----------
    messages : dict, list or str
        marshmallow's ``ValidationError.messages``: field name (or list index) -> messages, nested.
    prefix : str, default=""
        Pointer of the object the messages are about (``"/params"``).

    Returns
    -------
    dict of str to list of str
        RFC 6901 pointers (``~`` and ``/`` in a name escaped as ``~0`` and ``~1``) -> messages;
        ``prefix`` (or ``"/"``) for the object's own ``_schema`` messages.
    """
    out = {}
    if isinstance(messages, dict):
        for key, val in messages.items():
            if key == "_schema":
                out.setdefault(prefix or "/", []).extend(_strings(val))
            else:  # {"a/b": 1} is /a~1b, not /a/b
                out.update(pointer_messages(val, f"{prefix}/{pointer_token(key)}"))
    else:
        out[prefix or "/"] = _strings(messages)
    return out


def _strings(val):
    if isinstance(val, (list, tuple)):
        res = []
        for v in val:
            res.extend(_strings(v) if isinstance(v, (list, tuple, dict)) else [str(v)])
        return res
    if isinstance(val, dict):
        return [f"{k}: {m}" for k, vs in val.items() for m in _strings(vs)]
    return [str(val)]


def _http_code(exc):
    return {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "too_large",
            415: "unsupported_media_type", 416: "range_not_satisfiable", 422: "invalid_input", 304: "not_modified",
            412: "precondition_failed", 428: "precondition_required"}.get(exc.code, "http_error")


def handle_http_exception(exc):
    if exc.code == 304:
        return exc.get_response()
    data = getattr(exc, "data", None) or {}
    messages = data.get("messages")
    errors = None
    if messages:
        # webargs nests by location ("json", "query"); pointers are relative to it.
        flat = {}
        for location, msgs in messages.items():
            flat.update(pointer_messages(msgs))
        errors = flat
    detail = exc.description
    if exc.code == 422 and errors:
        detail = "; ".join(f"{ptr}: {ms[0]}" for ptr, ms in list(errors.items())[:3] if ms)
    if exc.code == 400 and errors:
        detail = "; ".join(m for ms in errors.values() for m in ms)
        errors = None
    # the exception's own headers (405 Allow, 416 Content-Range, ...), the body's type aside
    headers = {k: v for k, v in exc.get_headers() if k.lower() != "content-type"}
    return problem_response(exc.code, _http_code(exc), detail, errors=errors, headers=headers)


def handle_api_error(exc):
    return problem_response(exc.status, exc.code, exc.detail, title=exc.title, errors=exc.errors,
                            headers=exc.headers, **exc.extra)


def handle_unavailable(exc):
    log.warning("backend unavailable: %s", exc)
    return problem_response(503, "unavailable", "the job store or queue is unavailable, retry later",
                            headers={"Retry-After": "5"})


def handle_dataset_gone(exc):
    """A job or session was being created on a dataset deleted (or expired) meanwhile."""
    body = request.get_json(silent=True)
    named = isinstance(body, dict) and body.get("dataset_id") == exc.dataset_id
    return problem_response(404, "not_found", str(exc),
                            errors={"/dataset_id": ["unknown dataset"]} if named else None)


def handle_unexpected(exc):
    log.exception("unhandled error (request %s)", request_id.current())
    return problem_response(500, "internal_error", "an unexpected error occurred; it has been logged")


def register(app):
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(ApiError, handle_api_error)
    app.register_error_handler(StoreError, handle_unavailable)
    app.register_error_handler(QueueError, handle_unavailable)
    app.register_error_handler(DatasetGone, handle_dataset_gone)
    app.register_error_handler(Exception, handle_unexpected)


def check_page_token(token):
    """400 ``bad_page_token`` unless ``token`` is None or a token a list endpoint issued."""
    if token:
        try:
            decode_token(token)
        except ValueError as exc:
            raise ApiError(400, "bad_page_token", str(exc)) from exc
