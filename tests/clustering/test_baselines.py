"""Test oracles of specs/baselines.md §1.7 (NJW), §2.7 (Spectral Learning),
§3.7 (E2CP) and §4.7 (COP-KMeans), as properties on small synthetic data."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import eigh, subspace_angles
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from clustering._graph import normalized_adjacency
from clustering.baselines import E2CP, COPKMeans, SpectralClustering, SpectralLearning
from clustering.baselines._spectral_learning import _overwrite
from clustering.exceptions import ConstraintWarning, InfeasibleConstraintsError, InvalidInputError


def blobs(n=60, k=3, std=0.6, seed=0):
    X, y = make_blobs(n_samples=n, centers=k, cluster_std=std, random_state=seed)
    return X, y


def random_constraints(y, m, seed):
    rng = np.random.default_rng(seed)
    pairs = []
    while len(pairs) < m:
        i, j = rng.choice(len(y), 2, replace=False)
        pairs.append((i, j))
    pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    return pairs, kind


def block_affinity(sizes, seed=0):
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    A = np.zeros((n, n))
    start = 0
    truth = np.zeros(n, dtype=int)
    for b, s in enumerate(sizes):
        blk = rng.uniform(0.2, 1.0, (s, s))
        A[start:start + s, start:start + s] = (blk + blk.T) / 2
        truth[start:start + s] = b
        start += s
    np.fill_diagonal(A, 0.0)
    return A, truth


def all_pairs_constraints(y):
    iu, ju = np.triu_indices(len(y), 1)
    pairs = np.stack([iu, ju], axis=1)
    return pairs, np.where(y[iu] == y[ju], 1, -1)


def fit(est, X, pairs=None, kind=None, weight=None):
    if isinstance(est, SpectralClustering):
        return est.fit(X)
    return est.fit(X, pairs=pairs, pair_kind=kind, pair_weight=weight)


ALL = [
    lambda: SpectralClustering(n_clusters=3, n_neighbors=8, random_state=0),
    lambda: SpectralLearning(n_clusters=3, n_neighbors=8, random_state=0),
    lambda: E2CP(n_clusters=3, n_neighbors=8, random_state=0),
    lambda: COPKMeans(n_clusters=3, random_state=0),
]


# ------------------------------------------------------------------ common contract
@pytest.mark.parametrize("make", ALL)
def test_contract_outputs_determinism_and_json_diagnostics(make):
    X, y = blobs()
    pairs, kind = random_constraints(y, 20, 1)
    a = fit(make(), X, pairs, kind)
    b = fit(clone(make()), X, pairs, kind)
    assert a.labels_.dtype == np.int64 and a.labels_.shape == (60,)
    assert a.labels_.min() >= 0 and a.labels_.max() < 3 and a.n_clusters_ == 3
    np.testing.assert_array_equal(a.labels_, b.labels_)
    json.dumps(a.diagnostics_)
    assert adjusted_rand_score(y, a.labels_) > 0.9


@pytest.mark.parametrize("make", ALL)
def test_callback_is_called_and_may_cancel(make):
    X, y = blobs()
    pairs, kind = random_constraints(y, 10, 2)
    calls = []
    est = make().set_params(callback=lambda stage, frac: calls.append((stage, frac)))
    fit(est, X, pairs, kind)
    assert calls and all(0 <= f <= 1 for _, f in calls)

    class Cancelled(Exception):
        pass

    def cancel(stage, frac):
        raise Cancelled(stage)

    with pytest.raises(Cancelled):
        fit(make().set_params(callback=cancel), X, pairs, kind)


@pytest.mark.parametrize(
    "make, name, value",
    [
        (ALL[0], "affinity", "cosine"),
        (ALL[0], "sigma", -1.0),
        (ALL[1], "normalization", "lsym"),
        (ALL[2], "alpha", 0.99),
        (ALL[3], "max_iter", 0),
    ],
)
def test_bad_parameter_names_the_field(make, name, value):
    X, _ = blobs()
    with pytest.raises(InvalidInputError, match=name) as exc:
        fit(make().set_params(**{name: value}), X)
    assert exc.value.field == name


@pytest.mark.parametrize("make", ALL[1:])
def test_bad_constraints_are_input_errors(make):
    X, _ = blobs()
    with pytest.raises(InvalidInputError) as exc:
        fit(make(), X, [[0, 60]], [1])
    assert exc.value.field == "pairs" and exc.value.index == (0, 1)
    with pytest.raises(InvalidInputError) as exc:
        fit(make(), X, [[0, 1]], [2])
    assert exc.value.field == "pair_kind"


# ------------------------------------------------------------------ NJW (§1.7)
def test_njw_rows_unit_norm_and_dense_reference():
    X, _ = blobs()
    m = SpectralClustering(n_clusters=3, n_neighbors=8, random_state=0).fit(X)
    norms = np.linalg.norm(m.embedding_, axis=1)
    zero = np.asarray(m.diagnostics_["zero_rows"], dtype=int)
    ok = np.setdiff1d(np.arange(len(X)), zero)
    np.testing.assert_allclose(norms[ok], 1.0, atol=1e-12)
    A = m.affinity_matrix_
    d = A.sum(1)
    _, vecs = eigh(A / np.sqrt(np.outer(d, d)))
    ref = vecs[:, -3:]
    ref = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    R, *_ = np.linalg.lstsq(ref, m.embedding_, rcond=None)
    assert np.abs(ref @ R - m.embedding_).max() < 1e-8


def test_njw_block_matrix_gives_the_blocks():
    A, truth = block_affinity([7, 12, 9])
    m = SpectralClustering(n_clusters=3, affinity="precomputed", random_state=0).fit(A)
    assert adjusted_rand_score(truth, m.labels_) == 1.0


def test_njw_scale_invariance():
    A, _ = block_affinity([10, 10], seed=1)
    A[:10, 10:] = A[10:, :10] = 0.05
    np.fill_diagonal(A, 0)
    m1 = SpectralClustering(n_clusters=2, affinity="precomputed", random_state=0).fit(A)
    m2 = SpectralClustering(n_clusters=2, affinity="precomputed", random_state=0).fit(7.5 * A)
    np.testing.assert_allclose(np.abs(m1.embedding_), np.abs(m2.embedding_), atol=1e-10)
    np.testing.assert_array_equal(m1.labels_, m2.labels_)


def test_njw_permutation_equivariance():
    X, _ = blobs(std=1.5, seed=3)
    perm = np.random.default_rng(0).permutation(len(X))
    m1 = SpectralClustering(n_clusters=3, n_neighbors=8, random_state=0).fit(X)
    m2 = SpectralClustering(n_clusters=3, n_neighbors=8, random_state=0).fit(X[perm])
    assert adjusted_rand_score(m1.labels_[perm], m2.labels_) == 1.0


def test_njw_knn_sparse_and_sigma_search():
    X, y = blobs()
    m = SpectralClustering(n_clusters=3, affinity="knn", n_neighbors=8, random_state=0).fit(X)
    assert sp.issparse(m.affinity_matrix_)
    assert adjusted_rand_score(y, m.labels_) > 0.9
    s = SpectralClustering(n_clusters=3, sigma="njw_search", n_neighbors=8, random_state=0).fit(X)
    search = s.diagnostics_["sigma_search"]
    assert len(search) == 5
    best = min(search, key=lambda r: r["distortion"])
    assert s.sigma_ == pytest.approx(best["sigma"])


def test_njw_precomputed_checks_and_disconnected_warning():
    A, _ = block_affinity([5, 5, 5])
    B = A.copy()
    B[0, 3] += 0.5
    with pytest.raises(InvalidInputError, match="symmetric") as exc:
        SpectralClustering(n_clusters=2, affinity="precomputed").fit(B)
    assert exc.value.index == (0, 3)
    with pytest.raises(InvalidInputError, match="square"):
        SpectralClustering(n_clusters=2, affinity="precomputed").fit(A[:, :5])
    with pytest.warns(ConstraintWarning, match="3 connected components"):
        SpectralClustering(n_clusters=2, affinity="precomputed", random_state=0).fit(A)
    sparse = SpectralClustering(n_clusters=3, affinity="precomputed", random_state=0).fit(sp.csr_matrix(A))
    assert adjusted_rand_score(np.repeat([0, 1, 2], 5), sparse.labels_) == 1.0


# ------------------------------------------------------------------ Spectral Learning (§2.7)
@pytest.mark.parametrize("affinity", ["rbf", "knn"])
def test_sl_overwrite_sets_one_and_zero_and_nothing_else(affinity):
    X, y = blobs()
    pairs, kind = random_constraints(y, 25, 3)
    base = SpectralClustering(n_clusters=3, affinity=affinity, n_neighbors=8).fit(X).affinity_matrix_
    m = SpectralLearning(n_clusters=3, affinity=affinity, n_neighbors=8, random_state=0)
    m.fit(X, pairs=pairs, pair_kind=kind)
    A = m.affinity_matrix_.toarray() if sp.issparse(m.affinity_matrix_) else m.affinity_matrix_
    B = base.toarray() if sp.issparse(base) else base.copy()
    np.testing.assert_array_equal(A[pairs[kind == 1, 0], pairs[kind == 1, 1]], 1.0)
    np.testing.assert_array_equal(A[pairs[kind == -1, 0], pairs[kind == -1, 1]], 0.0)
    np.testing.assert_array_equal(A, A.T)
    mask = np.ones_like(A, dtype=bool)
    mask[pairs[:, 0], pairs[:, 1]] = mask[pairs[:, 1], pairs[:, 0]] = False
    np.testing.assert_array_equal(A[mask], B[mask])


def test_sl_additive_embedding_is_bottom_of_laplacian_and_n_is_stochastic():
    X, y = blobs()
    pairs, kind = random_constraints(y, 15, 4)
    m = SpectralLearning(n_clusters=3, normalization="additive", n_neighbors=8, random_state=0)
    m.fit(X, pairs=pairs, pair_kind=kind)
    A = m.affinity_matrix_
    d = A.sum(1)
    L = np.diag(d) - A
    _, bottom = eigh(L, subset_by_index=[0, 2])
    assert np.max(subspace_angles(m.embedding_, bottom)) < 1e-8
    N = (A + np.diag(d.max() - d)) / d.max()
    np.testing.assert_allclose(N, N.T)
    np.testing.assert_allclose(N.sum(1), 1.0)


def test_sl_without_constraints_equals_unconstrained_njw():
    X, _ = blobs(std=1.5, seed=5)
    sl = SpectralLearning(n_clusters=3, normalization="sym", n_neighbors=8, random_state=0).fit(X)
    sc = SpectralClustering(n_clusters=3, n_neighbors=8, random_state=0).fit(X)
    np.testing.assert_array_equal(sl.labels_, sc.labels_)
    np.testing.assert_array_equal(sl.affinity_matrix_, sc.affinity_matrix_)
    np.testing.assert_allclose(sl.embedding_, sc.embedding_)


@pytest.mark.parametrize("normalization", ["additive", "rw", "sym"])
def test_sl_full_ground_truth_constraints_recover_classes(normalization):
    X, y = blobs(n=45, std=3.0, seed=7)  # overlapping blobs
    pairs, kind = all_pairs_constraints(y)
    m = SpectralLearning(n_clusters=3, normalization=normalization, n_neighbors=8, random_state=0)
    m.fit(X, pairs=pairs, pair_kind=kind)
    assert adjusted_rand_score(y, m.labels_) == 1.0


def test_sl_contradiction_cannot_link_wins_and_is_reported():
    X, y = blobs()
    pairs = np.array([[0, 1], [1, 2], [2, 0], [3, 4], [4, 3]])
    kind = np.array([1, 1, -1, 1, -1])
    m = SpectralLearning(n_clusters=3, n_neighbors=8, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    A = m.affinity_matrix_
    assert A[0, 1] == 1.0 and A[1, 2] == 1.0 and A[0, 2] == 0.0 and A[3, 4] == 0.0
    assert m.diagnostics_["n_conflicts"] == 2
    chains = sorted(c["must_link_chain"] for c in m.diagnostics_["conflicts"])
    assert chains == [[2, 1, 0], [4, 3]]


def test_sl_weights_and_closure():
    X, y = blobs()
    base = SpectralClustering(n_clusters=3, n_neighbors=8).fit(X).affinity_matrix_
    pairs = np.array([[0, 40], [1, 2]])
    m = SpectralLearning(n_clusters=3, n_neighbors=8, random_state=0)
    m.fit(X, pairs=pairs, pair_kind=[1, -1], pair_weight=[0.5, 0.25])
    assert m.affinity_matrix_[0, 40] == pytest.approx(max(base[0, 40], 0.5))
    assert m.affinity_matrix_[1, 2] == pytest.approx(base[1, 2] * 0.75)
    c = SpectralLearning(n_clusters=3, n_neighbors=8, closure=True, random_state=0)
    c.fit(X, pairs=[[0, 1], [1, 2], [2, 50]], pair_kind=[1, 1, -1])
    A = c.affinity_matrix_
    assert A[0, 2] == 1.0 and A[0, 50] == 0.0 and A[1, 50] == 0.0
    # _overwrite on sparse input agrees with dense
    S = _overwrite(sp.csr_matrix(base), [[0, 40]], [0.5], [[1, 2]], [0.25])
    D = _overwrite(base, [[0, 40]], [0.5], [[1, 2]], [0.25])
    np.testing.assert_allclose(S.toarray(), D)


# ------------------------------------------------------------------ E2CP (§3.7)
def _z(pairs, kind, n):
    Z = np.zeros((n, n))
    Z[pairs[:, 0], pairs[:, 1]] = kind
    Z[pairs[:, 1], pairs[:, 0]] = kind
    return Z


def test_e2cp_closed_form_matches_iteration_and_dense_formula():
    X, y = blobs(n=50, std=1.2)
    pairs, kind = random_constraints(y, 12, 5)
    alpha = 0.6
    m = E2CP(n_clusters=3, alpha=alpha, n_neighbors=8, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    Lbar = normalized_adjacency(m.graph_)[0].toarray()
    Z = _z(pairs, kind, 50)
    Fv = np.zeros_like(Z)
    for _ in range(200):
        Fv = alpha * Lbar @ Fv + (1 - alpha) * Z
    Fh = np.zeros_like(Z)
    for _ in range(200):
        Fh = alpha * Fh @ Lbar + (1 - alpha) * Fv
    assert m.diagnostics_["n_clipped"] == 0
    np.testing.assert_allclose(m.propagated_constraints_, Fh, atol=1e-10)
    Minv = np.linalg.inv(np.eye(50) - alpha * Lbar)
    dense = (1 - alpha) ** 2 * Minv @ Z @ Minv
    np.testing.assert_allclose(m.propagated_constraints_, dense, atol=1e-12)
    np.testing.assert_array_equal(m.propagated_constraints_, m.propagated_constraints_.T)
    ev = np.linalg.eigvalsh(np.eye(50) - alpha * Lbar)
    assert ev.min() >= 1 - alpha - 1e-12 and ev.max() <= 1 + alpha + 1e-12


def test_e2cp_refuses_more_rows_than_its_limit(monkeypatch):
    """Above E2CP_MAX_SAMPLES the propagation needs more memory than a worker has
    (bench/scale_limits.py): refused before any work, the limit itself is fitted."""
    from clustering.baselines import _e2cp
    from clustering.validation import E2CP_MAX_SAMPLES

    assert _e2cp.E2CP_MAX_SAMPLES == E2CP_MAX_SAMPLES
    monkeypatch.setattr(_e2cp, "E2CP_MAX_SAMPLES", 30)
    X, _ = make_blobs(31, centers=3, random_state=0)
    with pytest.raises(InvalidInputError, match="limited to 30 samples") as err:
        E2CP(n_clusters=3, n_neighbors=5, random_state=0).fit(X, pairs=[[0, 1]], pair_kind=[1])
    assert err.value.field == "X"
    est = E2CP(n_clusters=3, n_neighbors=5, random_state=0).fit(X[:30], pairs=[[0, 1]], pair_kind=[1])
    assert est.labels_.shape == (30,)


def test_e2cp_without_constraints_keeps_the_graph_exactly():
    X, _ = blobs()
    m = E2CP(n_clusters=3, n_neighbors=8, random_state=0).fit(X)
    assert not m.propagated_constraints_.any()
    np.testing.assert_array_equal(m.affinity_matrix_, m.graph_.toarray())
    W = m.graph_
    assert abs(W - W.T).max() == 0 and W.diagonal().max() == 0


def test_e2cp_alpha_zero_is_spectral_learning_overwrite():
    X, y = blobs()
    pairs, kind = random_constraints(y, 20, 6)
    m = E2CP(n_clusters=3, alpha=0.0, n_neighbors=8, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    np.testing.assert_array_equal(m.propagated_constraints_, _z(pairs, kind, 60))
    W = m.graph_.toarray()
    expected = _overwrite(W, pairs[kind == 1], 1.0, pairs[kind == -1], 1.0)
    np.testing.assert_allclose(m.affinity_matrix_, expected, atol=1e-15)


@pytest.mark.parametrize("kind", [1, -1])
def test_e2cp_single_constraint_sign(kind):
    X, _ = blobs()
    m = E2CP(n_clusters=3, n_neighbors=8, random_state=0).fit(X, pairs=[[3, 45]], pair_kind=[kind])
    assert np.sign(m.propagated_constraints_[3, 45]) == kind


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), alpha=st.sampled_from([0.2, 0.6, 0.9]), m=st.integers(1, 40))
def test_e2cp_adjustment_direction_and_range(seed, alpha, m):
    X, y = blobs(n=40, std=1.5, seed=seed % 7)
    pairs, kind = random_constraints(y, m, seed)
    est = E2CP(n_clusters=3, alpha=alpha, n_neighbors=6, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    F, Wt, W = est.propagated_constraints_, est.affinity_matrix_, est.graph_.toarray()
    off = ~np.eye(40, dtype=bool)
    assert np.all(Wt[(F >= 0) & off] >= W[(F >= 0) & off] - 1e-15)
    assert np.all(Wt[F < 0] <= W[F < 0] + 1e-15)
    assert Wt.min() >= 0 and Wt.max() <= 1 + 1e-15 and np.abs(F).max() <= 1
    assert np.all(np.diag(Wt) == 0)


def test_e2cp_contradiction_superposes_and_is_reported():
    X, _ = blobs()
    m = E2CP(n_clusters=3, n_neighbors=8, random_state=0)
    m.fit(X, pairs=[[0, 1], [1, 0], [0, 1]], pair_kind=[1, -1, 1])
    assert m.diagnostics_["n_conflicts"] == 1
    assert not m.propagated_constraints_.any()  # +1 - 1 = 0, duplicates not added


def test_e2cp_permutation_equivariance():
    X, y = blobs(std=1.2, seed=2)
    pairs, kind = random_constraints(y, 15, 8)
    perm = np.random.default_rng(1).permutation(60)
    inv = np.argsort(perm)
    a = E2CP(n_clusters=3, n_neighbors=8, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    b = E2CP(n_clusters=3, n_neighbors=8, random_state=0).fit(X[perm], pairs=inv[pairs], pair_kind=kind)
    np.testing.assert_allclose(b.affinity_matrix_, a.affinity_matrix_[np.ix_(perm, perm)], atol=1e-12)
    assert adjusted_rand_score(a.labels_[perm], b.labels_) == 1.0


# ------------------------------------------------------------------ COP-KMeans (§4.7)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(0, 60), order=st.sampled_from(["dataset", "random"]))
def test_cop_kmeans_satisfies_every_constraint_and_its_closure(seed, m, order):
    X, y = blobs(n=60, std=1.5, seed=seed % 5)
    pairs, kind = random_constraints(y, m, seed)
    est = COPKMeans(n_clusters=3, order=order, random_state=seed)
    try:
        est.fit(X, pairs=pairs.reshape(-1, 2), pair_kind=kind)
    except InfeasibleConstraintsError as exc:  # greedy failure is allowed, hanging is not
        assert exc.conflicts and all("cannot_link" in c for c in exc.conflicts)
        return
    lab = est.labels_
    if m:
        ml, cl = pairs[kind == 1], pairs[kind == -1]
        assert np.all(lab[ml[:, 0]] == lab[ml[:, 1]])
        assert np.all(lab[cl[:, 0]] != lab[cl[:, 1]])
        # closure: a cannot-link between two must-link components separates all members
        from clustering._constraints import transitive_closure

        ml_all, cl_all = transitive_closure(ml, cl, 60)
        assert np.all(lab[ml_all[:, 0]] == lab[ml_all[:, 1]])
        assert np.all(lab[cl_all[:, 0]] != lab[cl_all[:, 1]])


def test_cop_kmeans_contradiction_raises_before_iterating_with_the_chain():
    X, _ = blobs()
    calls = []
    est = COPKMeans(n_clusters=3, random_state=0, callback=lambda s, f: calls.append(s))
    with pytest.raises(InfeasibleConstraintsError, match="must-link chain") as exc:
        est.fit(X, pairs=[[0, 1], [1, 2], [5, 6], [2, 0]], pair_kind=[1, 1, -1, -1])
    assert calls == []
    assert exc.value.conflicts == [
        {"cannot_link": [2, 0], "cannot_link_index": 3, "must_link_chain": [2, 1, 0]}
    ]


def test_cop_kmeans_k_plus_one_mutual_cannot_links_is_infeasible():
    X, _ = blobs()
    pts = [0, 21, 22, 45]
    pairs = [[a, b] for i, a in enumerate(pts) for b in pts[i + 1:]]
    with pytest.raises(InfeasibleConstraintsError, match="no assignment") as exc:
        COPKMeans(n_clusters=3, n_init=5, random_state=0).fit(X, pairs=pairs, pair_kind=[-1] * len(pairs))
    assert exc.value.conflicts
    for c in exc.value.conflicts:
        assert c["cannot_link"] in pairs and c["sample"] in pts


def test_cop_kmeans_without_constraints_is_lloyd():
    X, _ = blobs(n=80, std=2.0, seed=4)
    centres = X[[0, 1, 2]].copy()
    ours = COPKMeans(n_clusters=3, init=centres, tol=0.0).fit(X)
    ref = KMeans(n_clusters=3, init=centres, n_init=1, algorithm="lloyd", tol=0.0).fit(X)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, atol=1e-10)
    assert ours.inertia_ == pytest.approx(ref.inertia_)


def test_cop_kmeans_satisfied_constraints_do_not_change_the_result():
    X, _ = blobs(n=80, std=2.0, seed=4)
    free = COPKMeans(n_clusters=3, random_state=0).fit(X)
    lab = free.labels_
    rng = np.random.default_rng(0)
    pairs = rng.choice(80, size=(30, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(lab[pairs[:, 0]] == lab[pairs[:, 1]], 1, -1)
    again = COPKMeans(n_clusters=3, init=free.cluster_centers_).fit(X, pairs=pairs, pair_kind=kind)
    np.testing.assert_array_equal(again.labels_, lab)
    # every must-link component is single-labelled
    assert np.all(again.labels_[pairs[kind == 1, 0]] == again.labels_[pairs[kind == 1, 1]])


def test_cop_kmeans_init_shape_checked():
    X, _ = blobs()
    with pytest.raises(InvalidInputError, match="init") as exc:
        COPKMeans(n_clusters=3, init=np.zeros((2, 2))).fit(X)
    assert exc.value.field == "init"


@pytest.mark.parametrize("block_entries", [None, 50], ids=["one-block", "many-blocks"])
def test_e2cp_sparse_adjust_agrees_with_dense_on_its_pattern(monkeypatch, block_entries):
    from clustering.baselines import _e2cp

    if block_entries is not None:  # F* on the pattern a few entries at a time, as on large data
        monkeypatch.setattr(_e2cp, "_F_BLOCK_ENTRIES", block_entries)
    X, y = blobs(n=80, std=1.2, seed=3)
    pairs, kind = random_constraints(y, 20, 9)
    dense = E2CP(n_clusters=3, n_neighbors=6, sparse_adjust=False, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    sparse = E2CP(n_clusters=3, n_neighbors=6, sparse_adjust=True, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    Wt, F = sparse.affinity_matrix_, sparse.propagated_constraints_
    assert sp.issparse(Wt) and sparse.diagnostics_["sparse_adjust"]
    assert abs(Wt - Wt.T).max() < 1e-15 and Wt.diagonal().max() == 0
    r, c = F.nonzero()
    np.testing.assert_allclose(np.asarray(F[r, c]).ravel(), dense.propagated_constraints_[r, c], atol=1e-12)
    r, c = Wt.nonzero()
    np.testing.assert_allclose(np.asarray(Wt[r, c]).ravel(), dense.affinity_matrix_[r, c], atol=1e-12)
    # every kNN edge and every constrained pair is kept; each row gains its strongest positive F*
    Gd = sparse.graph_.toarray() > 0
    np.testing.assert_allclose(Wt.toarray()[Gd], dense.affinity_matrix_[Gd], atol=1e-12)
    assert np.all(np.asarray(F[pairs[:, 0], pairs[:, 1]]).ravel() != 0)
    i = int(pairs[kind == 1][0, 0])
    row = dense.propagated_constraints_[i].copy()
    row[i] = -np.inf
    assert F[i, int(np.argmax(row))] == pytest.approx(row.max())
    assert adjusted_rand_score(dense.labels_, sparse.labels_) > 0.9


def test_e2cp_refuses_more_propagation_than_its_limit(monkeypatch):
    """Q and G are n x c (c: samples in a constraint): samples x constrained samples is bounded, and
    the bound itself is fitted."""
    from clustering.baselines import _e2cp

    X, y = make_blobs(40, centers=3, random_state=0)
    pairs = np.array([[0, 1], [2, 3], [4, 5]])  # c = 6: n * c = 240
    monkeypatch.setattr(_e2cp, "E2CP_MAX_PROPAGATION", 239)
    with pytest.raises(InvalidInputError, match="40 samples x 6 constrained samples") as err:
        E2CP(n_clusters=3, n_neighbors=5, random_state=0).fit(X, pairs=pairs, pair_kind=[1, 1, -1])
    assert err.value.field == "pairs" and "at most 5 samples" in str(err.value)
    monkeypatch.setattr(_e2cp, "E2CP_MAX_PROPAGATION", 240)
    est = E2CP(n_clusters=3, n_neighbors=5, random_state=0).fit(X, pairs=pairs, pair_kind=[1, 1, -1])
    assert est.diagnostics_["n_constrained_points"] == 6


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 30), st.data())
def test_closure_size_counts_the_pairs_the_transitive_closure_lists(n, data):
    """The service refuses a closure by this count before any pair is listed: it must be exact."""
    from clustering._constraints import transitive_closure
    from clustering.validation import closure_size

    pair = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1])
    ml = np.array(data.draw(st.lists(pair, max_size=30)), dtype=np.int64).reshape(-1, 2)
    cl = np.array(data.draw(st.lists(pair, max_size=10)), dtype=np.int64).reshape(-1, 2)
    ml_all, cl_all = transitive_closure(ml, cl, n)
    assert closure_size(ml, cl, n) == (len(ml_all), len(cl_all))


def test_spectral_learning_refuses_a_closure_over_its_limit(monkeypatch):
    """closure=True lists and overwrites every entailed pair: more than
    SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS is refused before any is listed; the limit itself is fitted,
    and closure=False takes the same constraints."""
    from clustering.baselines import _spectral_learning

    X, _ = make_blobs(40, centers=2, random_state=0)
    # must-link chains 0-1-2-3 and 10-11-12 (6 + 3 pairs), a cannot-link between them (4 x 3 = 12)
    pairs = np.array([[0, 1], [1, 2], [2, 3], [10, 11], [11, 12], [3, 10]])
    kind = np.array([1, 1, 1, 1, 1, -1])
    monkeypatch.setattr(_spectral_learning, "SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS", 20)
    with pytest.raises(InvalidInputError, match="21 pairs [(]9 inside must-link components, 12 between") as err:
        SpectralLearning(n_clusters=2, closure=True, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    assert err.value.field == "closure" and "closure=False" in str(err.value)
    assert SpectralLearning(n_clusters=2, random_state=0).fit(X, pairs=pairs, pair_kind=kind).labels_.shape == (40,)
    monkeypatch.setattr(_spectral_learning, "SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS", 21)
    est = SpectralLearning(n_clusters=2, closure=True, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    assert est.diagnostics_["n_must_link"] + est.diagnostics_["n_cannot_link"] == 21


@pytest.mark.parametrize("make", [
    lambda: SpectralClustering(n_clusters=2, sigma=1e-300, random_state=0),
    lambda: SpectralClustering(n_clusters=2, sigma=1e-300, affinity="knn", random_state=0),
    lambda: SpectralLearning(n_clusters=2, sigma=1e-300, random_state=0),
    lambda: E2CP(n_clusters=2, sigma=1e-300, random_state=0),
], ids=["spectral", "spectral_knn", "spectral_learning", "e2cp"])
def test_tiny_sigma_on_coinciding_points_clusters(make):
    # 2 sigma^2 underflowed to 0 and the weight of two equal rows was 0 / 0 = NaN: ValueError from eigh
    # ("array must not contain infs or NaNs") or RuntimeError from splu ("Factor is exactly singular")
    X = np.ones((10, 2))
    est = make()
    fit = {} if isinstance(est, SpectralClustering) else {"pairs": [[0, 1], [0, 9]], "pair_kind": [1, -1]}
    labels = est.fit(X, **fit).labels_
    assert labels.shape == (10,) and set(labels.tolist()) <= {0, 1}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("cls", [SpectralClustering, SpectralLearning])
def test_groups_of_equal_rows_above_the_dense_eigh_limit_end(cls):
    """Non-regression: 1200 rows in 40 groups of 30 equal rows (the kth-neighbour bandwidth is 0, so
    sigma falls back to 1): 15 groups are isolated and the top eigenvalue 1 repeats 15 times next to
    others within 1e-6 of it. ARPACK ran all its 20 n restarts on the dense matrix (over 5 minutes
    for SpectralClustering, 170 s for SpectralLearning) before LOBPCG; the dense eigh takes 0.1 s."""
    centers = np.random.default_rng(0).normal(size=(40, 2)) * 10
    X = np.repeat(centers, 30, axis=0)
    fit = {} if cls is SpectralClustering else {"pairs": [[0, 1]], "pair_kind": [1]}
    labels = cls(n_clusters=3, random_state=0).fit(X, **fit).labels_
    assert set(labels.tolist()) == {0, 1, 2}
    assert (labels.reshape(40, 30) == labels.reshape(40, 30)[:, :1]).all()  # equal rows stay together


@pytest.mark.parametrize("init, match", [(np.full((3, 2), np.nan), r"init\[0\]\[0\] is nan"),
                                         (np.full((3, 2), 1e300), r"init\[0\]\[0\] = 1e\+300 is too large"),
                                         (np.array([["a", "b"]] * 3), "init must contain only numbers"),
                                         (np.zeros((3, 2), dtype=complex), "init has complex values")])
def test_cop_kmeans_init_centres_are_checked_as_data(init, match):
    # NaN centres were accepted and put every sample in one cluster; 1e300 overflowed the squared distances
    # (RuntimeWarning); strings raised a bare ValueError and complex numbers a ComplexWarning
    X, _ = make_blobs(30, centers=3, random_state=1)
    with pytest.raises(InvalidInputError, match=match) as exc:
        COPKMeans(3, init=init, random_state=0).fit(X)
    assert exc.value.field == "init"


@pytest.mark.parametrize("estimator", ["spectral", "spectral_learning"])
def test_a_tiny_sigma_on_a_sparse_graph_bounds_arpack_then_uses_lobpcg(monkeypatch, estimator):
    """Non-regression: a kNN graph cut into more groups than K by a tiny sigma (0.2 on 10-d make_blobs)
    repeats its top eigenvalue, and ARPACK ran all its 20 n restarts on the sparse matrix: spectral and
    spectral_learning on 10 000 rows did not finish in 120 s (now about 4 s). The restarts are bounded
    and LOBPCG, bounded too, answers."""
    from clustering import _spectral

    arpack, lobpcg, used = _spectral.eigsh, _spectral.lobpcg, []

    def bounded_eigsh(*args, **kwargs):
        assert kwargs["maxiter"] <= 1000, f"{kwargs['maxiter']} ARPACK restarts allowed"  # was 20 n
        return arpack(*args, **kwargs)

    monkeypatch.setattr(_spectral, "eigsh", bounded_eigsh)
    monkeypatch.setattr(_spectral, "lobpcg", lambda *a, **k: used.append(True) or lobpcg(*a, **k))
    X, y = make_blobs(1500, centers=5, n_features=10, random_state=0)
    if estimator == "spectral":
        est = SpectralClustering(n_clusters=5, affinity="knn", sigma=0.2, random_state=0).fit(X)
    else:
        pairs = np.array([[0, 1], [2, 3], [4, 5]])
        kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
        est = SpectralLearning(n_clusters=5, affinity="knn", sigma=0.2, random_state=0).fit(
            X, pairs=pairs, pair_kind=kind)
    assert used, "ARPACK converged: the graph did not exercise the fallback"
    assert np.all(np.isfinite(est.embedding_)) and set(est.labels_) <= set(range(5))
