"""Audit log: one JSON line per write (POST, PUT, PATCH, DELETE) on the ``shoal.audit`` logger.

Fields: ``ts``, ``tenant``, ``key`` (the key's prefix: ``shoal_xxxxxx`` for a key made through the
API, ``cfg:`` and 8 hex digits of its digest for a configured one; never the key), ``method``,
``route`` (the URL rule, ``/v1/jobs/<string:job_id>``), ``id`` (the record named in the path, or
the one the request made), ``status`` and ``request_id``. A refused request (4xx) is logged too,
so an attempt on another tenant's id leaves a trace.
"""

import json
import logging
import time

from flask import g, request

from . import request_id

log = logging.getLogger("shoal.audit")

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_PATH_IDS = ("dataset_id", "job_id", "session_id", "key_id", "tenant")


def _record_id(response):
    args = request.view_args or {}
    for name in _PATH_IDS:
        if name in args:
            return args[name]
    if response.status_code in (200, 201, 202) and response.is_json:
        data = response.get_json(silent=True)
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            return data["id"]
    return None


def _line(response):
    if request.method not in _WRITES:
        return response
    p = g.get("shoal_principal")
    entry = {"ts": round(time.time(), 3), "event": "write", "tenant": p.tenant if p else None,
             "key": p.prefix if p else None, "method": request.method,
             "route": request.url_rule.rule if request.url_rule else request.path,
             "id": _record_id(response), "status": response.status_code, "request_id": request_id.current()}
    log.info(json.dumps(entry, separators=(",", ":")))
    return response


def register(app):
    """Log every write once its answer is known (register after the hooks that may change the answer).

    The logger writes its lines to stderr at INFO (gunicorn configures only its own loggers),
    the JSON alone on each line, and passes them on to the root logger's handlers too.
    """
    if not any(getattr(h, "shoal_audit", False) for h in log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler.shoal_audit = True
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    app.after_request(_line)
