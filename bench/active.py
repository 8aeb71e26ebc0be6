"""Active pairwise clustering benchmark: URASC (variants, batch mode) vs random queries.

Protocol (``shared/anchors.md`` "Active pairwise", ``specs/urasc.md`` §4.4, §9):
a simulated oracle answers "same cluster?" from the ground truth, each answer
flipped independently with probability ``noise`` (its own seeded stream);
mean ARI and pairwise Jaccard after 10 / 20 / 50 / 100 / 150 / 200 questions,
K known (``n_clusters`` = number of classes) or unknown (starts at 2), over
seeded trials, on KEEL iris, wine, ionosphere, segment, wdbc
(``bench.datasets.load``: constant columns dropped, z-scored). Also the wall
time of ``suggest_queries`` right after an answer batch (that is what a
session waits for), and optionally the 20000-row ``letter`` set.
The ``/crowd3`` rows ask every question three times (independent answers,
majority vote), as a session with ``answers_per_question=3`` does.

Usage::

    python -m bench.active                       # full matrix (slow: hours on a shared machine)
    python -m bench.active --datasets iris,wine --trials 2 --budgets 10,20,50,100
    python -m bench.active --letter-only         # scale check on letter (20000 x 16)

Writes ``bench/results/active.json`` (or ``--out``) after every dataset and prints tables.
"""

import argparse
import json
import os
import platform
import sys
import time
from typing import NamedTuple

import numpy as np

from bench.datasets import load
from clustering._metrics import clustering_scores
from clustering._urasc import URASC

DATASETS = ["iris", "wine", "ionosphere", "wdbc", "segment"]
BUDGETS = [10, 20, 50, 100, 150, 200]


class Setting(NamedTuple):
    """How one benchmark row runs a session.

    Attributes
    ----------
    params : dict
        Keyword arguments for :class:`clustering._urasc.URASC`.
    batch : int, default=1
        Questions per ``suggest_queries`` call (B).
    answers_per_question : int, default=1
        Independent simulated answers per question, combined by majority
        vote (odd, so there is no tie), as a session with
        ``answers_per_question`` does; the budget counts questions.
    """

    params: dict
    batch: int = 1
    answers_per_question: int = 1


VERIFY_PARAMS = {"k_growth": "verify", "representative": "founder"}

METHODS = {
    "URASC+N": Setting({}),
    "URASC+P": Setting({"step_model": "parametric"}),
    "URASC-GO": Setting({"score": "gradient"}),
    "URASC-NO": Setting({"score": "entropy"}),
    "URASC-PO": Setting({"score": "entropy", "step_model": "parametric"}),
    "random": Setting({"strategy": "random"}),
    "URASC+N/B10": Setting({}, 10),
    # opt-in noise-robust mode (extension, not in the paper)
    "URASC+N/robust": Setting({"k_growth": "robust", "representative": "founder"}),
    # opt-in evidence mode (issue #4): a new set needs two "no"s from every set, three from the nearest
    "URASC+N/verify": Setting(VERIFY_PARAMS),
    # the same in batch mode: what a crowd client runs
    "URASC+N/verify/B10": Setting(VERIFY_PARAMS, 10),
    # a crowd: three answers per question, majority vote (each question costs three answers)
    "URASC+N/B10/crowd3": Setting({}, 10, 3),
    "URASC+N/verify/B10/crowd3": Setting(VERIFY_PARAMS, 10, 3),
}

# (method, k_mode, noise): the matrix actually run by default.
CONFIGS = (
    [(m, "unknown", 0.0) for m, st in METHODS.items() if st.answers_per_question == 1]
    + [(m, "known", 0.0) for m in ("URASC+N", "URASC+P", "random", "URASC+N/B10")]
    + [(m, "unknown", e) for e in (0.02, 0.10) for m in ("URASC+N", "random", "URASC+N/robust")]
    + [(m, "known", 0.10) for m in ("URASC+N", "URASC+N/robust")]
)

