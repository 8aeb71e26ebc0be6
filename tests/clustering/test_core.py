"""Shared building blocks: validation, constraint containers, graphs,
spectral embeddings and metrics."""

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import eigh, subspace_angles
from scipy.sparse.csgraph import connected_components
from sklearn.datasets import make_blobs

from clustering._constraints import (
    check_pairwise,
    must_link_components,
    split_pairs,
    transitive_closure,
)
from clustering._graph import (
    component_bridges,
    discriminant_knn_graph,
    gaussian_affinity,
    knn_distances,
    knn_gaussian_graph,
    kth_neighbor_sigma,
    n_connected_components,
    normalized_adjacency,
    self_tuning_knn_graph,
)
from clustering._metrics import clustering_scores, constraint_satisfaction, pairwise_f_measure, violated_constraints
from clustering._spectral import (
    additive_embedding,
    eigengap_n_clusters,
    generalized_embedding,
    kmeans_labels,
    njw_embedding,
    top_eigenvectors,
)
from clustering.exceptions import InfeasibleConstraintsError, InvalidInputError
from clustering.validation import (
    MAX_HIERARCHY_DEPTH,
    check_data,
    check_hierarchy,
    check_n_clusters,
    check_pairs,
    check_triplets,
    check_weights,
    find_pairwise_conflicts,
    raise_on_conflicts,
)


# --------------------------------------------------------------------- validation
def test_check_data_names_the_nan_cell():
    X = np.ones((4, 3))
    X[2, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"X\[2\]\[1\]") as exc:
        check_data(X)
    assert exc.value.field == "X" and exc.value.index == (2, 1)


def test_check_data_rejects_ragged_and_text():
    with pytest.raises(InvalidInputError, match="different lengths") as exc:
        check_data([[1, 2], [3]])
    assert exc.value.field == "X"
    with pytest.raises(InvalidInputError, match="numbers"):
        check_data([["a", "b"], ["c", "d"]])


def test_check_data_returns_float64_copy_semantics():
    X = np.arange(6, dtype=np.int32).reshape(3, 2)
    out = check_data(X)
    assert out.dtype == np.float64 and out.flags.c_contiguous
    np.testing.assert_array_equal(out, X)


def _caterpillar(n_leaves):
    tree = [0, 1]
    for i in range(2, n_leaves):
        tree = [tree, i]
    return tree


def test_check_hierarchy_depth_limit_counts_levels_of_lists():
    n = MAX_HIERARCHY_DEPTH + 2
    leaves = check_hierarchy(_caterpillar(MAX_HIERARCHY_DEPTH + 1), n)  # exactly at the limit
    assert sorted(leaves.tolist()) == list(range(MAX_HIERARCHY_DEPTH + 1))
    with pytest.raises(InvalidInputError, match=f"at most {MAX_HIERARCHY_DEPTH} levels") as exc:
        check_hierarchy(_caterpillar(MAX_HIERARCHY_DEPTH + 2), n)
    assert exc.value.field == "hierarchy"
    with pytest.raises(InvalidInputError, match="at most 3 levels"):
        check_hierarchy([[[[0, 1], 2], 3], 4], 5, max_depth=3)
    assert len(check_hierarchy([[[0, 1], 2], 3], 4, max_depth=3)) == 4


@pytest.mark.parametrize("tree", [3, True, None, "[0, 1]", {0: 1}])
def test_check_hierarchy_root_must_be_a_list(tree):
    with pytest.raises(InvalidInputError, match="must be a list"):
        check_hierarchy(tree, 5)


def test_check_n_clusters_range():
    assert check_n_clusters(3, 10) == 3
    with pytest.raises(InvalidInputError, match="n_clusters == 11") as exc:
        check_n_clusters(11, 10)
    assert exc.value.field == "n_clusters"
    with pytest.raises(InvalidInputError):
        check_n_clusters(2.5, 10)


def test_check_pairs_out_of_range_names_field_and_index():
    with pytest.raises(InvalidInputError, match=r"pairs\[1\]\[0\] = 7") as exc:
        check_pairs([[0, 1], [7, 2]], 5)
    assert exc.value.field == "pairs" and exc.value.index == (1, 0)


