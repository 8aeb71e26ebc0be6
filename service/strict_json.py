"""Strict JSON bodies: a duplicate object key is a 400, and a constraint body too big to be within
``SHOAL_MAX_CONSTRAINTS`` is a 413 before it is read.

RFC 8259 leaves duplicate names to the parser; Python's keeps the last, so
``{"method": "a", "method": "b"}`` ran method b while the client may have meant
either. Every body the views parse goes through :class:`StrictParser` (flask-smorest's
argument parser), whose decoder refuses a repeated key with 400 ``duplicate_key`` naming it.

A job or constraint check whose body is longer than ``SHOAL_MAX_CONSTRAINTS`` constraints can
be (``SHOAL_BYTES_PER_CONSTRAINT`` bytes each, 64 by default: a pair written ``[99999, 99998],``
with a weight and indentation; compact JSON takes 6 to 20) plus 1 MiB for the rest is
refused on its ``Content-Length`` with the 413 its count would get (:func:`check_constraint_body_size`):
a 14 MB list was parsed for seconds before.
"""

import json

from flask import current_app, request
from flask_smorest import Blueprint
from webargs import core
from webargs.flaskparser import FlaskParser, is_json_request

from .errors import ApiError

#: Endpoints whose body is constraints (and a few small fields): capped by the constraint limit.
CONSTRAINT_ENDPOINTS = frozenset({"jobs.create_job", "constraints.check"})
#: Bytes of a body that are not constraints, at most (method, params, callback_url, ...).
OTHER_BYTES = 1 << 20


class DuplicateKey(ValueError):
    """A JSON object names the same key twice."""

    def __init__(self, key):
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(k)
        out[k] = v
    return out


def loads(raw):
    """``json.loads`` that refuses a repeated object key (:class:`DuplicateKey`)."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8")
    return json.loads(raw, object_pairs_hook=_no_duplicates)


class StrictParser(FlaskParser):
    """flask-smorest's parser with a decoder that refuses duplicate keys (400 ``duplicate_key``)."""

    def _raw_load_json(self, req):
        if not is_json_request(req):
            return core.missing
        try:
            return loads(req.get_data(cache=True))
        except DuplicateKey as exc:
            raise ApiError(400, "duplicate_key", f"the JSON body names the key {exc.key!r} more than once in one "
                           "object; send each key once", errors={"body": [f"duplicate key {exc.key!r}"]},
                           key=exc.key) from None
        except UnicodeDecodeError as exc:
            raise json.JSONDecodeError(f"Bytes decoding error : {exc.reason}", doc=str(exc.object),
                                       pos=exc.start) from exc


def install():
    """Make every flask-smorest blueprint parse with :class:`StrictParser` (before any view is decorated)."""
    Blueprint.ARGUMENTS_PARSER = StrictParser()


def check_constraint_body_size():
    """before_request: 413 ``too_large`` for a constraint body longer than the constraint limit allows.

    Runs on the body's ``Content-Length`` (a chunked body was sized by
    :func:`service.body.size_chunked_body`), before anything parses it.
    """
    if request.endpoint not in CONSTRAINT_ENDPOINTS or not request.content_length:
        return
    cfg = current_app.config
    limit = cfg["SHOAL_MAX_CONSTRAINTS"]
    cap = limit * cfg["SHOAL_BYTES_PER_CONSTRAINT"] + OTHER_BYTES
    if request.content_length > cap:
        raise ApiError(413, "too_large", f"a body of {request.content_length} bytes holds more than the {limit} "
                       f"constraints allowed (at most {cap} bytes on this route)",
                       errors={"/constraints": [f"at most {limit} constraints"]})
