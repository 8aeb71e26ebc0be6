"""Property tests for CCSKL (specs/ccskl.md §8 test oracles)."""

import itertools
import json
import warnings

import numpy as np
import pytest
from scipy.linalg import null_space
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

from clustering._ccskl import _qp as _ccskl_qp
from clustering._ccskl import CCSKL
from clustering._ccskl._qp import (
    _beta_from_delta,
    _design_rows,
    _laplacian_eigenpairs,
    _objective,
    _qp_terms,
    _solve_delta,
    _target_rows,
)
from clustering._graph import knn_gaussian_graph
from clustering.exceptions import ConstraintWarning, InvalidInputError


@pytest.fixture(autouse=True)
def _one_blas_thread():
    """Tiny dense problems: BLAS/OpenMP threads only add contention on a shared machine."""
    with threadpool_limits(limits=1):
        yield


def _blobs(n=300, k=4, std=1.0, seed=0, sep=6.0):
    centers = np.array([[sep * np.cos(a), sep * np.sin(a)] for a in np.linspace(0, 2 * np.pi, k + 1)[:-1]])
    X, y = make_blobs(n_samples=n, centers=centers, cluster_std=std, random_state=seed)
    return X, y


def _pairs_from_labels(y, n_pairs, rng):
    n = len(y)
    P = set()
    while len(P) < n_pairs:
        i, j = rng.integers(0, n, 2)
        if i != j:
            P.add((min(i, j), max(i, j)))
    P = np.array(sorted(P), dtype=np.int64)
    kind = np.where(y[P[:, 0]] == y[P[:, 1]], 1, -1).astype(np.int8)
    return P, kind


def _random_problem(n=40, m=6, n_pairs=30, seed=0):
    """Random orthonormal F and random constraints (generic: G has full column rank)."""
    rng = np.random.default_rng(seed)
    F, _ = np.linalg.qr(rng.standard_normal((n, m)))
    y = rng.integers(0, 3, n)
    P, kind = _pairs_from_labels(y, n_pairs, rng)
    w = rng.uniform(0.2, 1.0, len(P))
    return F, P, kind, w


def _qp_bruteforce(A, b):
    """Exact minimiser of 1/2 z'Az + b'z s.t. z_1 >= ... >= z_m >= 0 by enumerating
    active sets of the m ordering/sign constraints (independent of the NNLS path)."""
    m = len(b)
    C = np.zeros((m, m))
    for k in range(m - 1):
        C[k, k], C[k, k + 1] = 1.0, -1.0
    C[m - 1, m - 1] = 1.0
    best, best_z = np.inf, None
    for r in range(m + 1):
        for E in itertools.combinations(range(m), r):
            N = null_space(C[list(E)]) if E else np.eye(m)
            if N.shape[1] == 0:
                z = np.zeros(m)
            else:
                H = N.T @ A @ N
                w = -np.linalg.solve(H, N.T @ b)
                z = N @ w
            if np.all(C @ z >= -1e-10 * max(1.0, np.abs(z).max())):
                val = 0.5 * z @ A @ z + b @ z
                if val < best:
                    best, best_z = val, z
    return best_z, best


def _fit_beta(F, P, kind, w, convention="ordered", solver="nnls"):
    I, J, t, c = _target_rows(F.shape[0], P, kind, w, convention)
    delta, _ = _solve_delta(F, I, J, t, c, solver)
    return _beta_from_delta(delta), delta, (I, J, t, c)


# --- 1. feasibility -----------------------------------------------------------


@pytest.mark.parametrize("which", ["mixed", "all_ml", "all_cl", "none"])
def test_beta_non_increasing_and_non_negative(which):
    X, y = _blobs(n=200, seed=1)
    rng = np.random.default_rng(0)
    P, kind = _pairs_from_labels(y, 120, rng)
    if which == "all_ml":
        P, kind = P[kind == 1], kind[kind == 1]
    elif which == "all_cl":
        P, kind = P[kind == -1], kind[kind == -1]
    elif which == "none":
        P, kind = None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)  # rank deficiency is allowed here
        est = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=P, pair_kind=kind)
    beta = est.beta_
    assert beta.shape == (20,)
    assert np.all(beta >= -1e-12)
    assert np.all(np.diff(beta) <= 1e-12 * max(1.0, beta.max()))
    assert est.labels_.dtype == np.int64 and est.labels_.shape == (200,)
    assert set(np.unique(est.labels_)) <= set(range(4))


# --- 2.-4. optimality -----------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_nnls_equals_independent_active_set_qp(seed):
    F, P, kind, w = _random_problem(seed=seed)
    beta, _, rows = _fit_beta(F, P, kind, w)
    A, b, _ = _qp_terms(F, *rows)
    z, _ = _qp_bruteforce(A, b)
    assert np.allclose(beta, z, rtol=1e-8, atol=1e-8 * np.abs(z).max())
    beta_bvls, _, _ = _fit_beta(F, P, kind, w, solver="bvls")
    assert np.allclose(beta, beta_bvls, rtol=1e-8, atol=1e-8 * np.abs(z).max())