def test_check_pairs_self_pair():
    with pytest.raises(InvalidInputError, match=r"must_link\[0\]") as exc:
        check_pairs([[3, 3]], 5, name="must_link")
    assert exc.value.field == "must_link" and exc.value.index == (0,)


def test_check_pairs_non_integer_float():
    with pytest.raises(InvalidInputError, match="not an integer") as exc:
        check_pairs([[0, 1.5]], 5)
    assert exc.value.index == (0, 1)


@pytest.mark.parametrize("pairs, shown", [(np.array([[0.0, 1e20]]), "1e+20"),
                                          (np.array([[0, 2**63 + 5]], dtype=np.uint64), str(2**63 + 5)),
                                          (np.array([[0.0, -1e300]]), "-1e+300")])
def test_check_pairs_names_an_index_beyond_int64_as_given(pairs, shown):
    # it was cast to int64 first: the message named a wrapped value (-9223372036854775808) and the float
    # cast warned "invalid value encountered in cast"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidInputError, match=r"pairs\[0\]\[1\] = " + shown.replace("+", r"\+")
                           + r" is out of range \[0, 4\]") as exc:
            check_pairs(pairs, 5)
    assert exc.value.index == (0, 1)


def test_messages_show_numpy_scalars_as_plain_numbers():
    # numpy 2's repr: "pairs[0][1] = np.float64(0.5) is not an integer index"
    with pytest.raises(InvalidInputError, match=r"pairs\[0\]\[1\] = 0.5 is not an integer index"):
        check_pairs(np.array([[0, 0.5]]), 5)
    with pytest.raises(InvalidInputError, match=r"weights\[1\] = 2.0, must be in \(0, 1\]"):
        check_weights(np.array([0.5, 2.0]), 2)


@pytest.mark.parametrize("X", [[[10**400, 1], [2, 3]], np.array([[1, 2], [3, -10**309]], dtype=object)])
def test_check_data_names_a_python_integer_too_large_for_a_float(X):
    # JSON and Python ints have no size limit: astype(float64) raised OverflowError
    with pytest.raises(InvalidInputError, match=r"X\[\d\]\[\d\] .*too large") as exc:
        check_data(X)
    assert exc.value.field == "X" and exc.value.index in ((0, 0), (1, 1))


def test_check_weights():
    np.testing.assert_array_equal(check_weights(None, 3), np.ones(3))
    with pytest.raises(InvalidInputError, match=r"w\[1\]") as exc:
        check_weights([0.5, 0.0], 2, name="w")
    assert exc.value.index == (1,)
    with pytest.raises(InvalidInputError, match="lengths"):
        check_weights([0.5], 2)


def test_check_triplets_repeated_item_and_answers():
    with pytest.raises(InvalidInputError, match=r"triplets\[1\]") as exc:
        check_triplets([[0, 1, 2], [3, 3, 1]], 5)
    assert exc.value.index == (1,)
    t, a = check_triplets([[0, 1, 2], [1, 2, 3]], 5, ["yes", -1])
    np.testing.assert_array_equal(a, [1, -1])
    with pytest.raises(InvalidInputError, match=r"answers\[0\]"):
        check_triplets([[0, 1, 2]], 5, ["maybe"])


def test_find_pairwise_conflicts_reports_the_chain():
    ml = np.array([[0, 1], [1, 2], [2, 3], [5, 6]])
    cl = np.array([[4, 5], [3, 0], [6, 5]])
    conflicts, count = find_pairwise_conflicts(ml, cl, 7)
    assert count == 2
    assert conflicts[0]["cannot_link"] == [3, 0] and conflicts[0]["cannot_link_index"] == 1
    assert conflicts[0]["must_link_chain"] == [3, 2, 1, 0]
    assert conflicts[1]["must_link_chain"] == [6, 5]
    with pytest.raises(InfeasibleConstraintsError) as exc:
        raise_on_conflicts(ml, cl, 7)
    assert len(exc.value.conflicts) == 2


