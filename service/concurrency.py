"""Requests in progress per API key, per web process: a client over its share gets a 429 at once.

Under gevent (``service.gunicorn_worker``) a web process serves every connection at the same
time, so 50 connections of one key had 25 requests running in each process, and another
tenant's request waited its turn behind all of them on the CPU. Here an API key may have
``SHOAL_CONCURRENCY_PER_KEY`` requests (2) in progress in a process; one more is answered 429 ``too_many_concurrent_requests`` before Flask, the rate
limiter or Redis see it. A refusal (this one and the rate limit's) is sent after
``SHOAL_REFUSAL_DELAY`` seconds (1; only in a gevent process, where the wait holds a
greenlet, not a worker): a client that retries at once spends its time waiting, not the
server's CPU. The probes and the docs are never counted, nor are requests without a key: a
client address is no identity here (every client behind one proxy or NAT shares it, so a crowd
answering through one would be refused), and the rate limit per address covers them.
"""

import hashlib
import json
import os
import threading

from .auth import OPEN_PATHS, OPEN_PREFIXES

CONCURRENCY_PER_KEY = int(os.environ.get("SHOAL_CONCURRENCY_PER_KEY", 2))
REFUSAL_DELAY = float(os.environ.get("SHOAL_REFUSAL_DELAY", 1.0))


def cooperative():
    """Whether this process runs greenlets (gevent has patched ``time``): a wait there holds no worker."""
    try:
        from gevent import monkey
    except ImportError:
        return False
    return monkey.is_module_patched("time")


def delay_refusal():
    """Wait ``SHOAL_REFUSAL_DELAY`` before a 429 is sent, in a gevent process (else not at all)."""
    if REFUSAL_DELAY > 0 and cooperative():
        import time

        time.sleep(REFUSAL_DELAY)


def _identity(environ):
    """The request's API key (a digest of it), or None without one."""
    scheme, _, token = environ.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return hashlib.sha256(token.strip().encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return None


class ConcurrencyGate:
    """WSGI middleware: at most ``limit`` requests of one key in progress in this process.

    Parameters
    ----------
    app : WSGI application
    limit : int
        0: no limit.
    """

    def __init__(self, app, limit=CONCURRENCY_PER_KEY):
        self.app, self.limit = app, limit
        self.running = {}
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        who = _identity(environ)
        if self.limit <= 0 or who is None or path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            return self.app(environ, start_response)
        with self.lock:
            n = self.running.get(who, 0)
            if n >= self.limit:
                refused = True
            else:
                refused = False
                self.running[who] = n + 1
        if refused:
            delay_refusal()
            body = json.dumps({"type": "https://shoal.dev/problems/too-many-concurrent-requests",
                               "title": "Too many requests", "status": 429, "code": "too_many_concurrent_requests",
                               "detail": f"this API key already has {self.limit} requests in progress here; "
                                         "wait for their answers"}).encode()
            start_response("429 Too Many Requests", [
                ("Content-Type", "application/problem+json"), ("Content-Length", str(len(body))),
                ("Retry-After", "1"), ("RateLimit-Policy", f'"concurrency";q={self.limit}'),
                ("RateLimit", '"concurrency";r=0;t=1')])
            return [body]
        try:
            result = self.app(environ, start_response)
            try:
                return list(result)  # read here, so the request counts until its answer is made
            finally:
                if hasattr(result, "close"):
                    result.close()
        finally:
            with self.lock:
                left = self.running.get(who, 1) - 1
                if left:
                    self.running[who] = left
                else:
                    self.running.pop(who, None)