# The reduced matrix run for issue #4 on a shared 2-core machine (--configs final).
FINAL = (
    [(m, "unknown", 0.0) for m in ("URASC+N", "random", "URASC+N/B10")]
    + [(m, "known", 0.0) for m in ("URASC+N", "random")]
    + [("URASC+N", "unknown", 0.02)]
    + [(m, "unknown", 0.10) for m in ("URASC+N", "URASC+N/robust")]
    + [("URASC+N", "known", 0.10)]
)

# issue #4: the evidence mode, noise-free and with 10% wrong answers, K unknown and known (--configs verify).
VERIFY = ([("URASC+N/verify", k, e) for k in ("unknown", "known") for e in (0.0, 0.10)]
          + [("URASC+N/verify/B10", "unknown", e) for e in (0.0, 0.10)])

# Crowd rows (--configs crowd): 10% wrong answers per worker, three workers per question. Noise-free
# they equal URASC+N/B10 and URASC+N/verify/B10 (three identical answers), so only the noisy rows run.
CROWD = [(m, "unknown", 0.10) for m in ("URASC+N/B10/crowd3", "URASC+N/verify/B10/crowd3")]

# anchors.md, active pairwise: COBRAS (K unknown) and best K-known peer, at 10/20/50/100/150/200.
ANCHORS = {
    "iris": {"cobras": [.62, .62, .77, .87, .91, .91], "kknown": [.60, .63, .86, 1, 1, 1]},
    "wine": {"cobras": [.66, .71, .88, .90, .93, .94], "kknown": [.91, .92, .97, 1, 1, None]},
    "ionosphere": {"cobras": [.12, .23, .54, .58, .63, .68], "kknown": [.17, .17, .19, .24, .33, .46]},
    "wdbc": {"cobras": [.66, .66, .69, .75, .80, .82], "kknown": [.69, .69, .72, .86, .97, None]},
    "segment": {"cobras": [.20, .31, .47, .53, .62, .66], "kknown": [.55, .57, .57, .48, .48, .48]},
}


def answer_questions(est, y, noise, trial, batch=1, votes=1):
    """Answer ``est``'s questions from the ground truth until it asks none; the simulated oracle.

    Each answer is flipped with probability ``noise`` from its own stream, seeded by ``trial``
    (spec §4.4), so every script replaying a session sees the same answers. Yields the wall time
    (s) of each ``suggest_queries(batch)`` call that returned questions, after telling the answers.

    Parameters
    ----------
    est : URASC
        A fitted session (``fit(X)`` done).
    y : ndarray of shape (n_samples,), int
        Ground-truth classes.
    noise : float in [0, 1)
        Probability that one answer is flipped.
    trial : int
        Seed of the noise stream (``10_000 + trial``).
    batch : int, default=1
        Questions per ``suggest_queries`` call (B).
    votes : int, default=1
        Independent answers per question, combined by majority (odd).
    """
    rng = np.random.default_rng(10_000 + trial)  # oracle noise: own stream (spec §4.4)
    while True:
        t = time.perf_counter()
        qs = est.suggest_queries(batch)
        elapsed = time.perf_counter() - t
        if not qs:
            return
        answers = []
        for q in qs:
            truth = bool(y[q["i"]] == y[q["j"]])
            # majority of an odd number of yes/no votes (the session's vote, workers.session_tasks,
            # also handles dont_know and ties; bench must not import workers)
            said = [truth != bool(noise > 0 and rng.random() < noise) for _ in range(votes)]
            answers.append((q["i"], q["j"], 2 * sum(said) > votes))
        est.tell(answers)
        yield elapsed