def _chain_is_valid(chain, ml):
    edges = {tuple(sorted(e)) for e in ml.tolist()}
    return all(tuple(sorted((a, b))) in edges for a, b in zip(chain[:-1], chain[1:]))


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_conflict_chains_are_real_must_link_paths(data):
    n = 12
    idx = st.integers(0, n - 1)
    pair = st.tuples(idx, idx).filter(lambda p: p[0] != p[1])
    ml = np.array(data.draw(st.lists(pair, max_size=15)), dtype=np.int64).reshape(-1, 2)
    cl = np.array(data.draw(st.lists(pair, max_size=10)), dtype=np.int64).reshape(-1, 2)
    conflicts, count = find_pairwise_conflicts(ml, cl, n)
    _, comp = must_link_components(ml, n)
    expected = int(sum(comp[a] == comp[b] for a, b in cl)) if len(ml) else 0
    assert count == expected
    for c in conflicts:
        a, b = c["cannot_link"]
        chain = c["must_link_chain"]
        assert chain[0] == a and chain[-1] == b
        assert _chain_is_valid(chain, ml)


# --------------------------------------------------------------------- constraints
def test_check_pairwise_kind_and_lengths():
    with pytest.raises(InvalidInputError, match=r"pair_kind\[1\] = 0") as exc:
        check_pairwise([[0, 1], [1, 2]], [1, 0], None, 4)
    assert exc.value.field == "pair_kind" and exc.value.index == (1,)
    with pytest.raises(InvalidInputError, match="lengths must match"):
        check_pairwise([[0, 1]], [1, -1], None, 4)
    with pytest.raises(InvalidInputError, match="required"):
        check_pairwise([[0, 1]], None, None, 4)
    c = check_pairwise(None, None, None, 4)
    assert len(c) == 0 and c.must_link.shape == (0, 2)


@pytest.mark.parametrize("kind, shown", [([1, 1.5], "1.5"), ([1, 2**70], "1.18059e+21"), ([1, float("nan")], "nan"),
                                         (np.array([1, 2**64 - 1], dtype=np.uint64), "1.84467e+19"),
                                         ([1, "cannot_link"], None), ([1, 1 + 0j], None)])
def test_check_pairwise_refuses_kinds_that_only_cast_to_plus_or_minus_one(kind, shown):
    # the kinds were cast to int64 before the check: 1.5 became a must-link and the uint64 2**64 - 1 a
    # cannot-link (wrapped to -1); NaN, strings, complex numbers and Python ints beyond int64 raised
    # ValueError / TypeError / OverflowError from the cast
    match = rf"pair_kind\[1\] = {re.escape(shown)}, must be \+1" if shown else "pair_kind must contain only numbers"
    with pytest.raises(InvalidInputError, match=match) as exc:
        check_pairwise([[0, 1], [1, 2]], kind, None, 4)
    assert exc.value.field == "pair_kind"
    c = check_pairwise([[0, 1], [1, 2]], np.array([1.0, -1.0]), None, 4)
    assert c.kind.tolist() == [1, -1]

def test_unique_deduplicates_unordered_pairs_keeping_max_weight():
    c = check_pairwise([[1, 0], [0, 1], [2, 3], [0, 1]], [1, 1, -1, -1], [0.3, 0.8, 1.0, 0.5], 4)
    pairs, kind, weight, first = c.unique()
    assert pairs.tolist() == [[0, 1], [2, 3], [0, 1]]
    assert kind.tolist() == [1, -1, -1]
    np.testing.assert_allclose(weight, [0.8, 1.0, 0.5])
    assert first.tolist() == [0, 2, 3]


def test_pairwise_conflicts_index_refers_to_input_position():
    c = check_pairwise([[0, 1], [5, 6], [1, 2], [2, 0]], [1, -1, 1, -1], None, 7)
    conflicts, count = c.conflicts()
    assert count == 1
    assert conflicts[0]["cannot_link_index"] == 3
    assert conflicts[0]["must_link_chain"] == [2, 1, 0]


