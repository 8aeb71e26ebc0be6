"""How long a triplet session on large data waits for its model: ``ActiveDCRC``
on ``letter`` (20000 x 16, 26 clusters), the initial fit and the refit after
each batch of 10 answered questions (DCRC's EM with the answers so far), for
each ``max_iter``.

Usage::

    python -m bench.speed_active_triplets [--max-iter 100,30] [--batches 3]
        [--out bench/results/speed_active_triplets.json]

The simulated oracle is ``bench.active_triplets.oracle_answers`` (noise-free).
Wall and process CPU seconds and the 1-minute load average are recorded per
refit: a busy machine inflates wall time.
"""

import argparse
import json
import os
import platform
import time

import numpy as np

from bench.active_triplets import oracle_answers
from bench.datasets import load
from clustering._dcrc import ActiveDCRC
from clustering._metrics import clustering_scores


def _timed(fn):
    load0 = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, {"wall_seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                 "load_before": load0}


def measure(dataset, max_iter, batches, seed=0):
    """Rows for one session: the fit without answers, then one refit per batch."""
    X, y = load(dataset)
    K = int(np.unique(y).size)
    est, row = _timed(lambda: ActiveDCRC(K, max_iter=max_iter, random_state=seed).fit(X))
    rows = [dict(row, step="fit", answers=0, n_iter=int(est.model_.n_iter_))]
    rng = np.random.default_rng(seed)
    for _ in range(batches):
        tri = [q["items"] for q in est.suggest_queries(10)]
        est.tell([(*t, int(a)) for t, a in zip(tri, oracle_answers(y, tri, 0.0, rng))])
        _, row = _timed(est.update)
        rows.append(dict(row, step="refit", answers=est.n_questions_, n_iter=int(est.model_.n_iter_),
                         ari=clustering_scores(y, est.labels_)["ari"]))
    for r in rows:
        r.update(dataset=dataset, n_samples=len(y), max_iter=max_iter)
        print(f"{dataset} max_iter={max_iter} {r['step']:5s} answers={r['answers']:3d} "
              f"{r['wall_seconds']:6.1f} s (cpu {r['cpu_seconds']:6.1f} s, load {r['load_before']:.1f}, "
              f"EM iterations {r['n_iter']})", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="letter")
    ap.add_argument("--max-iter", default="100,30", help="comma list of DCRC EM iteration caps")
    ap.add_argument("--batches", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "speed_active_triplets.json"))
    args = ap.parse_args(argv)
    rows = [r for mi in args.max_iter.split(",") for r in measure(args.dataset, int(mi), args.batches)]
    refits = {}
    for r in rows:
        if r["step"] == "refit":
            refits.setdefault(str(r["max_iter"]), []).append(r["wall_seconds"])
    summary = {k: {"refit_wall_seconds_min": min(v), "refit_wall_seconds_max": max(v)} for k, v in refits.items()}
    print(json.dumps(summary, indent=1))
    with open(args.out, "w") as fh:
        json.dump({"argv": vars(args), "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                   "summary": summary, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
