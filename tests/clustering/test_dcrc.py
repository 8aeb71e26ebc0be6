"""DCRC (spec ``shared/specs/dcrc.md`` §8 test oracles) as properties."""

import itertools
import json

import numpy as np
import pytest
from scipy.optimize import check_grad
from scipy.special import log_softmax
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from clustering._dcrc._estimator import DCRC, _column_std
from clustering._dcrc._em import (
    _answer_proba,
    _compat_coefficients,
    _compatibility,
    _e_step,
    _EStepPlan,
    _ideal_answer,
    _neg_objective,
    _workspace,
)
from clustering.exceptions import ConstraintWarning, InvalidInputError

ANSWERS = (1, -1, 0)


def _random_triplets(y, m, rng):
    t = np.array([rng.choice(len(y), 3, replace=False) for _ in range(m)], dtype=np.int64)
    return t, _ideal_answer(y[t[:, 0]], y[t[:, 1]], y[t[:, 2]])


def _augment(X):
    Xs = (X - X.mean(0)) / X.std(0)
    return np.hstack([Xs, np.ones((len(X), 1))])


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(150, centers=3, cluster_std=1.0, center_box=(-8, 8), random_state=3)
    return X, y


# ---------------------------------------------------------------- formulas


@pytest.mark.parametrize("K", [2, 3, 5])
def test_table2_matches_enumeration(K):
    """Oracle 1: Table II equals brute force over the K^2 labelings of the
    other two members, for every position and answer."""
    rng = np.random.default_rng(K)
    others = {0: (1, 2), 1: (0, 2), 2: (0, 1)}
    for pos, ans in itertools.product(range(3), ANSWERS):
        q = rng.dirichlet(np.ones(K), size=3)  # q_a, q_b, q_c
        o1, o2 = others[pos]
        A, B = q[o1][None], q[o2][None]
        got = _compatibility(A, B, _compat_coefficients([pos], [ans]))[0]
        want = np.zeros(K)
        for k in range(K):
            for y1, y2 in itertools.product(range(K), repeat=2):
                y = [0, 0, 0]
                y[pos], y[o1], y[o2] = k, y1, y2
                if _ideal_answer(*y) == ans:
                    want[k] += q[o1][y1] * q[o2][y2]
        np.testing.assert_allclose(got, want, atol=1e-12, rtol=0)


def test_answer_probabilities_are_distributions():
    """Oracle 2: P_Q(yes) + P_Q(no) + P_Q(dnk) = 1, each in [0, 1]; the same
    for every compatibility M_{t,i}(k)."""
    rng = np.random.default_rng(0)
    qa, qb, qc = (rng.dirichlet(np.ones(4), size=200) for _ in range(3))
    pr = _answer_proba(qa, qb, qc)
    assert pr.min() >= 0 and pr.max() <= 1
    np.testing.assert_allclose(pr.sum(1), 1.0, atol=1e-12)
    for pos in range(3):
        Ms = [_compatibility(qa, qb, _compat_coefficients([pos] * 200, [a] * 200)) for a in ANSWERS]
        assert min(M.min() for M in Ms) >= -1e-12 and max(M.max() for M in Ms) <= 1 + 1e-12
        np.testing.assert_allclose(sum(Ms), 1.0, atol=1e-12)


def _likelihood_bound(q, lp_c, tri, ans, eps):
    """First three sums of DC-10b (constraint expectation, q ln p, entropy of q)."""
    pr = _answer_proba(q[tri[:, 0]], q[tri[:, 1]], q[tri[:, 2]])
    pi = pr[np.arange(len(ans)), np.where(ans == 1, 0, np.where(ans == -1, 1, 2))]
    return float(
        np.sum(pi * np.log(1 - eps) + (1 - pi) * np.log(eps / 2))
        + np.sum(q * lp_c)
        - np.sum(q * np.log(q))
    )


