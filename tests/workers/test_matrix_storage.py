"""Large learned matrices are stored as exact top-k rows."""

import numpy as np
import scipy.sparse as sp

from workers.tasks import top_k_rows, top_k_rows_from_factor


def _dense_top_k(M, k):
    M = M.copy()
    np.fill_diagonal(M, -np.inf)
    return np.sort(M, axis=1)[:, ::-1][:, :k]


def test_factor_top_k_equals_dense_top_k():
    E = np.random.default_rng(0).standard_normal((300, 6))
    got = top_k_rows_from_factor(E, 7, block=64)
    want = _dense_top_k(E @ E.T, 7)
    rows = np.sort(got.toarray(), axis=1)[:, ::-1]
    np.testing.assert_allclose(np.sort(got.data.reshape(300, 7), axis=1)[:, ::-1], want)
    assert got.nnz == 300 * 7 and rows.shape == (300, 300)
    assert all(i not in got.indices[got.indptr[i]:got.indptr[i + 1]] for i in range(300))


def test_dense_and_sparse_top_k_agree():
    rng = np.random.default_rng(1)
    A = rng.random((200, 200))
    A = (A + A.T) / 2
    np.fill_diagonal(A, 0)
    for M in (A, sp.csr_matrix(A)):
        got = top_k_rows(M, 5)
        np.testing.assert_allclose(np.sort(got.data.reshape(200, 5), axis=1)[:, ::-1], _dense_top_k(A, 5))


def test_top_k_on_pattern_scores_the_graph_entries_only():
    """Above FACTOR_PATTERN_ROWS CCSKL's kernel is kept over its kNN graph: each row's k largest there."""
    import numpy as np
    import scipy.sparse as sp

    from workers.tasks import top_k_on_pattern

    rng = np.random.default_rng(0)
    n = 400
    E = rng.normal(size=(n, 4))
    P = sp.random(n, n, density=0.05, random_state=0, format="csr")
    P = sp.csr_matrix(P + P.T)
    P.setdiag(1.0)
    M = top_k_on_pattern(E, P, 5, block=77)
    K = E @ E.T
    for i in range(n):
        cols = [c for c in P[i].indices if c != i]
        best = sorted(cols, key=lambda c: -K[i, c])[:5]
        assert sorted(M[i].indices.tolist()) == sorted(best)
        np.testing.assert_allclose(M[i].data, K[i, M[i].indices])
