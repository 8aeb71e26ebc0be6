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
