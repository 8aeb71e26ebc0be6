"""How much of the noisy-answer loss the final labels could still win (issue #4 diagnostic).

A session is replayed with :func:`bench.active.replay` (same oracle stream and seeds as
``bench.active``, K unknown). At the budget its certain sets are edited and the last re-clustering
is run again, scored against the ground truth:

* ``oracle_members``: every member whose class is not its set's majority class leaves the set,
  and the wrong "yes" answers touching it leave the constraints (a perfect detector of wrong
  members);
* ``oracle_answers``: the same, and every other wrong answer is dropped too;
* ``oracle_duplicates``: no member leaves, but every set whose majority class already has an
  older set is merged into the oldest one (a perfect set check; K follows the sets down);
* ``oracle_both``: ``oracle_members`` and ``oracle_duplicates`` together;
* ``detector``: members whose leave-one-out label-spreading score exceeds ``log 9`` (the odds of
  a "yes" with 10% wrong answers) leave their set, founders never, and every "yes" touching them
  leaves the constraints (no ground truth tells right from wrong); the score is how much more a
  member's neighbourhood on the base graph leans to another set than to its own (alpha .99,
  class-mass normalised as in ``URASC``'s label spreading). ``detector_auc`` ranks wrong members
  above right ones by that score.

It edits ``URASC``'s private session state (``_sets``, ``_set_of``, ``_answers``) on a copy: a
measurement, not a feature. Findings: bench/history.md, "final-labels bound" and "perfect set-check oracle".

    python -m bench.active_prune_bound --datasets segment --methods URASC+N/verify --trials 5
    python -m bench.active_prune_bound --datasets ionosphere --methods URASC+N/verify/B10 --trials 10
    python -m bench.active_prune_bound --trials 20 --jobs 2          # bench/results/active_prune_bound.json
    python -m bench.active_prune_bound --methods URASC+N/verify/B10 --trials 20 --jobs 2 --out bench/results/active_prune_bound_b10.json
"""

import argparse
import copy
import json

import numpy as np
from joblib import Parallel, delayed
from sklearn.metrics import roc_auc_score

from bench.active import replay
from bench.datasets import load
from clustering._graph import normalized_adjacency
from clustering._metrics import clustering_scores

LOG_ODDS_OF_A_YES = float(np.log(9.0))


def loo_spreading_scores(W, sets, alpha=0.99):
    """Leave-one-out label-spreading score of every certain-set member.

    Label spreading (Zhou et al. 2004) from all other members, class-mass normalised as in
    ``URASC``'s labels: score = log max over other sets - log own set, so > 0 means the other
    members put the member elsewhere. Dense solve: n up to a few thousand.

    Parameters
    ----------
    W : ndarray or sparse matrix of shape (n, n), float64
        The base graph (symmetric, non-negative).
    sets : list of list of int
        The certain sets (row indices).
    alpha : float in (0, 1), default=0.99
        Spreading strength (``URASC``'s ``propagation_alpha``).

    Returns
    -------
    members : ndarray of shape (m,), int64
    owner : ndarray of shape (m,), int64
        Each member's set.
    scores : ndarray of shape (m,), float64
    """
    W = W.toarray() if hasattr(W, "toarray") else np.asarray(W)
    n = W.shape[0]
    M, _ = normalized_adjacency(W)
    M = M.toarray() if hasattr(M, "toarray") else M
    members = np.concatenate([np.asarray(s, dtype=np.int64) for s in sets])
    owner = np.concatenate([[l] * len(s) for l, s in enumerate(sets)]).astype(np.int64)
    E = np.zeros((n, members.size))
    E[members, np.arange(members.size)] = 1.0
    Z = np.linalg.solve(np.eye(n) - alpha * M, E)  # column k: the spreading of seed k alone
    F = np.stack([Z[:, owner == l].sum(axis=1) for l in range(len(sets))], axis=1)
    mass = F.sum(axis=0)
    scores = np.zeros(members.size)
    for k, x in enumerate(members):
        f, m = F[x].copy(), mass.copy()
        f[owner[k]] -= Z[x, k]
        m[owner[k]] -= Z[:, k].sum()
        f /= np.maximum(m, 1e-300)
        other = np.delete(f, owner[k]).max() if len(sets) > 1 else 0.0
        scores[k] = np.log(max(other, 1e-300)) - np.log(max(f[owner[k]], 1e-300))
    return members, owner, scores


