"""``X-Request-ID``: one id per request, echoed in the response, in error bodies and in the logs.

A client's own ``X-Request-ID`` (1-200 visible ASCII characters) is kept, so
its logs and ours name the same request; otherwise a random one is made.
Every problem body carries it as ``request_id``, so a report of a 500
("it has been logged") can name the log line.
"""

import re
import uuid

from flask import g, request

HEADER = "X-Request-ID"
_VALID = re.compile(r"^[\x21-\x7e]{1,200}$")


def current():
    """The id of the request being served, or None outside a request."""
    return g.get("request_id") if g else None


def _assign():
    given = request.headers.get(HEADER)
    g.request_id = given if given and _VALID.match(given) else uuid.uuid4().hex


def _echo(response):
    rid = g.get("request_id")
    if rid:
        response.headers[HEADER] = rid
    return response


def register(app):
    """Register first, so every other hook and error handler sees the id."""
    app.before_request(_assign)
    app.after_request(_echo)