def test_split_pairs():
    pairs, kind, w = split_pairs([[0, 1]], [[2, 3], [4, 5]], None, [0.5, 1.0])
    assert pairs.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert kind.tolist() == [1, -1, -1]
    np.testing.assert_allclose(w, [1, 0.5, 1])


def test_transitive_closure():
    ml = np.array([[0, 1], [1, 2]])
    cl = np.array([[2, 3], [3, 4]])
    ml_all, cl_all = transitive_closure(ml, cl, 5)
    assert sorted(map(tuple, ml_all.tolist())) == [(0, 1), (0, 2), (1, 2)]
    assert sorted(map(tuple, cl_all.tolist())) == [(0, 3), (1, 3), (2, 3), (3, 4)]
    n_comp, comp = must_link_components(ml, 5)
    assert n_comp == 3 and comp[0] == comp[1] == comp[2] != comp[3]


# --------------------------------------------------------------------- graphs
def _blobs(n=60, k=3, seed=0):
    X, y = make_blobs(n_samples=n, centers=k, cluster_std=0.5, random_state=seed)
    return X, y


def test_gaussian_affinity_properties():
    X, _ = _blobs()
    W, sigma = gaussian_affinity(X, n_neighbors=10)
    assert sigma == pytest.approx(kth_neighbor_sigma(X, 10))
    np.testing.assert_array_equal(W, W.T)
    assert np.all(np.diag(W) == 0) and W.min() >= 0 and W.max() <= 1
    d2 = ((X[0] - X[1]) ** 2).sum()
    assert W[0, 1] == pytest.approx(np.exp(-d2 / (2 * sigma**2)))



@pytest.mark.parametrize("mode", ["dense", "knn"])
def test_gaussian_affinity_of_a_bandwidth_whose_square_underflows(mode):
    # sigma = 1e-300 (the wire allows any sigma > 0): 2 sigma^2 is 0 and coinciding points weighed
    # 0 / 0 = NaN, so every spectral method failed in eigh / splu; now the sigma -> 0 limit
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    W, _ = gaussian_affinity(X, 1e-300, n_neighbors=2, mode=mode)
    W = W.toarray() if sp.issparse(W) else W
    expected = np.zeros((5, 5))
    expected[0, 1] = expected[1, 0] = expected[2, 3] = expected[3, 2] = 1.0
    np.testing.assert_array_equal(W, expected)

@pytest.mark.parametrize("sym", ["max", "mean"])
def test_knn_graph_properties(sym):
    X, _ = _blobs()
    W, sigma = knn_gaussian_graph(X, 5, symmetrize=sym)
    assert sp.issparse(W)
    assert abs(W - W.T).max() < 1e-15
    assert W.diagonal().max() == 0 and W.data.min() > 0 and W.data.max() <= 1
    dist, ind = knn_distances(X, 5)
    assert not np.any(ind == np.arange(len(X))[:, None])
    # every point keeps at least its k neighbours
    assert np.all(np.diff(W.indptr) >= 5)
    knn = gaussian_affinity(X, sigma, n_neighbors=5, mode="knn")[0]
    assert (abs(knn - knn_gaussian_graph(X, 5, sigma=sigma)[0])).max() < 1e-15


def test_knn_distances_with_duplicates_excludes_self():
    X = np.array([[0.0], [0.0], [1.0], [2.0]])
    dist, ind = knn_distances(X, 2)
    assert not np.any(ind == np.arange(4)[:, None])
    assert dist.shape == (4, 2)


def test_normalized_adjacency_and_components():
    W = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0.0]])
    M, iso = normalized_adjacency(W)
    assert iso.tolist() == [False, False, True, True]
    np.testing.assert_allclose(M[:2, :2], [[0, 1], [1, 0]])
    assert np.all(M[2:] == 0)
    Ms, iso_s = normalized_adjacency(sp.csr_matrix(W))
    np.testing.assert_allclose(Ms.toarray(), M)
    assert n_connected_components(W) == 3


