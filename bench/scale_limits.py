"""How far each method scales: fit time and peak memory against the number of rows.

Each probe runs in a child process under an address-space limit (``prlimit --as``) and a
time limit, with one BLAS thread as the workers run. The data are ``make_blobs`` (d = 10,
K = 10 by default, z-scored as ``scale: zscore`` does) with 300 constraints of the method's kind
drawn from the ground truth (3000 for ``e2cp_3000_pairs``; the ``*_closure_GxS`` probes add G
must-link groups of S rows each, chained); the estimator gets the catalogue's defaults (``clustering.cards``),
a preset's parameters, or the probe's own options (``ccskl_sigma_select``, ``cop_rf_5000_trees``, ...),
as ``workers.registry.build`` gives them (bench does not import
``workers``: the same construction is repeated here). Sessions (``urasc`` pairwise,
``uncertainty`` triplet) run their first pass: ``fit`` and ``suggest_queries(pool_size)``.
Jobs with a learned matrix also do what the worker does before saving it: the top 100 entries per
row of a matrix over 2000 rows, or of ``E E^T`` from CCSKL's factor, in blocks of 1024 rows.

The probes lift the limits that ``E2CP.fit``, ``COPRF.fit``, ``CCSKL.fit`` (``sigma="select"``) and
``SpectralLearning.fit`` (``closure=True``) enforce
(``clustering.validation``): they measure what those limits are set from.
Peak memory is the child's maximum resident set size (``ru_maxrss``); ``base_mib`` is the same
for a child that only imports and makes the data, so ``peak - base`` is what the method adds.

    PYTHONPATH=. .venv/bin/python -m bench.scale_limits \\
        --methods spectral e2cp --n 2000 5000 10000 20000 40000 \\
        --out bench/results/scale_limits.json

``--table bench/results/scale_limits.json`` prints the table of docs/scale.md.

Above 50 000 rows the graph methods build approximate kNN graphs (``pynndescent``, data of more
than 16 columns), above 100 000 they take eigenpairs by multigrid-preconditioned LOBPCG (``pyamg``)
(``clustering._graph``, ``clustering._spectral``); the large sizes go to a file of their own,
and a probe's ``stages`` say when each stage of ``fit`` began::

    PYTHONPATH=. .venv/bin/python -m bench.scale_limits --methods spectral spectral_learning \\
        --n 250000 500000 1000000 --d 128 --constraints 2000 --as-bytes 12000000000 --timeout 900 \\
        --out bench/results/scale_limits_large.json

The same for ``cop_kmeans``, ``ccskl`` (default sigma) and ``session_urasc`` (the pairwise
session's first pass), one size at a time on a shared machine (``--n 1000000``, then the others);
``--table`` prints, below the table, the growth exponents of time and memory between each probe's
smallest and largest size (:func:`growth`).

``--as-bytes`` (default 8e9) and ``--timeout`` (default 600 s) bound every probe; a method's
larger sizes are skipped once a smaller one ran out of memory or time.
"""

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import time