def test_optimal_against_random_feasible_points_and_kkt():
    X, y = _blobs(n=300, seed=2, std=1.6)
    W, _ = knn_gaussian_graph(X, 20)
    _, F, _, _ = _laplacian_eigenpairs(W, 20, 0)
    P, kind = _pairs_from_labels(y, 400, np.random.default_rng(3))
    beta, delta, rows = _fit_beta(F, P, kind, np.ones(len(P)))
    A, b, c0 = _qp_terms(F, *rows)
    best = 0.5 * beta @ A @ beta + b @ beta + c0
    rng = np.random.default_rng(4)
    for _ in range(100):
        d = rng.exponential(delta.max() + 1.0, 20) * (rng.random(20) < 0.5)
        z = _beta_from_delta(d)
        assert 0.5 * z @ A @ z + b @ z + c0 >= best - 1e-9 * max(1.0, abs(best))
    # KKT in delta-space: (U^T g)_l = sum_{k<=l} g_k
    g = A @ beta + b
    ug = np.cumsum(g)
    gmax = np.abs(g).max()
    assert np.all(ug >= -1e-8 * gmax)
    assert np.all(np.abs(ug * delta) <= 1e-8 * gmax * delta.max())


# --- 5. algebra -----------------------------------------------------------------


def test_objective_matches_quadratic_form_and_direct_sum():
    X, y = _blobs(n=150, seed=5)
    P, kind = _pairs_from_labels(y, 60, np.random.default_rng(5))
    w = np.random.default_rng(6).uniform(0.3, 1.0, len(P))
    est = CCSKL(n_clusters=4, weighting="none", random_state=0).fit(X, pairs=P, pair_kind=kind, pair_weight=w)
    K = est.kernel_matrix_
    # Eq. (8): ordered pairs, weights replace c_ij (squared), c_ii = 1
    direct = np.sum((np.diag(K) - 1.0) ** 2)
    t = (kind == 1).astype(float)
    direct += np.sum(w**2 * ((K[P[:, 0], P[:, 1]] - t) ** 2 + (K[P[:, 1], P[:, 0]] - t) ** 2))
    rows = _target_rows(150, P, kind, w, "ordered")
    A, b, c0 = _qp_terms(est.eigenvectors_, *rows)
    quad = 0.5 * est.beta_ @ A @ est.beta_ + b @ est.beta_ + c0
    assert est.objective_ == pytest.approx(direct, rel=1e-10)
    assert quad == pytest.approx(direct, rel=1e-10)


# --- 6. sign invariance -----------------------------------------------------------


def test_sign_flip_of_eigenvectors_leaves_beta_unchanged():
    F, P, kind, w = _random_problem(n=60, m=8, seed=7)
    beta, _, _ = _fit_beta(F, P, kind, w)
    Ff = F.copy()
    Ff[:, [1, 4, 6]] *= -1
    beta_f, _, _ = _fit_beta(Ff, P, kind, w)
    assert np.allclose(beta, beta_f, rtol=1e-12, atol=1e-12 * beta.max())


# --- 7. weights --------------------------------------------------------------------


def test_zero_weight_equals_removed_constraint():
    F, P, kind, w = _random_problem(n=60, m=8, seed=8)
    w0 = w.copy()
    w0[:10] = 0.0
    beta0, _, _ = _fit_beta(F, P, kind, w0)
    beta_removed, _, _ = _fit_beta(F, P[10:], kind[10:], w[10:])
    assert np.allclose(beta0, beta_removed, rtol=1e-10, atol=1e-10 * beta0.max())


def test_tiny_weights_in_fit_approach_removal():
    X, y = _blobs(n=200, seed=9, std=1.5)
    P, kind = _pairs_from_labels(y, 80, np.random.default_rng(9))
    w = np.ones(len(P))
    w[:40] = 1e-9
    a = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=P, pair_kind=kind, pair_weight=w)
    b = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=P[40:], pair_kind=kind[40:])
    assert np.allclose(a.beta_, b.beta_, rtol=1e-6, atol=1e-6 * b.beta_.max())


def test_scaling_all_weights_and_diagonal_leaves_beta_unchanged():
    F, P, kind, w = _random_problem(n=60, m=8, seed=10)
    I, J, t, c = _target_rows(60, P, kind, w, "ordered")
    d1, _ = _solve_delta(F, I, J, t, c)
    d2, _ = _solve_delta(F, I, J, t, 3.7 * c)
    assert np.allclose(_beta_from_delta(d1), _beta_from_delta(d2), rtol=1e-10, atol=1e-10 * d1.sum())


def test_weights_enter_squared():
    F, P, kind, _ = _random_problem(n=60, m=8, seed=11)
    w = np.full(len(P), 0.5)
    I, J, t, c = _target_rows(60, P, kind, w, "unordered")
    G, h = _design_rows(F, I, J, t, c)
    beta, delta, _ = _fit_beta(F, P, kind, w, "unordered")
    k = np.einsum("ij,ij->i", F[I] * beta, F[J])
    expected = np.sum((k[:60] - 1) ** 2) + 0.25 * np.sum((k[60:] - t[60:]) ** 2)
    assert np.sum((G @ delta - h) ** 2) == pytest.approx(expected, rel=1e-10)


# --- 8.-9. kernel -------------------------------------------------------------------


