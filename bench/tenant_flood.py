"""One tenant floods the API (loopback only); does another tenant still get answers and its job run?

Starts Redis, a Celery worker (concurrency 2) and gunicorn (2 workers) as ``./run.sh`` does, with
API keys for two tenants and the default rate limits and quotas. The quiet tenant reads its
dataset (``GET /v1/datasets/{id}``, one request after another, at most 20 a second: within its own
rate limit, whose 429s would be measured otherwise) for ``--quiet`` seconds alone,
then while the flooding tenant runs ``--connections`` connections for ``--seconds`` seconds,
each sending ``POST /v1/jobs`` (a spectral job on its own 40-row dataset) and ``GET /v1/jobs``
in turn as fast as answers come (in a process of their own). Five seconds into the flood the quiet tenant submits one job
and the time from its creation to its start (the record's ``created_at`` to ``started_at``) is
taken. Prints the quiet tenant's GET p50/p99 alone and under the flood, the ratio, its job's
start delay, and the flooding tenant's answers by status; writes JSON.

    python -m bench.tenant_flood --connections 50 --seconds 30 --out bench/results/tenant_flood.json
"""

import argparse
import collections
import json
import multiprocessing
import os
import platform
import threading
import time
from datetime import datetime

import numpy as np
import requests

from scripts.stack import Stack, wait_ready

FLOOD_KEY = "f" * 32
QUIET_KEY = "q" * 32


def _renice(pgid, value):
    """Set the nice value of every process in process group ``pgid`` (the worker and its pool), now and later."""
    import subprocess

    subprocess.run(["renice", "-n", str(value), "-g", str(pgid)], check=False, capture_output=True)


