"""The paths taken only above 100 000 rows, tried on small data with their thresholds lowered."""

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_blobs
from sklearn.utils import check_random_state

from clustering._graph import APPROX_KNN_ROWS, knn_distances, knn_gaussian_graph, normalized_adjacency
from clustering._spectral import AMG_ROWS, amg_top_eigenvectors, lanczos_top_eigenvectors


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
    assert APPROX_KNN_ROWS == AMG_ROWS == 100_000
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
