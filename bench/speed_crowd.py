"""A crowd against the whole stack over HTTP: how many workers one Shoal deployment serves.

Starts Redis, one Celery worker and gunicorn as ``./run.sh`` does (``scripts.stack``), uploads a
KEEL dataset with its labels, opens an active-clustering session (URASC, K unknown, three
answers per question, a pool of B questions refilled by each re-clustering pass) and lets W
simulated crowd workers (threads) run the platform's loop in
parallel: lease up to ``--count`` questions (``POST .../questions`` with a ``worker_id``),
answer each from the ground truth (wrong with probability ``--noise``), post the batch
(``POST .../answers`` with assignment ids), until the budget is spent. Measured per crowd size:

* latency of the lease and the answers requests (median, p95, max), milliseconds;
* answers accepted per second over the whole run, and the fraction ``late`` (the question
  closed before this answer came);
* re-clustering passes (``GET /metrics``) and their mean duration (the wait between an answer
  that closes a question and the model that uses it, when no pass is queued);
* the final ARI against the labels.

Everything runs on this machine: the crowd's threads share the cores with the service, so the
numbers are a floor for a deployment with its own machines.

    python -m bench.speed_crowd --pool-sizes 10,50 --crowds 3,12,48 --seeds 0,1,2 --out bench/results/speed_crowd.json
"""

import argparse
import json
import os
import platform
import threading
import time

import numpy as np
import requests
from sklearn.metrics import adjusted_rand_score

from bench.datasets import load
from scripts.stack import Stack, wait_ready


def _metric(base, name):
    total = 0.0
    for line in requests.get(f"{base}/metrics", timeout=30).text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def _percentiles(ms):
    a = np.asarray(ms, dtype=float)
    return {"n": int(a.size), "median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95)),
            "max_ms": float(a.max())} if a.size else {"n": 0}


