"""The paths taken only above 100 000 rows, tried on small data with their thresholds lowered."""

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_blobs
from sklearn.utils import check_random_state

from clustering._graph import APPROX_KNN_ROWS, knn_distances, knn_gaussian_graph, normalized_adjacency
from clustering._spectral import AMG_ROWS, amg_top_eigenvectors, lanczos_top_eigenvectors
from clustering._urasc import URASC


def test_approximate_neighbours_recall_the_exact_ones():
    X, _ = make_blobs(n_samples=3000, n_features=32, centers=8, random_state=0)
    exact_d, exact_i = knn_distances(X, 10)
    approx_d, approx_i = knn_distances(X, 10, approx_above=1000)
    assert approx_i.shape == (3000, 10) and not (approx_i == np.arange(3000)[:, None]).any()
    assert np.all(np.diff(approx_d, axis=1) >= 0)
    recall = np.mean([len(set(a) & set(e)) / 10 for a, e in zip(approx_i, exact_i)])
    assert recall > 0.9, recall
    np.testing.assert_allclose(approx_d[:, 0].mean(), exact_d[:, 0].mean(), rtol=0.05)


def test_the_thresholds_keep_todays_sizes_exact():
    assert (APPROX_KNN_ROWS, AMG_ROWS) == (50_000, 100_000)  # bench/results/scale_limits_large.json: 100 000 x 128
    X, _ = make_blobs(n_samples=500, n_features=40, random_state=1)
    from sklearn.neighbors import NearestNeighbors

    d, i = NearestNeighbors(n_neighbors=6).fit(X).kneighbors(X)
    got_d, got_i = knn_distances(X, 5)
    np.testing.assert_array_equal(got_i, i[:, 1:])
    np.testing.assert_array_equal(got_d, d[:, 1:])


def test_multigrid_lobpcg_finds_the_lanczos_eigenpairs():
    X, _ = make_blobs(n_samples=4000, n_features=5, centers=6, cluster_std=1.5, random_state=2)
    W, _ = knn_gaussian_graph(X, 15)
    M, _ = normalized_adjacency(W)
    M = sp.csr_matrix(M)
    rng = check_random_state(0)
    want_vals, want_vecs = lanczos_top_eigenvectors(M, 6, rng.uniform(-1, 1, 4000), 300)
    vals, vecs = amg_top_eigenvectors(M, 6, check_random_state(0))
    np.testing.assert_allclose(vals, want_vals, atol=1e-4)
    # the same subspace: the singular values of the overlap are the cosines of the principal angles
    q, _ = np.linalg.qr(vecs)
    cos = np.linalg.svd(want_vecs.T @ q, compute_uv=False)
    assert cos.min() > 0.999, cos


def test_approximate_neighbours_are_searched_once_for_several_k():
    """URASC asks for 10, 20 and 7 neighbours of the same rows: one search, the same lists truncated."""
    X, _ = make_blobs(n_samples=2500, n_features=24, centers=5, random_state=3)
    d20, i20 = knn_distances(X, 20, approx_above=1000)
    d7, i7 = knn_distances(X, 7, approx_above=1000)
    np.testing.assert_array_equal(i7, i20[:, :7])
    np.testing.assert_array_equal(d7, d20[:, :7])
    i7[:] = -1  # the caller's copy: the kept lists do not change
    assert (knn_distances(X, 7, approx_above=1000)[1] >= 0).all()
    Y = X.copy()
    Y[0] += 100.0  # another matrix: searched again
    assert knn_distances(Y, 7, approx_above=1000)[1][0].tolist() != i20[0, :7].tolist()


def test_approximate_bridges_connect_the_graph_with_short_edges():
    from scipy.sparse.csgraph import connected_components
    from sklearn.metrics import pairwise_distances

    from clustering._graph import component_bridges

    X, y = make_blobs(n_samples=3000, n_features=32, centers=6, cluster_std=0.5, random_state=4)
    W, _ = knn_gaussian_graph(X, 10)
    n_comp, lab = connected_components(W, directed=False)
    assert n_comp >= 4
    exact, _ = component_bridges(X, W, skip_largest=True)
    approx, n_before = component_bridges(X, W, skip_largest=True, approx_above=1000)
    assert n_before == n_comp
    E = sp.csr_matrix((np.ones(len(approx)), ([e[0] for e in approx], [e[1] for e in approx])), shape=W.shape)
    assert connected_components(W + E, directed=False)[0] == 1
    for i, j, dist in approx:
        np.testing.assert_allclose(dist, np.linalg.norm(X[i] - X[j]), rtol=1e-9)
    # each edge is within 10% of the shortest edge out of its component (exact: the true nearest pairs)
    D = pairwise_distances(X)
    for i, j, dist in approx[:n_comp - 1]:
        c = lab[i]
        inside = lab == c
        assert dist <= 1.1 * D[np.ix_(inside, ~inside)].min()
    assert sum(e[2] for e in approx) <= 1.2 * sum(e[2] for e in exact)


def test_urasc_truncates_to_k_plus_10_eigenpairs_only_above_the_multigrid_threshold():
    """K + 20 eigenpairs up to AMG_ROWS rows (today's results unchanged), K + 10 above, an explicit
    n_eig always."""
    for n_eig, n, want in [(None, 6000, 30), (None, AMG_ROWS, 30), (None, AMG_ROWS + 1, 20), (40, AMG_ROWS + 1, 40)]:
        est = URASC(n_eig=n_eig)
        est._n, est._K = n, 10
        assert est._n_eig() == want, (n_eig, n)
