"""COP-RF fit time: 1000 trees and 100 random constraints (the task's targets:
ionosphere <= 10 s, full KEEL segment (2310 rows) <= 60 s on 2 cores).

Usage::

    python -m bench.speed_cop_rf [--datasets ionosphere,segment] [--n-jobs 2]
        [--trees 1000] [--pairs 100] [--repeats 1] [--drop-violated]
        [--params '{"rca_components": "all"}'] [--out bench/results/speed_cop_rf.json]

Each measurement is a full ``COPRF.fit`` (forest, filter, affinity, kNN graph,
spectral step; all of it twice with ``--drop-violated``). The first fit in a
fresh environment also compiles the numba kernels (cached on disk afterwards):
a warm-up fit on a few trees runs first and is not timed. The machine's
1-minute load average is recorded next to each time because other jobs inflate
wall times on a shared machine; the process CPU time (all threads) is recorded
too: on a busy machine CPU / n_jobs is the better estimate of the wall time on
idle cores.
"""

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

from bench.datasets import load, random_pairs
from clustering._cop_rf import COPRF

TARGETS = {"ionosphere": 10.0, "segment": 60.0}


def measure(name, n_jobs, trees, n_pairs, repeats, seed=0, params=None):
    X, y = load(name)
    K = int(len(np.unique(y)))
    pairs, kind = random_pairs(y, n_pairs, np.random.default_rng(seed))
    COPRF(K, n_estimators=4, n_jobs=n_jobs, random_state=seed).fit(X, pairs=pairs, pair_kind=kind)  # warm-up
    params = params or {}
    drop_violated = bool(params.get("drop_violated", False))
    rows = []
    for r in range(repeats):
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        c0 = time.process_time()
        model = COPRF(K, n_estimators=trees, n_jobs=n_jobs, random_state=seed + r, **params)
        model.fit(X, pairs=pairs, pair_kind=kind)
        sec = time.perf_counter() - t0
        cpu = time.process_time() - c0
        rows.append(
            {
                "dataset": name,
                "n_samples": int(X.shape[0]),
                "n_features": int(X.shape[1]),
                "n_jobs": n_jobs,
                "trees": trees,
                "pairs": n_pairs,
                "drop_violated": drop_violated,
                "params": params,
                "seconds": round(sec, 3),
                "cpu_seconds": round(cpu, 3),
                "target_seconds": TARGETS.get(name),
                "ari": round(float(adjusted_rand_score(y, model.labels_)), 4),
                "load_avg_before": round(load_before, 2),
                "load_avg_after": round(os.getloadavg()[0], 2),
            }
        )
        print(
            f"{name:<11} n={X.shape[0]:<5} jobs={n_jobs} trees={trees} pairs={n_pairs} "
            f"{json.dumps(params) + ' ' if params else ''}"
            f"fit {sec:7.2f} s (target {TARGETS.get(name)}), CPU {cpu:7.2f} s, ARI {rows[-1]['ari']:.3f} "
            f"load {load_before:.1f}->{rows[-1]['load_avg_after']:.1f}",
            flush=True,
        )
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default="ionosphere,segment")
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--trees", type=int, default=1000)
    p.add_argument("--pairs", type=int, default=100)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--drop-violated", action="store_true", help="time COPRF(drop_violated=True): two fits")
    p.add_argument("--params", default="{}", help="more COPRF parameters as a JSON object")
    p.add_argument("--out", default="bench/results/speed_cop_rf.json")
    args = p.parse_args(argv)
    params = json.loads(args.params)
    if args.drop_violated:
        params["drop_violated"] = True
    rows = []
    for name in [d for d in args.datasets.split(",") if d]:
        rows.extend(measure(name, args.n_jobs, args.trees, args.pairs, args.repeats,
                            params=params))
    doc = {
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "cpu_count": os.cpu_count(),
                    "note": "shared machine: compare seconds with the recorded load average"},
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"written {out}")


if __name__ == "__main__":
    main()
