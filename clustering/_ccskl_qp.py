"""CCSKL's numeric kernels: the spectral basis and the QP (spec C1-C12).

Private to :class:`clustering.CCSKL` (Li and Liu, ICCV 2009; ``specs/ccskl.md``):
the ``m`` smoothest eigenvectors of the normalised Laplacian (dense, shift-invert
or plain Lanczos by n), the rows of the least-squares form of the QP (Eqs. 9-16:
targets, balance rows, design rows) and its exact solution as a non-negative
least-squares problem in the increments ``delta`` (``beta = U delta``, C11).
Inputs are assumed valid.
"""

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear, nnls
from scipy.sparse.linalg import ArpackNoConvergence, eigsh
from sklearn.utils import check_random_state

from ._constraints import MUST_LINK
from ._graph import normalized_adjacency
from ._spectral import fix_signs, top_eigenvectors

# Above this many rows of the least-squares system (C11) the NNLS is solved on
# the m x m Cholesky factor of G^T G instead of the tall G (spec §6).
_MAX_TALL_ROWS = 1_000_000
_CHUNK_ROWS = 200_000
# Eigen-solver dispatch by n (see _laplacian_eigenpairs).
_DENSE_EIGH_MAX = 1000
_SHIFT_INVERT_MAX = 12000


# --------------------------------------------------------------------------
# Private numeric kernels (inputs assumed valid)
# --------------------------------------------------------------------------


def _laplacian_eigenpairs(W, m, random_state):
    """The ``m`` smallest eigenpairs of ``L = I - D^{-1/2} W D^{-1/2}`` (C2, C3).

    Solver by size (spec §6.1): n <= 1000, dense ``eigh`` through
    :func:`clustering._spectral.top_eigenvectors`; n <= 12000, ARPACK
    shift-invert on the sparse L with shift -1e-3 (L + 1e-3 I is positive
    definite, and shift-invert resolves the near-repeated eigenvalues of
    nearly disconnected groups that plain Lanczos misses); above that,
    ``eigsh(S, which="LA")`` on ``S = D^{-1/2} W D^{-1/2}`` via
    ``top_eigenvectors`` (no factorisation, O(nnz m) memory). Never a dense
    n x n matrix above n = 1000.

    Returns
    -------
    eigenvalues : ndarray of shape (m,), ascending lambda
    F : ndarray of shape (n, m), orthonormal columns
    isolated : ndarray of shape (n,), bool
    solver : str
    """
    S, isolated = normalized_adjacency(W)
    n = S.shape[0]
    if n <= _DENSE_EIGH_MAX or m >= n - 1:
        mu, F = top_eigenvectors(S.toarray(), m, random_state=random_state)
        return 1.0 - mu, np.ascontiguousarray(F), isolated, "eigh"
    if n <= _SHIFT_INVERT_MAX:
        L = (sp.identity(n, format="csr") - S).tocsc()
        v0 = check_random_state(random_state).uniform(-1.0, 1.0, n)
        try:
            lam, F = eigsh(L, k=m, sigma=-1e-3, which="LM", v0=v0, tol=1e-12)
        except (ArpackNoConvergence, RuntimeError):
            lam = None
        if lam is not None:
            order = np.argsort(lam)
            return lam[order], np.ascontiguousarray(fix_signs(F[:, order])), isolated, "eigsh-shift-invert"
    mu, F = top_eigenvectors(S, m, random_state=random_state)
    return 1.0 - mu, np.ascontiguousarray(F), isolated, "eigsh-LA"


def _target_rows(n, pairs, kind, weight, pair_convention="ordered"):
    """Index pairs, targets and weights of the target set S (C7, C8).

    Each off-diagonal constraint appears once, with weight ``sqrt(2) c_ij``
    in the ordered convention (Eq. 8 counts (i, j) and (j, i), whose rows of
    the least-squares system are identical) and ``c_ij`` in the unordered
    one (Eq. 7). Diagonal targets (i, i, 1) have weight 1.

    Returns
    -------
    I, J : ndarray of shape (n + p,), int64
    t : ndarray of shape (n + p,), float64
        1 for the diagonal and must-links, 0 for cannot-links.
    c : ndarray of shape (n + p,), float64
    """
    diag = np.arange(n, dtype=np.int64)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    kind = np.asarray(kind).ravel()
    scale = np.sqrt(2.0) if pair_convention == "ordered" else 1.0
    I = np.concatenate([diag, pairs[:, 0]])
    J = np.concatenate([diag, pairs[:, 1]])
    t = np.concatenate([np.ones(n), (kind == MUST_LINK).astype(np.float64)])
    c = np.concatenate([np.ones(n), scale * np.asarray(weight, dtype=np.float64).ravel()])
    return I, J, t, c


