"""Fit time of ReCon and DCRC on Letters-IJLT (3059 rows) with 3000 triplets.

Targets (issue "relative constraints"): ReCon <= 10 s (paper: 15-40 s),
DCRC <= 60 s. ``python -m bench.speed_relative [--repeats 3] [--out ...]``;
prints one line per fit and writes JSON with wall and CPU seconds and the
machine load, since wall time on a shared machine is only comparable at
equal load.
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score

from bench.relative import load_dataset, random_answered_triplets, random_relative_triplets
from clustering import DCRC, ReCon


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--triplets", type=int, default=3000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="bench/results/speed_relative.json")
    args = p.parse_args(argv)
    X, y = load_dataset("letters-ijlt")
    k = int(y.max() + 1)
    rows = []
    for r in range(args.repeats):
        rng = np.random.default_rng(r)
        rel, rel_ans = random_relative_triplets(y, args.triplets, rng)
        ans_t, ans = random_answered_triplets(y, args.triplets, np.random.default_rng(100 + r))
        for name, make, kw in (
            ("recon", lambda: ReCon(n_clusters=k), {"triplets": rel, "triplet_answer": rel_ans}),
            ("dcrc", lambda: DCRC(n_clusters=k, random_state=r), {"triplets": ans_t, "triplet_answer": ans}),
        ):
            load0 = os.getloadavg()[0]
            t0, c0 = time.perf_counter(), time.process_time()
            est = make().fit(X, **kw)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            ari = adjusted_rand_score(y, est.labels_)
            rows.append({"method": name, "repeat": r, "wall_seconds": wall, "cpu_seconds": cpu, "ari": ari,
                         "load_before": load0, "n_triplets": int(len(kw["triplets"]))})
            print(f"{name:6s} rows={len(y)} triplets={len(kw['triplets'])} fit {wall:6.2f} s "
                  f"(CPU {cpu:6.2f} s) ARI {ari:.3f} load {load0:.1f}", flush=True)
    summary = {m: float(np.median([x["wall_seconds"] for x in rows if x["method"] == m])) for m in ("recon", "dcrc")}
    print("median wall seconds:", summary, "targets: recon <= 10, dcrc <= 60")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"targets": {"recon": 10, "dcrc": 60}, "median_wall_seconds": summary,
                                          "fits": rows}, indent=1))


if __name__ == "__main__":
    main()
