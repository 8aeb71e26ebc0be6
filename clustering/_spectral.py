"""Shared spectral embeddings, eigengap and label assignment.

One place for the eigen-solvers used by every spectral method:

* :func:`njw_embedding` - Ng-Jordan-Weiss (``specs/baselines.md`` B2-B4).
* :func:`generalized_embedding` - ``L v = lambda D v`` (Shi-Malik /
  ``urasc.md`` U4), via the symmetric normalised Laplacian.
* :func:`additive_embedding` - Kamvar et al.'s ``N = (A + d_max I - D)/d_max``
  (B8-B9).
* :func:`top_eigenvectors` - the solver: dense ``eigh`` for small n, ARPACK
  ``eigsh(which="LA")`` otherwise, with a ``lobpcg`` / dense fallback, and LOBPCG with an
  algebraic-multigrid preconditioner above 100 000 rows (:func:`amg_top_eigenvectors`). Its
  Lanczos and LOBPCG steps (:func:`lanczos_top_eigenvectors`,
  :func:`lobpcg_top_eigenvectors`) serve CCSKL's Laplacian eigenpairs too.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh
from scipy.sparse.linalg import ArpackNoConvergence, eigsh, lobpcg
from sklearn.cluster import KMeans
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from ._graph import degrees, n_connected_components, normalized_adjacency
from .exceptions import ConstraintWarning

# Dense eigh up to this size; above it ARPACK on the (sparse or dense) matrix.
# Dense eigh of a 2310-row matrix costs seconds, eigsh for K vectors a fraction.
DENSE_EIGH_LIMIT = 1000
# ARPACK restarts allowed on a dense matrix before its dense eigh takes over. Well-posed graphs need
# 2-4 (make_blobs, 2000-5000 rows, K = 3-20); a top eigenvalue repeated across components next to a
# cluster of nearly equal ones (groups of equal rows) ran through all 20 n restarts: minutes at 1200
# rows, hours at 5000, where the dense eigh takes 9 s.
DENSE_ARPACK_MAXITER = 100
# ARPACK restarts allowed on a sparse matrix before LOBPCG takes over. Well-posed kNN graphs need about
# 10 (100 000 rows); a tiny sigma cuts the graph into more groups than K (36 at sigma = 0.2 on 10 000
# rows of 10-d make_blobs), the top eigenvalue repeats and all 20 n restarts ran: hours, where these
# take 2 s and LOBPCG 1.3 s more.
SPARSE_ARPACK_MAXITER = 300
#: Above this many rows a sparse matrix's top eigenpairs come from LOBPCG preconditioned by algebraic
#: multigrid (:func:`amg_top_eigenvectors`); at or below it, from ARPACK as they always did.
AMG_ROWS = 100_000
AMG_TOL = 1e-3  # LOBPCG's residual tolerance there (amg_top_eigenvectors)


def fix_signs(vecs):
    """Eigenvector signs made deterministic: each column's entry of largest magnitude positive.

    Parameters
    ----------
    vecs : ndarray of shape (n, k), float64

    Returns
    -------
    ndarray of shape (n, k), float64
        A new array; columns whose entries are all zero are left as they are.
    """
    idx = np.argmax(np.abs(vecs), axis=0)
    signs = np.sign(vecs[idx, np.arange(vecs.shape[1])])
    signs[signs == 0] = 1.0
    return vecs * signs


def top_eigenvectors(M, k, *, random_state=None, dense_fallback=True):
    """The ``k`` algebraically largest eigenpairs of a symmetric matrix.

    Parameters
    ----------
    M : ndarray or sparse matrix of shape (n, n)
        Symmetric.
    k : int
        ``1 <= k < n``.
    random_state : int, RandomState or None
        Seeds the ARPACK start vector (determinism).
    dense_fallback : bool, default=True
        On the dense path, answer a ``LinAlgError`` of the subset solver with
        the full decomposition (see Notes). False: re-raise it (URASC, which
        counts its own fallbacks).

    Returns
    -------
    values : ndarray of shape (k,), descending
    vectors : ndarray of shape (n, k), orthonormal columns, signs fixed so
        that the entry of largest magnitude in each column is positive.

    Notes
    -----
    Dense path (n <= ``DENSE_EIGH_LIMIT`` or k >= n - 1):
    ``scipy.linalg.eigh(subset_by_index=...)``; when that LAPACK driver
    raises ``LinAlgError`` (it does on heavily repeated eigenvalues, e.g. a
    graph of disconnected cliques) the full decomposition
    (``numpy.linalg.eigh``) is used instead and its top k pairs returned.
    Within a repeated eigenvalue any orthonormal basis is a valid answer, so
    the two solvers may return different bases there.

    ARPACK path (larger n): ``eigsh(which="LA", tol=1e-9)``. On a dense ``M``
    it gets ``DENSE_ARPACK_MAXITER`` restarts and then the dense path; on a
    sparse one ``SPARSE_ARPACK_MAXITER`` restarts and then LOBPCG (at most
    500 iterations; where it stops short of its tolerance 1e-8, its vectors
    are returned as they are). A top eigenvalue repeated more than k times
    (a graph cut into more groups than k) has no unique answer: any
    orthonormal basis of the group indicators is one.

    Sparse path above :data:`AMG_ROWS` rows (only there): :func:`amg_top_eigenvectors`.

    Raises
    ------
    numpy.linalg.LinAlgError
        Only with ``dense_fallback=False``, or if the full solver fails too.
    """
    n = M.shape[0]
    if n <= DENSE_EIGH_LIMIT or k >= n - 1:
        return _dense_top_eigenvectors(M.toarray() if sp.issparse(M) else np.asarray(M), k, dense_fallback)
    rng = check_random_state(random_state)
    if sp.issparse(M) and n > AMG_ROWS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return amg_top_eigenvectors(M, k, rng)
    v0 = rng.uniform(-1, 1, n)
    dense = not sp.issparse(M)
    try:
        return lanczos_top_eigenvectors(M, k, v0, DENSE_ARPACK_MAXITER if dense else SPARSE_ARPACK_MAXITER)
    except ArpackNoConvergence:
        if dense:  # the matrix is held already: its dense solve has a bounded cost
            return _dense_top_eigenvectors(np.asarray(M), k, dense_fallback)
    with warnings.catch_warnings():  # "not reaching the requested tolerance": bounded, see Notes
        warnings.simplefilter("ignore", UserWarning)
        return lobpcg_top_eigenvectors(sp.csr_matrix(M), k, rng)


def lanczos_top_eigenvectors(M, k, v0, maxiter):
    """The ``k`` algebraically largest eigenpairs by ARPACK: ``eigsh(which="LA", tol=1e-9)``.

    The Lanczos step of :func:`top_eigenvectors` and of CCSKL's Laplacian eigenpairs; each caller
    picks its own fallback when it does not converge.

    Parameters
    ----------
    M : ndarray or sparse matrix of shape (n, n), float64
        Symmetric.
    k : int
        ``1 <= k < n``.
    v0 : ndarray of shape (n,), float64
        ARPACK's start vector (the caller draws it, for determinism).
    maxiter : int
        ARPACK restarts allowed.

    Returns
    -------
    values : ndarray of shape (k,), descending
    vectors : ndarray of shape (n, k), orthonormal columns, signs fixed by :func:`fix_signs`

    Raises
    ------
    scipy.sparse.linalg.ArpackNoConvergence
        When ARPACK has not converged after ``maxiter`` restarts.
    """
    vals, vecs = eigsh(M, k=k, which="LA", v0=v0, tol=1e-9, maxiter=maxiter)
    return _descending(vals, vecs)


def lobpcg_top_eigenvectors(M, k, rng):
    """The ``k`` algebraically largest eigenpairs by LOBPCG: the last resort of the sparse solvers.

    At most 500 iterations from a standard normal ``(n, k)`` block, tolerance 1e-8. Where it stops
    short of its tolerance its vectors are returned as they are (scipy warns; :func:`top_eigenvectors`
    silences that warning).

    Parameters
    ----------
    M : sparse matrix of shape (n, n), float64
        Symmetric.
    k : int
        ``1 <= k < n``.
    rng : numpy.random.RandomState
        Draws the starting block.

    Returns
    -------
    values : ndarray of shape (k,), descending
    vectors : ndarray of shape (n, k), signs fixed by :func:`fix_signs`
    """
    vals, vecs = lobpcg(M, rng.standard_normal((M.shape[0], k)), largest=True, tol=1e-8, maxiter=500)
    return _descending(vals, vecs)


def amg_top_eigenvectors(M, k, rng, *, tol=AMG_TOL, maxiter=300):
    """The ``k`` largest eigenpairs of a normalised adjacency ``M`` by LOBPCG with an AMG preconditioner.

    The top eigenvectors of ``M = D^{-1/2} W D^{-1/2}`` are the bottom ones of the normalised
    Laplacian ``L = I - M``; LOBPCG finds those, preconditioned by a smoothed-aggregation multigrid
    solver of ``L + 1e-5 I`` (``pyamg``), which makes the iteration count nearly independent of
    ``n`` (Knyazev, SIAM J. Sci. Comput. 2001; the ``amg`` solver of scikit-learn's
    ``spectral_embedding``). Used above :data:`AMG_ROWS` rows, where ARPACK's restarts on a
    million-row graph take far longer.

    Parameters
    ----------
    M : sparse matrix of shape (n, n), float64
        Symmetric, eigenvalues in [-1, 1].
    k : int
    rng : numpy.random.RandomState
        Draws the starting block.
    tol : float, default=:data:`AMG_TOL` (1e-3)
        LOBPCG's bound on each residual norm ``||L x - lambda x||``. An eigenvalue's error is of
        the order of the squared residual over the gap to the next one (1e-6 here), and the
        eigenvectors feed a k-means or a kernel fit, not a further solve: 1e-3 halves the
        iterations of 1e-5 (37 against 71 at 200 000 rows of 128-dimensional blobs, 20 pairs, the
        same labels) and the preconditioner, one multigrid cycle per vector, is most of each
        iteration's cost.
    maxiter : int, default=300

    Returns
    -------
    values : ndarray of shape (k,), descending (eigenvalues of ``M``)
    vectors : ndarray of shape (n, k), signs fixed by :func:`fix_signs`
    """
    from pyamg import smoothed_aggregation_solver

    n = M.shape[0]
    L = (sp.identity(n, format="csr") - sp.csr_matrix(M)).tocsr()
    ml = smoothed_aggregation_solver((L + 1e-5 * sp.identity(n, format="csr")).tocsr())
    X0 = rng.standard_normal((n, k))
    vals, vecs = lobpcg(L, X0, M=ml.aspreconditioner(), largest=False, tol=tol, maxiter=maxiter)
    return _descending(1.0 - vals, vecs)


def _descending(vals, vecs):
    """Eigenpairs ``vals (k,)``, ``vecs (n, k)`` in descending order of value, signs fixed."""
    order = np.argsort(vals)[::-1]
    return vals[order], fix_signs(vecs[:, order])


def _dense_top_eigenvectors(A, k, dense_fallback):
    """:func:`top_eigenvectors` of a dense ``A`` (n, n) by LAPACK: (values (k,) descending, vectors (n, k))."""
    n = A.shape[0]
    # One BLAS thread: on a busy 2-core machine multi-threaded OpenBLAS
    # spin-waits (2-6 s instead of 0.02 s seen for n = 351).
    with threadpool_limits(limits=1):
        try:
            vals, vecs = eigh(A, subset_by_index=[n - k, n - 1])
        except np.linalg.LinAlgError:
            if not dense_fallback:
                raise
            # LAPACK's subset driver (evr) can stop with "Internal Error"
            # when eigenvalues repeat many times (disconnected cliques:
            # one eigenvalue per component and large blocks of repeated
            # ones inside them). The full divide-and-conquer solver
            # (numpy's eigh, as in full_generalized_embedding) has no such
            # failure; it runs only on the error, so ordinary inputs keep
            # the subset driver's result.
            mu, U = np.linalg.eigh(A)
            return mu[::-1][:k], fix_signs(U[:, ::-1][:, :k])
    return _descending(vals, vecs)


def njw_embedding(W, n_components, *, random_state=None):
    """Ng-Jordan-Weiss embedding (``baselines.md`` Eqs. B2-B4).

    Parameters
    ----------
    W : ndarray or sparse matrix of shape (n, n)
        Symmetric non-negative affinity, zero diagonal.
    n_components : int
        K, the number of eigenvectors.

    Returns
    -------
    Y : ndarray of shape (n, K)
        Top-K eigenvectors of ``D^{-1/2} W D^{-1/2}``, rows scaled to unit
        length (rows with norm < 1e-12 stay zero).
    info : dict
        ``eigenvalues`` (K,), ``zero_rows`` (indices), ``n_components_graph``.
    """
    M, isolated = normalized_adjacency(W)
    vals, vecs = top_eigenvectors(M, n_components, random_state=random_state)
    norms = np.linalg.norm(vecs, axis=1)
    zero = norms < 1e-12
    Y = np.zeros_like(vecs)
    Y[~zero] = vecs[~zero] / norms[~zero, None]
    info = {
        "eigenvalues": vals,
        "zero_rows": np.flatnonzero(zero | isolated).tolist(),
        "n_components_graph": n_connected_components(W),
    }
    return Y, info


def generalized_embedding(W, n_components, *, random_state=None, dense_fallback=True):
    """Smallest generalized eigenvectors of ``(D - W) v = lambda D v``.

    Computed as ``v = D^{-1/2} u`` with ``u`` the top eigenvectors of
    ``D^{-1/2} W D^{-1/2}`` (eigenvalue ``1 - lambda``); ``v`` is
    D-orthonormal. Isolated samples get a zero row. Used by URASC (U4) and
    the ``normalization="rw"`` variant of Spectral Learning.
    ``random_state`` and ``dense_fallback`` go to :func:`top_eigenvectors`.

    Returns
    -------
    V : ndarray of shape (n, K)
    eigenvalues : ndarray of shape (K,), ascending lambda in [0, 2]
    """
    M, isolated = normalized_adjacency(W)
    vals, vecs = top_eigenvectors(M, n_components, random_state=random_state, dense_fallback=dense_fallback)
    d = degrees(W)
    inv = np.zeros_like(d)
    inv[~isolated] = 1.0 / np.sqrt(d[~isolated])
    return vecs * inv[:, None], 1.0 - vals


def full_generalized_embedding(W, n_components):
    """:func:`generalized_embedding` from a full dense eigendecomposition.

    Same output (``n_components`` smallest lambda, D-orthonormal V, isolated
    rows zero, signs by :func:`fix_signs` on the eigenvectors of the normalized
    adjacency) from one ``numpy.linalg.eigh`` of all n eigenpairs; URASC's
    exact eigenvector perturbation (urasc.md U6) needs every pair for n <= 1000.

    Parameters
    ----------
    W : ndarray or sparse matrix of shape (n, n), float64
        Symmetric non-negative affinity.
    n_components : int
        Number of eigenpairs returned, ``1 <= n_components <= n``.

    Returns
    -------
    V : ndarray of shape (n, n_components), float64
    eigenvalues : ndarray of shape (n_components,), float64, ascending lambda in [0, 2]
    """
    A = W.toarray() if sp.issparse(W) else np.asarray(W)
    M, iso = normalized_adjacency(A)
    inv = np.zeros(A.shape[0])
    inv[~iso] = 1.0 / np.sqrt(degrees(A)[~iso])
    with threadpool_limits(limits=1):
        mu, U = np.linalg.eigh(M)
    U = U[:, ::-1][:, :n_components]
    mu = mu[::-1][:n_components]
    return fix_signs(U) * inv[:, None], 1.0 - mu


def additive_embedding(W, n_components, *, random_state=None):
    """Kamvar et al.'s normalized additive embedding (``baselines.md`` B8-B9).

    ``N = (W + d_max I - D) / d_max``; its top eigenvectors are the bottom
    eigenvectors of the unnormalised Laplacian ``L = D - W`` (the diagonal
    of ``W`` cancels).

    Returns
    -------
    X : ndarray of shape (n, K)
    eigenvalues : ndarray of shape (K,), descending, in [-1, 1]
    """
    d = degrees(W)
    d_max = float(d.max()) if d.size and d.max() > 0 else 1.0
    if sp.issparse(W):
        N = (sp.csr_matrix(W) + sp.diags(d_max - d)) / d_max
    else:
        N = (np.asarray(W) + np.diag(d_max - d)) / d_max
    vals, vecs = top_eigenvectors(N, n_components, random_state=random_state)
    return vecs, vals


def kmeans_labels(embedding, n_clusters, *, n_init=10, random_state=None):
    """k-means on embedding rows (``baselines.md`` §0.4).

    Returns
    -------
    labels : ndarray of shape (n,), int64 in [0, n_clusters)
    """
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=random_state)
    with warnings.catch_warnings():
        # Few distinct rows (e.g. block matrices) are expected, not an error.
        warnings.simplefilter("ignore", category=Warning)
        labels = km.fit_predict(embedding)
    return labels.astype(np.int64)


def kmeans_labels_by_constraints(embedding, n_clusters, pairs, must_link, weight=None, *, n_init=10,
                                 random_state=None):
    """k-means restarts on embedding rows; keep the one that satisfies the most constraints.

    Each of ``n_init`` single-start k-means runs (k-means++ seeding, own seed)
    is scored by the total weight of the pairwise constraints it satisfies (a
    must-link inside one cluster, a cannot-link across two); the best score
    wins and ties go to the lower inertia. Without constraints this is plain
    lowest-inertia selection. Used by CCSKL (``restart_selection=
    "constraints"``): on ionosphere two partitions of nearly equal inertia
    exist and inertia alone picks the one that ignores the answers.

    Source: our extension; the CCSKL paper (step C12 of specs/ccskl.md) runs
    plain k-means on the rows of F Lambda^(1/2). Nothing is raised beyond
    scikit-learn's KMeans errors (e.g. n_clusters > n).

    Parameters
    ----------
    embedding : ndarray of shape (n, d), float64
        Rows to cluster (unitless spectral coordinates).
    n_clusters : int
        K, 1 <= K <= n.
    pairs : ndarray of shape (p, 2), int64
        Constrained index pairs into the rows (may be empty).
    must_link : ndarray of shape (p,), bool
        True for a must-link, False for a cannot-link.
    weight : ndarray of shape (p,), float64 or None
        Constraint confidences (default 1).
    n_init : int, default=10
        Number of single-start k-means runs.
    random_state : int, RandomState or None
        Seeds the runs (one seed drawn per run).

    Returns
    -------
    labels : ndarray of shape (n,), int64 in [0, n_clusters)
    satisfied : float
        Weighted fraction of the constraints the chosen labels satisfy (1.0
        without constraints).
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    must_link = np.asarray(must_link, dtype=bool)
    w = np.ones(len(pairs)) if weight is None else np.asarray(weight, dtype=float)
    rs = check_random_state(random_state)
    seeds = rs.randint(np.iinfo(np.int32).max, size=int(n_init))
    best_key, best = None, None
    for seed in seeds:
        km = KMeans(n_clusters=n_clusters, n_init=1, random_state=int(seed))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=Warning)
            labels = km.fit_predict(embedding)
        same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
        score = float(np.sum(w * (same == must_link)))
        key = (-score, float(km.inertia_))
        if best_key is None or key < best_key:
            best_key, best = key, labels
    total = float(w.sum())
    return best.astype(np.int64), (-best_key[0] / total if total > 0 else 1.0)


def eigengap_n_clusters(eigenvalues, max_clusters=None):
    """Number of clusters by the largest eigengap.

    Parameters
    ----------
    eigenvalues : ndarray of shape (m,)
        Laplacian eigenvalues in ascending order (smallest first).
    max_clusters : int or None

    Returns
    -------
    k : int
        ``argmax_k (lambda_{k+1} - lambda_k) + 1``, at least 2.
    """
    ev = np.sort(np.asarray(eigenvalues, dtype=float))
    if max_clusters is not None:
        ev = ev[: max_clusters + 1]
    if ev.size < 3:
        return 2
    gaps = np.diff(ev)
    return int(max(2, np.argmax(gaps[1:]) + 2))


def warn_if_disconnected(info, n_clusters):
    """Warn (``ConstraintWarning``) when the graph has more components than K."""
    if info.get("n_components_graph", 1) > n_clusters:
        warnings.warn(
            f"the affinity graph has {info['n_components_graph']} connected components, more than "
            f"n_clusters={n_clusters}; the spectral embedding is not unique",
            ConstraintWarning,
            stacklevel=3,
        )
