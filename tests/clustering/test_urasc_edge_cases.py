"""URASC non-regression tests for edge cases: the fit-time budget, the answer codes ``tell``
accepts, restoring a state saved between ``tell`` and re-clustering, and every answer "no"."""

import json

import numpy as np
import pytest
from sklearn.base import clone

from clustering._urasc import URASC
from clustering.exceptions import InvalidInputError

from .urasc_helpers import _blobs, _oracle


def _round_trip(state):
    return json.loads(json.dumps(state))


# ----------------------------------------------------------------------------- fit(budget=...)

def test_fit_budget_is_the_sessions_and_leaves_the_parameter_alone():
    """Non-regression: fit(X, budget=5) overwrote the constructor parameter (get_params, clone)."""
    X, y = _blobs(40, 3, seed=1)
    est = URASC(budget=50, random_state=0, n_init=2)
    est.fit(X, oracle=_oracle(y), budget=5)
    assert est.get_params()["budget"] == 50 and clone(est).budget == 50
    assert est.budget_ == 5 and est.n_questions_ == 5
    assert est.suggest_queries(3) == []
    restored = URASC.from_state(X, _round_trip(est.get_state()))
    assert restored.budget == 50 and restored.budget_ == 5 and restored.suggest_queries(3) == []
    # without the argument the parameter is the session's budget
    assert URASC(budget=7, random_state=0).fit(X).budget_ == 7
    assert URASC(budget=None, random_state=0).fit(X, budget=None).budget_ is None
    # a state saved before "budget" was part of it kept the session's budget in its params
    old = _round_trip(est.get_state())
    del old["budget"]
    old["params"]["budget"] = 5
    assert URASC.from_state(X, old).budget_ == 5


@pytest.mark.parametrize("budget", [-1, 2.5, "10", True])
def test_fit_rejects_an_invalid_budget(budget):
    X, _ = _blobs(20, 2, seed=0)
    with pytest.raises(InvalidInputError, match="budget"):
        URASC(random_state=0).fit(X, budget=budget)


# ----------------------------------------------------------------------------- answer codes

def test_integer_answers_are_refused_with_the_accepted_values():
    """Non-regression: tell read 1 / 0 / -1 as yes / no / don't know, so an oracle using the
    package's +1 / -1 convention had every "no" silently stored as "don't know"."""
    X, y = _blobs(40, 3, seed=2)
    est = URASC(budget=20, random_state=0, n_init=2).fit(X)
    (q,) = est.suggest_queries(1)
    for value in (1, 0, -1, np.int64(-1)):
        with pytest.raises(InvalidInputError, match="ambiguous.*must_link.*cannot_link.*dont_know"):
            est.tell([(q["i"], q["j"], value)])
    assert est.n_questions_ == 0  # nothing recorded
    # a batch with one integer answer records none of it
    with pytest.raises(InvalidInputError):
        est.tell([(q["i"], q["j"], True), (0, 1, -1)])
    assert est.n_questions_ == 0
    with pytest.raises(InvalidInputError):
        URASC(budget=20, random_state=0, n_init=2).fit(X, oracle=lambda i, j: 1 if y[i] == y[j] else -1)


@pytest.mark.parametrize("yes, no, dont_know", [
    (True, False, None),
    (np.True_, np.False_, None),
    ("must_link", "cannot_link", "dont_know"),
    ("yes", "no", "unknown"),
    ("Same", "DIFFERENT", "none"),
])
def test_accepted_answers_are_stored_with_the_same_codes(yes, no, dont_know):
    """Bools, numpy bools and the words keep their meaning; answers_ / states store 1 / 0 / -1."""
    X, y = _blobs(40, 3, seed=2)
    rng = np.random.default_rng(0)

    def oracle(i, j):
        if rng.random() < 0.2:
            return dont_know
        return yes if y[i] == y[j] else no

    est = URASC(budget=25, random_state=0, n_init=2).fit(X, oracle=oracle)
    codes = {a for _, _, a in est.answers_.tolist()}
    assert codes <= {1, 0, -1} and {0, -1} <= codes
    for i, j, a in est.answers_.tolist():
        assert a == -1 or a == int(y[i] == y[j])
    assert [a for _, _, a in est.get_state()["answers"]] == est.answers_[:, 2].tolist()
    for s in est.certain_sets_:
        assert len(set(y[s])) == 1


# ----------------------------------------------------------------------------- stale states