def _balance_rows(c, n, balance):
    """Scale the constraint rows so their total squared weight is ``balance * n``.

    The paper's weighted-constraint mechanism (§4.4: ``c_ij`` replaced by a
    weight) with one common weight for all constraints, chosen so that
    ``sum_{constraints} c_ij^2 = balance * sum_{diagonal} c_ii^2`` (the n
    diagonal rows have ``c_ii = 1``). Relative user weights are kept;
    zero-weight constraints stay removed. Without constraints (or all
    weights zero) ``c`` is returned unchanged.

    Parameters
    ----------
    c : ndarray of shape (n + p,), float64
        Row weights from :func:`_target_rows` (diagonal rows first).
    n : int
    balance : float > 0

    Returns
    -------
    c_balanced : ndarray of shape (n + p,), float64 (a copy)
    """
    c = np.array(c, dtype=np.float64, copy=True)
    # Relative to the largest weight first: the squares of weights below 1e-154 underflow (all 1e-300:
    # a total of 0, the constraints left at 1e-300 instead of balanced; all 1e-160: a subnormal total,
    # an infinite factor and NaN rows). Relative weights are in [0, 1] and their total is at least 1.
    peak = float(np.max(c[n:], initial=0.0))
    if peak > 0:
        rel = c[n:] / peak
        c[n:] = rel * np.sqrt(balance * n / float(np.sum(rel**2)))
    return c


def _design_rows(F, I, J, t, c):
    """Rows of the NNLS system (C11): ``G = c * cumsum(F[I] * F[J])``, ``h = c t``."""
    G = np.cumsum(F[I] * F[J], axis=1)
    G *= c[:, None]
    return G, c * t


def _qp_terms(F, I, J, t, c):
    """``A``, ``b``, ``c0`` of the QP (C9): ``L(beta) = 1/2 b^T A b + b^T beta + c0``."""
    Y = F[I] * F[J]
    c2 = c * c
    A = 2.0 * (Y * c2[:, None]).T @ Y
    b = -2.0 * Y.T @ (c2 * t)
    c0 = float(np.sum(c2 * t * t))
    return A, b, c0


def _beta_from_delta(delta):
    """``beta = U delta``: reverse cumulative sum (C11)."""
    return np.cumsum(delta[::-1])[::-1].copy()


def _nnls_dense(G, h, solver):
    """NNLS on a modest system; columns rescaled to unit norm first.

    Column scaling by positive factors maps ``delta >= 0`` onto itself, so the
    minimiser is unchanged; it only evens out the O(1/n) entries of ``G``.
    """
    norms = np.linalg.norm(G, axis=0)
    norms[norms == 0] = 1.0
    Gs = G / norms
    x = None
    if solver == "nnls":
        try:
            x, _ = nnls(Gs, h, maxiter=50 * G.shape[1])
        except RuntimeError:  # iteration cap: fall through to BVLS
            x = None
    if x is None:
        res = lsq_linear(Gs, h, bounds=(0.0, np.inf), method="bvls", tol=1e-14)
        x = np.maximum(res.x, 0.0)
    return x / norms


def _solve_delta(F, I, J, t, c, solver="nnls"):
    """Minimise ``||G delta - h||^2`` over ``delta >= 0`` (C11).

    For at most ``_MAX_TALL_ROWS`` rows the tall system is solved directly;
    otherwise ``G^T G`` and ``G^T h`` are accumulated in chunks and the NNLS is
    solved on the Cholesky factor ``R`` (``G^T G = R^T R``, plus a tiny ridge
    ``1e-12 trace / m`` when it is singular; spec §6, §7.3).

    Returns
    -------
    delta : ndarray of shape (m,), >= 0
    reduced : bool
        Whether the m x m reduction was used.
    """
    rows = I.shape[0]
    if rows <= _MAX_TALL_ROWS:
        G, h = _design_rows(F, I, J, t, c)
        return _nnls_dense(G, h, solver), False
    m = F.shape[1]
    GtG = np.zeros((m, m))
    Gth = np.zeros(m)
    for s in range(0, rows, _CHUNK_ROWS):
        sl = slice(s, s + _CHUNK_ROWS)
        G, h = _design_rows(F, I[sl], J[sl], t[sl], c[sl])
        GtG += G.T @ G
        Gth += G.T @ h
    ridge = 0.0
    while True:
        try:
            R = np.linalg.cholesky(GtG + ridge * np.eye(m)).T
            break
        except np.linalg.LinAlgError:
            ridge = max(ridge * 10.0, 1e-12 * np.trace(GtG) / m + 1e-300)
    y = np.linalg.solve(R.T, Gth)
    return _nnls_dense(R, y, solver), True


def _objective(F, beta, I, J, t, c):
    """``sum c^2 (k_ij - t_ij)^2`` over the rows of S, summed directly (C8)."""
    k = np.einsum("ij,ij->i", F[I] * beta, F[J])
    return float(np.sum((c * (k - t)) ** 2))