@pytest.mark.parametrize("skip_largest", [False, True])
def test_component_bridges_connect_the_graph_with_nearest_pairs(skip_largest):
    X, _ = make_blobs(n_samples=[40, 30, 35, 25], centers=[[0, 0], [30, 0], [0, 30], [45, 45]], cluster_std=1.0,
                      random_state=0)
    W, _ = self_tuning_knn_graph(X, 10)
    assert n_connected_components(W) == 4
    edges, n_before = component_bridges(X, W, skip_largest=skip_largest)
    assert n_before == 4 and len(edges) == 3  # a spanning tree of the 4 components
    E = sp.csr_matrix((np.ones(3), ([e[0] for e in edges], [e[1] for e in edges])), shape=W.shape)
    assert n_connected_components(W + E + E.T) == 1
    _, lab = connected_components(W, directed=False)
    for i, j, d in edges:
        assert i < j and lab[i] != lab[j]
        np.testing.assert_allclose(d, np.linalg.norm(X[i] - X[j]))
        # no closer pair joins the component of i to the rest of the points
        inside, outside = X[lab == lab[i]], X[lab != lab[i]]
        closest = np.sqrt(((inside[:, None] - outside[None]) ** 2).sum(-1)).min()
        other = np.sqrt(((X[lab == lab[j]][:, None] - X[lab != lab[j]][None]) ** 2).sum(-1)).min()
        assert np.isclose(d, closest) or np.isclose(d, other)
    assert component_bridges(X, W + E + E.T) == ([], 1)


def test_self_tuning_knn_graph_properties():
    X, _ = make_blobs(n_samples=60, centers=2, random_state=1)
    W, sigma = self_tuning_knn_graph(X, 8)
    assert sp.issparse(W) and abs(W - W.T).max() == 0 and W.diagonal().max() == 0
    assert W.data.min() >= 1e-12 and W.data.max() <= 1.0 and sigma > 0
    assert (W.getnnz(axis=1) >= 8).all()  # every point keeps its 8 nearest neighbours


def test_discriminant_knn_graph_links_classes_that_noise_columns_hide():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 100)
    X = np.column_stack([5.0 * y + rng.normal(size=200), 3.0 * rng.normal(size=(200, 8))])
    groups = [list(range(0, 10)), list(range(100, 110))]
    G = discriminant_knn_graph(X, groups, 8)
    assert sp.issparse(G) and abs(G - G.T).max() == 0 and G.diagonal().max() == 0
    assert G.data.min() >= 1e-12 and G.data.max() <= 1.0

    def same_class_weight(W):
        W = sp.coo_matrix(W)
        return W.data[y[W.row] == y[W.col]].sum() / W.data.sum()

    W, _ = self_tuning_knn_graph(X, 8)
    assert same_class_weight(G) > 0.9 > same_class_weight(W)
    # nothing to learn from: one sample per group, or one group
    assert discriminant_knn_graph(X, [[0], [100]], 8) is None
    assert discriminant_knn_graph(X, [list(range(20))], 8) is None


# --------------------------------------------------------------------- spectral
def _dense_top(M, k):
    vals, vecs = eigh(M)
    return vals[::-1][:k], vecs[:, ::-1][:, :k]


def test_top_eigenvectors_sparse_path_residuals():
    rng = np.random.default_rng(0)
    n = 3100  # above the dense-eigh limit: ARPACK path
    diag = rng.uniform(0, 0.5, n)
    diag[[10, 500, 3000]] = [1.0, 0.9, 0.8]
    off = 1e-3 * rng.random(n - 1)
    M = sp.csr_matrix(sp.diags([diag, off, off], [0, 1, -1]))
    vals, vecs = top_eigenvectors(M, 3, random_state=0)
    np.testing.assert_allclose(vals, [1.0, 0.9, 0.8], atol=1e-3)
    assert np.abs(M @ vecs - vecs * vals).max() < 1e-8
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(3), atol=1e-8)
    # sign convention: largest-magnitude entry positive
    idx = np.argmax(np.abs(vecs), axis=0)
    assert np.all(vecs[idx, np.arange(3)] > 0)
    assert idx.tolist() == [10, 500, 3000]
    # same answer as the dense path on a small matrix
    small = M[:200, :200].toarray()
    v_s, _ = top_eigenvectors(small, 2)
    np.testing.assert_allclose(v_s, np.linalg.eigvalsh(small)[::-1][:2], atol=1e-12)


