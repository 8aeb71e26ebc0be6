"""Passive pairwise benchmark: the COP-RF paper's protocol (``shared/anchors.md``).

For every dataset and trial: draw 100 random pairs from the ground truth
(:func:`bench.datasets.random_pairs`), fit every method on the nested prefixes
of 20, 40, 60, 80 and 100 pairs, score ARI; report the mean ARI per count over
the trials and the area under that curve (trapezoid rule, unit spacing over
the 5 counts, maximum 4.0). The noisy variant flips 15% of the constraints of
every prefix (3 of each block of 20 pairs, so each prefix is exactly 15%
wrong). A fit that raises scores ARI 0 and is counted as a failure.

Add a method with one line in :data:`METHODS`::

    "cop_rf": Method(lambda k, rs: COPRF(n_clusters=k, random_state=rs)),

Usage::

    python -m bench.passive [--datasets iris,wine] [--methods e2cp,sl] [--trials 10]
        [--noise both|clean|noisy] [--n-jobs 1] [--out bench/results/passive.json] [--merge]
"""

import argparse
import json
import platform
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from bench.datasets import load, random_pairs, stratified_subsample
from clustering._ccskl import CCSKL
from clustering._cop_rf import COPRF
from clustering.baselines import E2CP, COPKMeans, SpectralClustering, SpectralLearning


@dataclass(frozen=True)
class Method:
    """How the benchmark builds and fits one method.

    Attributes
    ----------
    factory : callable
        ``factory(n_clusters, random_state) -> estimator``.
    pairwise : bool
        True: ``fit(X, pairs=..., pair_kind=...)``; False: unconstrained
        reference, ``fit(X)`` once per trial (its ARI is the same at every count).
    """

    factory: object
    pairwise: bool = True


METHODS = {
    # Unconstrained references.
    "spectral": Method(lambda k, rs: SpectralClustering(n_clusters=k, random_state=rs), pairwise=False),
    "kmeans": Method(lambda k, rs: KMeans(n_clusters=k, n_init=10, random_state=rs), pairwise=False),
    # Constrained baselines (specs/baselines.md).
    "sl": Method(lambda k, rs: SpectralLearning(n_clusters=k, random_state=rs)),
    "sl_additive": Method(lambda k, rs: SpectralLearning(n_clusters=k, normalization="additive", random_state=rs)),
    "e2cp": Method(lambda k, rs: E2CP(n_clusters=k, random_state=rs)),
    "cop_kmeans": Method(lambda k, rs: COPKMeans(n_clusters=k, random_state=rs)),
    "cop_rf": Method(lambda k, rs: COPRF(n_clusters=k, random_state=rs)),
    "cop_rf_nofilter": Method(lambda k, rs: COPRF(n_clusters=k, cannot_link_policy="separate", filter_constraints=False, random_state=rs)),
    "cop_rf_separate": Method(lambda k, rs: COPRF(n_clusters=k, cannot_link_policy="separate", random_state=rs)),
    "cop_rf_separate_inbag": Method(lambda k, rs: COPRF(n_clusters=k, cannot_link_policy="separate", affinity_samples="in_bag", random_state=rs)),
    "cop_rf_select": Method(lambda k, rs: COPRF(n_clusters=k, n_neighbors="select", random_state=rs)),
    "cop_rf_separate_drop": Method(lambda k, rs: COPRF(n_clusters=k, cannot_link_policy="separate", drop_violated=True, random_state=rs)),
    "cop_rf_separate_select": Method(lambda k, rs: COPRF(n_clusters=k, cannot_link_policy="separate", n_neighbors="select", random_state=rs)),
    "cop_rf_rca": Method(lambda k, rs: COPRF(n_clusters=k, cannot_link_policy="separate", n_neighbors="select",
                                             rca_components="all", random_state=rs)),
    "cop_rf_rca_drop": Method(lambda k, rs: COPRF(n_clusters=k, cannot_link_policy="separate", affinity_samples="in_bag",
                                                  n_neighbors="select", drop_violated=True, rca_components="all",
                                                  random_state=rs)),
    "cop_rf_marginal": Method(lambda k, rs: COPRF(n_clusters=k, pseudo_samples="marginal", random_state=rs)),
    "ccskl": Method(lambda k, rs: CCSKL(n_clusters=k, random_state=rs)),
    "ccskl_select": Method(lambda k, rs: CCSKL(n_clusters=k, sigma="select", random_state=rs)),
    "ccskl_paper": Method(lambda k, rs: CCSKL(n_clusters=k, weighting="none", random_state=rs)),
    "ccskl_paper_select": Method(lambda k, rs: CCSKL(n_clusters=k, sigma="select", weighting="none", random_state=rs)),
    # k-means restarts kept by inertia (the paper's plain k-means) instead of by constraint satisfaction
    "ccskl_inertia": Method(lambda k, rs: CCSKL(n_clusters=k, restart_selection="inertia", random_state=rs)),
    "ccskl_select_inertia": Method(lambda k, rs: CCSKL(n_clusters=k, sigma="select", restart_selection="inertia",
                                                       random_state=rs)),
    "ccskl_paper_inertia": Method(lambda k, rs: CCSKL(n_clusters=k, weighting="none", restart_selection="inertia",
                                                      random_state=rs)),
    "ccskl_paper_select_inertia": Method(lambda k, rs: CCSKL(n_clusters=k, sigma="select", weighting="none",
                                                             restart_selection="inertia", random_state=rs)),
}