def test_mean_field_bound_below_exact_likelihood_and_improves():
    """Oracle 3: exact L(W) (DC-7 by enumeration) >= the bound for any
    mean-field q (Jensen), and a converged E-step beats q = p."""
    rng = np.random.default_rng(1)
    n, K, eps = 6, 3, 0.1
    tri = np.array([[0, 1, 2], [3, 4, 5], [0, 3, 5], [1, 4, 2], [5, 0, 1]])
    ans = np.array([1, -1, 0, 1, -1], dtype=np.int8)
    lp = log_softmax(rng.normal(size=(n, K)), axis=1)
    exact = -np.inf
    for y in itertools.product(range(K), repeat=n):
        y = np.asarray(y)
        ideal = _ideal_answer(y[tri[:, 0]], y[tri[:, 1]], y[tri[:, 2]])
        term = np.sum(np.where(ideal == ans, np.log(1 - eps), np.log(eps / 2))) + lp[np.arange(n), y].sum()
        exact = np.logaddexp(exact, term)
    for _ in range(20):
        q = rng.dirichlet(np.ones(K), size=n)
        assert _likelihood_bound(q, lp, tri, ans, eps) <= exact + 1e-12
    plan = _EStepPlan(tri, ans, np.ones(len(ans)), n)
    q = np.exp(lp)
    at_p = _likelihood_bound(q, lp, tri, ans, eps)
    _e_step(q, lp, plan, np.log(2 * (1 - eps) / eps), False, 200, 1e-12)
    after = _likelihood_bound(q, lp, tri, ans, eps)
    assert at_p <= after <= exact + 1e-12


# ------------------------------------------------------ gradient and optimisation


@pytest.mark.parametrize("balance", [True, False])
@pytest.mark.parametrize("u_empty", [True, False])
def test_mstep_gradient_matches_finite_differences(balance, u_empty):
    """Oracle 5: DC-16 vs central finite differences (scipy check_grad)."""
    rng = np.random.default_rng(2)
    N, d, K = 40, 3, 3
    Xa = _augment(rng.normal(size=(N, d)))
    c_idx = np.arange(N) if u_empty else np.arange(0, N, 2)
    u_idx = np.setdiff1d(np.arange(N), c_idx)
    q = rng.dirichlet(np.ones(K), size=c_idx.size)
    args = (Xa, c_idx, q, u_idx, 0.05, 0.7, balance, K)
    f = lambda w: _neg_objective(w, *args)[0]  # noqa: E731
    g = lambda w: _neg_objective(w, *args)[1]  # noqa: E731
    for _ in range(3):
        w = rng.normal(size=K * (d + 1))
        err = check_grad(f, g, w, epsilon=1e-6)
        assert err / np.linalg.norm(g(w)) < 1e-5


@pytest.mark.parametrize("balance, tau", [(True, 0.7), (False, 0.7), (False, 0.0)])
def test_mstep_scratch_arrays_change_nothing(balance, tau):
    """The reused workspace gives the values of fresh arrays, call after call (no state leaks)."""
    rng = np.random.default_rng(3)
    N, d, K = 50, 3, 4
    Xa = _augment(rng.normal(size=(N, d)))
    c_idx, u_idx = np.arange(0, N, 3), np.setdiff1d(np.arange(N), np.arange(0, N, 3))
    q = rng.dirichlet(np.ones(K), size=c_idx.size)
    work = _workspace(K, N)
    for _ in range(3):
        w = rng.normal(size=K * (d + 1))
        f0, g0 = _neg_objective(w, Xa, c_idx, q, u_idx, 0.05, tau, balance, K)
        f1, g1 = _neg_objective(w, Xa, c_idx, q, u_idx, 0.05, tau, balance, K, work)
        assert f1 == f0 and np.array_equal(g1, g0)


@pytest.mark.parametrize("K", [2, 3])
def test_kmeans_logistic_start_maximises_the_penalised_likelihood(K):
    """Spec 4.2: the start's penalty is lambda R(W) (DC-7a), so W maximises
    sum_i ln p(k-means label_i) - lambda R(W): zero gradient of DC-15 with
    q = one-hot labels and tau = 0. With K = 2 the rows (-w/2, w/2) have
    R = ||w||^2 / 2, so scikit-learn's binary fit needs C = 1 / lambda."""
    from sklearn.cluster import KMeans

    from clustering._dcrc._em import _kmeans_logistic_init

    X, _ = make_blobs(80, centers=K, cluster_std=2.5, random_state=4)
    Xs = (X - X.mean(0)) / X.std(0)
    lam = 0.05
    W = _kmeans_logistic_init(Xs, K, lam, 10, np.random.RandomState(0))
    seed = int(np.random.RandomState(0).randint(np.iinfo(np.int32).max))
    labels = KMeans(n_clusters=K, n_init=10, random_state=seed).fit(Xs).labels_
    Xa = np.hstack([Xs, np.ones((len(Xs), 1))])
    q = np.eye(K)[labels]
    _, g = _neg_objective(W.ravel(), Xa, np.arange(len(Xs)), q, np.zeros(0, dtype=np.int64), lam, 0.0, False, K)
    # scikit-learn stops at its tol: 0.006 (K = 2), 0.008 (K = 3); C = 1 / (2 lambda) at K = 2 left 0.29
    assert np.abs(g).max() < 0.05