def run_crowd(base, did, y, n_workers, *, pool_size, budget, count, noise, seed):
    """One session answered by ``n_workers`` threads; returns the measurements."""
    r = requests.post(f"{base}/v1/sessions", json={"dataset_id": did, "budget": budget, "answers_per_question": 3,
                                                   "pool_size": pool_size, "random_state": seed}, timeout=30)
    r.raise_for_status()
    sid = r.json()["id"]
    while requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()["state"] == "INITIALIZING":
        time.sleep(0.05)
    passes0, pass_s0 = _metric(base, "shoal_session_passes_total"), _metric(base, "shoal_session_pass_seconds_sum")
    lease_ms, answer_ms, outcomes, lock = [], [], {}, threading.Lock()
    done = threading.Event()

    def crowd_worker(w):
        rng = np.random.default_rng([seed, w])
        http = requests.Session()
        while not done.is_set():
            t0 = time.perf_counter()
            res = http.post(f"{base}/v1/sessions/{sid}/questions", json={"count": count, "worker_id": f"w{w}"},
                            timeout=60)
            t1 = time.perf_counter()
            body = res.json()
            with lock:
                lease_ms.append((t1 - t0) * 1000)
            if body["budget_remaining"] <= 0:
                done.set()
                return
            if not body["questions"]:
                time.sleep(0.05)  # the pool is being refilled, or every open question is ours already
                continue
            batch = []
            for q in body["questions"]:
                same = y[q["items"][0]] == y[q["items"][1]]
                same = same if rng.random() >= noise else not same
                batch.append({"question_id": q["question_id"], "answer": "must_link" if same else "cannot_link",
                              "worker_id": f"w{w}", "assignment_id": f"w{w}-{q['question_id']}"})
            t2 = time.perf_counter()
            got = http.post(f"{base}/v1/sessions/{sid}/answers", json={"answers": batch}, timeout=60).json()
            t3 = time.perf_counter()
            with lock:
                answer_ms.append((t3 - t2) * 1000)
                for item in got["results"]:
                    outcomes[item["outcome"]] = outcomes.get(item["outcome"], 0) + 1

    started = time.perf_counter()
    threads = [threading.Thread(target=crowd_worker, args=(w,)) for w in range(n_workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    answered = time.perf_counter()
    while True:  # the last pass may still run
        s = requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()
        cond = {c["type"]: c["status"] for c in s["conditions"]}
        if cond.get("ModelUpToDate") == "True" or s["state"] in ("COMPLETED", "FAILED"):
            break
        time.sleep(0.05)
    model = requests.get(f"{base}/v1/sessions/{sid}/model", timeout=30).json()
    stranded, token = 0, None  # answers to questions that never closed (left out of later pools)
    while True:
        page = requests.get(f"{base}/v1/sessions/{sid}/questions", params={
            "status": "open", "page_size": 100, **({"page_token": token} if token else {})}, timeout=30).json()
        stranded += sum(q["n_answers"] for q in page["questions"])
        token = page["next_page_token"]
        if not token:
            break
    passes = _metric(base, "shoal_session_passes_total") - passes0
    pass_s = _metric(base, "shoal_session_pass_seconds_sum") - pass_s0
    total = sum(outcomes.values())
    return {"crowd": n_workers, "pool_size": pool_size, "session_state": s["state"], "budget_used": s["budget_used"],
            "answers": outcomes, "late_fraction": outcomes.get("late", 0) / total if total else None,
            "stranded_answers": stranded,
            "answers_per_s": outcomes.get("accepted", 0) / (answered - started),
            "seconds_answering": answered - started,
            "passes": passes, "pass_seconds_mean": pass_s / passes if passes else None,
            "lease": _percentiles(lease_ms), "post_answers": _percentiles(answer_ms),
            "ari": float(adjusted_rand_score(y, model["labels"]))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="segment")
    ap.add_argument("--crowds", default="3,12,48", help="comma-separated numbers of crowd workers")
    ap.add_argument("--pool-sizes", default="10,50", help="comma-separated question pool sizes (the batch B)")
    ap.add_argument("--budget", type=int, default=300, help="questions per session")
    ap.add_argument("--count", type=int, default=5, help="questions a worker leases at a time")
    ap.add_argument("--noise", type=float, default=0.1, help="probability that one answer is wrong")
    ap.add_argument("--web-workers", type=int, default=2, help="gunicorn processes")
    ap.add_argument("--seeds", default="0", help="comma-separated session seeds (one session each)")
    ap.add_argument("--out", default="bench/results/speed_crowd.json")
    args = ap.parse_args(argv)
    X, y = load(args.dataset, zscore=False)
    rows = []
    with Stack(env={"SHOAL_CALLBACK_ALLOW_PRIVATE": "1"}) as stack:
        stack.start_redis()
        stack.start_worker(concurrency=1)
        base = stack.start_web(workers=args.web_workers)
        wait_ready(base, timeout=90)
        r = requests.post(f"{base}/v1/datasets", json={"name": args.dataset, "data": X.tolist(),
                                                       "labels": [int(v) for v in y]}, timeout=60)
        r.raise_for_status()
        did = r.json()["id"]
        for pool, n, seed in ((int(p), int(c), int(e)) for p in args.pool_sizes.split(",")
                              for c in args.crowds.split(",") for e in args.seeds.split(",")):
            row = run_crowd(base, did, y, n, pool_size=pool, budget=args.budget, count=args.count, noise=args.noise,
                            seed=seed)
            row["seed"] = seed
            rows.append(row)
            print(f"pool {pool:3d}, crowd {n:3d}, seed {seed}: {row['answers_per_s']:6.1f} answers/s, lease median {row['lease']['median_ms']:.0f} "
                  f"ms p95 {row['lease']['p95_ms']:.0f} ms, answers median {row['post_answers']['median_ms']:.0f} ms "
                  f"p95 {row['post_answers']['p95_ms']:.0f} ms, late {row['late_fraction']:.3f}, "
                  f"{row['passes']:.0f} passes of {row['pass_seconds_mean'] or 0:.2f} s, {row['stranded_answers']} answers on "
                  f"questions left open, ARI {row['ari']:.3f}", flush=True)
    summary = {}
    for row in rows:
        summary.setdefault(f"{row['pool_size']}|{row['crowd']}", []).append(row)
    print("pool crowd  answers/s  late   ARI (mean over seeds)")
    for key, group in summary.items():
        pool, crowd = key.split("|")
        summary[key] = {k: float(np.mean([r[k] for r in group])) for k in ("answers_per_s", "late_fraction", "ari")}
        print(f"{pool:>4s} {crowd:>5s} {summary[key]['answers_per_s']:10.1f} {summary[key]['late_fraction']:5.3f} "
              f"{summary[key]['ari']:6.3f}")
    result = {"dataset": args.dataset, "n_samples": int(len(y)), "budget": args.budget, "count": args.count,
              "noise": args.noise, "answers_per_question": 3, "web_workers": args.web_workers,
              "celery_workers": 1, "machine": f"{os.cpu_count()} cores, {platform.platform()}",
              "load_average_at_end": os.getloadavg()[0], "summary": summary, "rows": rows}
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
