"""Tied questions in a crowd session: what a tie-breaker answer is worth to the model.

Starts Redis, one Celery worker and gunicorn as ``./run.sh`` does (``scripts.stack``) and runs
sessions over HTTP: iris, URASC with ``n_clusters=3``, budget 40, two answers per question, a
pool of 5, four simulated workers who each lease up to 5 questions per round and answer from
the ground truth, wrong with probability ``noise``; after each round the crowd waits for the
model to be up to date. Prints, over the seeds, the mean ARI, the questions of the budget the
model was told as "dont_know", and the answers accepted. Run it from a checkout to compare two
versions of the session code (the answer script's tie rule).

    python -m bench.crowd_ties --seeds 40 --out bench/results/crowd_ties.json
"""

import json
import tempfile
import time

import numpy as np
import requests
from sklearn.metrics import adjusted_rand_score

from bench.datasets import load
from scripts.stack import Stack, wait_ready

WORKERS = ("w0", "w1", "w2", "w3")
FLIP = {"must_link": "cannot_link", "cannot_link": "must_link"}


def _settled(base, sid):
    """The session once its model is up to date and no pass runs."""
    while True:
        s = requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()
        if s["state"] != "INITIALIZING" and s["observed_revision"] == s["revision"] and not s["pass_started_at"]:
            return s
        time.sleep(0.05)


def _closed(base, sid):
    out, token = [], None
    while True:
        page = requests.get(f"{base}/v1/sessions/{sid}/questions", timeout=30, params={
            "status": "closed", "page_size": 100, **({"page_token": token} if token else {})}).json()
        out += page["questions"]
        token = page["next_page_token"]
        if not token:
            return out


def run(base, did, y, seed, params, noise, aggregation):
    """One session to its end; returns (ARI, budget told "dont_know", answers accepted)."""
    rng = np.random.default_rng(seed)
    sid = requests.post(f"{base}/v1/sessions", timeout=30, json={
        "dataset_id": did, "n_clusters": 3, "budget": 40, "answers_per_question": 2, "pool_size": 5,
        "params": params, "random_state": seed, "aggregation": aggregation}).json()["id"]
    s, accepted = _settled(base, sid), 0
    while s["state"] == "ACTIVE":
        batch = []
        for w in WORKERS:
            for q in requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": w},
                                   timeout=30).json()["questions"]:
                a, b = q["items"]
                right = "must_link" if y[a] == y[b] else "cannot_link"
                batch.append({"question_id": q["question_id"], "worker_id": w,
                              "assignment_id": f"{w}-{q['question_id']}",
                              "answer": right if rng.random() >= noise else FLIP[right]})
        if not batch:
            break
        res = requests.post(f"{base}/v1/sessions/{sid}/answers", json={"answers": batch}, timeout=30).json()
        accepted += sum(x["outcome"] == "accepted" for x in res["results"])
        s = _settled(base, sid)
    told_dont_know = sum(q["aggregated"] == "dont_know" and q["model_outcome"] == "accepted"
                         for q in _closed(base, sid))
    labels = requests.get(f"{base}/v1/sessions/{sid}/model", timeout=30).json()["labels"]
    return adjusted_rand_score(y, labels), told_dont_know, accepted


def main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--settings", default="one_coin:sets,one_coin:noisy,majority:sets,majority:noisy",
                    help="comma list of aggregation:rule (rule sets = the paper's, noisy = the noisy_answers "
                         "preset's k_growth=verify, representative=founder)")
    ap.add_argument("--noise", default="0.1,0.2", help="comma list of wrong-answer probabilities")
    ap.add_argument("--out", default="bench/results/crowd_ties.json", help="JSON file for every session's row and the means")
    args = ap.parse_args(argv)
    rules = {"sets": {}, "noisy": {"k_growth": "verify", "representative": "founder"}}
    stack = Stack(log_dir=tempfile.mkdtemp(prefix="crowd_ties"))
    cells = []
    try:
        stack.start_redis()
        stack.start_worker(concurrency=1)
        base = stack.start_web(workers=2)
        wait_ready(base, timeout=90)
        X, y = load("iris", zscore=False)
        body = {"name": "iris", "data": np.asarray(X, dtype=float).tolist(), "labels": [int(v) for v in y]}
        did = requests.post(f"{base}/v1/datasets", json=body, timeout=30).json()["id"]
        print("| aggregation | rule | p | seeds | ARI | questions told dont_know | answers accepted |")
        print("|---|---|---|---|---|---|---|")
        for setting in args.settings.split(","):
            aggregation, rule = setting.split(":")
            for noise in (float(p) for p in args.noise.split(",")):
                rows = [run(base, did, y, s, rules[rule], noise, aggregation) for s in range(args.seeds)]
                means = np.asarray(rows, dtype=float).mean(axis=0)
                cells.append({"aggregation": aggregation, "rule": rule, "params": rules[rule], "noise": noise,
                              "seeds": args.seeds, "ari": float(means[0]), "told_dont_know": float(means[1]),
                              "answers_accepted": float(means[2]),
                              "rows": [{"seed": k, "ari": r[0], "told_dont_know": int(r[1]),
                                        "answers_accepted": int(r[2])} for k, r in enumerate(rows)]})
                print(f"| {aggregation} | {rule} | {noise} | {args.seeds} | {means[0]:.3f} | {means[1]:.1f} | "
                      f"{means[2]:.1f} |", flush=True)
    finally:
        stack.stop()
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"dataset": "iris", "n_clusters": 3, "budget": 40, "answers_per_question": 2, "pool_size": 5,
                       "workers": len(WORKERS), "cells": cells}, fh, indent=1)


if __name__ == "__main__":
    main()
