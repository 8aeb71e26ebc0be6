"""URASC's base similarity graph W0 (``shared/specs/urasc.md`` U1, §5, §7.5).

Building W0 from ``X`` (the paper's dense Gaussian kernel or the self-tuning
local kernel, dense or kNN storage, components bridged), checking a
precomputed affinity, the U9 neighbour lists, and the fingerprint that lets a
restored session reuse a shared, read-only base graph instead of rebuilding
it. A mixin of :class:`clustering.URASC`, which holds the parameters it reads
(``kernel``, ``graph``, ``n_neighbors``, ``n_neighbors_entropy``, and
``affinity`` for the fingerprint), the state it reads (``_n``, ``_X``,
``_W0``, ``_sparse``, set by ``URASC._initialize``) and the state it writes
(``_sigma``, ``_n_bridges``, ``_nbr``, ``_nbr_w``); Xiong, Johnson & Corso,
TPAMI 2017.
"""

import hashlib

import numpy as np
import scipy.sparse as sp

from .._graph import (
    add_gaussian_edges,
    component_bridges,
    gaussian_affinity,
    knn_distances,
    self_tuning_knn_graph,
)
from ..exceptions import InvalidInputError
from ..validation import check_data

# [deviation from spec §5: dense up to 5000] above this n the base graph is the
# symmetric kNN graph (k = n_neighbors), so that one round (eigsh + k-means +
# selection) stays well under a second; a dense 2000 x 2000 eigsh costs ~2 s.
_DENSE_GRAPH_LIMIT = 1000

#: Parameters the base graph W0 (and the U9 neighbour lists) depend on.
_GRAPH_PARAMS = ("affinity", "kernel", "graph", "n_neighbors", "n_neighbors_entropy")


def _read_only(base):
    """Freeze the arrays of a base graph shared between sessions (nothing may write into them)."""
    for value in base.values():
        arrays = (value.data, value.indices, value.indptr) if sp.issparse(value) else (value,)
        for a in arrays:
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
    return base


def _bridge_components(X, W, sigma):
    """§7.5: join the components of a kNN graph by nearest-pair edges.

    The edges of :func:`clustering._graph.component_bridges` (the largest
    component skipped in each pass) with the Gaussian weight of their length,
    floored at 1e-12 so an edge survives underflow. Returns (W, number of
    edges added).
    """
    edges, _ = component_bridges(X, W, skip_largest=True)
    return add_gaussian_edges(W, edges, sigma, 1e-12), len(edges)


class BaseGraphMixin:
    """W0 from X or a precomputed affinity (U1), and the U9 neighbour lists."""

    def _graph_fingerprint(self, Xc):
        """Hash of the data and of the parameters the base graph depends on."""
        h = hashlib.sha256(np.ascontiguousarray(Xc, dtype=np.float64).tobytes())
        h.update(repr((Xc.shape, [getattr(self, p) for p in _GRAPH_PARAMS])).encode())
        return h.hexdigest()

    def _check_affinity(self, A):
        """A precomputed W0: square, symmetric, finite, in [0, 1]; zero diagonal (a copy)."""
        if sp.issparse(A):
            W = sp.csr_matrix(A, dtype=np.float64)
            vals = W.data
        else:
            W = check_data(A, name="X", min_samples=3)
            vals = W.ravel()
        if W.shape[0] != W.shape[1]:
            raise InvalidInputError(f"precomputed affinity must be square, got {W.shape}", field="X")
        if vals.size and (not np.all(np.isfinite(vals)) or vals.min() < 0 or vals.max() > 1):
            raise InvalidInputError("precomputed affinity entries must be finite and in [0, 1]", field="X")
        diff = abs(W - W.T)
        dmax = diff.max() if diff.size else 0.0
        scale = vals.max() if vals.size else 1.0
        if dmax > 1e-10 * max(scale, 1e-300):
            raise InvalidInputError("precomputed affinity must be symmetric", field="X")
        if sp.issparse(W):
            W = W.tolil()
            W.setdiag(0.0)
            W = W.tocsr()
            W.eliminate_zeros()
        else:
            W = W.copy()
            np.fill_diagonal(W, 0.0)
        return W

    def _build_graph(self, Xc):
        """The base similarity graph W0 of U1 (sets ``_sigma`` and ``_n_bridges``)."""
        mode = self.graph
        if mode == "auto":
            mode = "dense" if Xc.shape[0] <= _DENSE_GRAPH_LIMIT else "knn"
        if self.kernel == "local":
            W0, self._sigma = self_tuning_knn_graph(Xc, self.n_neighbors)
            W0, self._n_bridges = _bridge_components(Xc, W0, self._sigma)
            return W0.toarray() if mode == "dense" else W0
        W0, self._sigma = gaussian_affinity(Xc, n_neighbors=self.n_neighbors, mode=mode)
        if sp.issparse(W0):
            W0, self._n_bridges = _bridge_components(Xc, W0, self._sigma)
        return W0

    def _knn_setup(self):
        """kNN(i) under W0 for U9 (computed once) and their base weights.

        kNN(i) = the k_H samples with the largest entries of W0's row i (self
        excluded), with those entries as weights, for dense and kNN storage
        alike. A kNN graph's row can hold fewer than k_H entries: the rest of
        kNN(i) are samples with weight 0 (ties, as on a dense row), the
        nearest to x_i in X (the lowest indices for a precomputed affinity),
        each once, so that a constraint on one of them counts once in U9.
        """
        n, k = self._n, int(min(self.n_neighbors_entropy, self._n - 1))
        if not self._sparse:
            W = self._W0.copy()
            np.fill_diagonal(W, -np.inf)
            ind = np.argpartition(-W, k - 1, axis=1)[:, :k]
            self._nbr = ind.astype(np.int64)
            self._nbr_w = np.take_along_axis(self._W0, self._nbr, axis=1)
            return
        W = sp.csr_matrix(self._W0)
        fill = knn_distances(self._X, k)[1] if self._X is not None else None
        low = np.arange(min(n, 2 * k + 1))  # holds k - t samples outside any t + 1 excluded ones
        nbr = np.zeros((n, k), dtype=np.int64)
        w = np.zeros((n, k))
        for i in range(n):
            s, e = W.indptr[i], W.indptr[i + 1]
            cols, vals = W.indices[s:e], W.data[s:e]
            keep = (cols != i) & (vals > 0)
            cols, vals = cols[keep], vals[keep]
            top = np.argsort(-vals, kind="stable")[:k]
            t = top.size
            nbr[i, :t] = cols[top]
            w[i, :t] = vals[top]
            if t < k:  # the row has only these t entries
                cand = fill[i] if fill is not None else low
                cand = cand[(cand != i) & ~np.isin(cand, cols)]
                nbr[i, t:] = cand[:k - t]
        self._nbr, self._nbr_w = nbr, w