@pytest.mark.parametrize("params", [
    {},
    {"strategy": "random"},
    {"k_growth": "verify", "representative": "founder"},
])
def test_a_state_saved_after_tell_restores_the_fitted_attributes(params):
    """Non-regression: from_state on a state saved between tell and the next clustering restored
    no labels_ / embedding_ / affinity_matrix_ (defer_recluster False or True)."""
    import copy

    X, y = _blobs(50, 3, seed=3)
    oracle = _oracle(y, noise=0.1, seed=4)
    est = URASC(budget=30, random_state=1, n_init=2, **params).fit(X)
    checked = 0
    for step in range(6):
        qs = est.suggest_queries(3)
        est.tell([(q["i"], q["j"], oracle(q["i"], q["j"])) for q in qs])
        state = _round_trip(est.get_state())
        if not state["stale"]:
            continue
        # defer_recluster=False: every attribute, equal to the saved estimator's after update()
        ref = copy.deepcopy(est).update()
        full = URASC.from_state(X, state)
        np.testing.assert_array_equal(full.labels_, ref.labels_)
        np.testing.assert_array_equal(full.embedding_, ref.embedding_)
        np.testing.assert_array_equal(full.eigenvalues_, ref.eigenvalues_)
        np.testing.assert_array_equal(full.affinity_matrix_, ref.affinity_matrix_)
        assert full.n_clusters_ == ref.n_clusters_ and full.diagnostics_ == ref.diagnostics_
        assert full.suggest_queries(3) == ref.suggest_queries(3)
        assert _round_trip(full.get_state()) == _round_trip(ref.get_state())
        # defer_recluster=True: the saved labels, and telling continues as the saved estimator
        lazy = URASC.from_state(X, state, defer_recluster=True)
        np.testing.assert_array_equal(lazy.labels_, est.labels_)
        # the answers and sets as saved, before any update (a seeded session's pass reads them first)
        np.testing.assert_array_equal(lazy.answers_, np.asarray(state["answers"]).reshape(-1, 3))
        assert lazy.certain_sets_ == [[int(v) for v in s] for s in state["certain_sets"]]
        twin = copy.deepcopy(est)
        nxt = twin.suggest_queries(2)
        assert lazy.suggest_queries(2) == nxt
        answers = [(q["i"], q["j"], oracle(q["i"], q["j"])) for q in nxt]
        assert lazy.tell(answers) == twin.tell(answers)
        np.testing.assert_array_equal(lazy.update().labels_, twin.update().labels_)
        checked += 1
    assert checked >= 2


# ----------------------------------------------------------------------------- every answer "no"

def _check_labels_respect_sets(est):
    labels, sets, K = est.labels_, est.certain_sets_, est.n_clusters_
    assert labels.shape == (est.affinity_matrix_.shape[0],) and 0 <= labels.min() and labels.max() < K
    for s in sets:
        assert len(set(labels[s].tolist())) == 1, "a certain set is split"
    # different sets apart where K allows: min(K, number of sets) labels among the sets
    assert len({int(labels[s[0]]) for s in sets}) >= min(K, len(sets))
    assert np.unique(labels).size >= min(K, max(len(sets), 1))


@pytest.mark.parametrize("n", [3, 5, 8, 12])
@pytest.mark.parametrize("kernel", ["local", "gaussian"])
@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize("n_clusters", [None, 2])
def test_every_answer_no_gives_labels_that_respect_the_certain_sets(n, kernel, batch_size, n_clusters):
    """Non-regression: with every answer "no" each sample became its own certain set, W^t lost
    every edge, the embedding was zero and k-means gave all samples one label."""
    X = np.random.default_rng(n).normal(size=(n, 2)) * 5
    est = URASC(n_clusters=n_clusters, budget=None, random_state=0, kernel=kernel, batch_size=batch_size,
                n_init=2).fit(X, oracle=lambda i, j: False)
    assert len(est.certain_sets_) == n and est.n_clusters_ == n - 1
    assert np.all(est.affinity_matrix_ == 0)
    _check_labels_respect_sets(est)
    assert est.diagnostics_["separated_labels"] >= 1


@pytest.mark.parametrize("params", [
    {"k_growth": "robust"},
    {"k_growth": "verify", "representative": "founder"},
    {"n_clusters": 3, "k_growth": "verify", "representative": "founder"},
])
def test_every_answer_no_under_the_noisy_oracle_rules(params):
    X = np.random.default_rng(1).normal(size=(9, 2)) * 5
    est = URASC(budget=None, random_state=0, n_init=2, **params).fit(X, oracle=lambda i, j: False)
    _check_labels_respect_sets(est)


def test_random_strategy_every_answer_no_uses_every_cluster():
    X = np.random.default_rng(2).normal(size=(8, 2)) * 5
    for n_clusters in (None, 2, 4):
        est = URASC(n_clusters=n_clusters, strategy="random", budget=None, random_state=0,
                    n_init=2).fit(X, oracle=lambda i, j: False)
        assert np.unique(est.labels_).size == est.n_clusters_


