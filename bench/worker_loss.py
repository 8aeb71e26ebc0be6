"""How long a job and a session pass wait after their worker is lost as a whole (SIGKILL).

Starts Redis, one Celery worker and gunicorn (``scripts.stack``) with the default liveness
settings (``SHOAL_WORKER_HEARTBEAT_TTL`` 15 s, ``SHOAL_WORKER_LOST_AFTER`` 30 s) and a broker
visibility timeout of 900 s (2 h in production), so nothing comes back by redelivery within the
run. Per repetition:

* a job (dense spectral clustering of 2000 random rows, a few seconds of work) is submitted; once
  it is RUNNING the whole worker process group is SIGKILLed and a new worker started; measured:
  seconds from the kill to the job's end, and its state and attempts;
* a session is opened on 3000 rows; once its first pass is running (``pass_started_at`` in
  the session view) the worker is SIGKILLed and a new one started; measured: seconds from the
  kill to the first model (``GET .../model`` 200).

Everything is polled over HTTP every 0.2 s. Prints a table, writes JSON.

    python -m bench.worker_loss --reps 3 --out bench/results/worker_loss.json
"""

import argparse
import json
import platform
import time

import numpy as np
import requests

from scripts.stack import Stack, wait_ready

ENV = {"SHOAL_SOFT_TIME_LIMIT": "280", "SHOAL_HARD_TIME_LIMIT": "300", "SHOAL_VISIBILITY_TIMEOUT": "900",
       "SHOAL_CALLBACK_ALLOW_PRIVATE": "1"}


def _upload(base, X):
    r = requests.post(f"{base}/v1/datasets", json={"data": X.tolist()}, timeout=60)
    r.raise_for_status()
    return r.json()["id"]


def _until(check, timeout):
    """Poll ``check`` every 0.2 s until it returns a value; (value, seconds) or (None, timeout)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        value = check()
        if value is not None:
            return value, time.monotonic() - t0
        time.sleep(0.2)
    return None, timeout


def lose_job(stack, base, worker, seed, timeout):
    X = np.random.default_rng(seed).standard_normal((2000, 5))
    body = {"dataset_id": _upload(base, X), "method": "spectral", "n_clusters": 4}
    jid = requests.post(f"{base}/v1/jobs", json=body, timeout=30).json()["id"]

    def job():
        return requests.get(f"{base}/v1/jobs/{jid}", timeout=30).json()

    _until(lambda: True if job()["state"] == "RUNNING" else None, 60)
    stack.kill(worker)
    new = stack.start_worker(concurrency=1)
    end, seconds = _until(lambda: (j if (j := job())["done"] else None), timeout)
    return new, {"kind": "job", "seconds": seconds, "state": end and end["state"],
                 "attempts": end and end["attempts"]}


def lose_session_pass(stack, base, worker, seed, timeout):
    X = np.random.default_rng(seed).standard_normal((3000, 8))
    body = {"dataset_id": _upload(base, X), "budget": 50, "random_state": seed}
    sid = requests.post(f"{base}/v1/sessions", json=body, timeout=30).json()["id"]
    started, _ = _until(lambda: requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()["pass_started_at"],
                        60)
    assert started, "the first pass never started"
    stack.kill(worker)
    new = stack.start_worker(concurrency=1)
    model, seconds = _until(
        lambda: True if requests.get(f"{base}/v1/sessions/{sid}/model", timeout=30).status_code == 200 else None,
        timeout)
    return new, {"kind": "session_pass", "seconds": seconds, "state": "model" if model else "no model"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for recovery (each)")
    ap.add_argument("--out", default="bench/results/worker_loss.json")
    args = ap.parse_args(argv)
    rows = []
    with Stack(env=ENV) as stack:
        stack.start_redis()
        worker = stack.start_worker(concurrency=1)
        base = stack.start_web(workers=1)
        wait_ready(base, timeout=90)
        for rep in range(args.reps):
            for lose in (lose_job, lose_session_pass):
                worker, row = lose(stack, base, worker, rep, args.timeout)
                row["rep"] = rep
                rows.append(row)
                print(f"{row['kind']:13s} rep {rep}: back {row['seconds']:6.1f} s after the SIGKILL ({row['state']}"
                      + (f", attempts {row['attempts']})" if row["kind"] == "job" else ")"), flush=True)
    print("| lost | repetitions | seconds to recovery: min / median / max |\n|---|---|---|")
    for kind in ("job", "session_pass"):
        s = [r["seconds"] for r in rows if r["kind"] == kind]
        print(f"| {kind} | {len(s)} | {min(s):.1f} / {float(np.median(s)):.1f} / {max(s):.1f} |")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"settings": ENV, "liveness": {"heartbeat_ttl_s": 15, "lost_after_s": 30},
                       "machine": platform.platform(), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
