"""A TCP relay to the test Redis that goes down at a chosen request: a real outage for the tests."""

import signal
import socket
import threading
from contextlib import contextmanager
from dataclasses import replace

import redis
from celery.exceptions import SoftTimeLimitExceeded

from workers.store import Store


class RedisRelay:
    """A TCP relay to the test Redis that goes down at a chosen point: at the reply to the first request
    holding ``trigger`` (the command ran) it drops every connection and refuses new ones, a real Redis
    outage without touching Redis or Celery.

    ``reply_lost``: the reply is dropped with the connections (a restart right after the write, as
    ``workers.tasks.through_outage`` retries through), else relayed first. ``down_for``: seconds until
    new connections pass again, or None for down until :meth:`restore`.
    """

    def __init__(self, upstream, trigger, *, reply_lost=True, down_for=0.3):
        self.upstream, self.trigger, self.reply_lost, self.down_for = upstream, trigger, reply_lost, down_for
        self.down, self.armed, self.conns, self.lost = False, None, [], 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            up = socket.create_connection(self.upstream)
            self.conns += [client, up]
            threading.Thread(target=self._pump, args=(client, up, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, client, False), daemon=True).start()

    def _pump(self, src, dst, request):
        while True:
            try:
                data = src.recv(65536)
                if not data:
                    break
                if request and self.armed is None and self.trigger in data:
                    self.armed = dst  # the reply to this request comes back from dst
                at_reply = not request and self.armed is src and not self.lost
                if not (at_reply and self.reply_lost):
                    dst.sendall(data)
                if at_reply:
                    self.lost = 1
                    self.cut()
                    if self.down_for is not None:
                        threading.Timer(self.down_for, self.restore).start()
                    break
            except OSError:
                break

    def cut(self):
        """Go down: close every connection, refuse new ones."""
        self.down = True
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass

    def restore(self):
        """Let new connections through again."""
        self.down = False

    def close(self):
        self.cut()
        self.server.close()


def store_behind_lost_reply(store, trigger):
    """A :class:`workers.store.Store` on the test Redis behind a :class:`RedisRelay` that loses the reply to
    the first request holding ``trigger`` and comes back 0.3 s later; and the relay (to close)."""
    return _store_behind(store, trigger)


def store_behind_outage(store, trigger):
    """A store on the test Redis behind a :class:`RedisRelay` that relays the reply to the first request
    holding ``trigger`` and then stays down until restored; and the relay."""
    return _store_behind(store, trigger, reply_lost=False, down_for=None)


def _store_behind(store, trigger, **relay_options):
    where = store.r.connection_pool.connection_kwargs
    relay = RedisRelay((where["host"], where["port"]), trigger, **relay_options)
    url = f"redis://127.0.0.1:{relay.port}/{where['db']}"
    return Store(redis.Redis.from_url(url, socket_timeout=5), replace(store.settings, redis_url=url)), relay


@contextmanager
def soft_limit_once_redis_is_down(relay):
    """Reach the soft time limit in this (the main) thread once ``relay`` is down, as the pool does
    (SIGUSR1, whose handler raises SoftTimeLimitExceeded), then let Redis answer again."""
    reached = threading.Event()

    def soft_limit(signum, frame):
        reached.set()
        raise SoftTimeLimitExceeded()

    def fire():
        while not relay.down:
            threading.Event().wait(0.01)
        signal.pthread_kill(main, signal.SIGUSR1)
        reached.wait(60)
        relay.restore()

    main = threading.main_thread().ident
    previous = signal.signal(signal.SIGUSR1, soft_limit)
    firing = threading.Thread(target=fire, daemon=True)
    firing.start()
    try:
        yield reached
    finally:
        firing.join(60)
        signal.signal(signal.SIGUSR1, previous)
