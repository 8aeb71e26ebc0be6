"""Active triplet benchmark: ActiveDCRC's uncertainty questions against random triples.

Protocol: a simulated oracle answers "is a closer to b than to c?" from the
ground truth with DCRC's ideal answer (Eq. DC-1: yes when a and b share a
class that c is not in, no when a and c do, don't know otherwise); with
``--wrong w`` each yes / no answer is swapped (yes <-> no) with probability
w from its own seeded stream, don't know never changes (``bench.relative``'s
noise model). K known. Questions come in batches of 10 (``suggest_queries``
then ``tell`` then ``update``, as a session runs them); ARI after 10 / 20 /
50 / 100 answers, 5 seeded trials, on KEEL iris, wine, ionosphere, wdbc,
segment (``bench.datasets.load``: constant columns dropped, z-scored). Budget
0 is DCRC without answers. Also the wall time of one session pass (refit
with the new answers, then the next batch).

No peer or paper publishes an active triplet protocol; the reference is the
random-triples row (the DCRC paper's own way of drawing triplets).

Usage::

    python -m bench.active_triplets                     # 5 datasets x 2 strategies x 2 noise levels x 5 trials
    python -m bench.active_triplets --datasets iris --trials 2
    python -m bench.active_triplets --strategies uncertainty --max-iter 30   # faster refits

Writes ``bench/results/active_triplets.json`` (or ``--out``) and prints a table.
"""

import argparse
import json
import os
import platform
import sys
import time

import numpy as np
from joblib import Parallel, delayed

from bench.datasets import load
from clustering._dcrc import ActiveDCRC
from clustering._metrics import clustering_scores

DATASETS = ["iris", "wine", "ionosphere", "wdbc", "segment"]
BUDGETS = [10, 20, 50, 100]
STRATEGIES = ["uncertainty", "random"]


def oracle_answers(y, triplets, wrong, rng):
    """DC-1 answers (+1 / -1 / 0) for rows (a, b, c), yes/no swapped with probability ``wrong``."""
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    ya, yb, yc = y[t[:, 0]], y[t[:, 1]], y[t[:, 2]]
    ans = np.zeros(len(t), dtype=np.int8)
    ans[(ya == yb) & (ya != yc)] = 1
    ans[(ya == yc) & (ya != yb)] = -1
    flip = (ans != 0) & (rng.random(len(t)) < wrong)
    ans[flip] = -ans[flip]
    return ans


def run_one(dataset, strategy, wrong, trial, budgets, batch=10, max_iter=100):
    """One simulated session; returns a record with ARI per budget and pass times."""
    X, y = load(dataset)
    K = int(np.unique(y).size)
    noise_rng = np.random.default_rng([trial, 7])
    est = ActiveDCRC(K, strategy=strategy, budget=max(budgets), max_iter=max_iter, random_state=trial).fit(X)
    ari = {0: clustering_scores(y, est.labels_)["ari"]}
    seconds = []
    while est.n_questions_ < max(budgets):
        t0 = time.perf_counter()
        qs = est.suggest_queries(batch)
        seconds.append(time.perf_counter() - t0)  # includes the refit with the previous batch
        if not qs:
            break
        tri = [q["items"] for q in qs]
        est.tell([(*t, int(a)) for t, a in zip(tri, oracle_answers(y, tri, wrong, noise_rng))])
        if est.n_questions_ in budgets:
            ari[est.n_questions_] = clustering_scores(y, est.update().labels_)["ari"]
    return {"dataset": dataset, "strategy": strategy, "wrong": wrong, "trial": trial, "n_samples": len(y),
            "max_iter": max_iter,
            "ari": {str(k): float(v) for k, v in ari.items()},
            "pass_seconds_median": float(np.median(seconds[1:] or seconds)),
            "pass_seconds_max": float(np.max(seconds))}


def summarize(records, budgets):
    rows = {}
    for r in records:
        rows.setdefault((r["dataset"], r["wrong"], r["strategy"]), []).append(r)
    out = []
    for (ds, wrong, strategy), rs in sorted(rows.items()):
        means = {b: float(np.mean([r["ari"][str(b)] for r in rs])) for b in [0] + budgets}
        out.append({"dataset": ds, "wrong": wrong, "strategy": strategy, "trials": len(rs), "ari": means,
                    "pass_seconds_median": float(np.median([r["pass_seconds_median"] for r in rs]))})
    return out


def print_table(summary, budgets):
    head = f"{'dataset':<11} {'wrong':>5} {'strategy':<12} {'0':>5} " + " ".join(f"{b:>5}" for b in budgets)
    print(head + "   pass s")
    for s in summary:
        print(f"{s['dataset']:<11} {s['wrong']:>5.2f} {s['strategy']:<12} {s['ari'][0]:>5.2f} "
              + " ".join(f"{s['ari'][b]:>5.2f}" for b in budgets) + f"   {s['pass_seconds_median']:.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--wrong", default="0,0.1", help="comma list of answer-error rates")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--max-iter", type=int, default=100, help="DCRC's EM iterations per refit")
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "active_triplets.json"))
    args = ap.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    jobs = [(d, s, float(w), t) for d in args.datasets.split(",") for w in args.wrong.split(",")
            for s in args.strategies.split(",") for t in range(args.trials)]
    t0 = time.time()
    records = Parallel(n_jobs=args.n_jobs)(delayed(run_one)(*j, budgets, max_iter=args.max_iter) for j in jobs)
    summary = summarize(records, budgets)
    print_table(summary, budgets)
    with open(args.out, "w") as fh:
        json.dump({"argv": sys.argv[1:] if argv is None else argv, "budgets": budgets, "wall_seconds": time.time() - t0,
                   "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                   "summary": summary, "records": records}, fh, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
