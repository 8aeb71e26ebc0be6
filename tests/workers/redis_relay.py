"""A TCP relay to the test Redis that loses the reply to one write: a Redis restart right after it."""

import socket
import threading
from dataclasses import replace

import redis

from workers.store import Store


class LostReplyRedis:
    """A TCP relay to the test Redis that drops the reply to the first request holding ``trigger`` (the
    command ran) and every connection with it, then lets new connections through ``down_for`` seconds
    later: a Redis restart right after a write, as ``workers.tasks.through_outage`` retries through."""

    def __init__(self, upstream, trigger, down_for=0.3):
        self.upstream, self.trigger, self.down_for = upstream, trigger, down_for
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
                    self.armed = dst
                if not request and self.armed is src and not self.lost:
                    self.lost = 1
                    self.down = True
                    for c in self.conns:
                        try:
                            c.close()
                        except OSError:
                            pass
                    threading.Timer(self.down_for, setattr, (self, "down", False)).start()
                    break
                dst.sendall(data)
            except OSError:
                break

    def close(self):
        self.server.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


def store_behind_lost_reply(store, trigger):
    """A :class:`workers.store.Store` on the test Redis behind :class:`LostReplyRedis`, and the relay (to close)."""
    where = store.r.connection_pool.connection_kwargs
    relay = LostReplyRedis((where["host"], where["port"]), trigger)
    url = f"redis://127.0.0.1:{relay.port}/{where['db']}"
    return Store(redis.Redis.from_url(url, socket_timeout=5), replace(store.settings, redis_url=url)), relay
