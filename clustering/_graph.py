"""Affinity graphs and Laplacians shared by the spectral methods.

Implements the shared graph construction of ``specs/baselines.md`` §0.3
(also ``ccskl.md`` C1 and ``urasc.md`` U1): Gaussian weights
``w_ij = exp(-||x_i - x_j||^2 / (2 sigma^2))`` with zero diagonal, dense for
``n <= 5000`` and a kNN graph above that, and the default bandwidth
``sigma`` = mean distance to the k-th nearest neighbour.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.metrics import pairwise_distances
from sklearn.neighbors import NearestNeighbors

DENSE_LIMIT = 5000
#: Above this many rows :func:`knn_distances` approximates the neighbours (``pynndescent``) when the
#: data have more than :data:`EXACT_KNN_MAX_FEATURES` columns; at or below it, the search is exact.
#: At 100 000 x 128 the exact paths (three kNN searches and Boruvka bridges between blobs, each
#: O(n^2 d)) kept the pairwise session's first pass past 900 s; at 30 000 x 128 they take 38 s,
#: where the approximate ones take 2 s after numba's one-off compilation (about 40 s a process).
APPROX_KNN_ROWS = 50_000
#: Up to this many columns exact tree search stays fast at any size, and is kept.
EXACT_KNN_MAX_FEATURES = 16

__all__ = [
    "add_gaussian_edges",
    "component_bridges",
    "discriminant_knn_graph",
    "gaussian_affinity",
    "gaussian_weights",
    "knn_distances",
    "knn_gaussian_graph",
    "kth_neighbor_sigma",
    "n_connected_components",
    "normalized_adjacency",
    "self_tuning_knn_graph",
]


def knn_distances(X, n_neighbors, *, approx_above=APPROX_KNN_ROWS):
    """Distances and indices of each point's ``n_neighbors`` nearest other points.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    n_neighbors : int
        Clipped to ``n_samples - 1``.
    approx_above : int, default=APPROX_KNN_ROWS
        Above this many rows, with more than :data:`EXACT_KNN_MAX_FEATURES` columns, the
        neighbours are approximate: nearest-neighbour descent (``pynndescent``, Dong et al.,
        WWW 2011; recall about 0.9-0.99 on embeddings), where exact search would cost
        ``O(n^2 d)``. At or below it (every size up to 50 000 rows by default) the search is
        exact, as it always was.

    Returns
    -------
    dist : ndarray of shape (n_samples, k), float64, ascending per row
    ind : ndarray of shape (n_samples, k), int64
        The point itself is excluded.
    """
    n = X.shape[0]
    k = int(min(max(n_neighbors, 1), n - 1))
    if n > approx_above and X.shape[1] > EXACT_KNN_MAX_FEATURES:
        return _cached_approximate_knn(X, k)
    else:
        nn = NearestNeighbors(n_neighbors=k + 1).fit(X)
        dist, ind = nn.kneighbors(X)
    # Drop the self-match; with duplicate points the self index may not be
    # in column 0, so remove it explicitly per row.
    is_self = ind == np.arange(n)[:, None]
    keep = ~is_self
    keep[is_self.sum(axis=1) == 0, -1] = False  # self not returned: drop the farthest
    dist = dist[keep].reshape(n, k)
    ind = ind[keep].reshape(n, k)
    return dist, ind.astype(np.int64)


#: The approximate search is run for at least this many neighbours and its lists kept for the last
#: matrix searched, so that a method asking for 7, 10 and 20 neighbours of the same rows (URASC's
#: graph, its density and its entropy lists) pays for one search of 1 000 000 rows, not three.
APPROX_KNN_MIN_K = 20
_KNN_CACHE = {}


def _cached_approximate_knn(X, k):
    """:func:`_approximate_knn` without the self-match, kept for the last ``X`` (by identity,
    address and shape; a weak reference, so the lists go with the matrix)."""
    import weakref

    key = (X.__array_interface__["data"][0], X.shape, X.strides)
    hit = _KNN_CACHE.get("entry")
    if hit is not None and hit[0] == key and hit[1]() is X and hit[2].shape[1] >= k:
        return hit[2][:, :k].copy(), hit[3][:, :k].copy()
    n = X.shape[0]
    kk = int(min(max(k, APPROX_KNN_MIN_K), n - 1))
    dist, ind = _approximate_knn(X, kk + 1)
    is_self = ind == np.arange(n)[:, None]
    keep = ~is_self
    keep[is_self.sum(axis=1) == 0, -1] = False
    dist, ind = dist[keep].reshape(n, kk), ind[keep].reshape(n, kk).astype(np.int64)
    try:
        _KNN_CACHE["entry"] = (key, weakref.ref(X), dist, ind)
    except TypeError:  # not weak-referenceable: no cache
        _KNN_CACHE.pop("entry", None)
    return dist[:, :k].copy(), ind[:, :k].copy()


def _approximate_knn(X, k):
    """``k`` approximate nearest neighbours of every row (itself included) by ``pynndescent``.

    Seeded (``random_state=0``) and single-threaded, so the graph is reproducible. The rare rows
    whose list the search did not fill (index -1: heavily duplicated data) get their exact
    neighbours instead.
    """
    from pynndescent import NNDescent

    index = NNDescent(np.asarray(X, dtype=np.float32), n_neighbors=k, metric="euclidean", random_state=0,
                      n_jobs=1, low_memory=True, compressed=True, verbose=False)
    ind, dist = index.neighbor_graph
    ind, dist = ind.astype(np.int64), dist.astype(np.float64)
    rows = np.unique(np.nonzero(ind < 0)[0])
    if rows.size:
        dist[rows], ind[rows] = NearestNeighbors(n_neighbors=k).fit(X).kneighbors(X[rows])
    order = np.argsort(dist, axis=1, kind="stable")
    return np.take_along_axis(dist, order, 1), np.take_along_axis(ind, order, 1)


def kth_neighbor_sigma(X, n_neighbors=20, *, dist=None):
    """Default Gaussian bandwidth: mean distance to the k-th nearest neighbour.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    n_neighbors : int, default=20
        k, clipped to ``n_samples - 1``.
    dist : ndarray of shape (n_samples, >= k), optional
        Precomputed sorted neighbour distances (from :func:`knn_distances`).

    Returns
    -------
    sigma : float
        In the units of ``X``; falls back to 1.0 when every point coincides.

    Notes
    -----
    ``specs/baselines.md`` §0.3 [choice]; ``ccskl.md`` C1 (r).
    """
    if dist is None:
        dist, _ = knn_distances(X, n_neighbors)
    k = int(min(max(n_neighbors, 1), dist.shape[1]))
    sigma = float(np.mean(dist[:, k - 1]))
    return sigma if sigma > 0 else 1.0


def gaussian_weights(d2, sigma):
    """Gaussian weights ``exp(-d2 / (2 sigma^2))`` of squared distances (Eq. B1).

    Parameters
    ----------
    d2 : ndarray of any shape, float64
        Squared distances, >= 0.
    sigma : float
        Bandwidth in the units of the distances, > 0.

    Returns
    -------
    ndarray of the shape of ``d2``, float64, entries in [0, 1]

    Notes
    -----
    Below ``sigma`` = 1e-154 the denominator ``2 sigma^2`` underflows to 0 and
    ``0 / 0`` made the weight of coinciding points NaN (every spectral method
    then failed in ``eigh`` or ``splu``). There the weights take their limit
    as ``sigma -> 0``: 1 for coinciding points, 0 for all others.
    """
    denom = 2.0 * sigma * sigma
    if denom == 0.0:
        return (d2 == 0).astype(np.float64)
    return np.exp(-d2 / denom)


def gaussian_affinity(X, sigma=None, *, n_neighbors=20, mode="auto"):
    """Gaussian affinity matrix with zero diagonal (Eq. B1).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    sigma : float or None
        Bandwidth in the units of ``X``; None uses :func:`kth_neighbor_sigma`.
    n_neighbors : int, default=20
        k for the bandwidth rule and for the kNN graph in sparse mode.
    mode : {"auto", "dense", "knn"}
        "auto" is dense for ``n <= 5000``, else kNN.

    Returns
    -------
    W : ndarray of shape (n, n) float64, or csr_matrix
        Symmetric, entries in [0, 1], zero diagonal.
    sigma : float
        The bandwidth used.
    """
    n = X.shape[0]
    if mode == "knn" or (mode == "auto" and n > DENSE_LIMIT):
        return knn_gaussian_graph(X, n_neighbors, sigma=sigma)
    if sigma is None:
        sigma = kth_neighbor_sigma(X, n_neighbors)
    d2 = pairwise_distances(X, metric="sqeuclidean")
    W = gaussian_weights(d2, sigma)
    np.fill_diagonal(W, 0.0)
    return W, float(sigma)


def knn_gaussian_graph(X, n_neighbors, *, sigma=None, symmetrize="max"):
    """Sparse Gaussian kNN graph.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    n_neighbors : int
        k; an edge exists when ``j`` is among the k nearest of ``i`` or the
        reverse.
    sigma : float or None
        Bandwidth; None = mean distance to the k-th neighbour.
    symmetrize : {"max", "mean"}
        "max": union rule ``W.maximum(W.T)`` (§0.3); "mean": ``(W + W.T) / 2``
        (E2CP's Eq. B10).

    Returns
    -------
    W : csr_matrix of shape (n, n), float64
        Symmetric, entries in [0, 1], zero diagonal.
    sigma : float
    """
    n = X.shape[0]
    dist, ind = knn_distances(X, n_neighbors)
    if sigma is None:
        sigma = kth_neighbor_sigma(X, n_neighbors, dist=dist)
    vals = gaussian_weights(dist**2, sigma)
    rows = np.repeat(np.arange(n), ind.shape[1])
    W = sp.csr_matrix((vals.ravel(), (rows, ind.ravel())), shape=(n, n))
    W = W.maximum(W.T) if symmetrize == "max" else (W + W.T) * 0.5
    W = sp.csr_matrix(W)
    W.setdiag(0.0)
    W.eliminate_zeros()
    return W, float(sigma)


def degrees(W):
    """Row sums of an affinity matrix, shape (n,), float64."""
    return np.asarray(W.sum(axis=1)).ravel()


def normalized_adjacency(W):
    """``D^{-1/2} W D^{-1/2}`` with zero-degree rows and columns set to 0.

    Parameters
    ----------
    W : ndarray or sparse matrix of shape (n, n)
        Symmetric, non-negative.

    Returns
    -------
    M : same type as ``W``
    isolated : ndarray of shape (n,), bool
        Samples with zero degree.
    """
    d = degrees(W)
    isolated = d <= 0
    inv = np.zeros_like(d)
    inv[~isolated] = 1.0 / np.sqrt(d[~isolated])
    if sp.issparse(W):
        Dm = sp.diags(inv)
        return sp.csr_matrix(Dm @ W @ Dm), isolated
    return W * inv[:, None] * inv[None, :], isolated


def n_connected_components(W):
    """Number of connected components of the graph with adjacency ``W``."""
    n, _ = connected_components(sp.csr_matrix(W) if not sp.issparse(W) else W, directed=False)
    return int(n)


def self_tuning_knn_graph(X, n_neighbors, n_scale=7):
    """Self-tuning kNN similarity graph (Zelnik-Manor & Perona 2004).

    ``w_ij = exp(-||x_i - x_j||^2 / (s_i s_j))`` for j among the k nearest
    neighbours of i or the reverse, 0 otherwise, with ``s_i`` the distance from
    x_i to its ``n_scale``-th nearest neighbour (URASC's default
    ``kernel="local"``, an extension of urasc.md U1).

    Parameters
    ----------
    X : ndarray of shape (n, d), float64
    n_neighbors : int
        k of the kNN graph (clipped to n - 1).
    n_scale : int, default=7
        Neighbour rank of the local scale (clipped to k).

    Returns
    -------
    W : csr_matrix of shape (n, n), float64
        Symmetric, entries in [1e-12, 1], zero diagonal.
    sigma : float
        Global bandwidth (mean distance to the k-th neighbour; 1.0 if that is
        0), for callers that need one Gaussian scale (bridges, similarity order).
    """
    n = X.shape[0]
    dist, ind = knn_distances(X, n_neighbors)
    k = dist.shape[1]
    s = dist[:, min(n_scale, k) - 1].copy()
    pos = s > 0
    s[~pos] = float(s[pos].mean()) if pos.any() else 1.0
    rows = np.repeat(np.arange(n), k)
    cols = ind.ravel()
    vals = np.maximum(np.exp(-(dist.ravel() ** 2) / (s[rows] * s[cols])), 1e-12)
    W = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    W = sp.csr_matrix(W.maximum(W.T))
    W.setdiag(0.0)
    W.eliminate_zeros()
    sigma = float(np.mean(dist[:, -1]))
    return W, (sigma if sigma > 0 else 1.0)


def discriminant_knn_graph(X, groups, n_neighbors):
    """Self-tuning kNN graph in the discriminant space of labelled groups of samples.

    The samples of ``groups`` (each a list of row indices, e.g. the certain
    sets of an active session) fit a linear discriminant analysis (scikit-learn,
    eigen solver, Ledoit-Wolf shrinkage of the within-group covariance); every
    row of X is projected on its ``min(len(groups) - 1, d)`` directions and
    :func:`self_tuning_knn_graph` is built there. Neighbours in that space
    differ along what separates the groups, so a sample whose group was
    given by a wrong answer still has its own class as neighbours.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64
        Finite data.
    groups : list of list of int
        Non-empty, disjoint groups of row indices into X (two or more for a
        graph).
    n_neighbors : int
        k of the kNN graph.

    Returns
    -------
    W : csr_matrix of shape (n, n), float64, or None
        Symmetric, entries in [1e-12, 1], zero diagonal; None when there are
        fewer than two groups, when the groups hold fewer samples than
        ``len(groups) + 2`` (no within-group spread to learn from) or when the
        discriminant problem is singular. Nothing is raised for those cases.

    Notes
    -----
    Shoal's extension for URASC's ``discriminant_weight`` (not in the five
    papers of specs/). Sources of the parts: Fisher's linear discriminant
    (the generalised eigenproblem of between- and within-group scatter),
    Ledoit and Wolf (2004) for the shrunk within-group covariance, and
    Zelnik-Manor and Perona (2004) for the self-tuning graph. Measured
    effect: bench/history.md, "second spreading graph".
    """
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    if len(groups) < 2:
        return None
    idx = np.concatenate([np.asarray(g, dtype=np.int64) for g in groups])
    if idx.size < len(groups) + 2:
        return None
    y = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    try:
        with warnings.catch_warnings():
            # A group of one sample (a set with only its founder) has a zero covariance, which
            # is right here (it adds no within-group spread); sklearn warns about it per group.
            warnings.filterwarnings("ignore", message="Only one sample available", category=UserWarning)
            Z = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(X[idx], y).transform(X)
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(Z).all():
        return None
    return self_tuning_knn_graph(Z, n_neighbors)[0]


def component_bridges(X, W, *, skip_largest=False, max_passes=64, approx_above=APPROX_KNN_ROWS):
    """Edges that join the connected components of a kNN graph (Boruvka passes).

    Each pass links every component (but the largest, with ``skip_largest``)
    to its nearest point outside it (Euclidean), until one component remains:
    a spanning forest of the components' nearest-pair distances (ccskl.md
    §7.1, urasc.md §7.5). Weighting the new edges is the caller's choice.

    Parameters
    ----------
    X : ndarray of shape (n, d), float64
    W : sparse or dense matrix of shape (n, n)
        The graph; only its non-zero pattern is read.
    skip_largest : bool, default=False
        Leave the largest component out of each pass's searches (it is reached
        by the others' edges; fewer nearest-neighbour searches).
    max_passes : int, default=64
        Each pass at least halves the number of components, so 64 passes
        always suffice; a safety bound.
    approx_above : int, default=APPROX_KNN_ROWS
        Rows above which the edges are approximate (see Notes).

    Notes
    -----
    Above :data:`APPROX_KNN_ROWS` rows of more than :data:`EXACT_KNN_MAX_FEATURES` columns each
    component's edge is approximate (:func:`_approximate_bridge`): a short edge out of it, not
    always the shortest. At or below (every size up to 50 000 rows) the search is exact.

    Returns
    -------
    edges : list of (int, int, float)
        ``(i, j, distance)`` with i < j, unique, in the order added (each pass
        sorted).
    n_components : int
        Components before bridging.
    """
    n = X.shape[0]
    n_comp0, lab = connected_components(W, directed=False)
    n_comp = n_comp0
    edges = []
    approx = n > approx_above and X.shape[1] > EXACT_KNN_MAX_FEATURES and n_comp0 > 1
    sqn = np.einsum("ij,ij->i", X, X) if approx else None
    rng = np.random.default_rng(0)
    for _ in range(max_passes):
        if n_comp <= 1:
            break
        skip = int(np.argmax(np.bincount(lab))) if skip_largest else -1
        best = set()
        for c in range(n_comp):
            if c == skip:
                continue
            if approx:
                best.add(_approximate_bridge(X, sqn, lab == c, rng))
                continue
            inside = np.flatnonzero(lab == c)
            outside = np.flatnonzero(lab != c)
            dist, nearest = NearestNeighbors(n_neighbors=1).fit(X[outside]).kneighbors(X[inside])
            a = int(np.argmin(dist[:, 0]))
            i0, j0 = int(inside[a]), int(outside[nearest[a, 0]])
            best.add((min(i0, j0), max(i0, j0), float(dist[a, 0])))
        edges += sorted(best)
        E = sp.csr_matrix((np.ones(len(edges)), ([e[0] for e in edges], [e[1] for e in edges])), shape=(n, n))
        n_comp, lab = connected_components(W + E, directed=False)
    return edges, int(n_comp0)


#: Rows of a component, and of the rest, whose distances seed :func:`_approximate_bridge`.
BRIDGE_SAMPLE_INSIDE, BRIDGE_SAMPLE_OUTSIDE, BRIDGE_REFINE = 1000, 10000, 8


def _approximate_bridge(X, sqn, inside_mask, rng):
    """A short edge from a component to the rest, for :func:`component_bridges` above
    :data:`APPROX_KNN_ROWS` rows of more than :data:`EXACT_KNN_MAX_FEATURES` columns.

    The nearest pair between samples of the component (at most 1000 rows) and of the rest (at most
    10 000), then alternating exact searches: the nearest outside row to the inside end, the nearest
    inside row to that one, until neither end moves (at most 8 rounds, each a pass over ``X``:
    ``O(n d)``). The edge is a local optimum of the distance, not always the nearest pair; exact
    search would cost ``O(n^2 d)`` per component.

    Returns
    -------
    (i, j, distance) with i < j
    """
    inside = np.flatnonzero(inside_mask)
    outside = np.flatnonzero(~inside_mask)
    A = inside if inside.size <= BRIDGE_SAMPLE_INSIDE else rng.choice(inside, BRIDGE_SAMPLE_INSIDE, replace=False)
    B = outside if outside.size <= BRIDGE_SAMPLE_OUTSIDE else rng.choice(outside, BRIDGE_SAMPLE_OUTSIDE, replace=False)
    D = pairwise_distances(X[A], X[B], metric="sqeuclidean")
    a, b = np.unravel_index(int(np.argmin(D)), D.shape)
    i, j = int(A[a]), int(B[b])

    def nearest(row, among):
        d2 = sqn - 2.0 * (X @ X[row]) + sqn[row]
        d2[~among] = np.inf
        t = int(np.argmin(d2))
        return t, float(np.sqrt(max(d2[t], 0.0)))

    for _ in range(BRIDGE_REFINE):
        j2, dist = nearest(i, ~inside_mask)
        i2, dist = nearest(j2, inside_mask)
        if (i2, j2) == (i, j):
            break
        i, j = i2, j2
    dist = float(np.sqrt(max(sqn[i] - 2.0 * float(X[i] @ X[j]) + sqn[j], 0.0)))
    return (min(i, j), max(i, j), dist)


def add_gaussian_edges(W, edges, sigma, floor):
    """``W`` with ``edges`` added at the Gaussian weight of their length.

    ``w = max(exp(-d^2 / (2 sigma^2)), floor)`` on both (i, j) and (j, i); an
    existing entry keeps the larger weight. Used for the bridges of
    :func:`component_bridges` (ccskl.md §7.1, urasc.md §7.5); the floor keeps a
    long bridge from underflowing to zero.

    Parameters
    ----------
    W : csr_matrix of shape (n, n), float64
        Symmetric graph.
    edges : list of (int, int, float)
        ``(i, j, distance)``; distances in the units of X.
    sigma : float
        Gaussian width, units of X, > 0.
    floor : float
        Smallest weight of a new edge, > 0.

    Returns
    -------
    csr_matrix of shape (n, n), float64
        Symmetric; ``W`` itself when ``edges`` is empty.
    """
    if not edges:
        return W
    i = np.array([e[0] for e in edges], dtype=np.int64)
    j = np.array([e[1] for e in edges], dtype=np.int64)
    d = np.array([e[2] for e in edges])
    w = np.maximum(gaussian_weights(d**2, sigma), floor)
    E = sp.csr_matrix((np.r_[w, w], (np.r_[i, j], np.r_[j, i])), shape=W.shape)
    return sp.csr_matrix(W.maximum(E))
