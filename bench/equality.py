"""Labels of every method at its defaults on iris, wine and segment, 3 seeds each, for a bit-for-bit
comparison of two versions of the code.

Dump the labels of one checkout, then compare two dumps::

    python -m bench.equality dump labels_a.npz
    python -m bench.equality compare labels_a.npz labels_b.npz

Each fit is the worker's default job: the estimator's defaults, ``n_clusters`` = the number of
classes, ``random_state`` = the seed; pairwise methods get 100 random ground-truth pairs
(``bench.datasets.random_pairs``; 20 for COP-KMeans, whose hard constraints
have no solution with 100 here), relative methods 100 ground-truth ab|c triplets (a, b in one
class, c in another, answer yes), both drawn with the seed.

A dump takes about 12 minutes on one core; COP-RF (1000 trees) is most of it, about 90 s per seed
on segment (2310 rows), then DCRC and E2CP (30-40 s per seed there).
"""

import argparse
import sys
import time
import warnings

import numpy as np

from bench.datasets import load, random_pairs
from clustering import CCSKL, COPRF, DCRC, E2CP, COPKMeans, ReCon, SpectralClustering, SpectralLearning

#: method id -> (estimator class, constraint input: None, "pairwise" or "triplets")
METHODS = {
    "spectral": (SpectralClustering, None),
    "spectral_learning": (SpectralLearning, "pairwise"),
    "e2cp": (E2CP, "pairwise"),
    "cop_kmeans": (COPKMeans, "pairwise"),
    "cop_rf": (COPRF, "pairwise"),
    "ccskl": (CCSKL, "pairwise"),
    "dcrc": (DCRC, "triplets"),
    "recon": (ReCon, "triplets"),
}
DATASETS = ("iris", "wine", "segment")
SEEDS = (0, 1, 2)
N_CONSTRAINTS = 100
#: COP-KMeans (hard constraints) finds no assignment for 100 random pairs on these datasets
N_CONSTRAINTS_OF = {"cop_kmeans": 20}


def ground_truth_triplets(y, n, rng):
    """``n`` ab|c triplets, (n, 3) int64: a and b share a class, c is in another."""
    out = []
    while len(out) < n:
        a, b, c = rng.integers(len(y), size=3)
        if a != b and y[a] == y[b] and y[c] != y[a]:
            out.append((a, b, c))
    return np.asarray(out, dtype=np.int64)


def fit_labels(method, X, y, seed):
    """The labels of one default fit, (n,) int64, or the error it raised as a string array."""
    cls, inputs = METHODS[method]
    rng = np.random.default_rng(seed)
    m = N_CONSTRAINTS_OF.get(method, N_CONSTRAINTS)
    kw = {}
    if inputs == "pairwise":
        kw["pairs"], kw["pair_kind"] = random_pairs(y, m, rng)
    elif inputs == "triplets":
        kw["triplets"] = ground_truth_triplets(y, m, rng)
        kw["triplet_answer"] = np.ones(m, dtype=np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est = cls(n_clusters=len(np.unique(y)), random_state=seed).fit(X, **kw)
        except Exception as exc:  # noqa: BLE001 - the same error before and after is equal behaviour
            return np.asarray([f"{type(exc).__name__}: {exc}"])
    return np.asarray(est.labels_, dtype=np.int64)


def dump(out, methods):
    labels = {}
    for dataset in DATASETS:
        X, y = load(dataset)
        for method in methods:
            for seed in SEEDS:
                t0 = time.perf_counter()
                labels[f"{method}/{dataset}/{seed}"] = fit_labels(method, X, y, seed)
                print(f"{method:18s} {dataset:8s} seed {seed}: {time.perf_counter() - t0:6.1f} s", flush=True)
    np.savez_compressed(out, **labels)


def compare(a, b):
    """Print the method x dataset x seed table; exit status 1 unless every label vector is equal."""
    la, lb = np.load(a), np.load(b)
    keys = sorted(set(la.files) | set(lb.files))
    print("| method | dataset | " + " | ".join(f"seed {s}" for s in SEEDS) + " |")
    print("|---|---|" + "---|" * len(SEEDS))
    all_equal = True
    def order(row):
        method, dataset = row.split("/")
        return (list(METHODS).index(method) if method in METHODS else len(METHODS), DATASETS.index(dataset), row)

    rows = sorted({k.rsplit("/", 1)[0] for k in keys}, key=order)
    for row in rows:
        cells = []
        for s in SEEDS:
            k = f"{row}/{s}"
            same = k in la.files and k in lb.files and np.array_equal(la[k], lb[k])
            all_equal &= same
            failed = k in la.files and la[k].dtype.kind == "U"
            cells.append(("yes" if same else "NO") + (" (both raise)" if same and failed else ""))
        print(f"| {row.replace('/', ' | ')} | " + " | ".join(cells) + " |")
    return 0 if all_equal else 1


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    d.add_argument("--methods", nargs="*", default=list(METHODS))
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = p.parse_args(argv)
    if args.cmd == "dump":
        dump(args.out, args.methods)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