def relabel(est, y, drop, answer_out, majority=None):
    """ARI of the last re-clustering after editing a copy of the session.

    Parameters
    ----------
    est : URASC
        A finished session (left unchanged).
    y : ndarray of shape (n_samples,), int
        Ground-truth classes.
    drop : iterable of int
        Members taken out of their sets (a set keeps its founder if it would be empty).
    answer_out : callable
        ``answer_out(i, j, a)`` -> True for a told answer to leave the constraints.
    majority : sequence of int or None, default=None
        Majority class of each set (``y`` over its members before ``drop``); when given, every
        set is merged into the oldest set of the same majority class.

    Returns
    -------
    float
        Adjusted Rand index.
    """
    e = copy.deepcopy(est)
    drop = {int(v) for v in drop}
    sets = [[v for v in s if v not in drop] or [s[0]] for s in e._sets]
    if majority is not None:  # one set per majority class, in the order of each class's oldest set
        groups = {}
        for c, kept in zip(majority, sets):
            groups.setdefault(int(c), []).extend(kept)
        sets = list(groups.values())
    e._sets = sets
    e._set_of[:] = -1
    for l, s in enumerate(sets):
        e._set_of[s] = l
    e._answers = [(i, j, a) for i, j, a in e._answers if not answer_out(i, j, a)]
    e._recluster()  # K follows the sets (URASC._grow_k)
    return clustering_scores(y, e.labels_)["ari"]


def run_one(X, y, method, noise, trial, budget):
    """One replayed session (K unknown) scored as is, with each oracle and with the detector;
    a JSON-able dict (see the module docstring)."""
    est = replay(X, y, method, noise, trial, budget)
    sets = [list(s) for s in est._sets]
    majority = [np.bincount(y[s]).argmax() for s in sets]
    members, owner, scores = loo_spreading_scores(est._W0, sets)
    wrong = np.array([y[x] != majority[l] for x, l in zip(members, owner)])
    founders = {s[0] for s in sets}
    flagged = {int(x) for x, s in zip(members, scores) if s > LOG_ODDS_OF_A_YES and x not in founders}
    out = {int(x) for x in members[wrong]}
    both = 0 < wrong.sum() < wrong.size

    def wrong_yes(i, j, a):  # a wrong "yes" touching a wrongly placed member
        return a == 1 and (i in out or j in out) and y[i] != y[j]

    return {
        "trial": trial, "n_sets": len(sets), "n_members": int(members.size), "n_wrong_members": int(wrong.sum()),
        "ari": clustering_scores(y, est.labels_)["ari"],
        "oracle_members": relabel(est, y, out, wrong_yes),
        "oracle_answers": relabel(est, y, out, lambda i, j, a: a >= 0 and (a == 1) != (y[i] == y[j])),
        "oracle_duplicates": relabel(est, y, (), lambda i, j, a: False, majority=majority),
        "oracle_both": relabel(est, y, out, wrong_yes, majority=majority),
        "n_duplicate_sets": len(sets) - len(set(majority)),
        "detector": relabel(est, y, flagged, lambda i, j, a: a == 1 and (i in flagged or j in flagged)),
        "n_flagged": len(flagged),
        "n_flagged_wrong": len(flagged & out),
        "detector_auc": float(roc_auc_score(wrong, scores)) if both else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="segment")
    ap.add_argument("--methods", default="URASC+N/verify")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=1, help="trials replayed in parallel (joblib processes)")
    ap.add_argument("--out", default="bench/results/active_prune_bound.json")
    args = ap.parse_args()
    rows = []
    keys = ("ari", "oracle_members", "oracle_answers", "oracle_duplicates", "oracle_both", "detector")
    print(f"{'dataset':<11} {'method':<20} {'noise':>5}  " + " ".join(f"{k:>14}" for k in keys))
    for ds in args.datasets.split(","):
        X, y = load(ds)
        for method in args.methods.split(","):
            for noise in (0.1, 0.0):
                runs = Parallel(n_jobs=args.jobs)(delayed(run_one)(X, y, method, noise, t, args.budget)
                                                  for t in range(args.trials))
                rows.append({"dataset": ds, "method": method, "noise": noise, "trials": runs})
                print(f"{ds:<11} {method:<20} {noise:>5}  "
                      + " ".join(f"{np.mean([r[k] for r in runs]):>14.3f}" for k in keys), flush=True)
    try:
        with open(args.out) as f:
            old = json.load(f)["rows"]
    except FileNotFoundError:
        old = []
    done = {(r["dataset"], r["method"]) for r in rows}
    rows = [r for r in old if (r["dataset"], r["method"]) not in done] + rows
    with open(args.out, "w") as f:
        json.dump({"budget": args.budget, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
