"""Final labels of an active session from COP-RF on its answers (a tried, not kept, variant).

URASC chooses the questions as in :mod:`bench.active` (same oracle stream, same seeds); at the
budget, COP-RF (Zhu et al. 2013, with its noisy-constraint filtering) is fitted on the told answers
(each one must-link or cannot-link; "don't know" left out) with ``n_clusters`` = URASC's number of
clusters, and both label sets are scored against the ground truth. The finding
(bench/history.md, "COP-RF final-labels trial") is why Shoal does not offer this: it helps segment and hurts
ionosphere.

    python -m bench.active_forest_labels --datasets segment --trials 5 --out bench/results/active_forest_labels.json
"""

import argparse
import json
import time

import numpy as np

from bench.active import replay
from bench.datasets import load
from clustering._cop_rf import COPRF
from clustering._metrics import clustering_scores

FORESTS = {
    "rca": dict(cannot_link_policy="separate", n_neighbors="select", rca_components="all"),
    "rca_drop": dict(cannot_link_policy="separate", n_neighbors="select", rca_components="all",
                     affinity_samples="in_bag", drop_violated=True),
}


def run_one(X, y, method, noise, trial, budget, n_estimators):
    """One session (K unknown) and the ARI of URASC's and of each forest's labels at ``budget``."""
    est = replay(X, y, method, noise, trial, budget)
    row = {"n_clusters": int(est.n_clusters_), "urasc": clustering_scores(y, est.labels_)["ari"]}
    told = est.answers_[est.answers_[:, 2] >= 0]
    for name, params in FORESTS.items():
        t0 = time.perf_counter()
        rf = COPRF(n_clusters=est.n_clusters_, n_estimators=n_estimators, random_state=trial, n_jobs=2,
                   **params).fit(X, pairs=told[:, :2], pair_kind=np.where(told[:, 2] == 1, 1, -1))
        row[name] = clustering_scores(y, rf.labels_)["ari"]
        row[f"{name}_s"] = time.perf_counter() - t0
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="iris,wine,ionosphere,wdbc,segment")
    ap.add_argument("--methods", default="URASC+N/verify,URASC+N/verify/B10")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--n-estimators", type=int, default=300)
    ap.add_argument("--out", default="bench/results/active_forest_labels.json")
    args = ap.parse_args()
    rows = []
    print(f"{'dataset':<11} {'method':<20} {'noise':>5}  {'URASC':>6} {'rca':>6} {'rca_drop':>8}")
    for ds in args.datasets.split(","):
        X, y = load(ds)
        for method in args.methods.split(","):
            for noise in (0.1, 0.0):
                runs = [run_one(X, y, method, noise, t, args.budget, args.n_estimators) for t in range(args.trials)]
                rows.append({"dataset": ds, "method": method, "noise": noise, "trials": runs})
                mean = {k: float(np.mean([r[k] for r in runs])) for k in ("urasc", "rca", "rca_drop")}
                print(f"{ds:<11} {method:<20} {noise:>5}  {mean['urasc']:>6.3f} {mean['rca']:>6.3f} "
                      f"{mean['rca_drop']:>8.3f}", flush=True)
    with open(args.out, "w") as f:
        json.dump({"budget": args.budget, "n_estimators": args.n_estimators, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
