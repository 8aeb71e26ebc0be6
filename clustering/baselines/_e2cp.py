"""E2CP: exhaustive and efficient constraint propagation (Lu & Ip 2010),
``specs/baselines.md`` §3."""

import numbers

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state

from .._constraints import check_pairwise
from .._graph import knn_gaussian_graph, normalized_adjacency
from .._params import Interval, Options, validate_params
from .._spectral import kmeans_labels, njw_embedding
from ..exceptions import InvalidInputError
from ..validation import E2CP_MAX_PROPAGATION, E2CP_MAX_SAMPLES, check_data, check_magnitude, check_n_clusters
from ._spectral_clustering import _info_json

__all__ = ["E2CP"]

#: ``sparse_adjust="auto"`` keeps W-tilde sparse above this many samples.
SPARSE_ADJUST_LIMIT = 5000
# Numbers of G[r] (and of Q[c]) held at once while the sparse path evaluates F* on its pattern (32 MB each).
_F_BLOCK_ENTRIES = 4_000_000


def _constraint_matrix(cons):
    """Constrained points and the compact constraint matrix ``Z_c`` (Eq. B12).

    Duplicates of the same kind are set once (max weight), not added; a pair
    given as both kinds superposes ``+w_ml - w_cl``.

    Returns
    -------
    points : ndarray of shape (c,), int64, sorted
    Zc : ndarray of shape (c, c), float64, symmetric, zero diagonal
    """
    pairs, kind, weight, _ = cons.unique()
    points = np.unique(pairs.ravel())
    c = points.size
    Zc = np.zeros((c, c))
    if c:
        a = np.searchsorted(points, pairs[:, 0])
        b = np.searchsorted(points, pairs[:, 1])
        v = kind.astype(np.float64) * weight
        np.add.at(Zc, (a, b), v)
        np.add.at(Zc, (b, a), v)
    return points, Zc


def _propagation_factor(Lbar, alpha, points):
    """``Q = (I - alpha Lbar)^{-1} E_c`` by a sparse LU solve (§3.3 step 4)."""
    n = Lbar.shape[0]
    M = (sp.identity(n, format="csc") - alpha * sp.csc_matrix(Lbar)).tocsc()
    E = np.zeros((n, points.size))
    E[points, np.arange(points.size)] = 1.0
    if points.size == 0:
        return E
    return splu(M).solve(E)


def _adjust(W, F):
    """Eq. B15 written as ``W + F (1 - W)`` (F >= 0) and ``W + F W`` (F < 0),
    which equals the paper's form and returns W exactly where F = 0."""
    return np.where(F >= 0, W + F * (1.0 - W), W + F * W)


