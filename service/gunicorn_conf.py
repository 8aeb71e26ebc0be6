"""gunicorn settings of the API: ``gunicorn -c python:service.gunicorn_conf 'service:create_app()'``.

gunicorn answers some requests itself, before Flask sees them: a request line
longer than ``limit_request_line`` (4094 bytes, so a long URL) with 414, more
or larger header fields than ``limit_request_fields`` / ``limit_request_field_size``
allow with 431, a malformed request with 400, and an error outside the
application with 500. Its own page for those is HTML; here they are RFC 9457
``application/problem+json`` like every other error of the API (with a
``code``; no ``request_id``, the request never reached the application).
"""

import json
import os

from gunicorn import util

PROBLEM_JSON = "application/problem+json"

_CODES = {400: "bad_request", 403: "forbidden", 414: "uri_too_long", 417: "expectation_failed",
          431: "header_fields_too_large", 500: "internal_error", 501: "not_implemented"}


def problem_bytes(status, reason, detail):
    """The HTTP response gunicorn sends for an error it answers itself, as problem+json.

    Parameters
    ----------
    status : int
    reason : str
        The status line's reason phrase (gunicorn's).
    detail : str
        gunicorn's message ("" for a 500: the details are in its log).

    Returns
    -------
    bytes
        Status line, headers and body (ASCII: non-ASCII characters of the
        detail are JSON escapes).
    """
    code = _CODES.get(status, "http_error")
    body = json.dumps({"type": f"https://shoal.dev/problems/{code.replace('_', '-')}", "title": reason,
                       "status": status, "detail": detail or reason, "code": code})
    return (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: {PROBLEM_JSON}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}").encode("latin-1")


def write_problem(sock, status_int, reason, mesg):
    """Stands in for ``gunicorn.util.write_error`` (same arguments), which writes an HTML page."""
    util.write_nonblock(sock, problem_bytes(status_int, reason, mesg))


#: Seconds a worker may stay silent on a request before the arbiter kills it (gunicorn's
#: ``timeout``): no request runs longer. An Idempotency-Key claim outlives it
#: (``workers.store.PENDING_CLAIM_SECONDS``), so a slow request keeps its key to the end.
timeout = 120

#: One greenlet per connection (service.gunicorn_worker): a slow client holds its own connection only, and
#: the head of a request must arrive within SHOAL_HEADER_TIMEOUT seconds. Each worker holds at most
#: worker_connections connections (SHOAL_WORKER_CONNECTIONS); more wait in the listen backlog.
#: SHOAL_WORKER_CLASS=sync: one request per worker at a time, as before (bench/slow_clients.py compares).
worker_class = os.environ.get("SHOAL_WORKER_CLASS", "service.gunicorn_worker.ShoalGeventWorker")
worker_connections = int(os.environ.get("SHOAL_WORKER_CONNECTIONS", 1000))
keepalive = 5

# Worker.handle_error calls util.write_error; workers are forked from the arbiter that loaded this file.
util.write_error = write_problem