PROBES = {
    # name: (kind, method or strategy, preset)
    "spectral": ("job", "spectral", None),
    "spectral_knn": ("job", "spectral", {"affinity": "knn"}),
    "spectral_learning": ("job", "spectral_learning", None),
    "e2cp": ("job", "e2cp", None),
    "e2cp_3000_pairs": ("job", "e2cp", None, 3000),
    # at 40000 rows: c about 3100 (4.25 GiB, over the budget: what set max_propagation lower) and
    # about 2000, the most max_propagation allows there (n x c <= 8e7)
    "e2cp_1560_pairs": ("job", "e2cp", None, 1560),
    "e2cp_1000_pairs": ("job", "e2cp", None, 1000),
    # closure=true (spectral_learning, ccskl) with G must-link groups of g rows each (GROUPS): the
    # 300 ground-truth pairs plus g - 1 chained must-links per group, rows of one true cluster
    "spectral_learning_closure_10x200": ("job", "spectral_learning", {"closure": True}),
    "spectral_learning_closure_10x500": ("job", "spectral_learning", {"closure": True}),
    "spectral_learning_closure_10x750": ("job", "spectral_learning", {"closure": True}),
    "spectral_learning_closure_10x1000": ("job", "spectral_learning", {"closure": True}),
    "spectral_learning_closure_20x1000": ("job", "spectral_learning", {"closure": True}),
    "spectral_learning_closure_50x200": ("job", "spectral_learning", {"closure": True}),
    "spectral_learning_closure_50x2000": ("job", "spectral_learning", {"closure": True}),
    # must-link groups only (no cannot-links): 1.99e6 derived pairs, just under CCSKL's closure cap
    "ccskl_closure_10x632_ml": ("job", "ccskl", {"closure": True}, 0),
    "cop_kmeans": ("job", "cop_kmeans", None),
    "cop_rf": ("job", "cop_rf", None),
    "cop_rf_rca_filtered": ("job", "cop_rf", "rca_filtered"),
    "cop_rf_5000_trees": ("job", "cop_rf", {"n_estimators": 5000}),  # the most the wire allows
    "cop_rf_1250_trees": ("job", "cop_rf", {"n_estimators": 1250}),  # the most COP_RF_MAX_TREE_ROWS allows at 20000
    "ccskl": ("job", "ccskl", None),
    "ccskl_sigma_select": ("job", "ccskl", {"sigma": "select"}),
    "dcrc": ("job", "dcrc", None),
    "recon": ("job", "recon", None),
    "session_urasc": ("session", "pairwise", None),
    "session_triplet": ("session", "triplet", None),
}
N_CONSTRAINTS = 300
# probe: (groups, rows per group) of chained must-links added to its constraints
GROUPS = {name: tuple(int(v) for v in name.split("closure_")[1].split("_")[0].split("x"))
          for name in PROBES if "_closure_" in name}
TOP_K, FULL_LIMIT, BLOCK = 100, 2000, 1024  # workers.tasks: STORED_TOP_K, FULL_AFFINITY_LIMIT, top_k_rows' block
FACTOR_PATTERN_ROWS = 50_000  # workers.tasks.FACTOR_PATTERN_ROWS


def _data(n, d, k, seed=0):
    import numpy as np
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=n, n_features=d, centers=k, cluster_std=2.0, random_state=seed)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return np.ascontiguousarray(X), y


def _pairwise(y, m, rng):
    import numpy as np

    pairs = rng.choice(len(y), size=(m * 2, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]][:m]
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1).astype(np.int8)
    return {"pairs": pairs.astype(np.int64), "pair_kind": kind, "pair_weight": np.ones(len(pairs))}


def _groups(y, n_groups, size, fit):
    """Chained must-links over ``n_groups`` disjoint groups of ``size`` rows of one true cluster each
    (group i from cluster i mod K), appended to the pairwise constraints ``fit``."""
    import numpy as np

    members = {c: list(np.flatnonzero(y == c)) for c in np.unique(y)}
    chains = []
    for i in range(n_groups):
        pool = members[i % len(members)]
        if len(pool) < size:
            raise ValueError(f"{n_groups} groups of {size} rows do not fit in {len(y)} rows")
        rows, members[i % len(members)] = pool[:size], pool[size:]
        chains.append(np.stack([rows[:-1], rows[1:]], axis=1))
    ml = np.concatenate(chains).astype(np.int64)
    out = {"pairs": np.concatenate([fit["pairs"], ml]),
           "pair_kind": np.concatenate([fit["pair_kind"], np.ones(len(ml), np.int8)]),
           "pair_weight": np.ones(len(fit["pairs"]) + len(ml))}
    return out


def _triplets(y, m, rng):
    """ab|c triplets true to the labels (a, b in one cluster, c in another): consistent."""
    import numpy as np

    out = []
    while len(out) < m:
        a, b, c = rng.choice(len(y), size=3, replace=False)
        if y[a] == y[b] != y[c]:
            out.append((a, b, c))
    return {"triplets": np.asarray(out, dtype=np.int64), "triplet_answer": np.ones(m, dtype=np.int8)}


