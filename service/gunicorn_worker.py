"""gunicorn's gevent worker with a deadline for a request's head and an idle timeout on the socket.

A sync worker is one request at a time: two sockets sending a header line every 5 s held both
workers, and ``/healthz`` timed out for 25 s. Here each connection is a greenlet, so a slow
client holds only its own; its request line and headers must arrive within
``SHOAL_HEADER_TIMEOUT`` seconds (10) in all, or the connection is closed unanswered, and a
socket silent for ``SHOAL_CLIENT_TIMEOUT`` seconds (30) while its body is read or its answer
sent is closed too. ``worker_connections`` (``service.gunicorn_conf``) bounds the connections
each worker holds.
"""

import os

import gevent
from gunicorn.workers.ggevent import GeventWorker

HEADER_TIMEOUT = float(os.environ.get("SHOAL_HEADER_TIMEOUT", 10))
CLIENT_TIMEOUT = float(os.environ.get("SHOAL_CLIENT_TIMEOUT", 30))


class ShoalGeventWorker(GeventWorker):
    """:class:`gunicorn.workers.ggevent.GeventWorker` with the header deadline and socket timeout above."""

    def timeout_ctx(self):
        # the head of each request on a connection (the first, and each one after keep-alive) within the deadline;
        # gunicorn's own context waits ``keepalive`` seconds (2), also for the first request's head
        return gevent.Timeout(HEADER_TIMEOUT, False)

    def handle(self, listener, client, addr):
        client.settimeout(CLIENT_TIMEOUT)
        super().handle(listener, client, addr)