def replay(X, y, method, noise, trial, budget, n_clusters=None):
    """A whole seeded session answered by the simulated oracle (:func:`answer_questions`).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), int
        Ground-truth classes.
    method : str
        Key of :data:`METHODS` (URASC parameters, batch size, answers per question).
    noise : float in [0, 1)
        Probability that one answer is flipped.
    trial : int
        Seed of the estimator and of the oracle.
    budget : int
        Questions asked before the session stops.
    n_clusters : int or None, default=None
        K if known.

    Returns
    -------
    URASC
        The session after its last answer, re-clustered (``update()`` done).
    """
    params, batch, votes = METHODS[method]
    est = URASC(n_clusters=n_clusters, budget=budget, random_state=trial, **params).fit(X)
    for _ in answer_questions(est, y, noise, trial, batch, votes):
        pass
    return est.update()


def run_one(X, y, method, k_mode, noise, trial, budgets):
    """One seeded session against a simulated oracle (``specs/urasc.md`` §4.4).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,), int
        Ground-truth classes; the oracle answers "same cluster?" from them.
    method : str
        Key of :data:`METHODS`.
    k_mode : {"known", "unknown"}
        ``n_clusters`` is the number of classes, or None.
    noise : float in [0, 1)
        Probability that one simulated answer is flipped (own stream seeded
        by ``trial``; the majority of ``answers_per_question`` answers is told).
    trial : int
        Seed of the estimator and of the oracle.
    budgets : list of int
        Question counts at which ARI and Jaccard are recorded.

    Returns
    -------
    dict
        ``ari`` and ``jaccard`` per budget (str keys), question and cluster
        counts, and wall times in seconds (``init_s``, ``suggest_s_median``,
        ``suggest_s_max``, ``total_s``).
    """
    params, batch, votes = METHODS[method]
    K = int(np.unique(y).size)
    est = URASC(n_clusters=K if k_mode == "known" else None, budget=max(budgets), random_state=trial, **params)
    t0 = time.perf_counter()
    est.fit(X)
    init_s = time.perf_counter() - t0
    targets = sorted(set(budgets))
    scores = {}
    times = []
    if 0 in targets:
        scores[0] = clustering_scores(y, est.labels_)
    for elapsed in answer_questions(est, y, noise, trial, batch, votes):
        times.append(elapsed)
        if est.n_questions_ in targets:
            est.update()
            scores[est.n_questions_] = clustering_scores(y, est.labels_)
    est.update()
    final = clustering_scores(y, est.labels_)
    for b in targets:  # ran out of uncertain samples before the budget: the result stays
        scores.setdefault(b, final)
    return {
        "method": method, "k_mode": k_mode, "noise": noise, "trial": trial, "batch": batch,
        "answers_per_question": votes,
        "ari": {str(b): scores[b]["ari"] for b in targets},
        "jaccard": {str(b): scores[b]["jaccard"] for b in targets},
        "n_questions": int(est.n_questions_), "n_clusters": int(est.n_clusters_),
        "n_certain_sets": len(est.certain_sets_), "init_s": init_s,
        "suggest_s_median": float(np.median(times[1:])) if len(times) > 1 else None,
        "suggest_s_max": float(np.max(times[1:])) if len(times) > 1 else None,
        "total_s": time.perf_counter() - t0,
    }


def _summary_key(dataset, method, k_mode, noise):
    """Key of a :func:`summarise` row: ``"dataset|method|k_mode|noise"`` (noise as a float)."""
    return f"{dataset}|{method}|{k_mode}|{float(noise)}"


def summarise(runs, budgets):
    out = {}
    for r in runs:
        key = _summary_key(r["dataset"], r["method"], r["k_mode"], r["noise"])
        out.setdefault(key, []).append(r)
    summary = {}
    for key, rs in out.items():
        d, m, k, e = key.split("|")
        summary[key] = {
            "dataset": d, "method": m, "k_mode": k, "noise": float(e), "n_trials": len(rs),
            "ari_mean": {str(b): float(np.mean([r["ari"][str(b)] for r in rs])) for b in budgets},
            "ari_std": {str(b): float(np.std([r["ari"][str(b)] for r in rs])) for b in budgets},
            "jaccard_mean": {str(b): float(np.mean([r["jaccard"][str(b)] for r in rs])) for b in budgets},
            "suggest_s_median": float(np.median([r["suggest_s_median"] for r in rs if r["suggest_s_median"]]
                                                or [np.nan])),
            "suggest_s_max": float(np.max([r["suggest_s_max"] for r in rs if r["suggest_s_max"]] or [np.nan])),
        }
    return summary