def _top_k(blocks, n, k):
    import numpy as np

    for lo, S in blocks:
        S[np.arange(S.shape[0]), np.arange(lo, lo + S.shape[0])] = -np.inf
        np.argpartition(-S, k - 1, axis=1)[:, :k]


def _top_k_on_pattern(E, pattern, k, block=65536):
    """workers.tasks.top_k_on_pattern: ``E E^T`` scored over the graph's non-zeros, each row's top k."""
    import numpy as np
    import scipy.sparse as sp

    P = sp.csr_matrix(pattern)
    rows, cols, vals = [], [], []
    for lo in range(0, E.shape[0], block):
        hi = min(E.shape[0], lo + block)
        c = P.indices[P.indptr[lo]:P.indptr[hi]].astype(np.int64)
        r = np.repeat(np.arange(lo, hi), np.diff(P.indptr[lo:hi + 1]))
        r, c = r[r != c], c[r != c]
        rows.append(r)
        cols.append(c)
        vals.append(np.einsum("ij,ij->i", E[r], E[c]))
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    order = np.lexsort((-v, r))
    r = r[order]
    keep = np.arange(r.size) - np.searchsorted(r, r, side="left") < k
    return sp.csr_matrix((v[order][keep], (r[keep], c[order][keep])), shape=(E.shape[0],) * 2)


def _save_step(method, est, n):
    """The worker's top-k reduction of the learned matrix before it is stored."""
    import numpy as np
    import scipy.sparse as sp

    attr = {"spectral": "affinity_matrix_", "spectral_learning": "affinity_matrix_", "e2cp": "affinity_matrix_",
            "cop_rf": "affinity_matrix_", "ccskl": "kernel_matrix_"}.get(method)
    M = getattr(est, attr, None) if attr else None
    k = min(TOP_K, n - 1)
    if M is None and method == "ccskl" and n > FACTOR_PATTERN_ROWS:
        _top_k_on_pattern(est.embedding_, est.affinity_matrix_, k)
    elif M is None and method == "ccskl":
        E = est.embedding_
        _top_k(((lo, E[lo:lo + BLOCK] @ E.T) for lo in range(0, n, BLOCK)), n, k)
    elif M is not None and n > FULL_LIMIT and not sp.issparse(M):
        M = np.asarray(M)
        _top_k(((lo, M[lo:lo + BLOCK].copy()) for lo in range(0, n, BLOCK)), n, k)


def _lift_row_limits():
    """The probes measure past the row limits that ``fit`` enforces (they are what the probes find)."""
    from clustering._ccskl import _estimator as _ccskl
    from clustering._cop_rf import _estimator as _cop_rf
    from clustering.baselines import _e2cp, _spectral_learning

    _cop_rf.COP_RF_AUTO_MAX_SAMPLES = _e2cp.E2CP_MAX_SAMPLES = _ccskl.CCSKL_SELECT_MAX_SAMPLES = 10**9
    _cop_rf.COP_RF_MAX_TREE_ROWS = 10**18
    _spectral_learning.SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS = 10**18