def test_kernel_is_symmetric_psd_with_eigenvalues_beta_and_embedding_consistent():
    X, y = _blobs(n=180, seed=12, std=1.3)
    P, kind = _pairs_from_labels(y, 100, np.random.default_rng(12))
    est = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=P, pair_kind=kind)
    K = est.kernel_matrix_
    assert K.shape == (180, 180) and K.dtype == np.float64
    assert np.allclose(K, K.T, atol=1e-12)
    ev = np.linalg.eigvalsh(K)
    assert ev.min() >= -1e-10 * max(1.0, ev.max())
    top = np.sort(ev)[::-1][: len(est.beta_)]
    assert np.allclose(top, est.beta_, rtol=1e-8, atol=1e-8 * est.beta_.max())
    Z = est.embedding_
    d2 = np.sum((Z[:, None, :] - Z[None, :, :]) ** 2, axis=2)
    dk = np.diag(K)[:, None] + np.diag(K)[None, :] - 2 * K
    assert np.allclose(d2, dk, atol=1e-9 * max(1.0, np.abs(K).max()))
    idx_i, idx_j = [0, 5, 17], [3, 4, 100, 179]
    assert np.allclose(est.kernel(idx_i, idx_j), K[np.ix_(idx_i, idx_j)])
    F = est.eigenvectors_
    assert np.allclose(F.T @ F, np.eye(F.shape[1]), atol=1e-8)
    assert np.all(np.diff(est.eigenvalues_) >= -1e-10)


def test_dense_kernel_only_below_limit():
    X, y = _blobs(n=120, seed=13)
    P, kind = _pairs_from_labels(y, 40, np.random.default_rng(13))
    est = CCSKL(n_clusters=4, max_dense_kernel=100, random_state=0).fit(X, pairs=P, pair_kind=kind)
    assert est.kernel_matrix_ is None
    assert est.kernel([1, 2], [3]).shape == (2, 1)
    with pytest.raises(InvalidInputError):
        est.kernel([0], [120])


# --- 10. recovery --------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_well_separated_blobs(seed):
    X, y = _blobs(n=240, k=4, std=0.5, seed=seed, sep=10.0)
    rng = np.random.default_rng(seed)
    labelled = np.concatenate([rng.choice(np.flatnonzero(y == c), 4, replace=False) for c in range(4)])
    iu, ju = np.triu_indices(len(labelled), 1)
    P = np.stack([labelled[iu], labelled[ju]], axis=1)
    kind = np.where(y[P[:, 0]] == y[P[:, 1]], 1, -1)
    est = CCSKL(n_clusters=4, random_state=seed).fit(X, pairs=P, pair_kind=kind)
    assert adjusted_rand_score(y, est.labels_) == 1.0


# --- 12. convention ----------------------------------------------------------------------


def test_unordered_convention_equals_ordered_with_sqrt2_diagonal():
    F, P, kind, w = _random_problem(n=50, m=7, seed=14)
    beta_u, _, _ = _fit_beta(F, P, kind, w, "unordered")
    I, J, t, c = _target_rows(50, P, kind, w, "ordered")
    c = c.copy()
    c[:50] = np.sqrt(2.0)
    d, _ = _solve_delta(F, I, J, t, c)
    assert np.allclose(beta_u, _beta_from_delta(d), rtol=1e-10, atol=1e-10 * beta_u.max())


# --- 13. determinism -----------------------------------------------------------------------


def test_deterministic_for_fixed_seed():
    X, y = _blobs(n=200, seed=15, std=1.5)
    P, kind = _pairs_from_labels(y, 60, np.random.default_rng(15))
    a = CCSKL(n_clusters=4, random_state=3).fit(X, pairs=P, pair_kind=kind)
    b = CCSKL(n_clusters=4, random_state=3).fit(X, pairs=P, pair_kind=kind)
    assert np.array_equal(a.labels_, b.labels_)
    assert np.array_equal(a.beta_, b.beta_)


# --- contradictions, diagnostics, options ------------------------------------------------


def test_contradictory_constraints_are_kept_and_reported():
    X, y = _blobs(n=150, seed=16)
    P = np.array([[0, 1], [1, 2], [0, 2], [5, 6], [6, 5], [7, 8], [7, 8]])
    kind = np.array([1, 1, -1, 1, -1, 1, 1])
    est = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=P, pair_kind=kind)
    d = est.diagnostics_
    assert d["n_conflicts"] >= 2
    assert [5, 6] in d["same_pair_both_kinds"]
    assert d["n_duplicates_merged"] == 1
    assert d["n_constraints_used"] == 6
    json.dumps(d)  # plain Python only
    est_c = CCSKL(n_clusters=4, closure=True, random_state=0).fit(X, pairs=P, pair_kind=kind)
    assert est_c.diagnostics_["closure"]["applied"]
    assert np.all(np.diff(est_c.beta_) <= 1e-12 * est_c.beta_.max())