def _table_order(row):
    """Sort key of a summary row in the printed tables: dataset as in DATASETS, then method as in METHODS."""
    return (DATASETS.index(row["dataset"]) if row["dataset"] in DATASETS else 99,
            list(METHODS).index(row["method"]) if row["method"] in METHODS else 99)


def _standard_error(std, n):
    """Standard error of a mean from the population std (ddof=0) of n trials (nan for n < 2)."""
    return float(std / np.sqrt(n - 1)) if n >= 2 else float("nan")


def noise_ratios(summary, budget):
    """Noisy over noise-free ARI at ``budget`` for every row that has both (issue #4's measure).

    Parameters
    ----------
    summary : dict
        :func:`summarise` output: ``"dataset|method|k_mode|noise"`` -> row with ``ari_mean``,
        ``ari_std`` (population std over trials) and ``n_trials``.
    budget : int
        Number of questions; a key of the rows' ``ari_mean`` (rows without it are skipped).

    The standard error of the ratio is the first-order one of independent trials,
    ``ratio * sqrt((se_noisy / noisy)^2 + (se_free / free)^2)``. Five trials leave about
    ±.05 on segment's ratio (bench/history.md, "batch fan-out").

    Returns
    -------
    list of dict
        ``dataset``, ``method``, ``k_mode``, ``noise``, ``n_trials`` (noisy row), ``noisy``,
        ``noisy_se``, ``free``, ``free_se``, ``ratio``, ``ratio_se``.
    """
    b, rows = str(budget), []
    for v in summary.values():
        free = summary.get(_summary_key(v["dataset"], v["method"], v["k_mode"], 0.0))
        if v["noise"] == 0.0 or free is None or b not in v["ari_mean"] or b not in free["ari_mean"]:
            continue
        noisy_m, free_m = v["ari_mean"][b], free["ari_mean"][b]
        noisy_se = _standard_error(v["ari_std"][b], v["n_trials"])
        free_se = _standard_error(free["ari_std"][b], free["n_trials"])
        ratio = noisy_m / free_m if free_m > 0 else float("nan")
        ratio_se = abs(ratio) * float(np.hypot(noisy_se / noisy_m if noisy_m else np.nan,
                                               free_se / free_m if free_m else np.nan))
        rows.append({"dataset": v["dataset"], "method": v["method"], "k_mode": v["k_mode"], "noise": v["noise"],
                     "n_trials": v["n_trials"], "noisy": noisy_m, "noisy_se": noisy_se, "free": free_m,
                     "free_se": free_se, "ratio": ratio, "ratio_se": ratio_se})
    rows.sort(key=lambda r: (*_table_order(r), r["k_mode"], r["noise"]))
    return rows