def child(name, n, d, k, base_only, n_constraints=N_CONSTRAINTS):
    import numpy as np

    import clustering  # imported by the base probe too, so that peak - base is the method's
    from clustering.cards import CARDS
    from schemas.methods import params_schema

    for public in clustering.__all__:  # the estimators load on first use: all of them, in the base probe too
        getattr(clustering, public)
    from schemas.sessions import TripletParamsSchema, URASCParamsSchema

    X, y = _data(n, d, k)
    rng = np.random.default_rng(0)
    if base_only:
        return {"seconds": 0.0}
    _lift_row_limits()
    kind, what, preset, *rest = PROBES[name]
    n_constraints = rest[0] if rest else n_constraints
    t0 = time.perf_counter()
    stages = []

    def report(stage, frac):  # stages reached, on stderr: a probe past its timeout reports its last one
        step = {"stage": stage, "fraction": round(frac, 3), "at_s": round(time.perf_counter() - t0, 1)}
        if not stages or stages[-1]["stage"] != stage:
            stages.append(step)
        print(json.dumps(step), file=sys.stderr, flush=True)

    if kind == "job":
        card = CARDS[what]
        presets = {p["name"]: p["params"] for p in card.presets}
        given = presets[preset] if isinstance(preset, str) else (preset or {})
        params = params_schema("Params", card.params)().load(dict(given))
        if what == "recon":
            params["on_inconsistent"] = "repair"  # registry: on_conflict "keep"
        module, _, cls_name = card.estimator.partition(":")
        cls = getattr(importlib.import_module(module), cls_name)
        names = cls().get_params(deep=False)
        kw = {"n_clusters": k} if "n_clusters" in names else {}
        if "random_state" in names:
            kw["random_state"] = 0
        if "callback" in names:
            kw["callback"] = report
        est = cls(**params, **kw)
        fit = {}
        if "pairwise" in card.constraints:
            fit = _pairwise(y, n_constraints, rng)
            if name in GROUPS:
                fit = _groups(y, *GROUPS[name], fit)
        elif "triplets" in card.constraints:
            fit = _triplets(y, n_constraints, rng)
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X, **fit)
        fit_s = time.perf_counter() - t0
        _save_step(what, est, n)
        extra = {"warnings": sorted({str(w.message)[:120] for w in caught})[:3]} if caught else {}
        if stages:
            extra["stages"] = stages  # when each stage began (s from the start of fit)
        closure = getattr(est, "diagnostics_", {}).get("closure")
        if closure is not None:
            extra["closure"] = closure
        if "n_must_link" in getattr(est, "diagnostics_", {}):
            extra["pairs_overwritten"] = est.diagnostics_["n_must_link"] + est.diagnostics_["n_cannot_link"]
    else:
        triplet = what == "triplet"
        params = (TripletParamsSchema if triplet else URASCParamsSchema)().load({})
        cls = clustering.ActiveDCRC if triplet else clustering.URASC
        # "initialize" is reported once the graph is built, "done" after the first eigenpairs and
        # labels; the first pool of questions follows
        report("graph", 0.0)
        est = cls(n_clusters=k, budget=100, strategy="uncertainty" if triplet else "urasc", random_state=0,
                  callback=report, **params).fit(X)
        fit_s = time.perf_counter() - t0
        report("suggest_queries", 1.0)
        est.suggest_queries(20)
        report("questions", 1.0)
        extra = {"stages": stages}
    return {"seconds": round(time.perf_counter() - t0, 2), "fit_seconds": round(fit_s, 2), **extra}