DATASETS = ["iris", "wine", "ionosphere", "segment", "segment210", "wdbc"]
COUNTS = (20, 40, 60, 80, 100)
FLIP = 0.15
SUBSAMPLE_SEED = 0


def load_dataset(name):
    """``(X, y)``; ``segment210`` is a stratified 210-row sample of KEEL segment
    (the size of UCI's original training split used by the COP-RF paper)."""
    if name == "segment210":
        X, y = load("segment")
        idx = stratified_subsample(y, 210, SUBSAMPLE_SEED)
        return X[idx], y[idx]
    return load(name)


def noisy_kinds(kind, rng, counts=COUNTS, flip=FLIP):
    """Flip ``flip`` of each block between consecutive counts (3 of every 20),
    so every nested prefix has exactly ``flip`` wrong constraints."""
    kind = kind.copy()
    lo = 0
    for hi in counts:
        size = hi - lo
        k = int(round(flip * size))
        idx = lo + rng.choice(size, size=k, replace=False)
        kind[idx] = -kind[idx]
        lo = hi
    return kind


def _fit_score(method, X, y, K, seed, pairs=None, kind=None):
    est = method.factory(K, seed)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method.pairwise:
                est.fit(X, pairs=pairs, pair_kind=kind)
            else:
                est.fit(X)
        ari = float(adjusted_rand_score(y, est.labels_))
        error = None
    except Exception as exc:  # noqa: BLE001 - a raising fit scores 0 and is counted
        ari, error = 0.0, f"{type(exc).__name__}: {str(exc)[:200]}"
    return ari, time.perf_counter() - t0, error


def run_trial(dataset, trial, method_names, noises):
    """All fits of one (dataset, trial): returns a list of records."""
    X, y = load_dataset(dataset)
    K = int(len(np.unique(y)))
    rng = np.random.default_rng([trial, 0])
    pairs, kind = random_pairs(y, COUNTS[-1], rng)
    kinds = {"clean": kind, "noisy": noisy_kinds(kind, np.random.default_rng([trial, 1]))}
    records = []
    for name in method_names:
        method = METHODS[name]
        if not method.pairwise:
            ari, sec, err = _fit_score(method, X, y, K, trial)
            for noise in noises:
                for c in COUNTS:
                    records.append(dict(method=name, noise=noise, count=c, trial=trial, ari=ari,
                                        seconds=sec, error=err, fitted=c == COUNTS[0] and noise == noises[0]))
            continue
        for noise in noises:
            for c in COUNTS:
                ari, sec, err = _fit_score(method, X, y, K, trial, pairs[:c], kinds[noise][:c])
                records.append(dict(method=name, noise=noise, count=c, trial=trial, ari=ari,
                                    seconds=sec, error=err, fitted=True))
    return dataset, records


def auc(mean_ari):
    """Trapezoid rule with unit spacing over the counts (max 4.0 for 5 counts)."""
    a = np.asarray(mean_ari, dtype=float)
    return float(((a[1:] + a[:-1]) / 2.0).sum())