def _clique_graph(n_cliques=4, size=10):
    W = np.kron(np.eye(n_cliques), np.ones((size, size)))
    np.fill_diagonal(W, 0.0)
    return W


def test_top_eigenvectors_survives_the_subset_solvers_internal_error():
    """Non-regression: eigh(subset_by_index=...) raised "LinAlgError: Internal Error" on the
    normalised adjacency of 4 disconnected 10-cliques (k = 20); the full solver answers instead."""
    M, _ = normalized_adjacency(_clique_graph())
    k = 20
    try:
        eigh(M, subset_by_index=[40 - k, 39])
        subset_fails = False
    except np.linalg.LinAlgError:
        subset_fails = True
    vals, vecs = top_eigenvectors(M, k)
    np.testing.assert_allclose(vals, np.linalg.eigvalsh(M)[::-1][:k], atol=1e-10)
    assert np.abs(M @ vecs - vecs * vals).max() < 1e-10
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(k), atol=1e-10)
    idx = np.argmax(np.abs(vecs), axis=0)
    assert np.all(vecs[idx, np.arange(k)] > 0)
    if subset_fails:  # the solver's error is still raised when asked for
        with pytest.raises(np.linalg.LinAlgError):
            top_eigenvectors(M, k, dense_fallback=False)


def test_spectral_estimators_fit_graphs_of_disconnected_cliques():
    """Non-regression: CCSKL, SpectralClustering, SpectralLearning and E2CP raised a raw
    LinAlgError from the shared solver on graphs of disconnected cliques."""
    import warnings

    from clustering import CCSKL, E2CP, SpectralClustering, SpectralLearning
    from clustering.exceptions import ConstraintWarning

    W = _clique_graph()
    X = np.repeat([[0.0, 0.0], [50.0, 0.0], [0.0, 50.0], [50.0, 50.0]], 10, axis=0)
    fits = [(CCSKL(n_clusters=K, affinity="precomputed", random_state=0), W) for K in (2, 4, 20)]
    fits += [(SpectralClustering(n_clusters=20, affinity="precomputed", random_state=0), W),
             (SpectralLearning(n_clusters=20, affinity="precomputed", random_state=0), W),
             (E2CP(n_clusters=20, n_neighbors=9, random_state=0), X)]
    for est, data in fits:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConstraintWarning)  # more components than K: expected here
            labels = est.fit(data).labels_
        assert labels.shape == (40,)
        if est.n_clusters >= 4:  # every clique is one component: never split across two of them
            block = np.arange(40) // 10
            assert all(len(set(labels[block == b]) & set(labels[block != b])) == 0 for b in range(4)), est


def test_njw_embedding_matches_dense_reference():
    X, _ = _blobs(50)
    W, _ = gaussian_affinity(X, n_neighbors=8)
    Y, info = njw_embedding(W, 3)
    d = W.sum(1)
    M = W / np.sqrt(np.outer(d, d))
    vals, vecs = _dense_top(M, 3)
    np.testing.assert_allclose(info["eigenvalues"], vals, atol=1e-10)
    ref = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    # same row-normalised subspace: Y = ref @ orthogonal matrix
    R, *_ = np.linalg.lstsq(ref, Y, rcond=None)
    np.testing.assert_allclose(ref @ R, Y, atol=1e-8)
    np.testing.assert_allclose(np.linalg.norm(Y, axis=1), 1.0)


def test_generalized_embedding_solves_the_generalized_problem():
    X, _ = _blobs(40)
    W, _ = gaussian_affinity(X, n_neighbors=8)
    V, lam = generalized_embedding(W, 3)
    D = np.diag(W.sum(1))
    L = D - W
    np.testing.assert_allclose(L @ V, D @ V * lam[None, :], atol=1e-8)
    np.testing.assert_allclose(V.T @ D @ V, np.eye(3), atol=1e-8)
    assert np.all(np.diff(lam) >= -1e-12)


