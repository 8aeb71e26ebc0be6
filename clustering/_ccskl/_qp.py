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
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, eigsh
from sklearn.utils import check_random_state

from .._constraints import MUST_LINK
from .._graph import degrees, normalized_adjacency
from .._spectral import (
    AMG_ROWS,
    SPARSE_ARPACK_MAXITER,
    amg_top_eigenvectors,
    fix_signs,
    lanczos_top_eigenvectors,
    lobpcg_top_eigenvectors,
    top_eigenvectors,
)

# Above this many rows of the least-squares system (C11) the NNLS is solved on
# the m x m Cholesky factor of G^T G instead of the tall G (spec §6).
_MAX_TALL_ROWS = 1_000_000
_CHUNK_ROWS = 200_000
# Eigen-solver dispatch by n (see _laplacian_eigenpairs).
_DENSE_EIGH_MAX = 1000
_SHIFT_INVERT_MAX = 12000
# Shift-invert shifts tried in turn, each with at most _SHIFT_INVERT_MAXITER ARPACK restarts. A shift far
# from the m smallest eigenvalues maps them to nearly equal values 1 / (lambda - shift): at 0.1 r
# (make_blobs, 10000 rows) lambda_1..20 lie in [0, 8.4e-10] and -1e-3 made them agree to 1e-6; no
# restart separated them (not done in 900 s), while -1e-9 took 86 solves. Graphs at ordinary widths
# converge at -1e-3 in 4-5 restarts (97-119 solves at 5000 rows).
_SHIFTS = (-1e-3, -1e-6, -1e-9, -1e-12)
_SHIFT_INVERT_MAXITER = 30
# Restarts of plain Lanczos (which="LA" on S, above _SHIFT_INVERT_MAX rows): the shared bound of
# clustering._spectral; ordinary widths need 8-13 at 20000 rows (184-294 products).
_LANCZOS_MAXITER = SPARSE_ARPACK_MAXITER
# Above _SHIFT_INVERT_MAX, the shift-invert ladder is still tried after Lanczos fails up to this many
# rows: the LU of L at 20000 rows (kNN 20, d = 10) holds 3.1e7 entries (0.7 GiB), 10 s; its fill-in
# grows about 4x per doubling of n.
_SHIFT_INVERT_FALLBACK_MAX = 20000
# A group of samples whose links to the rest weigh at most this fraction of its own degree (cut / volume)
# spans an eigenvalue of L within this of 0 (its Rayleigh quotient): 0 to the solvers' resolution. letter
# (20000 rows) at 0.1 r has 31 such groups for m = 26 eigenvectors (all with cut / volume <= 1e-14).
_NULL_CONDUCTANCE = 1e-12


def _null_components(W, S, max_vectors):
    """Groups of samples that are separate components of the graph to rounding.

    The components of ``S = D^{-1/2} W D^{-1/2}`` once its entries at most
    machine epsilon are dropped (a perturbation of L below any solver's
    backward error), kept when their conductance ``cut(c) / vol(c)`` (in W,
    every edge counted) is at most ``_NULL_CONDUCTANCE``. Each kept group c
    gives the unit vector ``D^{1/2} 1_c / sqrt(vol(c))`` whose Rayleigh
    quotient on L is that conductance; the vectors have disjoint supports, so
    L has at least as many eigenvalues near 0 as there are groups (spec §7.1:
    the eigenvectors of a repeated 0 are any basis of these indicators).

    Parameters
    ----------
    W : sparse matrix of shape (n, n), float64
        Symmetric non-negative affinity.
    S : sparse matrix of shape (n, n), float64
        Its normalized adjacency.
    max_vectors : int
        At most this many vectors are built.

    Returns
    -------
    n_groups : int
        Number of such groups, g (1 on an ordinary connected graph).
    vectors : ndarray of shape (n, min(g, max_vectors)), float64
        One column per group, ordered by group size (largest first, then
        lowest sample index).
    conductance : ndarray of shape (min(g, max_vectors),), float64
    """
    n = S.shape[0]
    S = sp.csr_matrix(S)
    keep = S.data > np.finfo(np.float64).eps
    if keep.all():
        S_kept = S
    else:
        rows = np.repeat(np.arange(n), np.diff(S.indptr))
        S_kept = sp.csr_matrix((S.data[keep], (rows[keep], S.indices[keep])), shape=S.shape)
    n_comp, label = connected_components(S_kept, directed=False)
    d = degrees(W)
    vol = np.bincount(label, weights=d, minlength=n_comp)
    C = sp.coo_matrix(W)
    cross = label[C.row] != label[C.col]
    cut = np.bincount(label[C.row[cross]], weights=C.data[cross], minlength=n_comp)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(vol > 0, cut / np.where(vol > 0, vol, 1.0), np.inf)
    null = np.flatnonzero(phi <= _NULL_CONDUCTANCE)
    size = np.bincount(label, minlength=n_comp)
    first = np.full(n_comp, n)
    np.minimum.at(first, label, np.arange(n))
    null = null[np.lexsort((first[null], -size[null]))]
    chosen = null[:max_vectors]
    col = np.full(n_comp, -1)
    col[chosen] = np.arange(len(chosen))
    rows = np.flatnonzero(col[label] >= 0)
    V = np.zeros((n, len(chosen)))
    V[rows, col[label[rows]]] = np.sqrt(d[rows] / vol[label[rows]])
    return len(null), V, phi[chosen]


