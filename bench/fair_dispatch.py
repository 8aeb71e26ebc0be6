"""Fair dispatch across tenants over the whole stack (loopback only): does one tenant's backlog starve another's job?

Starts Redis, one Celery worker (concurrency 1) and gunicorn as ``./run.sh`` does, with API keys for
two tenants. Tenant A submits ``--backlog`` spectral jobs on a 40-row dataset; then tenant B submits
one. Measured: B's wait (its job's ``created_at`` to ``started_at``) and how many of A's jobs started
before it, once with ``SHOAL_FAIR_INFLIGHT=0`` (every task sent at once: the broker's first in,
first out) and once with the default (2 jobs per tenant in the queue, the rest held and sent
round-robin: ``workers.fair``). Writes JSON and prints a table.

    python -m bench.fair_dispatch --backlog 200 --out bench/results/fair_dispatch.json
"""

import argparse
import json
import os
import platform
import time
from datetime import datetime

import numpy as np
import requests

from scripts.stack import Stack, wait_ready

A_KEY, B_KEY = "a" * 32, "b" * 32


def _ts(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def run(backlog, inflight):
    st = Stack(env={"SHOAL_API_KEYS": f"tenant-a:{A_KEY},tenant-b:{B_KEY}", "SHOAL_FAIR_INFLIGHT": str(inflight),
                    "SHOAL_RATE_LIMITS": "off", "SHOAL_MAX_ACTIVE_JOBS": str(backlog + 10)})
    try:
        st.start_redis()
        st.start_worker(concurrency=1)
        base = st.start_web(workers=2)
        wait_ready(base, timeout=120)
        s = requests.Session()
        a, b = {"Authorization": f"Bearer {A_KEY}"}, {"Authorization": f"Bearer {B_KEY}"}
        rng = np.random.default_rng(0)
        data = np.vstack([rng.normal(0, 0.3, (20, 2)), rng.normal(5, 0.3, (20, 2))]).tolist()
        ads = s.post(f"{base}/v1/datasets", json={"data": data}, headers=a, timeout=30).json()["id"]
        bds = s.post(f"{base}/v1/datasets", json={"data": data}, headers=b, timeout=30).json()["id"]
        a_jobs = []
        for _ in range(backlog):
            r = s.post(f"{base}/v1/jobs", json={"dataset_id": ads, "method": "spectral", "n_clusters": 2},
                       headers=a, timeout=30)
            r.raise_for_status()
            a_jobs.append(r.json()["id"])
        r = s.post(f"{base}/v1/jobs", json={"dataset_id": bds, "method": "spectral", "n_clusters": 2},
                   headers=b, timeout=30)
        bid = r.json()["id"]
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            rec = s.get(f"{base}/v1/jobs/{bid}", headers=b, timeout=30).json()
            if rec.get("started_at"):
                break
            time.sleep(0.2)
        b_start = _ts(rec["started_at"])
        wait = b_start - _ts(rec["created_at"])
        before = 0
        for jid in a_jobs:
            j = s.get(f"{base}/v1/jobs/{jid}", headers=a, timeout=30).json()
            if j.get("started_at") and _ts(j["started_at"]) < b_start:
                before += 1
        return {"fair_inflight": inflight, "backlog": backlog, "b_wait_s": wait, "a_jobs_started_before_b": before}
    finally:
        st.stop()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backlog", type=int, default=200)
    ap.add_argument("--out", default="bench/results/fair_dispatch.json")
    args = ap.parse_args(argv)
    rows = [run(args.backlog, k) for k in (0, 2)]
    print(f"{'SHOAL_FAIR_INFLIGHT':>20} {'A backlog':>10} {'B waited s':>11} {'A jobs before B':>16}")
    for r in rows:
        print(f"{r['fair_inflight']:>20} {r['backlog']:>10} {r['b_wait_s']:>11.2f} {r['a_jobs_started_before_b']:>16}")
    with open(args.out, "w") as fh:
        json.dump({"rows": rows, "machine": platform.platform(), "cpus": os.cpu_count()}, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
