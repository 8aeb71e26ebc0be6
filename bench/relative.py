"""Benchmark: clustering with relative (triplet) constraints.

Protocol (``shared/anchors.md`` "Relative triplets" and ``specs/recon.md`` §9):

* datasets: iris, wine, ionosphere (KEEL), Letters-IJLT (KEEL ``letter``
  classes I, J, L, T; 3059 rows), Digits-389 (KEEL ``penbased`` classes
  "3", "8", "9"; 3165 rows) and scikit-learn ``load_digits`` classes 3, 8, 9
  (537 rows). Every dataset is z-scored after dropping constant columns
  (``bench.datasets.load`` for KEEL; the same transform for the scikit-learn
  digits pixels), and all methods see the same features.
* random relative constraints: a, b from one class, c from another
  (:func:`random_relative_triplets`); counts 0.1 n, 0.25 n, 0.5 n and n;
  a fraction ``wrong`` of the answers is flipped to "no" (ac|b for ReCon).
* informative constraints: the (k - 1)(n - k) triplets of RC-12 (count
  column ``info``), same wrong-answer levels.
* random answered triples for DCRC-style methods
  (:func:`random_answered_triplets`): distinct (a, b, c) labelled yes / no /
  dont_know from the classes.
* baselines: k-means (10 inits), unconstrained centroid (UPGMC, the paper's
  baseline) and Ward hierarchical clustering, cut with ``maxclust``.
* 5 seeded trials; mean ARI and pairwise F-measure (the paper's accuracy).

``METHODS`` maps a method name to ``{"constraints": kind, "fit": fn}`` where
kind is None (baseline), "relative" (random ab|c rows with yes/no answers),
"answered" (random yes/no/dont_know triples) or "informative", and
``fn(X, n_clusters, triplets, answers, random_state) -> (labels, info)``.

Usage::

    python -m bench.relative [--datasets iris wine] [--methods recon kmeans]
        [--trials 5] [--wrong 0 0.1] [--out bench/results/relative.json]
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from clustering._metrics import clustering_scores

__all__ = [
    "DATASETS",
    "METHODS",
    "load_dataset",
    "random_answered_triplets",
    "random_relative_triplets",
    "run",
]

COUNT_FRACTIONS = (0.1, 0.25, 0.5, 1.0)

# Peers from shared/anchors.md: ARI after n triplets (ITML on triplets turned into pairs).
ANCHORS = {"iris": 0.94, "wine": 0.96, "ionosphere": 0.56, "sk-digits-389": 0.98}


# --------------------------------------------------------------------------- datasets


def _zscore(X):
    X = np.asarray(X, dtype=np.float64)
    X = X[:, X.std(axis=0) > 0]
    return np.ascontiguousarray((X - X.mean(axis=0)) / X.std(axis=0))


def _sk_digits_389():
    from sklearn.datasets import load_digits

    d = load_digits()
    keep = np.isin(d.target, [3, 8, 9])
    _, y = np.unique(d.target[keep], return_inverse=True)
    return _zscore(d.data[keep]), y.astype(np.int64)


def _keel(name, classes=None):
    def loader():
        from bench.datasets import load

        return load(name, classes=classes)

    return loader


DATASETS = {
    "iris": _keel("iris"),
    "wine": _keel("wine"),
    "ionosphere": _keel("ionosphere"),
    "letters-ijlt": _keel("letter", list("IJLT")),
    "digits-389": _keel("penbased", ["3", "8", "9"]),
    "sk-digits-389": _sk_digits_389,
}


def load_dataset(name):
    """``(X, y)`` for a name of :data:`DATASETS`."""
    return DATASETS[name]()


# --------------------------------------------------------------------------- constraint generators


def random_relative_triplets(y, n_triplets, rng, *, wrong=0.0):
    """Random relative constraints from classes (ReCon paper §5.1).

    a and b are drawn from one class, c from another, uniformly (a class is
    picked with probability proportional to its size through ``a``).

    Parameters
    ----------
    y : ndarray of shape (n,)
    n_triplets : int
    rng : numpy.random.Generator
    wrong : float in [0, 1), default=0.0
        Fraction of answers flipped from yes (+1, ab|c) to no (-1, meaning
        ac|b), chosen without replacement.

    Returns
    -------
    triplets : ndarray of shape (n_triplets, 3), int64
    answers : ndarray of shape (n_triplets,), int8 (+1 or -1)
    """
    y = np.asarray(y)
    n = y.shape[0]
    by_class = {c: np.flatnonzero(y == c) for c in np.unique(y)}
    other = {c: np.flatnonzero(y != c) for c in by_class}
    out = np.empty((n_triplets, 3), dtype=np.int64)
    r = 0
    while r < n_triplets:
        a = int(rng.integers(n))
        same = by_class[y[a]]
        if same.size < 2:
            continue
        b = int(same[rng.integers(same.size)])
        if b == a:
            continue
        oth = other[y[a]]
        out[r] = (a, b, int(oth[rng.integers(oth.size)]))
        r += 1
    answers = np.ones(n_triplets, dtype=np.int8)
    if wrong > 0:
        flip = rng.choice(n_triplets, size=int(round(wrong * n_triplets)), replace=False)
        answers[flip] = -1
    return out, answers


def random_answered_triplets(y, n_triplets, rng, *, wrong=0.0):
    """Random triples of distinct items with yes / no / dont_know answers.

    The answer to "is a closer to b than to c?" is yes if
    class(a) == class(b) != class(c), no if class(a) == class(c) != class(b),
    and dont_know otherwise (all three in one class, or three classes, or
    b and c together apart from a).

    Parameters
    ----------
    y : ndarray of shape (n,)
    n_triplets : int
    rng : numpy.random.Generator
    wrong : float in [0, 1), default=0.0
        Fraction of the yes/no answers swapped (yes <-> no), chosen without
        replacement; dont_know answers are never changed.

    Returns
    -------
    triplets : ndarray of shape (n_triplets, 3), int64
    answers : ndarray of shape (n_triplets,), int8 (+1 yes, -1 no, 0 dont_know)
    """
    y = np.asarray(y)
    n = y.shape[0]
    out = np.empty((n_triplets, 3), dtype=np.int64)
    r = 0
    while r < n_triplets:
        t = rng.choice(n, size=3, replace=False)
        out[r] = t
        r += 1
    ya, yb, yc = y[out[:, 0]], y[out[:, 1]], y[out[:, 2]]
    answers = np.zeros(n_triplets, dtype=np.int8)
    answers[(ya == yb) & (yb != yc)] = 1
    answers[(ya == yc) & (yb != yc)] = -1
    if wrong > 0:
        informative = np.flatnonzero(answers != 0)
        k = int(round(wrong * informative.size))
        flip = rng.choice(informative, size=k, replace=False)
        answers[flip] = -answers[flip]
    return out, answers


def informative_with_answers(y, rng, *, wrong=0.0):
    """RC-12 informative triplets (all answered yes) with a fraction flipped to no."""
    from clustering._relative import informative_triplets

    t = informative_triplets(y)
    answers = np.ones(t.shape[0], dtype=np.int8)
    if wrong > 0:
        flip = rng.choice(t.shape[0], size=int(round(wrong * t.shape[0])), replace=False)
        answers[flip] = -1
    return t, answers


# --------------------------------------------------------------------------- methods


def _kmeans(X, k, triplets, answers, random_state):
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=k, n_init=10, random_state=random_state).fit(X).labels_, {}


def _scipy_hier(method):
    def fit(X, k, triplets, answers, random_state):
        from scipy.cluster.hierarchy import fcluster, linkage

        Z = linkage(X, method)
        return fcluster(Z, k, criterion="maxclust") - 1, {}

    return fit


def _recon(X, k, triplets, answers, random_state):
    from clustering._recon import ReCon

    m = ReCon(n_clusters=k, on_inconsistent="repair", random_state=random_state)
    m.fit(X, triplets=triplets, triplet_answer=answers)
    d = m.diagnostics_
    return m.labels_, {
        "n_dropped": len(d["dropped_triplets"]),
        "n_tests": d["n_compatibility_tests"],
        "n_outliers": d["n_outliers"],
        "n_cut_violations": len(d["cut_violations"]),
    }


def _dcrc(yes_no_only=False, **params):
    """DCRC (spec dcrc.md); ``yes_no_only`` drops the dont_know answers (DCRC-YN)."""

    def fit(X, k, triplets, answers, random_state):
        from clustering._dcrc import DCRC

        if yes_no_only:
            keep = answers != 0
            triplets, answers = triplets[keep], answers[keep]
        m = DCRC(n_clusters=k, random_state=random_state, **params)
        m.fit(X, triplets=triplets, triplet_answer=answers)
        d = m.diagnostics_
        return m.labels_, {"n_used": d["n_triplets"], "n_iter": d["n_iter"], "converged": d["converged"],
                           "triplet_accuracy": d["triplet_accuracy"]}

    return fit


def _auto(X, k, triplets, answers, random_state):
    """``auto`` on relative constraints: DCRC or ReCon chosen by held-out triplets (docs/auto.md)."""
    from clustering._auto import AutoClustering

    m = AutoClustering(n_clusters=k, random_state=random_state).fit(X, triplets=triplets, triplet_answer=answers)
    return m.labels_, {"chosen": m.auto_["chosen"]["id"], "rule": m.auto_["rule"]}


METHODS = {
    "kmeans": {"constraints": None, "fit": _kmeans},
    "centroid": {"constraints": None, "fit": _scipy_hier("centroid")},
    "ward": {"constraints": None, "fit": _scipy_hier("ward")},
    "recon": {"constraints": "relative", "fit": _recon},
    "recon_info": {"constraints": "informative", "fit": _recon},
    # DCRC: random answered triples (yes / no / dont_know), and the same triples
    # with the dont_know answers dropped (DCRC-YN, paper Fig. 4); dcrc_rel gets
    # the random ab|c rows the ITML anchor was measured with.
    "dcrc": {"constraints": "answered", "fit": _dcrc()},
    "dcrc_yn": {"constraints": "answered", "fit": _dcrc(yes_no_only=True)},
    "dcrc_rel": {"constraints": "relative", "fit": _dcrc()},
    "auto_rel": {"constraints": "relative", "fit": _auto},
}

GENERATORS = {
    "relative": random_relative_triplets,
    "answered": random_answered_triplets,
}


# --------------------------------------------------------------------------- runner


def _seed(*parts):
    return int(np.random.SeedSequence(list(parts)).generate_state(1)[0])


def run(datasets, methods, *, trials=5, wrong=(0.0, 0.1), fractions=COUNT_FRACTIONS, log=print):
    """Run the protocol; returns a list of per-fit records."""
    records = []
    for ds in datasets:
        X, y = load_dataset(ds)
        n, k = X.shape[0], int(y.max()) + 1
        counts = [max(1, int(round(f * n))) for f in fractions]
        log(f"# {ds}: n={n} d={X.shape[1]} k={k} counts={counts}")
        for mname in methods:
            spec = METHODS[mname]
            kind = spec["constraints"]
            if kind is None:
                settings = [(None, None)]
            elif kind == "informative":
                settings = [(w, "info") for w in wrong]
            else:
                settings = [(w, c) for w in wrong for c in counts]
            for w, count in settings:
                for trial in range(trials):
                    seed = _seed(trial, 0 if count in (None, "info") else count, int(round(1000 * (w or 0))))
                    rng = np.random.default_rng(seed)
                    if kind is None:
                        T, A = None, None
                    elif kind == "informative":
                        T, A = informative_with_answers(y, rng, wrong=w)
                    else:
                        T, A = GENERATORS[kind](y, count, rng, wrong=w)
                    t0 = time.perf_counter()
                    try:
                        labels, info = spec["fit"](X, k, T, A, trial)
                        err = None
                    except Exception as exc:  # record and go on: one failure must not kill the run
                        labels, info, err = None, {}, f"{type(exc).__name__}: {exc}"
                    sec = time.perf_counter() - t0
                    rec = {"dataset": ds, "method": mname, "wrong": w, "count": count, "trial": trial,
                           "n_triplets": None if T is None else int(T.shape[0]), "seconds": sec, **info}
                    if err is None:
                        sc = clustering_scores(y, labels)
                        rec.update(ari=sc["ari"], f_measure=sc["f_measure"], nmi=sc["nmi"])
                    else:
                        rec.update(error=err)
                        log(f"  {mname} wrong={w} count={count} trial={trial}: {err}")
                    records.append(rec)
                    if os.environ.get("BENCH_VERBOSE"):
                        log(f"    fit {mname} wrong={w} count={count} trial={trial}: "
                            f"ARI {rec.get('ari', float('nan')):.3f} in {sec:.1f}s")
                    if kind is None and mname != "kmeans":
                        # deterministic baselines: one fit stands for every trial
                        for t2 in range(1, trials):
                            records.append({**rec, "trial": t2})
                        break
            _print_method(records, ds, mname, log)
    return records


def _cells(records, ds, mname, key):
    rows = {}
    for r in records:
        if r["dataset"] != ds or r["method"] != mname or key not in r:
            continue
        rows.setdefault((r["wrong"], r["count"]), []).append(r[key])
    return rows


def _print_method(records, ds, mname, log):
    ari = _cells(records, ds, mname, "ari")
    f = _cells(records, ds, mname, "f_measure")
    sec = _cells(records, ds, mname, "seconds")
    for key in sorted(ari, key=lambda t: (t[0] or 0, -1 if t[1] is None else (1e9 if t[1] == "info" else t[1]))):
        w, c = key
        log(f"  {mname:<12} wrong={'-' if w is None else w:<4} count={str(c):<5} "
            f"ARI {np.mean(ari[key]):.3f}+-{np.std(ari[key]):.3f}  F {np.mean(f[key]):.3f}  "
            f"fit {np.mean(sec[key]):.2f}s  (n={len(ari[key])})")


def summary_tables(records):
    """Markdown tables: mean ARI / mean F per dataset, method, wrong level and count."""
    lines = []
    datasets = list(dict.fromkeys(r["dataset"] for r in records))
    for metric in ("ari", "f_measure"):
        lines.append(f"\n### mean {metric} over trials\n")
        lines.append("| dataset | method | wrong | 0.1n | 0.25n | 0.5n | n | info / none |")
        lines.append("|---|---|---|---|---|---|---|---|")
        for ds in datasets:
            recs = [r for r in records if r["dataset"] == ds]
            counts = sorted({r["count"] for r in recs if isinstance(r["count"], int)})
            for mname in dict.fromkeys(r["method"] for r in recs):
                cells = _cells(records, ds, mname, metric)
                for w in sorted({key[0] for key in cells}, key=lambda v: v or 0):
                    row = [f"{np.mean(cells[(w, c)]):.3f}" if (w, c) in cells else "" for c in counts]
                    row += [""] * (4 - len(row))
                    other = cells.get((w, "info"), cells.get((w, None)))
                    row.append(f"{np.mean(other):.3f}" if other else "")
                    lines.append(f"| {ds} | {mname} | {'-' if w is None else w} | " + " | ".join(row) + " |")
    peers = ", ".join(f"{k} {v}" for k, v in ANCHORS.items())
    lines.append(f"\nPeers (anchors.md, ITML with n triplets, ARI): {peers}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--wrong", nargs="+", type=float, default=[0.0, 0.1])
    p.add_argument("--fractions", nargs="+", type=float, default=list(COUNT_FRACTIONS))
    p.add_argument("--out", default="bench/results/relative.json")
    args = p.parse_args(argv)
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown:
        p.error(f"unknown methods {unknown}; known: {list(METHODS)}")
    t0 = time.time()
    records = run(args.datasets, args.methods, trials=args.trials, wrong=tuple(args.wrong),
                  fractions=tuple(args.fractions), log=lambda s: print(s, flush=True))
    table = summary_tables(records)
    print(table)
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        payload = {"argv": sys.argv[1:] if argv is None else list(argv), "wall_seconds": time.time() - t0,
                   "note": "2 shared cores, ~6 other agents running: wall times are inflated",
                   "records": records, "summary": table}
        with open(args.out, "w") as fh:
            json.dump(payload, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
