"""How long a session's re-clustering pass takes, over the whole stack.

Starts Redis, one Celery worker and gunicorn as ``./run.sh`` does, uploads each KEEL dataset, opens
a URASC session (K unknown, one answer per question, a pool of 10) and repeats: lease the 10
questions, answer them from the ground truth, wait until the model is up to date, read the pass's
own wall time (``last_pass_seconds`` of ``GET /v1/sessions/{id}``, timed by the worker) and the
time from posting the answers to the up-to-date model. Prints the medians (over all passes and
over the last ten, which show how a long session's passes grow) and writes JSON.

    python -m bench.speed_session_pass --datasets wdbc,segment,letter --passes 10 \\
        --out bench/results/speed_session_pass.json
    python -m bench.speed_session_pass --datasets segment --passes 150 \\
        --out bench/results/speed_session_long.json      # 1500 answers
"""

import argparse
import json
import os
import platform
import time

import numpy as np
import requests

from bench.datasets import load
from scripts.stack import Stack, wait_ready, wait_up_to_date


def measure(base, name, passes, seed=0):
    X, y = load(name, zscore=False)
    r = requests.post(f"{base}/v1/datasets", json={"name": name, "data": X.tolist(),
                                                   "labels": [int(v) for v in y]}, timeout=120)
    r.raise_for_status()
    r = requests.post(f"{base}/v1/sessions", json={"dataset_id": r.json()["id"], "budget": 10 * (passes + 1),
                                                   "pool_size": 10, "random_state": seed}, timeout=30)
    r.raise_for_status()
    sid = r.json()["id"]
    first = wait_up_to_date(base, sid, timeout=600, interval=0.02)["last_pass_seconds"]
    pass_s, answer_to_model_s = [], []
    for k in range(passes):
        qs = requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 10, "worker_id": "w"},
                           timeout=30).json()["questions"]
        batch = [{"question_id": q["question_id"], "worker_id": "w", "assignment_id": f"{k}-{q['question_id']}",
                  "answer": "must_link" if y[q["items"][0]] == y[q["items"][1]] else "cannot_link"} for q in qs]
        t0 = time.perf_counter()
        requests.post(f"{base}/v1/sessions/{sid}/answers", json={"answers": batch}, timeout=30).raise_for_status()
        s = wait_up_to_date(base, sid, timeout=600, interval=0.02)
        answer_to_model_s.append(time.perf_counter() - t0)
        pass_s.append(s["last_pass_seconds"])
    return {"dataset": name, "n_samples": int(len(y)), "first_pass_s": first, "passes": passes,
            "pass_s_median": float(np.median(pass_s)), "pass_s_max": float(np.max(pass_s)),
            "answer_to_model_s_median": float(np.median(answer_to_model_s)),
            "last10_pass_s_median": float(np.median(pass_s[-10:])),
            "last10_answer_to_model_s_median": float(np.median(answer_to_model_s[-10:])),
            "pass_s": pass_s, "answer_to_model_s": answer_to_model_s}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="wdbc,segment,letter")
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--out", default="bench/results/speed_session_pass.json")
    args = ap.parse_args(argv)
    rows = []
    with Stack() as stack:
        stack.start_redis()
        stack.start_worker(concurrency=1)
        base = stack.start_web(workers=2)
        wait_ready(base, timeout=90)
        for name in args.datasets.split(","):
            row = measure(base, name, args.passes)
            rows.append(row)
            print(f"{name:10s} n={row['n_samples']:6d}  first pass {row['first_pass_s']:.2f} s, then median "
                  f"{row['pass_s_median']:.3f} s (max {row['pass_s_max']:.3f}); answers -> model "
                  f"{row['answer_to_model_s_median']:.3f} s; last 10 passes (after {10 * (args.passes - 10)}+ answers) "
                  f"{row['last10_pass_s_median']:.3f} s, answers -> model {row['last10_answer_to_model_s_median']:.3f} s",
                  flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"machine": f"{os.cpu_count()} cores, {platform.platform()}",
                       "load_average_at_end": os.getloadavg()[0], "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
