"""Slow clients against the whole stack (loopback only): does ``/healthz`` stay fast?

Starts Redis and gunicorn (2 workers) as ``./run.sh`` does, measures ``GET /healthz`` on a
quiet server, then opens ``--slow-header`` connections that send one header line every 2 s
(never ending their head) and ``--slow-body`` connections that announce a 100 kB body and send
10 bytes every 2 s, and measures ``/healthz`` again while they hang on. Run once per worker
class: ``sync`` (one request per worker at a time) and the default gevent worker
(``service.gunicorn_worker``). Each phase is bounded (``--seconds``), and a probe that gets no
answer within 2 s counts as a timeout.

    python -m bench.slow_clients --slow-header 100 --slow-body 20 --seconds 20 \\
        --out bench/results/slow_clients.json
"""

import argparse
import json
import os
import platform
import socket
import threading
import time

import numpy as np
import requests

from scripts.stack import Stack

WORKER_CLASSES = {"sync": "sync", "gevent": "service.gunicorn_worker.ShoalGeventWorker"}


def probe(base, seconds, interval=0.02):
    """GET /healthz one after another for ``seconds``: latencies (s) and the number of timeouts."""
    lat, timeouts, end = [], 0, time.monotonic() + seconds
    s = requests.Session()
    while time.monotonic() < end:
        t0 = time.perf_counter()
        try:
            s.get(f"{base}/healthz", timeout=2).raise_for_status()
            lat.append(time.perf_counter() - t0)
        except requests.RequestException:
            timeouts += 1
            s = requests.Session()
        time.sleep(interval)
    return lat, timeouts


def slow_clients(port, n_header, n_body, stop):
    """Threads holding slow connections until ``stop`` is set; returns them and a counter of closed ones."""
    closed = {"n": 0}
    lock = threading.Lock()

    def run(kind, i):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            if kind == "header":
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            else:
                sock.sendall(b"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100000\r\n\r\n")
            k = 0
            while not stop.wait(2.0):
                sock.sendall(f"X-Slow-{k}: {i}\r\n".encode() if kind == "header" else b"[[0.0, 1.0],")
                k += 1
        except OSError:
            with lock:
                closed["n"] += 1
            return
        sock.close()

    threads = [threading.Thread(target=run, args=("header", i), daemon=True) for i in range(n_header)]
    threads += [threading.Thread(target=run, args=("body", i), daemon=True) for i in range(n_body)]
    for t in threads:
        t.start()
    return threads, closed


def pct(lat, q):
    return float(np.percentile(lat, q) * 1000) if lat else float("nan")


def run_class(name, n_header, n_body, seconds):
    st = Stack(env={"SHOAL_WORKER_CLASS": WORKER_CLASSES[name], "SHOAL_RATE_LIMITS": "off"})
    try:
        st.start_redis()
        base = st.start_web(workers=2)
        _wait_up(base)
        quiet, quiet_to = probe(base, seconds / 2)
        stop = threading.Event()
        threads, closed = slow_clients(int(base.rsplit(":", 1)[1]), n_header, n_body, stop)
        time.sleep(3)  # let them connect and send their first lines
        loaded, loaded_to = probe(base, seconds)
        stop.set()
        for t in threads:
            t.join(timeout=5)
        return {"worker_class": name, "slow_header": n_header, "slow_body": n_body,
                "quiet": {"n": len(quiet), "p50_ms": pct(quiet, 50), "p99_ms": pct(quiet, 99), "timeouts": quiet_to},
                "slow": {"n": len(loaded), "p50_ms": pct(loaded, 50), "p99_ms": pct(loaded, 99),
                         "timeouts": loaded_to},
                "slow_connections_closed_by_server": closed["n"]}
    finally:
        st.stop()


def _wait_up(base, timeout=60):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise TimeoutError(base)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slow-header", type=int, default=100)
    ap.add_argument("--slow-body", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--classes", default="sync,gevent")
    ap.add_argument("--out", default="bench/results/slow_clients.json")
    args = ap.parse_args(argv)
    rows = [run_class(c, args.slow_header, args.slow_body, args.seconds) for c in args.classes.split(",")]
    print(f"{'worker':8} {'quiet p50':>10} {'quiet p99':>10} {'slow p50':>10} {'slow p99':>10} "
          f"{'probes':>7} {'timeouts':>9} {'closed':>7}")
    for r in rows:
        print(f"{r['worker_class']:8} {r['quiet']['p50_ms']:10.1f} {r['quiet']['p99_ms']:10.1f} "
              f"{r['slow']['p50_ms']:10.1f} {r['slow']['p99_ms']:10.1f} {r['slow']['n']:7d} "
              f"{r['slow']['timeouts']:9d} {r['slow_connections_closed_by_server']:7d}")
    out = {"rows": rows, "seconds": args.seconds, "machine": platform.platform(), "cpus": os.cpu_count()}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"wrote {args.out} (latencies in ms; /healthz probes one after another, 2 s timeout)")


if __name__ == "__main__":
    main()