def test_lower_bound_never_decreases(blobs):
    """Oracle 6: LB non-decreasing across every E- and M-step (soft mode)."""
    X, y = blobs
    t, a = _random_triplets(y, 45, np.random.default_rng(0))
    a[:5] = 0  # some wrong dnk answers too
    m = DCRC(3, epsilon=0.1, n_init=1, random_state=0, max_iter=30).fit(X, triplets=t, triplet_answer=a)
    lb = np.asarray(m.lower_bound_)
    assert lb.size >= 4
    assert np.all(np.diff(lb) >= -1e-8 * np.abs(lb[:-1]))


def test_probabilities_sum_to_one(blobs):
    """Oracle 7, and predict_proba on new points."""
    X, y = blobs
    t, a = _random_triplets(y, 30, np.random.default_rng(1))
    m = DCRC(3, random_state=0).fit(X, triplets=t, triplet_answer=a)
    for P in (m.proba_, m.posterior_, m.predict_proba(X[:7] + 0.3)):
        assert P.min() >= 0
        np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(m.triplet_proba_.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(m.predict_proba(X), m.proba_, atol=1e-12)
    assert np.array_equal(m.predict(X), m.labels_)
    assert m.labels_.dtype == np.int64 and m.labels_.shape == (len(X),)


# ----------------------------------------------------------- limiting cases


def test_epsilon_two_thirds_ignores_answers(blobs):
    """Oracle 8 (spec §7.1: constraints stop mattering at 2/3, not 1/3):
    the E-step returns q = p, the fit does not depend on the answers, and
    the likelihood part of the M-step gradient vanishes, so every M-step
    follows the constraint-free (logistic clustering) objective."""
    X, y = blobs
    rng = np.random.default_rng(3)
    t, a = _random_triplets(y, 40, rng)
    a_random = rng.choice([1, -1, 0], size=len(a)).astype(np.int8)
    init = np.random.default_rng(4).normal(size=(3, X.shape[1] + 1))
    fits = []
    for answers in (a, a_random):
        with pytest.warns(ConstraintWarning, match="constraints ignored"):
            fits.append(DCRC(3, epsilon=2 / 3, init=init, random_state=0).fit(X, triplets=t, triplet_answer=answers))
    np.testing.assert_allclose(fits[0].proba_, fits[1].proba_, atol=1e-12)
    np.testing.assert_allclose(fits[0].posterior_, fits[1].posterior_, atol=1e-12)
    # E-step: q = p exactly
    c = fits[0].constrained_index_
    lp = log_softmax(rng.normal(size=(c.size, 3)), axis=1)
    q = np.exp(lp)
    tri_loc = np.searchsorted(c, t)
    _e_step(q, lp, _EStepPlan(tri_loc, a, np.ones(len(a)), c.size), 0.0, False, 50, 1e-12)
    np.testing.assert_allclose(q, np.exp(lp), atol=1e-12)
    # the likelihood part of grad F vanishes at the current W: with q = p(W)
    # the M-step starts along the gradient of the constraint-free objective
    m = fits[0]
    Xa = np.hstack([(X - m.mean_) / m.scale_, np.ones((len(X), 1))])
    u = np.setdiff1d(np.arange(len(X)), c)
    none = (np.zeros(0, dtype=np.int64), np.zeros((0, 3)))
    for W in (init, np.hstack([m.coef_, m.intercept_[:, None]]), rng.normal(size=init.shape)):
        q_w = np.exp(log_softmax(Xa[c] @ W.T, axis=1))
        _, g_con = _neg_objective(W.ravel(), Xa, c, q_w, u, 0.01, 1.0, True, 3)
        _, g_free = _neg_objective(W.ravel(), Xa, *none, u, 0.01, 1.0, True, 3)
        np.testing.assert_allclose(g_con, g_free, atol=1e-10)


def test_hard_mode_keeps_only_max_compatible_labels(blobs):
    """Oracle 9: with epsilon = 0, q_i(k) = 0 for k outside Y*_i."""
    X, y = blobs
    rng = np.random.default_rng(5)
    t, a = _random_triplets(y, 60, rng)
    c = np.unique(t)
    tri_loc = np.searchsorted(c, t)
    plan = _EStepPlan(tri_loc, a, np.ones(len(a)), c.size)
    lp = log_softmax(rng.normal(size=(c.size, 3)), axis=1)
    q = np.exp(lp)
    sweeps = _e_step(q, lp, plan, 0.0, True, 100, 1e-12)
    assert sweeps < 100
    for block in plan.blocks:
        s = plan.compatibility_sums(q, block)
        outside = s < s.max(axis=1, keepdims=True) - 1e-9
        assert np.all(q[block[0]][outside] == 0)
    m = DCRC(3, epsilon=0.0, random_state=0).fit(X, triplets=t, triplet_answer=a)
    assert m.diagnostics_["mode"] == "hard"
    assert adjusted_rand_score(y, m.labels_) > 0.9


def test_yes_no_swap_symmetry(blobs):
    """Oracle 10: (a, b, c, yes) <-> (a, c, b, no), dnk with b, c swapped."""
    X, y = blobs
    t, a = _random_triplets(y, 50, np.random.default_rng(6))
    init = np.random.default_rng(7).normal(size=(3, X.shape[1] + 1))
    t2 = t[:, [0, 2, 1]]
    a2 = -a
    m1 = DCRC(3, init=init, max_iter=20).fit(X, triplets=t, triplet_answer=a)
    m2 = DCRC(3, init=init, max_iter=20).fit(X, triplets=t2, triplet_answer=a2)
    np.testing.assert_allclose(m1.proba_, m2.proba_, atol=1e-6)


def test_row_permutation_equivariance(blobs):
    """Oracle 11: permuting rows of X permutes proba_ rows (fixed init)."""
    X, y = blobs
    t, a = _random_triplets(y, 40, np.random.default_rng(8))
    init = np.random.default_rng(9).normal(size=(3, X.shape[1] + 1))
    perm = np.random.default_rng(10).permutation(len(X))
    inv = np.argsort(perm)
    m1 = DCRC(3, init=init, max_iter=20).fit(X, triplets=t, triplet_answer=a)
    m2 = DCRC(3, init=init, max_iter=20).fit(X[perm], triplets=inv[t], triplet_answer=a)
    np.testing.assert_allclose(m2.proba_, m1.proba_[perm], atol=1e-6)


def test_duplicated_triplets_square_gamma():
    """Oracle 12: duplicating every triplet doubles s_i, i.e. squares gamma."""
    rng = np.random.default_rng(11)
    n, K = 12, 3
    t = np.array([rng.choice(n, 3, replace=False) for _ in range(15)])
    a = rng.choice([1, -1, 0], size=15).astype(np.int8)
    lp = log_softmax(rng.normal(size=(n, K)), axis=1)
    lg = np.log(2 * 0.9 / 0.1)
    q_dup = np.exp(lp)
    _e_step(q_dup, lp, _EStepPlan(np.vstack([t, t]), np.r_[a, a], np.ones(30), n), lg, False, 1, 0.0)
    q_sq = np.exp(lp)
    _e_step(q_sq, lp, _EStepPlan(t, a, np.ones(15), n), 2 * lg, False, 1, 0.0)
    np.testing.assert_allclose(q_dup, q_sq, atol=1e-12)
    # triplet_weight = 2 is not allowed (weights in (0, 1]); weight 1 == default
    q_w = np.exp(lp)
    _e_step(q_w, lp, _EStepPlan(t, a, np.full(15, 2.0), n), lg, False, 1, 0.0)
    np.testing.assert_allclose(q_w, q_sq, atol=1e-12)


# ---------------------------------------------------------------- behaviour


def test_separated_blobs_recovered_with_consistent_triplets():
    """Oracle 13: three separated blobs, 0.3 N noise-free triplets, ARI >= 0.95."""
    for seed in range(5):
        X, y = make_blobs(120, centers=[[-6, 0], [6, 0], [0, 9]], cluster_std=1.0, random_state=seed)
        t, a = _random_triplets(y, 36, np.random.default_rng(seed))
        m = DCRC(3, random_state=seed).fit(X, triplets=t, triplet_answer=a)
        assert adjusted_rand_score(y, m.labels_) >= 0.95, seed


def test_triplets_raise_training_triplet_accuracy():
    """Oracle 14: on overlapping blobs, the hard DC-17 accuracy on the
    training triplets is higher with them than without, over 5 seeds."""
    with_c, without = [], []
    for seed in range(5):
        X, y = make_blobs(150, centers=3, cluster_std=3.0, center_box=(-6, 6), random_state=seed)
        t, a = _random_triplets(y, 60, np.random.default_rng(seed))
        m0 = DCRC(3, n_init=1, random_state=seed).fit(X)
        m1 = DCRC(3, n_init=1, random_state=seed).fit(X, triplets=t, triplet_answer=a)
        without.append(np.mean(m0.predict_triplets(X, t, hard=True) == a))
        with_c.append(m1.diagnostics_["triplet_accuracy"])
        assert np.array_equal(m1.predict_triplets(X, t, hard=True) == a, _ideal_answer(*(m1.labels_[t].T)) == a)
    assert np.mean(with_c) > np.mean(without)


def test_deterministic_for_fixed_random_state(blobs):
    X, y = blobs
    t, a = _random_triplets(y, 30, np.random.default_rng(12))
    m1 = DCRC(3, random_state=42).fit(X, triplets=t, triplet_answer=a)
    m2 = DCRC(3, random_state=42).fit(X, triplets=t, triplet_answer=a)
    assert len(m1.diagnostics_["restart_lower_bounds"]) == 4
    assert m1.diagnostics_["chosen_restart"] == int(np.argmax(m1.diagnostics_["restart_lower_bounds"]))
    assert np.array_equal(m1.labels_, m2.labels_)
    assert np.array_equal(m1.proba_, m2.proba_)
    assert m1.lower_bound_ == m2.lower_bound_


def test_dont_know_answers(blobs):
    """Don't-know handling: string codes, counted, symmetric in b/c, and
    informative (they raise the model's P(dnk) on those triplets)."""
    X, y = blobs
    t, a = _random_triplets(y, 60, np.random.default_rng(13))
    words = np.array(["no", "dont_know", "yes"])[a + 1]
    init = np.random.default_rng(14).normal(scale=0.1, size=(3, X.shape[1] + 1))
    m_num = DCRC(3, init=init, max_iter=15).fit(X, triplets=t, triplet_answer=a)
    m_str = DCRC(3, init=init, max_iter=15).fit(X, triplets=t, triplet_answer=list(words))
    np.testing.assert_array_equal(m_num.proba_, m_str.proba_)
    assert m_num.diagnostics_["n_dont_know"] == int(np.sum(a == 0)) > 0
    dnk = a == 0
    t_sw = t.copy()
    t_sw[dnk] = t[dnk][:, [0, 2, 1]]
    m_sw = DCRC(3, init=init, max_iter=15).fit(X, triplets=t_sw, triplet_answer=a)
    np.testing.assert_allclose(m_sw.proba_, m_num.proba_, atol=1e-6)
    m_yn = DCRC(3, init=init, max_iter=15).fit(X, triplets=t[~dnk], triplet_answer=a[~dnk])
    p_dnk_all = m_num.predict_triplets(X, t[dnk])[:, 2].mean()
    p_dnk_yn = m_yn.predict_triplets(X, t[dnk])[:, 2].mean()
    assert p_dnk_all > p_dnk_yn


def test_contradictory_triplets_are_reported_not_rejected(blobs):
    X, y = blobs
    t = np.array([[0, 1, 2], [0, 2, 1], [3, 4, 5], [3, 4, 5]])
    a = np.array([1, 1, 0, 0])  # (0,1,2,yes) contradicts (0,2,1,yes)
    m = DCRC(3, random_state=0).fit(X, triplets=t, triplet_answer=a)
    assert m.diagnostics_["n_conflicts"] == 1
    assert m.diagnostics_["conflicts"][0]["triplet_indices"] == [0, 1]
    json.dumps(m.diagnostics_)


def test_no_triplets_and_callback(blobs):
    X, _ = blobs
    calls = []
    m = DCRC(3, n_init=2, random_state=0, callback=lambda s, f: calls.append((s, f))).fit(X)
    assert m.triplet_proba_.shape == (0, 3) and m.constrained_index_.size == 0
    assert calls[0][0] == "init" and calls[-1] == ("done", 1.0)
    assert all(0 <= f <= 1 for _, f in calls)
    json.dumps(m.diagnostics_)

    def cancel(stage, fraction):
        raise KeyboardInterrupt("cancelled")

    with pytest.raises(KeyboardInterrupt):
        DCRC(3, random_state=0, callback=cancel).fit(X)


@pytest.mark.parametrize(
    "params, fit_kw, field",
    [
        ({"epsilon": 0.7}, {}, "epsilon"),
        ({"l2_penalty": -1.0}, {}, "l2_penalty"),
        ({"labels_from": "other"}, {}, "labels_from"),
        ({"n_clusters": 1}, {}, "n_clusters"),
        ({"init": np.zeros((3, 2))}, {}, "init"),
        ({}, {"triplets": [[0, 0, 1]], "triplet_answer": [1]}, "triplets"),
        ({}, {"triplets": [[0, 1, 999]], "triplet_answer": [1]}, "triplets"),
        ({}, {"triplets": [[0, 1, 2]], "triplet_answer": [2]}, "answers"),
        ({}, {"triplets": [[0, 1, 2]], "triplet_answer": [1], "triplet_weight": [0.0]}, "triplet_weight"),
    ],
)
def test_invalid_input(blobs, params, fit_kw, field):
    X, _ = blobs
    with pytest.raises(InvalidInputError) as exc:
        DCRC(**{"n_clusters": 3, **params}).fit(X, **fit_kw)
    assert exc.value.field == field


def test_labels_from_posterior_and_predict_checks(blobs):
    X, y = blobs
    t, a = _random_triplets(y, 30, np.random.default_rng(15))
    m = DCRC(3, n_init=1, labels_from="posterior", random_state=0).fit(X, triplets=t, triplet_answer=a)
    assert np.array_equal(m.labels_, m.posterior_.argmax(1))
    u = np.setdiff1d(np.arange(len(X)), m.constrained_index_)
    np.testing.assert_array_equal(m.posterior_[u], m.proba_[u])
    with pytest.raises(InvalidInputError):
        m.predict(X[:, :1])


def test_select_params_by_triplet_cross_validation(blobs):
    from clustering._dcrc._estimator import select_dcrc_params

    X, y = blobs
    t, a = _random_triplets(y, 40, np.random.default_rng(16))
    res = select_dcrc_params(X, t, a, n_clusters=3, l2_penalties=(0.01, 1.0), entropy_weights=(1.0,),
                             n_folds=2, random_state=0, n_init=1, max_iter=10)
    assert len(res["scores"]) == 2
    assert res["accuracy"] == max(r["accuracy"] for r in res["scores"])
    assert 0 <= res["accuracy"] <= 1
    with pytest.raises(InvalidInputError):
        select_dcrc_params(X, t[:1], a[:1], n_clusters=3, n_folds=2)


def test_extra_start_from_a_fit_never_ends_below_that_fit(blobs):
    """An extra start at a converged W is screened with the others; EM never
    lowers the bound, so the refit ends at or above the fit it came from."""
    X, y = blobs
    rng = np.random.default_rng(4)
    tri, ans = _random_triplets(y, 40, rng)
    first = DCRC(n_clusters=3, epsilon=0.1, n_init=2, max_iter=15, random_state=1).fit(
        X, triplets=tri, triplet_answer=ans)
    W = np.hstack([first.coef_, first.intercept_[:, None]])
    again = DCRC(n_clusters=3, epsilon=0.1, n_init=2, max_iter=15, extra_starts=W[None], random_state=2).fit(
        X, triplets=tri, triplet_answer=ans)
    assert len(again.diagnostics_["restart_lower_bounds"]) == 3
    assert again.lower_bound_[-1] >= first.lower_bound_[-1] - 1e-6 * abs(first.lower_bound_[-1])
    with pytest.raises(InvalidInputError) as err:
        DCRC(n_clusters=3, extra_starts=W).fit(X, triplets=tri, triplet_answer=ans)
    assert err.value.field == "extra_starts"
    with pytest.raises(InvalidInputError):
        DCRC(n_clusters=3, extra_starts=np.full((1, 3, X.shape[1] + 1), np.nan)).fit(X, triplets=tri,
                                                                                   triplet_answer=ans)


def test_more_clusters_than_half_the_rows_warns_nothing():
    # n_clusters may go up to n_samples; on more than 20 rows k-means' labels then hold more classes than half
    # the rows, and the initial logistic regression leaked scikit-learn's UserWarning "The number of unique
    # classes is greater than 50% of the number of samples" to the caller (pytest turns it into an error)
    X, _ = make_blobs(24, centers=3, random_state=0)
    model = DCRC(n_clusters=20, n_init=1, max_iter=5, random_state=0).fit(X)
    assert model.labels_.shape == (24,) and np.isfinite(model.proba_).all()


@pytest.mark.parametrize("value, match", [(np.nan, r"init\[0, 0\] = nan.*finite"),
                                          (1e300, r"init\[0, 0\] = 1e\+300.*within ±1e\+100")])
def test_init_weights_are_finite_and_within_the_value_limit(value, match):
    # 1e300 weights overflowed the L2 penalty (RuntimeWarning "overflow encountered in multiply"); a NaN was
    # refused with "init has shape (3, 3), must be finite with shape (3, 3)", naming no value
    X, _ = make_blobs(30, centers=3, n_features=2, random_state=1)
    W = np.zeros((3, 3))
    W[0, 0] = value
    with pytest.raises(InvalidInputError, match=match) as exc:
        DCRC(n_clusters=3, init=W, n_init=1, max_iter=5, random_state=0).fit(X)
    assert exc.value.field == "init"
    with pytest.raises(InvalidInputError, match=r"has shape \(3, 2\), must have shape \(3, 3\)"):
        DCRC(n_clusters=3, init=np.zeros((3, 2)), n_init=1, max_iter=5, random_state=0).fit(X)


def test_init_weights_beyond_float_range_are_an_invalid_input_error():
    # An integer no float64 holds (an object array of Python ints) escaped the check as a bare OverflowError
    # ("int too large to convert to float"), not the InvalidInputError a 1e300 weight gets.
    X, _ = make_blobs(30, centers=3, n_features=2, random_state=1)
    W = np.zeros((3, 3)).astype(object)
    W[1, 2] = -(10**400)
    with pytest.raises(InvalidInputError, match=r"init\[1, 2\] = -1\.00000e\+400.*within ±1e\+100") as exc:
        DCRC(n_clusters=3, init=W, n_init=1, max_iter=5, random_state=0).fit(X)
    assert exc.value.field == "init"


def test_standardisation_of_data_too_small_to_square(blobs):
    # On data within 1e-170 the squared deviations underflowed: X.std was 0, every column was taken for
    # constant (scale 1), the standardised data stayed within 1e-170 and every row went to one cluster
    X, y = blobs
    ref = DCRC(n_clusters=3, n_init=1, random_state=0).fit(X)
    tiny = DCRC(n_clusters=3, n_init=1, random_state=0).fit(X * 1e-300)
    np.testing.assert_allclose(tiny.scale_ / 1e-300, ref.scale_, rtol=1e-12)
    assert adjusted_rand_score(ref.labels_, tiny.labels_) == 1.0
    with pytest.raises(InvalidInputError, match="rescale the data") as exc:  # raw values: nothing to cluster on
        DCRC(n_clusters=3, n_init=1, standardize=False, random_state=0).fit(X * 1e-300)
    assert exc.value.field == "X"


def test_column_std_equals_numpy_std_on_ordinary_data():
    # the power-of-two rescaling is exact: results on data numpy can square are unchanged bit for bit
    rng = np.random.default_rng(0)
    for scale in (1e-100, 1e-3, 1.0, 1e4, 1e100):
        X = rng.normal(3.0, 2.0, size=(40, 4)) * scale
        X[:, 3] = 5.0 * scale  # a constant column
        np.testing.assert_array_equal(_column_std(X), X.std(axis=0))