def print_tables(summary, budgets, file=sys.stdout):
    groups = sorted({(v["k_mode"], v["noise"]) for v in summary.values()})
    for k_mode, noise in groups:
        print(f"\n### ARI (mean over trials), K {k_mode}, noise {noise:.0%}", file=file)
        print("| dataset | method | trials | " + " | ".join(str(b) for b in budgets) + " |", file=file)
        print("|---|---|---|" + "---|" * len(budgets), file=file)
        rows = [v for v in summary.values() if v["k_mode"] == k_mode and v["noise"] == noise]
        for v in sorted(rows, key=_table_order):
            cells = " | ".join(f"{v['ari_mean'][str(b)]:.2f}" for b in budgets)
            print(f"| {v['dataset']} | {v['method']} | {v['n_trials']} | {cells} |", file=file)
        anchor_key = "cobras" if k_mode == "unknown" else "kknown"
        if noise == 0.0:
            for d in sorted({v["dataset"] for v in rows}, key=lambda d: DATASETS.index(d)):
                a = ANCHORS.get(d, {}).get(anchor_key)
                if a:
                    cells = " | ".join("–" if a[BUDGETS.index(b)] is None else f"{a[BUDGETS.index(b)]:.2f}"
                                       for b in budgets if b in BUDGETS)
                    name = "COBRAS (anchor)" if k_mode == "unknown" else "best K-known peer (anchor)"
                    print(f"| {d} | {name} | | {cells} |", file=file)
        print(f"\n### pairwise Jaccard (mean), K {k_mode}, noise {noise:.0%}", file=file)
        print("| dataset | method | " + " | ".join(str(b) for b in budgets) + " |", file=file)
        print("|---|---|" + "---|" * len(budgets), file=file)
        for v in sorted(rows, key=_table_order):
            cells = " | ".join(f"{v['jaccard_mean'][str(b)]:.2f}" for b in budgets)
            print(f"| {v['dataset']} | {v['method']} | {cells} |", file=file)
    ratios = noise_ratios(summary, budgets[-1])
    if ratios:
        print(f"\n### noisy over noise-free ARI at {budgets[-1]} (issue #4 target 0.85; mean ± standard error)",
              file=file)
        print("| dataset | method | K | noise | trials | noisy | noise-free | ratio |", file=file)
        print("|---|---|---|---|---|---|---|---|", file=file)
        for r in ratios:
            print(f"| {r['dataset']} | {r['method']} | {r['k_mode']} | {r['noise']:.0%} | {r['n_trials']} | "
                  f"{r['noisy']:.3f} ± {r['noisy_se']:.3f} | {r['free']:.3f} ± {r['free_se']:.3f} | "
                  f"{r['ratio']:.2f} ± {r['ratio_se']:.2f} |", file=file)
    print("\n### wall time of suggest_queries after an answer batch (s), noise 0, K unknown", file=file)
    print("| dataset | method | median | max |", file=file)
    print("|---|---|---|---|", file=file)
    for v in summary.values():
        if v["noise"] == 0.0 and v["k_mode"] == "unknown" and v["method"] in ("URASC+N", "URASC+N/B10", "URASC+P"):
            print(f"| {v['dataset']} | {v['method']} | {v['suggest_s_median']:.3f} | {v['suggest_s_max']:.3f} |",
                  file=file)