# ------------------------------------------------------------------- a far outlier: huge eigenvector entries

@pytest.mark.parametrize("batch_size", [1, 3])
def test_a_far_outlier_under_the_gaussian_kernel_gives_finite_scores(batch_size):
    """Non-regression: one row at 1e4 among blobs of width 10, kernel="gaussian". Its degree is about 3e-183, so the
    D-normalised eigenvectors hold entries near 2e91 there and the U6 gradient norms squared them twice: "overflow
    encountered in square", inf scores, and with a batch "invalid value" (inf - inf) in the diversity weights."""
    import warnings

    rng = np.random.RandomState(0)
    y = np.arange(30) % 3
    X = (rng.randn(3, 2) * 10)[y] + 0.5 * rng.randn(30, 2)
    X[0] = 1e4
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = URASC(budget=8, kernel="gaussian", batch_size=batch_size, random_state=0).fit(X, oracle=_oracle(y))
        grad = est.gradient_[np.isfinite(est.gradient_)]
        assert grad.size and np.all(grad >= 0)
        for q in est.suggest_queries(3) + est.query_log_:
            assert q["score"] is None or np.isfinite(q["score"])


def test_a_far_outliers_gradient_norm_leaves_the_other_pairs_norms_alone():
    """Non-regression: the rescaling of huge eigenvector entries divided every pair of the chunk by the
    outlier's entry (2e91), so the norms of the pairs without it underflowed to 0: whenever the outlier
    was a candidate, every other candidate's gradient was 0 and the rest of a batch was picked blind."""
    from clustering._urasc._selection import _gradient_norms

    rng = np.random.RandomState(0)
    V = rng.randn(30, 4) * 0.2
    V[0] *= 2e91 / np.abs(V[0]).max()
    lam = np.array([0.0, 0.1, 0.5, 0.9])
    cand, reps = np.arange(30), np.r_[5, np.full(29, 6)]
    kw = dict(perturbation="exact", terms="all", gap_floor=1e-8)
    together = _gradient_norms(V, lam, cand, reps, 3, **kw)
    alone = [_gradient_norms(V, lam, cand[i:i + 1], reps[i:i + 1], 3, **kw)[0] for i in range(30)]
    np.testing.assert_allclose(together, alone, rtol=1e-12)
    assert np.all(together[1:] > 0) and np.isfinite(together[0])


def test_with_a_far_outlier_among_the_candidates_the_others_keep_their_gradients():
    rng = np.random.RandomState(0)
    y = np.arange(30) % 3
    X = (rng.randn(3, 2) * 10)[y] + 0.5 * rng.randn(30, 2)
    X[0] = 1e4
    est = URASC(budget=3, kernel="gaussian", batch_size=3, random_state=0).fit(X, oracle=_oracle(y))
    assert est.query_log_[0]["sample"] == 0  # the outlier, first of the batch
    others = est.gradient_[1:][np.isfinite(est.gradient_[1:])]
    assert others.size and np.all(others > 0), others  # were all 0: the batch's other picks ignored them


@pytest.mark.parametrize("kernel", ["local", "gaussian"])
@pytest.mark.parametrize("graph", ["dense", "knn"])
def test_entropy_neighbours_are_the_base_graphs_most_similar_with_its_weights(kernel, graph):
    # U9: kNN(i) = the k_H most similar samples under W0 (self excluded, each once) and their weights
    # w_il from W0 (before any answer). The kNN storage used Euclidean neighbours with a global Gaussian
    # weight instead, up to 0.87 away from W0's entry under the local kernel (iris-sized data)
    X, y = _blobs(n=150, k=3, seed=1, std=2.5)
    est = URASC(n_clusters=3, budget=0, kernel=kernel, graph=graph, random_state=0).fit(X, oracle=_oracle(y))
    W0 = est._W0.toarray() if hasattr(est._W0, "toarray") else np.asarray(est._W0)
    nbr, w = est._nbr, est._nbr_w
    k = min(est.n_neighbors_entropy, len(X) - 1)
    assert nbr.shape == (len(X), k)
    assert not np.any(nbr == np.arange(len(X))[:, None])
    assert all(np.unique(row).size == k for row in nbr)
    np.testing.assert_array_equal(w, np.take_along_axis(W0, nbr, axis=1))
    off = np.where(np.eye(len(X), dtype=bool), -np.inf, W0)
    np.testing.assert_allclose(np.sort(w, axis=1), np.sort(off, axis=1)[:, -k:], rtol=0, atol=0)