def test_same_pair_both_kinds_gives_least_squares_compromise():
    F, _, _, _ = _random_problem(n=40, m=5, seed=17)
    P = np.array([[0, 1], [0, 1]])
    beta_both, _, _ = _fit_beta(F, P, np.array([1, -1]), np.ones(2))
    beta_ml, _, _ = _fit_beta(F, P[:1], np.array([1]), np.ones(1))
    beta_cl, _, _ = _fit_beta(F, P[:1], np.array([-1]), np.ones(1))
    k = lambda b: float(F[0] @ (b * F[1]))  # noqa: E731
    assert min(k(beta_ml), k(beta_cl)) - 1e-12 <= k(beta_both) <= max(k(beta_ml), k(beta_cl)) + 1e-12


def test_disconnected_graph_is_connected_and_reported():
    X, y = _blobs(n=120, k=3, std=0.3, seed=18, sep=30.0)
    P, kind = _pairs_from_labels(y, 30, np.random.default_rng(18))
    est = CCSKL(n_clusters=3, n_neighbors=5, random_state=0).fit(X, pairs=P, pair_kind=kind)
    d = est.diagnostics_
    assert d["graph_components"] == 3
    assert d["n_graph_edges_added"] == 2
    from scipy.sparse.csgraph import connected_components

    assert connected_components(est.affinity_matrix_, directed=False)[0] == 1
    assert adjusted_rand_score(y, est.labels_) == 1.0
    with pytest.warns(ConstraintWarning, match="connected components"):
        CCSKL(n_clusters=3, n_neighbors=5, connect_graph=False, random_state=0).fit(X, pairs=P, pair_kind=kind)


def test_precomputed_affinity_matches_knn_path():
    X, y = _blobs(n=150, seed=19, std=2.0, sep=4.0)
    P, kind = _pairs_from_labels(y, 50, np.random.default_rng(19))
    a = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=P, pair_kind=kind)
    W, _ = knn_gaussian_graph(X, 20)
    b = CCSKL(n_clusters=4, affinity="precomputed", random_state=0).fit(W, pairs=P, pair_kind=kind)
    assert np.allclose(a.beta_, b.beta_, rtol=1e-8, atol=1e-8 * a.beta_.max())
    c = CCSKL(n_clusters=4, affinity="precomputed", random_state=0).fit(W.toarray(), pairs=P, pair_kind=kind)
    assert np.allclose(a.beta_, c.beta_, rtol=1e-8, atol=1e-8 * a.beta_.max())
    with pytest.raises(InvalidInputError):
        CCSKL(n_clusters=4, affinity="precomputed").fit(-W.toarray())
    with pytest.raises(InvalidInputError):
        CCSKL(n_clusters=4, affinity="precomputed").fit(X)


def test_large_n_solvers_agree_with_dense(monkeypatch):
    X, _ = _blobs(n=300, seed=20, std=1.5)
    W, _ = knn_gaussian_graph(X, 20)
    lam_d, F_d, _, s_d = _laplacian_eigenpairs(W, 12, 0)
    monkeypatch.setattr(_ccskl_qp, "_DENSE_EIGH_MAX", 50)
    lam_si, F_si, _, s_si = _laplacian_eigenpairs(W, 12, 0)
    monkeypatch.setattr(_ccskl_qp, "_SHIFT_INVERT_MAX", 100)
    lam_la, F_la, _, s_la = _laplacian_eigenpairs(W, 12, 0)
    assert (s_d, s_si, s_la) == ("eigh", "eigsh-shift-invert", "eigsh-LA")
    for lam, F in ((lam_si, F_si), (lam_la, F_la)):
        assert np.allclose(lam, lam_d, atol=1e-8)
        # same invariant subspace (eigenvalues are simple here)
        assert np.allclose(np.abs(np.sum(F * F_d, axis=0)), 1.0, atol=1e-6)


