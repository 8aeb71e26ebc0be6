"""Which aggregation of crowd answers gets pairwise questions right most often.

Questions are pairs of a real dataset ("same class?", truth from its labels):
random pairs (must-link as rare as in the data: 14% on ``segment``) or a
given fraction of same-class pairs (a URASC session asks 70-90% same-class
pairs on iris and ionosphere, 20-50% on segment). Simulated crowds answer
them, each worker wrong with its own probability:

* ``fixed-3``: three workers answer everything, wrong 0%, 10% and 25%;
* ``fixed-3-wide``: the same, wrong 0%, 20% and 50%;
* ``one-good``: three workers answer everything, one right, two at random
  (wrong 50%): no model can tell which of the three is the right one;
* ``pool-20``: 20 workers, error rates uniform in [.05, .35], three random
  workers per question;
* ``spammers``: 50 workers, 10% wrong, except 10 who answer at random; three
  random workers per question.

Aggregations: majority vote (a tie is "dont_know", scored one half); our
one-coin Dawid-Skene (``clustering._crowd.one_coin_em``, what a session uses by
default) with and without shrinkage; crowd-kit's DawidSkene (what sessions
used before), OneCoinDawidSkene and GLAD (crowd-kit 1.4.2's Wawa fails on
scikit-learn 1.6+, no ``__sklearn_tags__``; its MMSR raises on some of these
crowds and was the worst where it ran). Accuracy = fraction of questions
aggregated right, mean (and min) over seeds, after 30 and 200 questions.

    python -m bench.crowd_aggregation --must-link-rate 0.5 --out bench/results/crowd_aggregation_ml50.json
"""

import argparse
import json
import time
import warnings

import numpy as np
import pandas as pd

from clustering._crowd import majority_vote, one_coin_em

from .datasets import load

WORDS = ("must_link", "cannot_link")


def crowd(kind, rng):
    """Error rate per worker and the number of answers per question (None = every worker)."""
    if kind == "fixed-3":
        return {"w0": 0.0, "w1": 0.1, "w2": 0.25}, None
    if kind == "fixed-3-wide":
        return {"w0": 0.0, "w1": 0.2, "w2": 0.5}, None
    if kind == "one-good":
        return {"good": 0.0, "random-1": 0.5, "random-2": 0.5}, None
    if kind == "pool-20":
        return {f"w{k}": float(rng.uniform(0.05, 0.35)) for k in range(20)}, 3
    if kind == "spammers":
        return {f"w{k}": (0.5 if k < 10 else 0.1) for k in range(50)}, 3
    raise ValueError(kind)


def simulate(y, kind, n_questions, rng, must_link_rate=None):
    """Answers as a DataFrame (task, worker, label) and the true answer per task.

    ``must_link_rate`` None: random pairs (must-link as often as in the data);
    a number: pairs drawn from one class with that probability, else from two.
    """
    errors, per_question = crowd(kind, rng)
    workers = list(errors)
    rows, truth = [], {}
    for q in range(n_questions):
        same = None if must_link_rate is None else rng.random() < must_link_rate
        while True:
            i, j = rng.choice(len(y), size=2, replace=False)
            if same is None or (y[i] == y[j]) == same:
                break
        right = WORDS[0] if y[i] == y[j] else WORDS[1]
        truth[f"q{q}"] = right
        who = workers if per_question is None else rng.choice(workers, size=per_question, replace=False)
        for w in who:
            wrong = rng.random() < errors[w]
            rows.append({"task": f"q{q}", "worker": str(w), "label": WORDS[1 - WORDS.index(right)] if wrong else right})
    return pd.DataFrame(rows), truth


def aggregations():
    from crowdkit.aggregation import GLAD, DawidSkene, OneCoinDawidSkene

    def majority(df):
        return {t: majority_vote(list(g["label"])) for t, g in df.groupby("task")}

    def crowdkit(model):
        return lambda df: {str(t): str(v) for t, v in model().fit_predict(df).items()}

    return {
        "majority": majority,
        "one_coin": lambda df: one_coin_em(df["task"], df["worker"], df["label"])[0],
        "one_coin_no_shrinkage": lambda df: one_coin_em(df["task"], df["worker"], df["label"], shrinkage=0.0)[0],
        "dawid_skene": crowdkit(lambda: DawidSkene(n_iter=100)),
        "crowdkit_one_coin": crowdkit(lambda: OneCoinDawidSkene(n_iter=100)),
        "glad": crowdkit(lambda: GLAD(n_iter=100, silent=True)),
    }


def accuracy(labels, truth):
    return float(np.mean([1.0 if labels.get(t) == a else 0.5 if labels.get(t, "dont_know") == "dont_know" else 0.0
                          for t, a in truth.items()]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="segment")
    ap.add_argument("--questions", default="30,200", help="comma-separated question counts")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--must-link-rate", type=float, default=None,
                    help="fraction of same-class pairs (default: random pairs, as in the data)")
    ap.add_argument("--out", default="bench/results/crowd_aggregation_random.json")
    args = ap.parse_args(argv)
    _, y = load(args.dataset)
    methods = aggregations()
    kinds = ("fixed-3", "fixed-3-wide", "one-good", "pool-20", "spammers")
    pairs = "random pairs" if args.must_link_rate is None else f"pairs ({args.must_link_rate:.0%} same class)"
    out = {"dataset": args.dataset, "seeds": args.seeds, "must_link_rate": args.must_link_rate, "runs": {}}
    for n_questions in map(int, args.questions.split(",")):
        results = {k: {m: [] for m in methods} for k in kinds}
        seconds = {m: 0.0 for m in methods}
        for kind in kinds:
            for seed in range(args.seeds):
                df, truth = simulate(y, kind, n_questions, np.random.default_rng(seed), args.must_link_rate)
                for name, fn in methods.items():
                    t = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        labels = fn(df)
                    seconds[name] += time.perf_counter() - t
                    results[kind][name].append(accuracy(labels, truth))
        print(f"accuracy of the aggregated answer, {n_questions} {pairs} of {args.dataset}, "
              f"{args.seeds} seeds: mean (min)")
        print(f"{'crowd':13s}" + "".join(f"{m:>22s}" for m in methods))
        for kind in kinds:
            print(f"{kind:13s}" + "".join(f"{np.mean(v):>15.3f} ({np.min(v):.2f})" for v in results[kind].values()))
        out["runs"][str(n_questions)] = {"accuracy": results, "seconds_total": seconds}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
