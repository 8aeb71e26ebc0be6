"""CCSKL fit time and peak memory on a large dataset (the task's target:
``letter``, 20000 x 16, 26 clusters, 1000 random constraints, <= 60 s and
well under 2 GiB).

Usage::

    python -m bench.speed_ccskl [--dataset letter] [--pairs 1000] [--repeats 1]
        [--threads 1] [--out bench/results/speed_ccskl.json]

Each measurement is one full ``CCSKL.fit`` with default parameters (kNN graph,
component connection, sparse eigen-solver, NNLS, k-means with 10 restarts).
Peak memory is the process's maximum resident set size
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``, which includes the
interpreter, numpy/scipy/sklearn and the loaded dataset), measured in a
fresh process per run. ``--threads`` caps BLAS/OpenMP threads (threadpoolctl)
because oversubscription on a shared 2-core machine inflates times badly.
The 1-minute load average is recorded next to each time: other jobs on the
machine inflate wall times, the process CPU time is the better estimate of an
idle machine.
"""

import argparse
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

from bench.datasets import load, random_pairs
from clustering._ccskl import CCSKL

TARGET_SECONDS = 60.0
TARGET_RSS_MIB = 2048.0


def measure(name, n_pairs, repeats, threads, seed=0):
    X, y = load(name)
    K = int(len(np.unique(y)))
    pairs, kind = random_pairs(y, n_pairs, np.random.default_rng(seed))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    rows = []
    for r in range(repeats):
        load_before = os.getloadavg()[0]
        t0 = time.perf_counter()
        c0 = time.process_time()
        with threadpool_limits(limits=threads):
            model = CCSKL(n_clusters=K, random_state=seed + r).fit(X, pairs=pairs, pair_kind=kind)
        sec = time.perf_counter() - t0
        cpu = time.process_time() - c0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        d = model.diagnostics_
        rows.append(
            {
                "dataset": name,
                "n_samples": int(X.shape[0]),
                "n_features": int(X.shape[1]),
                "n_clusters": K,
                "pairs": n_pairs,
                "threads": threads,
                "seconds": round(sec, 3),
                "cpu_seconds": round(cpu, 3),
                "stage_seconds": {k: round(v, 3) for k, v in d["timings"].items()},
                "peak_rss_mib": round(peak, 1),
                "rss_before_fit_mib": round(rss_before, 1),
                "target_seconds": TARGET_SECONDS,
                "target_rss_mib": TARGET_RSS_MIB,
                "ari": round(float(adjusted_rand_score(y, model.labels_)), 4),
                "eigen_solver": d["eigen_solver"],
                "n_components": d["n_components"],
                "graph_components": d["graph_components"],
                "kernel_matrix_stored": model.kernel_matrix_ is not None,
                "load_avg_before": round(load_before, 2),
                "load_avg_after": round(os.getloadavg()[0], 2),
            }
        )
        row = rows[-1]
        print(
            f"{name} n={X.shape[0]} K={K} pairs={n_pairs}: fit {sec:6.2f} s (target {TARGET_SECONDS:.0f}), "
            f"CPU {cpu:6.2f} s, peak RSS {peak:7.1f} MiB (target < {TARGET_RSS_MIB:.0f}), "
            f"ARI {row['ari']:.3f}, stages {row['stage_seconds']}, "
            f"load {load_before:.1f}->{row['load_avg_after']:.1f}",
            flush=True,
        )
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="letter")
    p.add_argument("--pairs", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default="bench/results/speed_ccskl.json")
    args = p.parse_args(argv)
    rows = measure(args.dataset, args.pairs, args.repeats, args.threads)
    doc = {
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "note": "2 shared cores with other jobs running: wall times are inflated by contention",
        },
        "rows": rows,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    ok = all(r["seconds"] <= TARGET_SECONDS and r["peak_rss_mib"] < TARGET_RSS_MIB for r in rows)
    print(f"{'OK' if ok else 'ABOVE TARGET'}; written {out}")


if __name__ == "__main__":
    main()