def test_narrow_width_eigenpairs_are_the_smallest_within_bounded_restarts(monkeypatch):
    """Non-regression: at sigma = 0.1 r (sigma="select"'s narrowest width) the bridged kNN graph of 10
    blobs is one component, but nine of its Laplacian eigenvalues are 0 to rounding and the next eleven
    lie in [8e-12, 2.2e-6]. Shift-invert at -1e-3 maps all of them to 1 / (lambda + 1e-3), equal to
    1e-3 relative: at 1500 rows ARPACK stopped on a set that missed seven of the zeros (lambda_20 4.6e-6
    instead of 2.2e-6); at 10000 rows it restarted for hours (bench/scale_limits.py). Smaller shifts, each
    with bounded restarts, give the 20 smallest pairs of the dense solver."""
    import scipy.sparse as sp
    from scipy.linalg import eigh
    from scipy.sparse.linalg import LinearOperator, eigsh, splu

    from clustering._graph import kth_neighbor_sigma

    X, _ = make_blobs(n_samples=1500, n_features=10, centers=10, cluster_std=2.0, random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    r = kth_neighbor_sigma(X, 20)
    solves, maxiters = [0], []

    def counted_eigsh(A, *args, sigma=None, maxiter=None, **kw):
        maxiters.append(maxiter)

        def solve(x):
            solves[0] += 1
            assert solves[0] <= 4000, "ARPACK restarts without bound"
            return lu.solve(x)

        if sigma is None:
            return eigsh(A, *args, maxiter=maxiter, **kw)
        lu = splu((A - sigma * sp.identity(A.shape[0])).tocsc())  # what eigsh factors itself
        op = LinearOperator(A.shape, matvec=solve, dtype=np.float64)
        return eigsh(A, *args, sigma=sigma, maxiter=maxiter, OPinv=op, **kw)

    monkeypatch.setattr(_ccskl_qp, "eigsh", counted_eigsh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)
        est = CCSKL(n_clusters=10, sigma=0.1 * r, random_state=0).fit(X)
    assert est.diagnostics_["graph_components"] > 1  # bridged (spec §7.1): one component, nearly cut
    W = est.affinity_matrix_
    d = np.asarray(W.sum(axis=1)).ravel()
    L = np.eye(len(d)) - W.toarray() / np.sqrt(np.outer(d, d))
    lam_d, F_d = eigh(L, subset_by_index=[0, 20])
    assert lam_d[19] < 0.9 * lam_d[20]  # the 20 smallest span a well-defined subspace
    lam, F = est.eigenvalues_, est.eigenvectors_
    assert np.allclose(lam, lam_d[:20], rtol=1e-6, atol=1e-13)
    assert np.allclose(F.T @ F, np.eye(20), atol=1e-10)
    assert np.abs(L @ F - F * lam).max() < 1e-10
    assert np.allclose(F @ F.T, F_d[:, :20] @ F_d[:, :20].T, atol=1e-8)
    assert est.diagnostics_["eigen_solver"].startswith("eigsh-shift-invert(")
    assert all(it is not None and it <= 30 for it in maxiters) and solves[0] <= 4000


def test_more_groups_cut_off_than_eigenvectors_give_their_indicators_without_a_solver():
    """30 cliques tied by edges of weight 1e-30: 0 is repeated 30 times to rounding, more than m = 20;
    the eigenpairs are 20 of the cliques' indicators D^{1/2} 1_c, exact, and no ARPACK call is made
    (inside such a repeated eigenvalue Lanczos cannot converge: letter at 0.1 r went through every shift)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    sizes = rng.integers(30, 70, 30)
    blocks = [sp.csr_matrix(np.triu(rng.uniform(0.5, 1.0, (s, s)), 1)) for s in sizes]
    W = sp.block_diag(blocks, format="csr")
    n = W.shape[0]
    starts = np.cumsum(np.r_[0, sizes])[:-1]
    E = sp.csr_matrix((np.full(29, 1e-30), (starts[:-1], starts[1:])), shape=(n, n))
    W = sp.csr_matrix(W + W.T + E + E.T)
    lam, F, isolated, solver = _laplacian_eigenpairs(W, 20, 0)
    assert solver == "components" and not isolated.any()
    d = np.asarray(W.sum(axis=1)).ravel()
    L = sp.identity(n) - sp.diags(1 / np.sqrt(d)) @ W @ sp.diags(1 / np.sqrt(d))
    assert np.all((lam >= 0) & (lam <= 1e-12))
    assert np.allclose(F.T @ F, np.eye(20), atol=1e-12) and np.abs(L @ F).max() < 1e-12
    block = np.repeat(np.arange(30), sizes)
    for col in F.T:  # one clique each, the 20 largest
        assert len(np.unique(block[col != 0])) == 1
    assert sorted(block[np.argmax(F != 0, axis=0)]) == sorted(np.argsort(-sizes, kind="stable")[:20])


def test_sigma_select_skips_a_width_with_more_cut_off_groups_than_eigenvectors():
    """40 groups 8 apart: at sigma = 0.1 r the bridges between them are cut to rounding, 40 groups for
    m = 20 eigenvectors; any 20 of their indicators are exact, so that width is not scored."""
    rng = np.random.default_rng(0)
    centers = np.array([[8.0 * i, 8.0 * j] for i in range(8) for j in range(5)])
    y = np.repeat(np.arange(40), 30)
    X = centers[y] + rng.normal(size=(1200, 2))
    pairs = rng.choice(1200, size=(200, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)
        est = CCSKL(n_clusters=10, sigma="select", n_init=2, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    sel = est.diagnostics_["sigma_selection"]
    assert sel["skipped"] == [{"sigma": sel["candidates"][0], "null_groups": 40}]
    assert sel["eigen_solvers"][0] == "components" and "components" not in sel["eigen_solvers"][1:]
    assert sel["held_out_satisfaction"][0] is None and None not in sel["held_out_satisfaction"][1:]
    assert est.sigma_ != sel["candidates"][0]
    json.dumps(est.diagnostics_)


def test_reduced_normal_equations_match_tall_nnls(monkeypatch):
    F, P, kind, w = _random_problem(n=80, m=8, n_pairs=60, seed=21)
    I, J, t, c = _target_rows(80, P, kind, w, "ordered")
    d_tall, reduced = _solve_delta(F, I, J, t, c)
    assert not reduced
    monkeypatch.setattr(_ccskl_qp, "_MAX_TALL_ROWS", 10)
    monkeypatch.setattr(_ccskl_qp, "_CHUNK_ROWS", 17)
    d_red, reduced = _solve_delta(F, I, J, t, c)
    assert reduced
    b1, b2 = _beta_from_delta(d_tall), _beta_from_delta(d_red)
    assert _objective(F, b2, I, J, t, c) == pytest.approx(_objective(F, b1, I, J, t, c), rel=1e-8)


def test_callback_called_and_can_cancel():
    X, y = _blobs(n=100, seed=22)
    calls = []
    P, kind = _pairs_from_labels(y, 30, np.random.default_rng(22))
    CCSKL(n_clusters=4, random_state=0, callback=lambda s, f: calls.append((s, f))).fit(X, pairs=P, pair_kind=kind)
    stages = [s for s, _ in calls]
    assert stages[0] == "graph" and stages[-1] == "done"
    assert all(0.0 <= f <= 1.0 for _, f in calls)

    class Cancel(Exception):
        pass

    def cancel(stage, fraction):
        if stage == "qp":
            raise Cancel

    with pytest.raises(Cancel):
        CCSKL(n_clusters=4, callback=cancel).fit(X, pairs=P, pair_kind=kind)


@pytest.mark.parametrize(
    "params",
    [
        {"n_clusters": 1},
        {"n_components": 0},
        {"n_neighbors": 0},
        {"sigma": -1.0},
        {"sigma": "big"},
        {"solver": "slsqp"},
        {"pair_convention": "both"},
        {"affinity": "rbf"},
        {"n_init": 0},
        {"weighting": "auto"},
        {"balance": 0.0},
        {"balance": -1.0},
    ],
)
def test_invalid_parameters_raise(params):
    X, _ = _blobs(n=50)
    with pytest.raises(InvalidInputError):
        CCSKL(**params).fit(X)


def test_invalid_constraints_raise():
    X, _ = _blobs(n=50)
    with pytest.raises(InvalidInputError):
        CCSKL(n_clusters=4).fit(X, pairs=[[0, 50]], pair_kind=[1])
    with pytest.raises(InvalidInputError):
        CCSKL(n_clusters=4).fit(X, pairs=[[0, 1]], pair_kind=[2])
    with pytest.raises(InvalidInputError):
        CCSKL(n_clusters=4).fit(X, pairs=[[0, 1]], pair_kind=[1], pair_weight=[0.0])


def test_n_components_clamped_and_raised_to_n_clusters():
    X, y = _blobs(n=12, k=3, seed=23)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)  # one constraint: rank deficiency allowed
        est = CCSKL(n_clusters=3, random_state=0).fit(X, pairs=[[0, 1]], pair_kind=[1])
    assert est.diagnostics_["n_components"] == 11
    assert est.beta_.shape == (11,) and est.eigenvectors_.shape == (12, 11)
    X, y = _blobs(n=200, k=4, seed=23)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)
        est = CCSKL(n_clusters=6, n_components=3, random_state=0).fit(X)
    assert est.diagnostics_["n_components"] == 6


def test_sigma_select_picks_a_paper_candidate_by_held_out_constraints():
    X, y = _blobs(n=150, seed=24, std=1.2)
    P, kind = _pairs_from_labels(y, 40, np.random.default_rng(24))
    est = CCSKL(n_clusters=4, sigma="select", random_state=0).fit(X, pairs=P, pair_kind=kind)
    sel = est.diagnostics_["sigma_selection"]
    assert sel["applied"] and len(sel["candidates"]) == 9
    scores = np.array(sel["held_out_satisfaction"])
    chosen = int(np.argmin(np.abs(np.array(sel["candidates"]) - est.sigma_)))
    assert scores[chosen] == scores.max()
    assert np.all((scores >= 0) & (scores <= 1))
    json.dumps(est.diagnostics_)
    few = CCSKL(n_clusters=4, sigma="select", random_state=0).fit(X, pairs=P[:1], pair_kind=kind[:1])
    assert not few.diagnostics_["sigma_selection"]["applied"]
    assert few.sigma_ == pytest.approx(few.diagnostics_["sigma_selection"]["r"])


# --- constraint balancing (weighting="balanced", paper §4.4 weights) -----------------------


def test_balance_rows_sets_total_constraint_weight_and_keeps_ratios():
    F, P, kind, w = _random_problem(n=50, m=6, seed=30)
    w[:5] = 0.0
    I, J, t, c = _target_rows(50, P, kind, w, "ordered")
    cb = _ccskl_qp._balance_rows(c, 50, 7.5)
    assert np.array_equal(cb[:50], c[:50])
    assert np.sum(cb[50:] ** 2) == pytest.approx(7.5 * 50, rel=1e-12)
    ratio = cb[50:][w > 0] / c[50:][w > 0]
    assert np.allclose(ratio, ratio[0], rtol=1e-12)
    assert np.all(cb[50:][w == 0] == 0.0)
    I0, J0, t0, c0 = _target_rows(50, P[:0], kind[:0], w[:0], "ordered")
    assert np.array_equal(_ccskl_qp._balance_rows(c0, 50, 7.5), c0)



@pytest.mark.parametrize("scale", [1e-160, 1e-300])
def test_balanced_weights_below_the_square_root_of_the_smallest_float(scale):
    """Non-regression: balancing summed the squared weights, which underflow below 1e-154. All weights
    1e-160 (allowed: weights are in (0, 1]) gave a subnormal total, an infinite factor and NaN rows
    (ValueError from nnls); all 1e-300 gave a total of 0 and left the constraints at 1e-300, as if
    absent, although balancing makes the common scale of the weights irrelevant."""
    X, y = _blobs(n=80, k=2, std=2.5, seed=3, sep=3.0)
    P, kind = _pairs_from_labels(y, 25, np.random.default_rng(3))
    w = np.random.default_rng(4).uniform(0.2, 1.0, len(P))
    c = _target_rows(80, P, kind, w, "ordered")[3]
    np.testing.assert_allclose(_ccskl_qp._balance_rows(c * scale, 80, 10.0)[80:],
                               _ccskl_qp._balance_rows(c, 80, 10.0)[80:], rtol=1e-12)
    ref = CCSKL(n_clusters=2, random_state=0).fit(X, pairs=P, pair_kind=kind, pair_weight=w)
    tiny = CCSKL(n_clusters=2, random_state=0).fit(X, pairs=P, pair_kind=kind, pair_weight=w * scale)
    np.testing.assert_allclose(tiny.beta_, ref.beta_, rtol=1e-8, atol=1e-10)
    assert np.array_equal(tiny.labels_, ref.labels_)

def test_balanced_fit_solves_the_reweighted_qp_exactly():
    X, y = _blobs(n=160, seed=31, std=1.6)
    P, kind = _pairs_from_labels(y, 30, np.random.default_rng(31))
    w = np.random.default_rng(32).uniform(0.3, 1.0, len(P))
    for weighting in ("balanced", "none"):
        est = CCSKL(n_clusters=4, n_components=6, weighting=weighting, balance=4.0, random_state=0)
        est.fit(X, pairs=P, pair_kind=kind, pair_weight=w)
        I, J, t, c = _target_rows(160, P, kind, w, "ordered")
        if weighting == "balanced":
            c = _ccskl_qp._balance_rows(c, 160, 4.0)
        A, b, _ = _qp_terms(est.eigenvectors_, I, J, t, c)
        z, _ = _qp_bruteforce(A, b)
        assert np.allclose(est.beta_, z, rtol=1e-7, atol=1e-7 * np.abs(z).max())
        assert est.diagnostics_["weighting"] == weighting


def test_balanced_is_invariant_to_common_weight_scale_and_convention():
    X, y = _blobs(n=150, seed=33, std=1.5)
    P, kind = _pairs_from_labels(y, 40, np.random.default_rng(33))
    w = np.random.default_rng(34).uniform(0.2, 1.0, len(P))
    a = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=P, pair_kind=kind, pair_weight=w)
    b = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=P, pair_kind=kind, pair_weight=0.3 * w)
    c = CCSKL(n_clusters=4, pair_convention="unordered", random_state=0).fit(X, pairs=P, pair_kind=kind, pair_weight=w)
    for other in (b, c):
        assert np.allclose(a.beta_, other.beta_, rtol=1e-8, atol=1e-8 * a.beta_.max())
    paper = CCSKL(n_clusters=4, weighting="none", random_state=0).fit(X, pairs=P, pair_kind=kind, pair_weight=w)
    paper_scaled = CCSKL(n_clusters=4, weighting="none", random_state=0).fit(
        X, pairs=P, pair_kind=kind, pair_weight=0.3 * w
    )
    assert not np.allclose(paper.beta_, paper_scaled.beta_, rtol=1e-3)


@pytest.mark.parametrize("seed", [35, 36])
def test_more_balance_never_worsens_the_constraint_fit(seed):
    # Weighted least squares: raising the weight of one group of rows cannot
    # increase that group's residual (nor decrease the other group's).
    X, y = _blobs(n=200, seed=seed, std=1.8)
    P, kind = _pairs_from_labels(y, 50, np.random.default_rng(seed))
    res = []
    for bal in (0.1, 1.0, 10.0, 100.0):
        est = CCSKL(n_clusters=4, balance=bal, random_state=0).fit(X, pairs=P, pair_kind=kind)
        K = est.kernel(np.arange(200), np.arange(200))
        t = (kind == 1).astype(float)
        res.append((np.sum((K[P[:, 0], P[:, 1]] - t) ** 2), np.sum((np.diag(K) - 1.0) ** 2)))
    con, dia = np.array(res).T
    assert np.all(np.diff(con) <= 1e-9 * max(1.0, con.max()))
    assert np.all(np.diff(dia) >= -1e-9 * max(1.0, dia.max()))


def test_contradictory_constraints_do_not_fail_with_balancing():
    X, y = _blobs(n=120, seed=37)
    P = np.array([[0, 1], [0, 1], [1, 2], [0, 2]])
    kind = np.array([1, -1, 1, -1])
    for weighting in ("balanced", "none"):
        est = CCSKL(n_clusters=4, weighting=weighting, random_state=0).fit(X, pairs=P, pair_kind=kind)
        assert np.all(np.isfinite(est.beta_)) and np.all(np.diff(est.beta_) <= 1e-12 * est.beta_.max())


def test_restart_selection_keeps_the_restart_that_satisfies_the_constraints():
    # Four blobs on a square, K = 2: the horizontal and the vertical split have
    # the same inertia; the constraints ask for the vertical one.
    from clustering._spectral import kmeans_labels_by_constraints

    rng = np.random.default_rng(0)
    centers = np.array([[0.0, 0.0], [0.0, 10.0], [10.0, 0.0], [10.0, 10.0]])
    X = np.vstack([c + rng.normal(scale=0.5, size=(25, 2)) for c in centers])
    side = (X[:, 0] > 5).astype(int)  # vertical split
    pairs = np.array([[0, 30], [50, 80], [0, 50], [30, 80]])  # same side, same side, across, across
    must = side[pairs[:, 0]] == side[pairs[:, 1]]
    assert must.tolist() == [True, True, False, False]
    for seed in range(5):
        labels, satisfied = kmeans_labels_by_constraints(X, 2, pairs, must, n_init=10, random_state=seed)
        assert satisfied == 1.0
        assert adjusted_rand_score(side, labels) == 1.0


def test_as_many_clusters_as_samples_puts_each_sample_alone():
    """Non-regression: CCSKL(n_clusters=2).fit of two samples put both in one cluster: m is clamped
    to n - 1 = 1 eigenvector (spec §7.8), the trivial one, so both rows of the embedding were equal."""
    assert CCSKL(n_clusters=2, random_state=0).fit([[0.0, 0.0], [1.0, 1.0]]).labels_.tolist() == [0, 1]
    X = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0], [9.0, 0.0]])
    model = CCSKL(n_clusters=4, random_state=0).fit(X, pairs=[[0, 1], [1, 2]], pair_kind=[1, -1])
    assert model.labels_.tolist() == [0, 1, 2, 3]
    assert model.diagnostics_["kmeans_constraints_satisfied"] == 0.5  # the must-link cannot hold


def test_sigma_select_refuses_more_rows_than_its_limit_and_other_widths_do_not(monkeypatch):
    """sigma="select" fits 9 widths x 5 folds: 156 s at 20000 rows (bench/scale_limits.py); refused
    above CCSKL_SELECT_MAX_SAMPLES before any graph is built."""
    from clustering._ccskl import _estimator as _ccskl

    monkeypatch.setattr(_ccskl, "CCSKL_SELECT_MAX_SAMPLES", 20)
    X, _ = make_blobs(n_samples=21, centers=2, random_state=0)
    con = {"pairs": [[0, 1], [2, 3], [4, 5]], "pair_kind": [1, -1, 1]}
    with pytest.raises(InvalidInputError, match="sigma='auto' or a number") as err:
        CCSKL(n_clusters=2, n_neighbors=5, sigma="select", random_state=0).fit(X, **con)
    assert err.value.field == "sigma" and "20 samples (got 21)" in str(err.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)
        at_limit = CCSKL(n_clusters=2, n_neighbors=5, sigma="select", random_state=0).fit(X[:20], **con)
        auto = CCSKL(n_clusters=2, n_neighbors=5, random_state=0).fit(X, **con)
        fixed = CCSKL(n_clusters=2, n_neighbors=5, sigma=1.0, random_state=0).fit(X, **con)
    assert at_limit.diagnostics_["sigma_selection"]["applied"]
    assert auto.labels_.shape == fixed.labels_.shape == (21,)


def test_sigma_select_is_refused_one_row_over_the_real_limit():
    from clustering.validation import CCSKL_SELECT_MAX_SAMPLES

    X = np.random.default_rng(0).normal(size=(CCSKL_SELECT_MAX_SAMPLES + 1, 2))
    with pytest.raises(InvalidInputError, match="limited to") as err:
        CCSKL(n_clusters=2, sigma="select").fit(X, pairs=[[0, 1]], pair_kind=[1])
    assert err.value.field == "sigma"


def test_tiny_sigma_on_coinciding_points_clusters():
    """Non-regression: with sigma = 1e-300 (the wire allows any sigma > 0) 2 sigma^2 underflowed to 0
    and the weight of two equal rows was 0 / 0 = NaN; fit failed with ValueError ("array must not
    contain infs or NaNs") from the eigensolver."""
    model = CCSKL(n_clusters=2, sigma=1e-300, random_state=0)
    with pytest.warns(ConstraintWarning, match="eigenvalues are positive"):  # equal rows: one direction
        labels = model.fit(np.ones((10, 2)), pairs=[[0, 1], [0, 9]], pair_kind=[1, -1]).labels_
    assert labels.shape == (10,) and set(labels.tolist()) <= {0, 1}
    assert np.isfinite(model.beta_).all()


@pytest.mark.parametrize("i_idx", [1.5, [[0, 1]], ["a"], [2**70], [1 + 0j], [True], [10**400], -(10**400)])
def test_kernel_refuses_indices_that_are_not_integers_in_one_dimension(i_idx):
    # 1.5 was truncated to row 1, [[0, 1]] gave a (1, 2, 1) array instead of (len(i), len(j)), and strings,
    # complex numbers or ints beyond int64 raised ValueError / TypeError / OverflowError from the cast (ints
    # beyond float64 still did: their range was checked as floats)
    X, _ = make_blobs(30, centers=3, random_state=1)
    est = CCSKL(3, n_components=5, random_state=0).fit(X)
    with pytest.raises(InvalidInputError, match="i_idx") as exc:
        est.kernel(i_idx, [2])
    assert exc.value.field == "i_idx"
    np.testing.assert_array_equal(est.kernel(np.int64(1), [2.0]), est.kernel([1], [2]))
