"""Fixtures of the client's suite: a :class:`shoal_client.Shoal` on the session's real stack
(gunicorn, Celery worker, Redis: ``live``), iris (loaded once per module), and a TCP relay that breaks the
client's connections to gunicorn."""

from urllib.parse import urlsplit

import numpy as np
import pytest
from sklearn.datasets import load_iris

import socket

from shoal_client import Shoal
from tests.workers.redis_relay import RedisRelay


class TcpRelay(RedisRelay):
    """:class:`RedisRelay` (a plain TCP relay, whatever it carries) whose cut also shuts each socket down,
    so the client reads the end of its connection at once (a bare ``close`` while the relay's own thread
    still reads the socket sends nothing: the client would wait for its read timeout)."""

    def cut(self):
        for c in self.conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        super().cut()



@pytest.fixture()
def shoal(live):
    with Shoal(live) as client:
        yield client


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X, y


def truth_constraints(y, n, seed=0):
    """``n`` must-link and cannot-link pairs drawn from the ground truth ``y``."""
    rng = np.random.default_rng(seed)
    ml, cl = [], []
    while len(ml) + len(cl) < n:
        i, j = map(int, rng.choice(len(y), 2, replace=False))
        (ml if y[i] == y[j] else cl).append([i, j])
    return ml, cl


def relay_to(base, trigger, **options):
    """A :class:`TcpRelay` in front of gunicorn at ``base``; returns it and the base URL through it.

    At the reply to the first request holding ``trigger`` (bytes of the request line) it closes every
    connection and refuses new ones, the reply lost (default) or relayed, for ``down_for`` seconds
    (None: until ``restore()``).
    """
    where = urlsplit(base)
    relay = TcpRelay((where.hostname, where.port), trigger, **options)
    return relay, f"http://127.0.0.1:{relay.port}"