def letter_timing(n_batches=5, batch=10, seed=0):
    """Scale check: letter (20000 x 16, 26 classes), kNN graph, truncated eigenpairs."""
    X, y = load("letter")
    t = time.perf_counter()
    est = URASC(budget=500, random_state=seed).fit(X)
    init_s = time.perf_counter() - t
    times = []
    for _ in range(n_batches):
        t = time.perf_counter()
        qs = est.suggest_queries(batch)
        times.append(time.perf_counter() - t)
        est.tell([(q["i"], q["j"], bool(y[q["i"]] == y[q["j"]])) for q in qs])
    est.update()
    return {"n": int(X.shape[0]), "init_s": init_s, "suggest_s": times, "n_questions": int(est.n_questions_),
            "n_eig": est.diagnostics_["n_eig"], "graph": est.diagnostics_["graph"],
            "bridge_edges": est.diagnostics_["n_bridge_edges"],
            "ari": clustering_scores(y, est.labels_)["ari"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--trial-start", type=int, default=0, help="first trial seed (to split a run)")
    ap.add_argument("--merge", nargs="+", default=None,
                    help="only merge these result files into --out and print the tables; a run (dataset, "
                         "method, K mode, noise, trial) in a later file replaces the same run of an earlier one")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    ap.add_argument("--methods", default=None, help="comma list of METHODS keys kept from the chosen matrix")
    ap.add_argument("--configs", default=None,
                    help="subset of the matrix: 'main' (noise-free, K unknown + known), 'noise', or 'final' "
                         "(the reduced FINAL matrix; final_main / final_noise: its noise-free / noisy part), "
                         "or 'verify' (k_growth='verify', noise 0 / 10%%, K unknown / known; "
                         "verify_unknown: K unknown only), or 'crowd' (three answers per question, majority "
                         "vote, 10%% wrong answers per worker)")
    ap.add_argument("--k-mode", choices=("known", "unknown"), default=None,
                    help="keep only the K-known or K-unknown rows of the chosen matrix")
    ap.add_argument("--letter", action="store_true", help="also time letter (20000 rows)")
    ap.add_argument("--letter-only", action="store_true")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "active.json"))
    args = ap.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.merge:
        by_key, letter, metas = {}, None, []
        for path in args.merge:
            with open(path) as fh:
                part = json.load(fh)
            for r in part["runs"]:
                by_key[(r.get("dataset"), r["method"], r["k_mode"], r["noise"], r["trial"])] = r
            letter = part.get("letter") or letter
            metas.append(part["meta"])
        budgets = metas[0]["budgets"]
        runs = list(by_key.values())
        merged = {"meta": {"merged_from": args.merge, "parts": metas, "budgets": budgets},
                  "runs": runs, "summary": summarise(runs, budgets), "letter": letter}
        merged["noise_ratios"] = noise_ratios(merged["summary"], budgets[-1])
        with open(args.out, "w") as fh:
            json.dump(merged, fh, indent=1)
        print_tables(merged["summary"], budgets)
        if letter:
            print("\nletter:", json.dumps(letter))
        return
    configs = list(CONFIGS)
    if args.configs == "main":
        configs = [c for c in configs if c[2] == 0.0]
    elif args.configs in ("final", "final_main", "final_noise"):
        configs = [c for c in FINAL if args.configs == "final" or (c[2] == 0.0) == (args.configs == "final_main")]
    elif args.configs in ("verify", "verify_unknown"):
        configs = [c for c in VERIFY if args.configs == "verify" or c[1] == "unknown"]
    elif args.configs == "crowd":
        configs = list(CROWD)
    elif args.configs == "noise":
        configs = [c for c in configs if c[2] > 0.0]
    if args.methods:  # after the matrix is chosen, so it also narrows --configs verify / crowd
        keep = set(args.methods.split(","))
        configs = [c for c in configs if c[0] in keep]
    if args.k_mode:
        configs = [c for c in configs if c[1] == args.k_mode]
    result = {"meta": {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "budgets": budgets,
                       "trials": args.trials, "configs": configs, "python": platform.python_version(),
                       "machine": f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.1f}",
                       "argv": sys.argv[1:] if argv is None else argv},
              "runs": [], "summary": {}, "letter": None}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    if not args.letter_only:
        for name in args.datasets.split(","):
            X, y = load(name)
            for method, k_mode, noise in configs:
                for trial in range(args.trial_start, args.trial_start + args.trials):
                    r = run_one(X, y, method, k_mode, noise, trial, budgets)
                    r["dataset"] = name
                    result["runs"].append(r)
                    print(f"{name:10s} {method:12s} K {k_mode:7s} noise {noise:.2f} trial {trial} "
                          f"ARI@{budgets[-1]} {r['ari'][str(budgets[-1])]:.3f} ({r['total_s']:.1f} s)", flush=True)
            result["summary"] = summarise(result["runs"], budgets)
            result["noise_ratios"] = noise_ratios(result["summary"], budgets[-1])
            with open(args.out, "w") as fh:
                json.dump(result, fh, indent=1)
        print_tables(result["summary"], budgets)
    if args.letter or args.letter_only:
        result["letter"] = letter_timing()
        print("\nletter:", json.dumps(result["letter"]))
    result["meta"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