# --------------------------------------------------------------------------
# Private numeric kernels (inputs assumed valid)
# --------------------------------------------------------------------------


def _laplacian_eigenpairs(W, m, random_state):
    """The ``m`` smallest eigenpairs of ``L = I - D^{-1/2} W D^{-1/2}`` (C2, C3).

    Solver by size (spec §6.1): n <= 1000, dense ``eigh`` through
    :func:`clustering._spectral.top_eigenvectors`. Above that, a graph with
    at least m groups of samples cut off from the rest to rounding
    (:func:`_null_components`) has 0 repeated at least m times: its
    eigenpairs are those groups' indicators ``D^{1/2} 1_c`` (largest groups
    first, eigenvalue = their Rayleigh quotient, at most 1e-12), without a
    solver (Lanczos cannot converge inside such a repeated eigenvalue; letter
    at 0.1 r, 31 groups for m = 26, went through every shift below). Otherwise
    n <= 12000, ARPACK
    shift-invert on the sparse L; above that, ``eigsh(S, which="LA")`` on
    ``S = D^{-1/2} W D^{-1/2}`` (no factorisation, O(nnz m) memory), and the
    shift-invert ladder below only when that fails, up to 20000 rows; above
    :data:`clustering._spectral.AMG_ROWS` (100 000) rows, LOBPCG preconditioned by
    algebraic multigrid (:func:`clustering._spectral.amg_top_eigenvectors`, solver
    ``"lobpcg-amg"``). Never a dense n x n matrix above n = 1000.

    Shift-invert tries the shifts -1e-3, -1e-6, -1e-9, -1e-12 in turn (L minus
    a negative shift is positive definite, also on a disconnected graph where
    0 is repeated), each with at most 30 ARPACK restarts. The first one
    converges on ordinary graphs. A narrow width (0.1 r in ``sigma="select"``)
    makes the graph nearly disconnected: its m smallest eigenvalues lie far
    below 1e-3 (0 to 8.4e-10 at 10000 rows of ``make_blobs``, nine of them
    zero to rounding), shift-invert at -1e-3 maps them to values equal to
    1e-6 and ARPACK restarted for hours, or stopped on a set that missed
    some of them; a shift of the size of those eigenvalues separates them in
    a few restarts. Plain Lanczos gets 300 restarts. If every shift fails (or
    n > 20000), LOBPCG on S (500 iterations at most) gives the eigenpairs to
    its tolerance 1e-8.

    Parameters
    ----------
    W : sparse matrix of shape (n, n), float64
        Symmetric non-negative affinity, zero diagonal.
    m : int
        Number of eigenpairs, ``1 <= m < n``.
    random_state : int, RandomState or None
        Seeds the ARPACK start vector (and LOBPCG's block).

    Returns
    -------
    eigenvalues : ndarray of shape (m,), ascending lambda
    F : ndarray of shape (n, m), orthonormal columns
    isolated : ndarray of shape (n,), bool
    solver : str
        "eigh", "components", "eigsh-shift-invert" (shift -1e-3),
        "eigsh-shift-invert(<shift>)" for a smaller shift, "eigsh-LA" or "lobpcg".
    """
    S, isolated = normalized_adjacency(W)
    n = S.shape[0]
    if n <= _DENSE_EIGH_MAX or m >= n - 1:
        mu, F = top_eigenvectors(S.toarray(), m, random_state=random_state)
        return 1.0 - mu, np.ascontiguousarray(F), isolated, "eigh"
    n_null, V, phi = _null_components(W, S, m)
    if n_null >= m:
        # 0 repeated at least m times (to rounding): no solver separates its eigenvectors, and the
        # group indicators are an exact basis of them (spec §7.1)
        order = np.argsort(phi, kind="stable")
        return phi[order], np.ascontiguousarray(V[:, order]), isolated, "components"
    rng = check_random_state(random_state)
    if n > AMG_ROWS:  # only there: LOBPCG with a multigrid preconditioner (as spectral_learning's)
        mu, F = amg_top_eigenvectors(S, m, rng)
        return 1.0 - mu, np.ascontiguousarray(F), isolated, "lobpcg-amg"
    v0 = rng.uniform(-1.0, 1.0, n)
    if n > _SHIFT_INVERT_MAX:
        try:
            mu, F = lanczos_top_eigenvectors(S, m, v0, _LANCZOS_MAXITER)
        except ArpackNoConvergence:
            pass
        else:
            return 1.0 - mu, np.ascontiguousarray(F), isolated, "eigsh-LA"
    if n <= max(_SHIFT_INVERT_MAX, _SHIFT_INVERT_FALLBACK_MAX):
        L = (sp.identity(n, format="csr") - S).tocsc()
        for shift in _SHIFTS:
            try:
                lam, F = eigsh(L, k=m, sigma=shift, which="LM", v0=v0, tol=1e-12, maxiter=_SHIFT_INVERT_MAXITER)
            except (ArpackNoConvergence, RuntimeError):
                continue
            order = np.argsort(lam)
            name = "eigsh-shift-invert" if shift == _SHIFTS[0] else f"eigsh-shift-invert({shift:g})"
            return lam[order], np.ascontiguousarray(fix_signs(F[:, order])), isolated, name
    mu, F = lobpcg_top_eigenvectors(S, m, rng)
    return 1.0 - mu, np.ascontiguousarray(F), isolated, "lobpcg"


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
