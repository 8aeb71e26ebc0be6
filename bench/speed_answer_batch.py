"""Wall time of one large ``POST /v1/sessions/{id}/answers`` batch against the whole stack.

Starts Redis, one Celery worker and gunicorn (one web worker) as ``./run.sh`` does
(``scripts.stack``), opens a session on 600 blob rows with a pool of 100 questions and
10 answers per question, and posts the 1000 answers of 10 workers to those 100
questions in one request (all ``accepted``; each question closes at its tenth answer),
then the same batch again (its retry: all ``duplicate``). Each trial is a new session.
Prints the median and the spread of both requests' wall time in milliseconds.

    python -m bench.speed_answer_batch --trials 5
"""

import argparse
import json
import time

import numpy as np
import requests
from sklearn.datasets import make_blobs

from scripts.stack import Stack, wait_ready


def _session(base, did):
    r = requests.post(f"{base}/v1/sessions", json={"dataset_id": did, "budget": 1000, "answers_per_question": 10,
                                                   "pool_size": 100, "strategy": "random"}, timeout=30)
    r.raise_for_status()
    sid = r.json()["id"]
    while requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()["state"] == "INITIALIZING":
        time.sleep(0.05)
    qs = requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 100}, timeout=30).json()["questions"]
    return sid, qs


def _post(base, sid, batch):
    started = time.perf_counter()
    r = requests.post(f"{base}/v1/sessions/{sid}/answers", json={"answers": batch}, timeout=120)
    ms = 1000 * (time.perf_counter() - started)
    r.raise_for_status()
    return ms, r.json()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--out", default="bench/results/speed_answer_batch.json", help="write the summary as JSON here too")
    args = parser.parse_args(argv)
    X, _ = make_blobs(600, centers=4, random_state=0)
    with Stack() as st:
        st.start_redis()
        st.start_worker(concurrency=1)
        base = st.start_web(workers=1)
        wait_ready(base, timeout=90)
        did = requests.post(f"{base}/v1/datasets", json={"name": "blobs", "data": X.tolist()},
                            timeout=30).json()["id"]
        first, retry = [], []
        for _ in range(args.trials):
            sid, qs = _session(base, did)
            batch = [{"question_id": q["question_id"], "answer": "must_link", "worker_id": f"w{k}",
                      "assignment_id": f"w{k}-{q['question_id']}"} for k in range(10) for q in qs]
            ms, out = _post(base, sid, batch)
            assert {x["outcome"] for x in out["results"]} == {"accepted"}, out["results"][:3]
            first.append(ms)
            ms, out = _post(base, sid, batch)
            assert {x["outcome"] for x in out["results"]} == {"duplicate"}
            retry.append(ms)
        n = len(batch)
    summary = {"answers": n, "trials": args.trials,
               "first_ms": {"median": round(float(np.median(first)), 1), "min": round(min(first), 1),
                            "max": round(max(first), 1), "all": [round(x, 1) for x in first]},
               "retry_ms": {"median": round(float(np.median(retry)), 1), "min": round(min(retry), 1),
                            "max": round(max(retry), 1), "all": [round(x, 1) for x in retry]}}
    print(f"| POST .../answers, {n} answers | median ms | min | max |\n|---|---|---|---|")
    for name in ("first", "retry"):
        row = summary[f"{name}_ms"]
        print(f"| {name} | {row['median']} | {row['min']} | {row['max']} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
