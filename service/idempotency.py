"""``Idempotency-Key`` on the POSTs that create datasets, jobs and sessions.

A client that times out cannot know whether its ``POST /v1/jobs`` created a
job. Sent again with the same ``Idempotency-Key`` header (IETF
draft-ietf-httpapi-idempotency-key-header; Google AIP-155's request id), the
request is answered with the first response (same status, body and
``Location``, plus ``Idempotent-Replayed: true``) instead of creating a second
job. The key is remembered per endpoint (and, where API keys are configured, per
API key: :mod:`service.auth`) for ``SHOAL_IDEMPOTENCY_TTL`` seconds
(24 h) after a 2xx answer; a request that fails frees it, so the corrected
request may reuse it. The same key with a different body is a 422
``idempotency_key_reused``; while the first request still runs, a 409
``request_in_progress`` with ``Retry-After``. Without the header nothing changes.
"""

import hashlib
import logging
import re

from flask import Response, current_app, g, request

from workers.store import StoreError

from . import get_store
from .errors import ApiError, problem_docs

log = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
_VALID = re.compile(r"^[\x21-\x7e]{1,255}$")  # 1-255 visible ASCII characters
_REPLAYED_HEADERS = ("Location", "Retry-After")
_PARAMETER = {"in": "header", "name": HEADER, "required": False,
              "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^[\x21-\x7e]+$"},
              "description": "Makes retries safe: the same key and body within 24 h get the first response "
                             "back (header Idempotent-Replayed: true) instead of creating the resource again; "
                             "the same key with another body is a 422, and a 409 while the first request runs."}


def idempotent(blp, document_409=True):
    """Mark a creating POST view as honouring ``Idempotency-Key`` and document the
    header with its 400 and 409 answers (``document_409=False`` where the view
    documents a 409 of its own, which then names both causes).

    Put it directly under ``@blp.route``.
    """
    statuses = [(400, "Malformed Idempotency-Key")]
    if document_409:
        statuses.append((409, "A request with this Idempotency-Key is still running"))

    def decorate(view):
        view = problem_docs(blp, *statuses)(blp.doc(parameters=[_PARAMETER])(view))
        view.idempotent = True
        return view
    return decorate


def _claim():
    """before_request: claim the key, or answer from what it already holds."""
    key = request.headers.get(HEADER)
    from .uploads import binary_request

    if key is None or request.method != "POST" or binary_request():  # a binary body is not read twice
        return None
    view = current_app.view_functions.get(request.endpoint)
    if not getattr(view, "idempotent", False):
        return None
    if not _VALID.match(key):
        raise ApiError(400, "invalid_idempotency_key", f"{HEADER} must be 1 to 255 visible ASCII characters",
                       errors={f"header:{HEADER}": ["1 to 255 visible ASCII characters"]})
    fingerprint = hashlib.sha256(request.get_data(cache=True)).hexdigest()
    # per endpoint and, with API keys, per client: two clients that pick the same key (say "1") are two requests
    scope = f"POST {request.path}" + (f" client {g.api_client}" if g.get("api_client") else "")
    found = get_store().claim_request(scope, key, fingerprint)
    if found is None:
        g.idempotency_claim = (scope, key, fingerprint)
        return None
    if found["fingerprint"] != fingerprint:
        raise ApiError(422, "idempotency_key_reused", f"{HEADER} {key!r} was used for a different request body "
                       "on this endpoint; use a new key for a new request",
                       errors={f"header:{HEADER}": ["already used with another body"]})
    if found["state"] != "done":
        raise ApiError(409, "request_in_progress", f"the first request with {HEADER} {key!r} is still running; "
                       "retry shortly to get its response", headers={"Retry-After": "1"})
    resp = Response(found["body"], status=found["status"], mimetype="application/json")
    for name, value in found["headers"].items():
        resp.headers[name] = value
    resp.headers["Idempotent-Replayed"] = "true"
    return resp


def _settle(response):
    """after_request: remember a 2xx response under the claimed key, free the key otherwise."""
    claim = g.pop("idempotency_claim", None)
    if claim is None:
        return response
    store = get_store()
    try:
        if 200 <= response.status_code < 300:
            headers = {h: response.headers[h] for h in _REPLAYED_HEADERS if h in response.headers}
            store.finish_request(*claim, response.status_code, response.get_data(as_text=True), headers,
                                 ttl=current_app.config["SHOAL_IDEMPOTENCY_TTL"])
        else:
            store.release_request(claim[0], claim[1])
    except StoreError:  # the resource exists; only the replay of this response is lost
        log.warning("idempotency key %r not settled: Redis unavailable", claim[1])
    return response


def register(app):
    app.before_request(_claim)
    app.after_request(_settle)