def run_child(args):
    try:
        out = child(args.child, args.n[0], args.d, args.k, args.base, args.constraints)
        out["ok"] = True
    except MemoryError:
        out = {"ok": False, "error": "MemoryError"}
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        out = {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    out["peak_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out), flush=True)


def probe(name, n, args, base=False):
    cmd = ["prlimit", f"--as={args.as_bytes}", "timeout", str(args.timeout), sys.executable, "-m",
           "bench.scale_limits", "--child", name, "--n", str(n), "--d", str(args.d), "--k", str(args.k),
           "--constraints", str(args.constraints)]
    if base:
        cmd.append("--base")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if lines:
        return json.loads(lines[-1])
    if proc.returncode == 124:
        stages = [ln for ln in proc.stderr.splitlines() if ln.startswith('{"stage"')]
        last = {"last_stage": json.loads(stages[-1])} if stages else {}
        return {"ok": False, "error": f"timeout after {args.timeout} s", "seconds": round(wall, 1), **last}
    return {"ok": False, "error": f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}", "seconds": round(wall, 1)}


def table(doc):
    """The measurements as a markdown table: seconds / peak MiB per probe and size."""
    sizes = sorted({int(n) for rows in doc["probes"].values() for n in rows})
    lines = ["| probe | " + " | ".join(f"{n:,}".replace(",", " ") for n in sizes) + " |",
             "|---|" + "---|" * len(sizes)]
    for name in PROBES:
        rows = doc["probes"].get(name)
        if not rows:
            continue
        cells = []
        for n in sizes:
            r = rows.get(str(n))
            if r is None:
                cells.append("")
            elif r["ok"]:
                cells.append(f"{r['seconds']:.3g} s / {r['peak_mib']:.0f}")
            else:
                cells.append(f"{r['error'].split(':')[0]} ({r['peak_mib']:.0f})" if r.get("peak_mib") else r["error"])
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def growth(doc, lo=None, hi=None):
    """Growth exponents of time and peak memory between two sizes: ``log(v_hi / v_lo) / log(hi / lo)``.

    ``lo`` / ``hi`` default to each probe's smallest and largest size that ran; the rows say which
    sizes they used. Memory is the peak resident set (``peak_mib``) and, where ``base_mib`` has the
    sizes, what the method added to it (``added_mib``).
    """
    import math

    lines = ["| probe | from | to | time exponent | peak memory exponent | added memory exponent |",
             "|---|---|---|---|---|---|"]
    for name in PROBES:
        rows = {int(n): r for n, r in doc["probes"].get(name, {}).items() if r.get("ok")}
        sizes = sorted(n for n in rows if (lo is None or n >= lo) and (hi is None or n <= hi))
        if len(sizes) < 2:
            continue
        a, b = sizes[0], sizes[-1]
        ra, rb = rows[a], rows[b]
        ratio = math.log(b / a)

        def exp(key):
            va, vb = ra.get(key), rb.get(key)
            return f"{math.log(vb / va) / ratio:.2f}" if va and vb and va > 0 and vb > 0 else ""

        lines.append(f"| `{name}` | {a:,} | {b:,} | {exp('seconds')} | {exp('peak_mib')} | {exp('added_mib')} |"
                     .replace(",", " "))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", default=list(PROBES), choices=list(PROBES))
    ap.add_argument("--n", nargs="+", type=int, default=[2000, 5000, 10000, 20000, 40000])
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--constraints", type=int, default=N_CONSTRAINTS,
                    help="constraints of the method's kind per probe (a probe's own count wins)")
    ap.add_argument("--as-bytes", type=int, default=8_000_000_000)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--out", default="bench/results/scale_limits.json", help="JSON file; existing entries of other probes are kept")
    ap.add_argument("--table", default=None, metavar="JSON", help="print the markdown table of a results file")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--base", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return run_child(args)
    if args.table:
        with open(args.table) as fh:
            doc = json.load(fh)
        print(table(doc))
        print()
        print(growth(doc))
        return None
    doc = {}
    if args.out and os.path.exists(args.out):
        with open(args.out) as fh:
            doc = json.load(fh)
    doc.setdefault("config", {}).update(d=args.d, k=args.k, n_constraints=args.constraints, as_bytes=args.as_bytes,
                                        timeout=args.timeout, blas_threads=1)
    base = doc.setdefault("base_mib", {})
    results = doc.setdefault("probes", {})
    for n in args.n:
        if str(n) not in base:
            base[str(n)] = probe("spectral", n, args, base=True).get("peak_mib")
    for name in args.methods:
        rows = results.setdefault(name, {})
        for n in sorted(args.n):
            r = probe(name, n, args)
            r["added_mib"] = round(r["peak_mib"] - base[str(n)], 1) if r.get("peak_mib") else None
            rows[str(n)] = r
            print(json.dumps({"probe": name, "n": n, **r}), flush=True)
            if args.out:
                with open(args.out, "w") as fh:
                    json.dump(doc, fh, indent=1, sort_keys=True)
            if not r["ok"]:
                break
    return doc


if __name__ == "__main__":
    main()
