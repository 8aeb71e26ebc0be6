"""Blobs, simulated oracles and session drivers shared by the URASC tests."""

import numpy as np
from sklearn.datasets import make_blobs


def _blobs(n=90, k=3, seed=0, std=1.0):
    X, y = make_blobs(n_samples=n, centers=k, cluster_std=std, random_state=seed)
    return X, y


def _oracle(y, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)

    def ask(i, j):
        a = bool(y[i] == y[j])
        return (not a) if rng.random() < noise else a

    return ask



def _answer_until_done(est, y, batch):
    """Answer ``batch`` questions at a time from the noise-free truth until the budget is spent."""
    o = _oracle(y, noise=0.0)
    while True:
        qs = est.suggest_queries(batch)
        if not qs:
            break
        est.tell([(q["i"], q["j"], o(q["i"], q["j"])) for q in qs])
    est.update()

def _run_ask_tell(est, X, oracle, batch=1, max_steps=10_000):
    """Drive a session by hand, checking the per-step invariants of §8.2."""
    est.fit(X)
    history = []
    for _ in range(max_steps):
        sets_before = [list(s) for s in est._sets]
        qs = est.suggest_queries(batch)
        if not qs:
            break
        for qd in qs:
            x, r = qd["i"], qd["j"]
            assert est._set_of[x] < 0, "x* must be uncertain"
            assert est._set_of[r] >= 0, "representative must be certain"
        answers = [(qd["i"], qd["j"], oracle(qd["i"], qd["j"])) for qd in qs]
        outcomes = est.tell(answers)
        assert all(o == "accepted" for o in outcomes), outcomes
        history.append((sets_before, qs, answers))
        _check_sets_and_answers(est)
    return history


def _check_sets_and_answers(est):
    sets = est._sets
    flat = [v for s in sets for v in s]
    assert len(flat) == len(set(flat)), "certain sets must be disjoint"
    set_of = {v: l for l, s in enumerate(sets) for v in s}
    pairs = set()
    for i, j, a in est._answers:
        key = (min(i, j), max(i, j))
        assert key not in pairs, "a pair was asked twice"
        pairs.add(key)
        if i in set_of and j in set_of and a != -1:
            assert (set_of[i] == set_of[j]) == (a == 1), "answer disagrees with the certain sets"
    assert est._K >= len(sets)