def _ts(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _reads(base, auth, url, seconds, interval=0.05):
    """GETs one after another, one per ``interval`` at most (20/s: within the key's own rate limit)."""
    s = requests.Session()
    lat, codes, end = [], collections.Counter(), time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        r = s.get(url, headers=auth, timeout=30)
        took = time.perf_counter() - t0
        lat.append(took)
        codes[r.status_code] += 1
        time.sleep(max(0.0, interval - took))
    return lat, codes


def _flood(base, auth, body, stop, codes, lock):
    s = requests.Session()
    k = 0
    while not stop.is_set():
        try:
            if k % 2 == 0:
                r = s.post(f"{base}/v1/jobs", json=body, headers=auth, timeout=30)
            else:
                r = s.get(f"{base}/v1/jobs?page_size=5", headers=auth, timeout=30)
            code = r.status_code
        except requests.RequestException as exc:
            code = type(exc).__name__
        with lock:
            codes[code] += 1
        k += 1


def _flood_process(base, auth, body, connections, seconds, queue, nice=False):
    """The flooding tenant, in a process of its own: its threads do not hold the quiet tenant's client back."""
    if nice:
        os.nice(19)  # a client on another machine takes no CPU from the server; on this box it would
    stop, codes, lock = threading.Event(), collections.Counter(), threading.Lock()
    threads = [threading.Thread(target=_flood, args=(base, auth, body, stop, codes, lock), daemon=True)
               for _ in range(connections)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=35)
    queue.put(dict(codes))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--quiet", type=float, default=10)
    ap.add_argument("--nice-worker", action="store_true",
                    help="run the Celery worker at nice 19 (on a shared box: the jobs it runs take no CPU "
                         "from the API, as when workers have nodes of their own)")
    ap.add_argument("--nice-client", action="store_true",
                    help="run the flooding client at nice 19 (its 50 threads share the box with the server)")
    ap.add_argument("--out", default="bench/results/tenant_flood.json")
    args = ap.parse_args(argv)
    st = Stack(env={"SHOAL_API_KEYS": f"flooder:{FLOOD_KEY},quiet:{QUIET_KEY}"})
    try:
        st.start_redis()
        worker = st.start_worker(concurrency=2)
        if args.nice_worker:  # the worker's jobs off the API's CPU, as on a node of their own
            _renice(st.procs[worker].pid, 19)
        base = st.start_web(workers=2)
        wait_ready(base, timeout=120)
        fa, qa = {"Authorization": f"Bearer {FLOOD_KEY}"}, {"Authorization": f"Bearer {QUIET_KEY}"}
        rng = np.random.default_rng(0)
        data = np.vstack([rng.normal(0, 0.3, (20, 2)), rng.normal(5, 0.3, (20, 2))]).tolist()
        fds = requests.post(f"{base}/v1/datasets", json={"data": data}, headers=fa, timeout=30).json()["id"]
        qds = requests.post(f"{base}/v1/datasets", json={"data": data}, headers=qa, timeout=30).json()["id"]
        job = {"dataset_id": qds, "method": "spectral", "n_clusters": 2}
        # warm the worker (first job imports the estimators)
        jid = requests.post(f"{base}/v1/jobs", json=job, headers=qa, timeout=30).json()["id"]
        while not requests.get(f"{base}/v1/jobs/{jid}", headers=qa, timeout=30).json()["done"]:
            time.sleep(0.2)
        url = f"{base}/v1/datasets/{qds}"
        quiet_lat, quiet_codes = _reads(base, qa, url, args.quiet)

        fbody = {"dataset_id": fds, "method": "spectral", "n_clusters": 2}
        queue = multiprocessing.Queue()
        flooder = multiprocessing.Process(target=_flood_process,
                                          args=(base, fa, fbody, args.connections, args.seconds, queue,
                                                args.nice_client))
        t_start = time.monotonic()
        flooder.start()
        result = {}

        def quiet_job():
            time.sleep(5)
            r = requests.post(f"{base}/v1/jobs", json=job, headers=qa, timeout=30)
            result["submit_status"] = r.status_code
            jid = r.json()["id"]
            while True:
                rec = requests.get(f"{base}/v1/jobs/{jid}", headers=qa, timeout=30).json()
                if rec.get("started_at"):
                    result["start_delay_s"] = _ts(rec["started_at"]) - _ts(rec["created_at"])
                    return
                if time.monotonic() - t_start > args.seconds + 60:
                    result["start_delay_s"] = None
                    return
                time.sleep(0.1)

        jt = threading.Thread(target=quiet_job, daemon=True)
        jt.start()
        flood_lat, flood_codes = _reads(base, qa, url, args.seconds)
        codes = collections.Counter(queue.get(timeout=120))
        flooder.join(timeout=30)
        jt.join(timeout=90)
    finally:
        st.stop()
    q50, q99 = (float(np.percentile(quiet_lat, p) * 1000) for p in (50, 99))
    f50, f99 = (float(np.percentile(flood_lat, p) * 1000) for p in (50, 99))
    fcodes = {str(k): v for k, v in sorted(codes.items(), key=lambda kv: str(kv[0]))}
    five = sum(v for k, v in codes.items() if isinstance(k, int) and k >= 500)
    out = {"connections": args.connections, "seconds": args.seconds, "nice_worker": args.nice_worker,
           "nice_client": args.nice_client,
           "quiet_tenant": {"alone": {"n": len(quiet_lat), "p50_ms": q50, "p99_ms": q99,
                                      "statuses": {str(k): v for k, v in quiet_codes.items()}},
                            "under_flood": {"n": len(flood_lat), "p50_ms": f50, "p99_ms": f99,
                                            "statuses": {str(k): v for k, v in flood_codes.items()}},
                            "p99_ratio": f99 / q99, "job": result},
           "flooding_tenant": {"statuses": fcodes, "requests": sum(codes.values()), "5xx": five},
           "machine": platform.platform(), "cpus": os.cpu_count()}
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"{'quiet tenant GET':24} {'n':>6} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"{'alone':24} {len(quiet_lat):6d} {q50:8.1f} {q99:8.1f}  statuses {dict(quiet_codes)}")
    print(f"{'under the flood':24} {len(flood_lat):6d} {f50:8.1f} {f99:8.1f}  statuses {dict(flood_codes)}")
    print(f"p99 ratio (flood / alone): {f99 / q99:.2f}   quiet tenant's job: submitted {result.get('submit_status')}, "
          f"started {result.get('start_delay_s')} s after creation")
    print(f"flooding tenant ({args.connections} connections, {args.seconds:.0f} s): {sum(codes.values())} requests, "
          f"by status {fcodes}, 5xx: {five}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