def _sparse_adjusted(W, G, Q, points, Zc, n_top):
    """W-tilde restricted to the kNN edges, the constrained pairs and each
    row's ``n_top`` largest positive entries of F* (§3.3, option
    ``sparse_adjust``). ``F*_ij = G_i . Q_j`` with ``G = (1 - alpha)^2 Q Z_c``;
    F* is evaluated blockwise and never stored densely.

    Returns
    -------
    Wt : csr_matrix, symmetric, zero diagonal
    F : csr_matrix, clipped F* on the same pattern
    max_abs : float, n_clipped : int
    """
    n = W.shape[0]
    rows = [W.tocoo().row]
    cols = [W.tocoo().col]
    if points.size:
        a, b = np.nonzero(Zc)
        rows.append(points[a])
        cols.append(points[b])
        block = max(1, int(4_000_000 // max(n, 1)))
        k = int(min(n_top, n - 1))
        for start in range(0, n, block):
            stop = min(n, start + block)
            Fb = G[start:stop] @ Q.T
            Fb[np.arange(stop - start), np.arange(start, stop)] = -np.inf  # no self-pairs
            top = np.argpartition(-Fb, k - 1, axis=1)[:, :k]
            vals = np.take_along_axis(Fb, top, axis=1)
            keep = vals > 0
            r = np.repeat(np.arange(start, stop), k).reshape(-1, k)
            rows.append(r[keep])
            cols.append(top[keep])
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    r, c = np.concatenate([r, c]), np.concatenate([c, r])
    off = r != c
    key = np.unique(r[off] * n + c[off])
    r, c = key // n, key % n
    f = np.zeros(r.size)
    if points.size:
        # F* on the pattern, a block of entries at a time: G[r] and Q[c] whole are (pattern x constrained
        # points) numbers each, 5.0 GiB at 7000 samples with 300 pairs (bench/scale_limits.py), 0.5 GiB now
        step = max(1, int(_F_BLOCK_ENTRIES // points.size))
        for start in range(0, r.size, step):
            sl = slice(start, start + step)
            f[sl] = np.einsum("ij,ij->i", G[r[sl]], Q[c[sl]])
    max_abs = float(np.abs(f).max()) if f.size else 0.0
    n_clipped = int(np.count_nonzero(np.abs(f) > 1.0))
    f = np.clip(f, -1.0, 1.0)
    w = np.asarray(sp.csr_matrix(W)[r, c]).ravel()
    wt = _adjust(w, f)
    Wt = sp.csr_matrix((wt, (r, c)), shape=(n, n))
    Wt = sp.csr_matrix((Wt + Wt.T) * 0.5)
    Wt.eliminate_zeros()
    F = sp.csr_matrix((f, (r, c)), shape=(n, n))
    return Wt, F, max_abs, n_clipped


class E2CP(ClusterMixin, BaseEstimator):
    """Constrained spectral clustering by exhaustive constraint propagation.

    Parameters
    ----------
    n_clusters : int, default=2
        K.
    alpha : float in [0, 0.95], default=0.6
        Propagation strength (Eqs. B13-B14). 0 reduces E2CP to Spectral
        Learning's overwrite on the kNN graph.
    n_neighbors : int, default=15
        k of the kNN graph (Eq. B10) and of the bandwidth rule.
    sigma : float > 0 or None, default=None
        Gaussian bandwidth; None = mean distance to the k-th neighbour.
    n_init : int, default=10
        k-means restarts in the final NJW step.
    sparse_adjust : bool or "auto", default="auto"
        Keep W-tilde sparse: evaluate F* only on the kNN edges, the
        constrained pairs and each row's ``2 * n_neighbors`` largest positive
        F* entries ([deviation] of §3.3 for large n; drops the small values
        of the "exhaustive" propagation). "auto": only for more than 5000
        samples (``fit`` refuses more than ``E2CP_MAX_SAMPLES``, 40000).
    random_state : int, RandomState or None, default=None
    callback : callable or None, default=None
        ``callback(stage, fraction)``; may raise to cancel.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit``.
    labels_ : ndarray of shape (n_samples,), int64
    affinity_matrix_ : ndarray of shape (n_samples, n_samples), float64, or csr_matrix
        The adjusted affinity W-tilde (Eq. B15), symmetric, zero diagonal,
        in [0, 1] (CSR with ``sparse_adjust``).
    graph_ : csr_matrix of shape (n_samples, n_samples)
        The kNN graph W (Eq. B10).
    propagated_constraints_ : ndarray of shape (n_samples, n_samples), float64, or csr_matrix
        F* after clipping to [-1, 1] (Eq. B14); with ``sparse_adjust`` only
        on the pattern of W-tilde.
    embedding_ : ndarray of shape (n_samples, n_clusters)
        NJW embedding of W-tilde.
    n_clusters_ : int
    diagnostics_ : dict
        ``conflicts``, ``n_conflicts``, ``n_constrained_points``,
        ``n_clipped`` (entries of F* clipped), ``max_abs_f`` (before
        clipping), ``isolated`` (zero-degree samples), ``eigenvalues``,
        ``zero_rows``, ``n_components_graph``, ``sigma``.

    Raises
    ------
    InvalidInputError
        Bad data, constraints or parameters.

    Notes
    -----
    ``specs/baselines.md`` Eqs. B10-B16: mean-symmetrised Gaussian kNN graph,
    ``Lbar = D^{-1/2} W D^{-1/2}``, ``F* = (1 - alpha)^2 (I - alpha Lbar)^{-1}
    Z (I - alpha Lbar)^{-1}`` evaluated in low rank as
    ``(1 - alpha)^2 Q Z_c Q^T`` with ``Q = (I - alpha Lbar)^{-1} E_c`` (one
    sparse LU, c solves), F* clipped to [-1, 1] (our choice; the public
    reimplementation divides by max |F*|), W-tilde by Eq. B15, NJW.
    W-tilde is dense (8 n^2 bytes). At most 40000 samples
    (``clustering.validation.E2CP_MAX_SAMPLES``): the sparse path's LU fills
    in, 2.0 GiB at 40000 samples and 5.4 GiB at 70000 with 300 pairs
    (``bench/scale_limits.py``).

    Contradictory constraints are not an error: a pair given as both kinds
    superposes in Z (``+w - w'``) and is reported in
    ``diagnostics_["conflicts"]``. Weights (our extension): Z_ij = +w or -w.

    References
    ----------
    Z. Lu, H. Ip. Constrained spectral clustering via exhaustive and
    efficient constraint propagation. ECCV 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from clustering.baselines import E2CP
    >>> X = np.array([[0, 0], [0, 1], [1, 0], [10, 10], [10, 11], [11, 10]], dtype=float)
    >>> model = E2CP(n_clusters=2, n_neighbors=2, random_state=0)
    >>> model = model.fit(X, pairs=[[0, 1], [2, 3]], pair_kind=[1, -1])
    >>> bool(model.labels_[0] == model.labels_[1] != model.labels_[3])
    True
    """

    def __init__(
        self,
        n_clusters=2,
        *,
        alpha=0.6,
        n_neighbors=15,
        sigma=None,
        n_init=10,
        sparse_adjust="auto",
        random_state=None,
        callback=None,
    ):
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.n_neighbors = n_neighbors
        self.sigma = sigma
        self.n_init = n_init
        self.sparse_adjust = sparse_adjust
        self.random_state = random_state
        self.callback = callback

    def _validate(self):
        validate_params(
            self,
            {
                "alpha": [Interval(numbers.Real, 0, 0.95)],
                "n_neighbors": [Interval(numbers.Integral, 1, None)],
                "sigma": [Interval(numbers.Real, 0, None, closed="neither"), None],
                "n_init": [Interval(numbers.Integral, 1, None)],
                "sparse_adjust": [bool, Options("auto")],
            },
        )

    def fit(self, X, y=None, *, pairs=None, pair_kind=None, pair_weight=None):
        """Cluster ``X`` under pairwise constraints.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        pairs : array-like of shape (m, 2), int, optional
        pair_kind : array-like of shape (m,), optional
            +1 must-link, -1 cannot-link.
        pair_weight : array-like of shape (m,), optional
            Confidence in (0, 1]; default 1.

        Returns
        -------
        self

        Raises
        ------
        InvalidInputError
            Bad data, constraint indices, kinds, weights or parameters, more
            than 40000 samples (``E2CP_MAX_SAMPLES``), or samples x constrained
            samples above ``E2CP_MAX_PROPAGATION`` (8e7: with the n x c
            propagation factors and the LU, 4.25 GiB at 40000 samples and
            3100 constrained samples).
        """
        self._validate()
        X = check_data(X)
        check_magnitude(X)
        self.n_features_in_ = X.shape[1]
        n = X.shape[0]
        if n > E2CP_MAX_SAMPLES:
            raise InvalidInputError(
                f"E2CP is limited to {E2CP_MAX_SAMPLES} samples (got {n}): above that its sparse LU "
                "needs more than 4 GiB (5.4 GiB at 70000 samples and 300 pairs); use "
                "SpectralLearning or CCSKL, which scale to 100000",
                field="X",
            )
        K = check_n_clusters(self.n_clusters, n)
        cons = check_pairwise(pairs, pair_kind, pair_weight, n)
        c = np.unique(cons.unique()[0].ravel()).size
        if n * c > E2CP_MAX_PROPAGATION:
            raise InvalidInputError(
                f"E2CP propagates each constraint to every sample: {n} samples x {c} constrained samples "
                f"is more than {E2CP_MAX_PROPAGATION:.3g} (two n x c float64 factors beside the LU); use fewer "
                f"constraints (at most {E2CP_MAX_PROPAGATION // n} samples in them here), or SpectralLearning "
                "or CCSKL",
                field="pairs",
            )
        conflicts, n_conflicts = cons.conflicts()
        cb = self.callback
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        alpha = float(self.alpha)
        if cb is not None:
            cb("graph", 0.05)
        W, sigma = knn_gaussian_graph(X, self.n_neighbors, sigma=self.sigma, symmetrize="mean")
        Lbar, isolated = normalized_adjacency(W)
        points, Zc = _constraint_matrix(cons)
        if cb is not None:
            cb("propagation", 0.2)
        Q = _propagation_factor(Lbar, alpha, points)
        sparse_adjust = n > SPARSE_ADJUST_LIMIT if self.sparse_adjust == "auto" else self.sparse_adjust
        if sparse_adjust:
            G = ((1.0 - alpha) ** 2) * (Q @ Zc)
            Wt, F, max_abs, n_clipped = _sparse_adjusted(W, G, Q, points, Zc, 2 * self.n_neighbors)
        else:
            F = ((1.0 - alpha) ** 2) * (Q @ Zc @ Q.T) if points.size else np.zeros((n, n))
            F = 0.5 * (F + F.T)  # exact symmetry despite rounding
            max_abs = float(np.abs(F).max()) if F.size else 0.0
            n_clipped = int(np.count_nonzero(np.abs(F) > 1.0))
            if n_clipped:
                np.clip(F, -1.0, 1.0, out=F)
            Wt = _adjust(W.toarray(), F)
            np.fill_diagonal(Wt, 0.0)
        if cb is not None:
            cb("embedding", 0.5)
        Y, info = njw_embedding(Wt, K, random_state=seed)
        if cb is not None:
            cb("kmeans", 0.85)
        labels = kmeans_labels(Y, K, n_init=self.n_init, random_state=seed)
        diagnostics = {
            "conflicts": conflicts,
            "n_conflicts": int(n_conflicts),
            "n_constrained_points": int(points.size),
            "n_clipped": n_clipped,
            "max_abs_f": max_abs,
            "isolated": np.flatnonzero(isolated).astype(int).tolist(),
            "sparse_adjust": bool(sparse_adjust),
        }
        diagnostics.update(_info_json(info))
        diagnostics["sigma"] = float(sigma)
        self.graph_ = W
        self.propagated_constraints_ = F
        self.affinity_matrix_ = Wt
        self.embedding_ = Y
        self.labels_ = labels
        self.n_clusters_ = K
        self.diagnostics_ = diagnostics
        if cb is not None:
            cb("done", 1.0)
        return self