def summarise(records, method_names, noises, n_trials):
    out = {}
    for name in method_names:
        recs = [r for r in records if r["method"] == name]
        fitted = [r for r in recs if r["fitted"]]
        entry = {
            "median_fit_seconds": float(np.median([r["seconds"] for r in fitted])) if fitted else None,
            "n_fits": len(fitted),
        }
        for noise in noises:
            rs = [r for r in recs if r["noise"] == noise]
            mean = [float(np.mean([r["ari"] for r in rs if r["count"] == c])) for c in COUNTS]
            std = [float(np.std([r["ari"] for r in rs if r["count"] == c])) for c in COUNTS]
            errs = [r["error"] for r in rs if r["error"] and r["fitted"]]
            entry[noise] = {
                "mean_ari": mean,
                "std_ari": std,
                "auc": auc(mean),
                "failures": len(errs),
                "n_fits": sum(1 for r in rs if r["fitted"]),
                "failure_examples": sorted(set(e.split(":")[0] for e in errs)),
            }
        entry["n_trials"] = n_trials
        out[name] = entry
    return out


def format_table(results, noises):
    head = f"{'dataset':<11} {'method':<12}"
    for noise in noises:
        head += f" {'AUC ' + noise:>10}"
    head += f" {'ARI@100':>8} {'med fit s':>9} {'failures':>9}"
    lines = [head, "-" * len(head)]
    for ds, per in results.items():
        for name, e in per.items():
            line = f"{ds:<11} {name:<12}"
            for noise in noises:
                line += f" {e[noise]['auc']:>10.3f}"
            line += f" {e[noises[0]]['mean_ari'][-1]:>8.3f}"
            line += f" {e['median_fit_seconds']:>9.3f}"
            fails = "/".join(str(e[n]["failures"]) for n in noises)
            line += f" {fails:>9}"
            lines.append(line)
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--noise", choices=["both", "clean", "noisy"], default="both")
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--out", default="bench/results/passive.json")
    p.add_argument("--merge", action="store_true",
                   help="update the (dataset, method) entries of an existing --out file instead of replacing it")
    args = p.parse_args(argv)
    datasets = [d for d in args.datasets.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        p.error(f"unknown method(s) {unknown}; known: {sorted(METHODS)}")
    noises = ["clean", "noisy"] if args.noise == "both" else [args.noise]
    out = Path(args.out)
    results = {}
    if args.merge and out.exists():
        results = json.loads(out.read_text()).get("results", {})
    t0 = time.time()
    for d in datasets:
        td = time.time()
        if args.n_jobs == 1:
            outputs = [run_trial(d, t, methods, noises) for t in range(args.trials)]
        else:
            from joblib import Parallel, delayed

            outputs = Parallel(n_jobs=args.n_jobs)(delayed(run_trial)(d, t, methods, noises) for t in range(args.trials))
        recs = [r for _, rs in outputs for r in rs]
        results.setdefault(d, {}).update(summarise(recs, methods, noises, args.trials))
        _write(out, results, args, noises, time.time() - t0)
        print(f"{d}: {time.time() - td:.0f} s", file=sys.stderr, flush=True)
    wall = time.time() - t0
    print(format_table({d: {m: results[d][m] for m in methods} for d in datasets}, noises))
    print(f"wall {wall:.0f} s; written {out}")


def _write(out, results, args, noises, wall):
    doc = {
        "protocol": {
            "counts": list(COUNTS),
            "trials": args.trials,
            "noise": noises,
            "noise_flip": FLIP,
            "noise_scheme": "3 of every block of 20 pairs flipped: each nested prefix is exactly 15% wrong",
            "pairs": "bench.datasets.random_pairs(y, 100, numpy.random.default_rng([trial, 0])), nested prefixes",
            "auc": "trapezoid rule, unit spacing over the 5 counts (max 4.0)",
            "failure": "a fit that raises scores ARI 0 and is counted",
            "random_state": "trial index",
            "segment210": f"stratified_subsample(y, 210, random_state={SUBSAMPLE_SEED}) of KEEL segment",
        },
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "n_jobs": args.n_jobs, "wall_seconds": wall,
                    "note": "2 shared cores, other jobs running: fit times are inflated by contention"},
        "results": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
