"""Gold questions and aggregation against a crowd with workers who answer at random.

A URASC session (K known, 60 questions in batches of 20, every question
answered by five workers) runs on KEEL iris, wine and wdbc. Three workers are
honest (wrong 10% of the time), two answer at random. Each worker first
answers 20 gold questions (pairs with a known answer, 10 same-class and 10 not;
never told to the model): workers whose gold accuracy is below 0.75 are
flagged, and in the ``+gold`` rows their answers are dropped before
aggregation. Aggregations: majority vote, Shoal's one-coin Dawid-Skene
(``clustering._crowd.one_coin_em``, the session default), crowd-kit's
DawidSkene, GLAD and MACE, each fitted on all the session's answers before
every batch is told (as a session's pass does). Reference: the same
questions with five honest workers (majority vote). Reported: mean ARI over
5 trials and its ratio to the reference ("kept").

    python -m bench.crowd_quality --out bench/results/crowd_quality.json
"""

import argparse
import json
import time
import warnings

import numpy as np

from clustering._crowd import majority_vote, one_coin_em
from clustering._crowd_quality import crowdkit_aggregate, flagged_workers, gold_scores
from clustering._metrics import clustering_scores
from clustering._urasc import URASC

from .datasets import load

WORDS = ("must_link", "cannot_link")
HONEST_ERROR, N_GOLD, THRESHOLD = 0.1, 20, 0.75
CROWD = {"h0": HONEST_ERROR, "h1": HONEST_ERROR, "h2": HONEST_ERROR, "r0": None, "r1": None}  # None: at random
HONEST = {f"h{k}": HONEST_ERROR for k in range(5)}
AGGREGATIONS = ("majority", "one_coin", "dawid_skene", "glad", "mace")


def _answer(truth, error, rng):
    if error is None:
        return WORDS[int(rng.integers(2))]
    return WORDS[1 - WORDS.index(truth)] if rng.random() < error else truth


def _gold(y, rng):
    pairs = []
    for same in [True] * (N_GOLD // 2) + [False] * (N_GOLD - N_GOLD // 2):
        while True:
            i, j = (int(v) for v in rng.choice(len(y), size=2, replace=False))
            if (y[i] == y[j]) == same:
                pairs.append((f"g{i}_{j}", WORDS[0] if same else WORDS[1]))
                break
    return dict(pairs)


def _aggregate(answers, method, seed):
    """question -> must_link / cannot_link / dont_know from ``answers`` [(question, worker, word)]."""
    if not answers:
        return {}
    tasks, workers, labels = zip(*answers)
    if method == "majority":
        votes = {}
        for t, w in zip(tasks, labels):
            votes.setdefault(t, []).append(w)
        return {t: majority_vote(v) for t, v in votes.items()}
    if method == "one_coin":
        return one_coin_em(list(tasks), list(workers), list(labels))[0]
    return crowdkit_aggregate(tasks, workers, labels, method, random_state=seed)[0]


def session(X, y, crowd, method, use_gold, trial, budget=60, batch=20):
    """ARI of one simulated session, and the workers flagged by gold."""
    rng, gold_rng = np.random.default_rng(1000 + trial), np.random.default_rng(2000 + trial)
    flagged = set()
    if use_gold:
        gold = _gold(y, gold_rng)
        given = [(w, key, _answer(truth, err, gold_rng)) for w, err in crowd.items() for key, truth in gold.items()]
        flagged = flagged_workers(gold_scores(given, gold), THRESHOLD, N_GOLD // 2)
    k = int(np.unique(y).size)
    est = URASC(n_clusters=k, budget=budget, random_state=trial).fit(X)
    answers = []
    while True:
        qs = est.suggest_queries(batch)
        if not qs:
            break
        for q in qs:
            truth = WORDS[0] if y[q["i"]] == y[q["j"]] else WORDS[1]
            for w, err in crowd.items():
                word = _answer(truth, err, rng)
                if w not in flagged:
                    answers.append((f"{q['i']}_{q['j']}", w, word))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agg = _aggregate(answers, method, trial)
        told = []
        for q in qs:
            word = agg.get(f"{q['i']}_{q['j']}", "dont_know")
            if word != "dont_know":
                told.append((q["i"], q["j"], word == WORDS[0]))
        est.tell(told)
    est.update()
    return clustering_scores(y, est.labels_)["ari"], sorted(flagged)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="iris,wine,wdbc")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--out", default="bench/results/crowd_quality.json")
    args = ap.parse_args(argv)
    rows = [("majority", False), ("one_coin", False)] + [(m, True) for m in AGGREGATIONS]
    out = {"trials": args.trials, "honest_error": HONEST_ERROR, "gold_questions": N_GOLD, "threshold": THRESHOLD,
           "datasets": {}}
    t0 = time.perf_counter()
    for name in args.datasets.split(","):
        X, y = load(name)
        ref = [session(X, y, HONEST, "majority", False, t)[0] for t in range(args.trials)]
        res, flags = {}, []
        for m, g in rows:
            runs = [session(X, y, CROWD, m, g, t) for t in range(args.trials)]
            res[m + ("+gold" if g else "")] = [a for a, _ in runs]
            if g and m == "majority":
                flags = [f for _, f in runs]
        out["datasets"][name] = {"reference": ref, "ari": res, "flagged": flags}
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
        print(f"{name}: reference (5 honest workers) ARI {np.mean(ref):.3f}; flagged by gold per trial: {flags}",
              flush=True)
    print(f"\nmean ARI over {args.trials} trials (kept = ARI / reference); 3 honest workers (10% wrong) + 2 at random")
    names = list(out["datasets"])
    print(f"{'aggregation':20s}" + "".join(f"{n:>18s}" for n in names) + f"{'mean kept':>12s}")
    for key in out["datasets"][names[0]]["ari"]:
        cells, kept = "", []
        for n in names:
            d = out["datasets"][n]
            a, r = np.mean(d["ari"][key]), np.mean(d["reference"])
            kept.append(a / r)
            cells += f"{a:>9.3f} ({a / r:.2f})"
        print(f"{key:20s}{cells}{np.mean(kept):>12.3f}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