def test_additive_embedding_is_bottom_of_unnormalised_laplacian_and_ignores_diagonal():
    X, _ = _blobs(40)
    W, _ = gaussian_affinity(X, n_neighbors=8)
    E, vals = additive_embedding(W, 3)
    L = np.diag(W.sum(1)) - W
    _, lv = eigh(L, subset_by_index=[0, 2])
    assert np.max(subspace_angles(E, lv)) < 1e-8
    W2 = W + np.diag(np.linspace(0, 5, len(W)))
    E2, _ = additive_embedding(W2, 3)
    assert np.max(subspace_angles(E, E2)) < 1e-8
    assert np.all(vals <= 1 + 1e-12) and np.all(vals >= -1 - 1e-12)


def test_kmeans_labels_and_eigengap():
    X, y = _blobs(60)
    labels = kmeans_labels(X, 3, random_state=0)
    assert labels.dtype == np.int64 and clustering_scores(y, labels)["ari"] == pytest.approx(1.0)
    assert eigengap_n_clusters([0, 0, 0, 0.9, 0.95, 1.0]) == 3


# --------------------------------------------------------------------- metrics
def test_metrics():
    y = np.array([0, 0, 1, 1, 2, 2])
    s = clustering_scores(y, np.array([5, 5, 7, 7, 9, 9]))
    assert all(v == pytest.approx(1.0) for v in s.values())
    assert set(s) == {"ari", "nmi", "f_measure", "v_measure", "jaccard"}
    assert pairwise_f_measure(y, np.arange(6)) == 0.0
    assert constraint_satisfaction(y, [[0, 1], [0, 2], [2, 3], [4, 0]], [1, 1, -1, -1]) == 0.5
    assert constraint_satisfaction(y, np.empty((0, 2)), []) is None
    # must-link (0, 2) crosses clusters, cannot-link (2, 3) sits inside one
    np.testing.assert_array_equal(
        violated_constraints(y, [[0, 1], [0, 2], [2, 3], [4, 0]], [1, 1, -1, -1]), [False, True, True, False])
    assert violated_constraints(y, np.empty((0, 2)), []).shape == (0,)


@pytest.mark.parametrize("make", [
    lambda: __import__("clustering").URASC(), lambda: __import__("clustering").URASC(strategy="random"),
    lambda: __import__("clustering._dcrc", fromlist=["ActiveDCRC"]).ActiveDCRC(n_clusters=2),
    lambda: __import__("clustering._dcrc", fromlist=["ActiveDCRC"]).ActiveDCRC(n_clusters=2,
                                                                                      strategy="random"),
], ids=["urasc", "urasc-random", "active-dcrc", "active-dcrc-random"])
def test_active_estimators_start_on_exactly_the_rows_the_service_allows(make):
    """The service refuses a session below ACTIVE_MIN_SAMPLES rows; every session estimator runs from there."""
    from clustering.validation import ACTIVE_MIN_SAMPLES

    X = np.arange(2.0 * ACTIVE_MIN_SAMPLES).reshape(-1, 2) ** 2
    make().fit(X)
    with pytest.raises(InvalidInputError, match=f"at least {ACTIVE_MIN_SAMPLES}"):
        make().fit(X[:-1])


def test_urasc_n_clusters_limit_is_the_one_the_service_checks():
    from clustering import URASC
    from clustering.validation import check_urasc_n_clusters

    X = np.arange(8.0).reshape(4, 2) ** 2
    assert check_urasc_n_clusters(None, 4) is None and check_urasc_n_clusters(3, 4) == 3
    for strategy in ("urasc", "random"):
        URASC(n_clusters=3, strategy=strategy).fit(X)
        with pytest.raises(InvalidInputError, match="must be < n_samples") as err:
            URASC(n_clusters=4, strategy=strategy).fit(X)
        with pytest.raises(InvalidInputError) as same:
            check_urasc_n_clusters(4, 4)
        assert str(err.value) == str(same.value) and err.value.field == "n_clusters"
