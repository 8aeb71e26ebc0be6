"""Ng-Jordan-Weiss spectral clustering on the shared Gaussian graph.

The unconstrained reference of the benchmarks (``specs/baselines.md`` §1).
scikit-learn's ``SpectralClustering`` is *not* NJW (it rescales the
eigenvectors by ``D^{-1/2}`` and does not row-normalise), and its default rbf
``gamma`` collapses on z-scored ionosphere / wdbc / segment, hence this class.
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state

from .._graph import gaussian_affinity, knn_gaussian_graph, kth_neighbor_sigma
from .._params import Interval, Options, validate_params
from .._spectral import kmeans_labels, njw_embedding, warn_if_disconnected
from ..exceptions import InvalidInputError
from ..validation import check_affinity, check_data, check_magnitude, check_n_clusters

__all__ = ["SpectralClustering"]

#: Multipliers of the default bandwidth tried by ``sigma="njw_search"`` (§1.2, [choice grid]).
NJW_SIGMA_GRID = (0.25, 0.5, 1.0, 2.0, 4.0)


def _build_affinity(X, affinity, sigma, n_neighbors):
    """The graph of §0.3 for ``affinity`` in {"rbf", "knn", "precomputed"}.

    ``X`` is already checked (data or precomputed affinity). Returns ``(W, sigma)``
    with ``sigma`` None for precomputed input.
    """
    if affinity == "precomputed":
        return X, None
    if affinity == "knn":
        return knn_gaussian_graph(X, n_neighbors, sigma=sigma, symmetrize="max")
    return gaussian_affinity(X, sigma, n_neighbors=n_neighbors)


def _check_input(X, affinity):
    if affinity == "precomputed":
        return check_affinity(X)
    X = check_data(X)
    check_magnitude(X)
    return X


def _distortion(Y, labels, n_clusters):
    """Within-cluster sum of squares of the rows of ``Y`` (k-means inertia)."""
    total = 0.0
    for c in range(n_clusters):
        rows = Y[labels == c]
        if rows.shape[0]:
            total += float(((rows - rows.mean(axis=0)) ** 2).sum())
    return total


def _info_json(info):
    return {
        "eigenvalues": [float(v) for v in np.asarray(info["eigenvalues"])],
        "zero_rows": [int(i) for i in info["zero_rows"]],
        "n_components_graph": int(info["n_components_graph"]),
    }


class SpectralClustering(ClusterMixin, BaseEstimator):
    """Ng-Jordan-Weiss spectral clustering (no constraints).

    Parameters
    ----------
    n_clusters : int, default=2
        K, number of clusters (``2 <= K <= n_samples``).
    affinity : {"rbf", "knn", "precomputed"}, default="rbf"
        "rbf": dense Gaussian graph (Eq. B1) for ``n <= 5000``, Gaussian kNN
        graph above; "knn": Gaussian kNN graph, union-symmetrised;
        "precomputed": ``X`` is a symmetric non-negative ``(n, n)`` affinity
        (dense or sparse, entries within ``MAX_ABS_VALUE`` = 1e100 as any
        data); its diagonal is ignored.
    sigma : float > 0, "njw_search" or None, default=None
        Gaussian bandwidth in the units of ``X``. None: mean distance to the
        ``n_neighbors``-th neighbour. "njw_search": NJW's own rule, run the
        algorithm for ``{0.25, 0.5, 1, 2, 4}`` times the default and keep the
        bandwidth with the smallest k-means distortion in the embedding.
    n_neighbors : int, default=20
        k for the bandwidth rule and for the kNN graph.
    n_init : int, default=10
        k-means restarts on the embedding.
    random_state : int, RandomState or None, default=None
        Seeds k-means and the eigen-solver start vector.
    callback : callable or None, default=None
        ``callback(stage, fraction)``, called a few times during ``fit``;
        it may raise to cancel the fit.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit`` (n_samples for a precomputed
        affinity).
    labels_ : ndarray of shape (n_samples,), int64
        Cluster of every sample, in ``[0, n_clusters)``.
    affinity_matrix_ : ndarray of shape (n_samples, n_samples) or csr_matrix
        The affinity clustered (symmetric, zero diagonal).
    embedding_ : ndarray of shape (n_samples, n_clusters), float64
        Row-normalised top eigenvectors (Eq. B4) handed to k-means.
    sigma_ : float or None
        Bandwidth used (None for precomputed affinities).
    n_clusters_ : int
    diagnostics_ : dict
        ``eigenvalues`` (K, descending), ``zero_rows`` (isolated samples),
        ``n_components_graph``, ``sigma``, and for the search
        ``sigma_search`` (list of ``{"sigma", "distortion"}``).

    Raises
    ------
    InvalidInputError
        Bad ``X`` (NaN, ragged, ...), ``n_clusters`` or parameter values.

    Notes
    -----
    Eqs. B1-B5 of ``specs/baselines.md`` §1 (Ng, Jordan, Weiss 2001, steps
    1-5): ``A`` Gaussian with zero diagonal, ``M = D^{-1/2} A D^{-1/2}``, the
    K algebraically largest eigenvectors, rows scaled to unit length, k-means.
    A warning (:class:`~clustering.exceptions.ConstraintWarning`) is issued
    when the graph has more connected components than K.

    References
    ----------
    A. Ng, M. Jordan, Y. Weiss. On spectral clustering: analysis and an
    algorithm. NIPS 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from clustering.baselines import SpectralClustering
    >>> X = np.array([[0, 0], [0, 1], [1, 0], [10, 10], [10, 11], [11, 10]], dtype=float)
    >>> model = SpectralClustering(n_clusters=2, n_neighbors=2, random_state=0).fit(X)
    >>> bool(model.labels_[0] == model.labels_[1] == model.labels_[2] != model.labels_[3])
    True
    """

    def __init__(
        self,
        n_clusters=2,
        *,
        affinity="rbf",
        sigma=None,
        n_neighbors=20,
        n_init=10,
        random_state=None,
        callback=None,
    ):
        self.n_clusters = n_clusters
        self.affinity = affinity
        self.sigma = sigma
        self.n_neighbors = n_neighbors
        self.n_init = n_init
        self.random_state = random_state
        self.callback = callback

    def _validate(self):
        validate_params(
            self,
            {
                "affinity": [Options("rbf", "knn", "precomputed")],
                "sigma": [Interval(numbers.Real, 0, None, closed="neither"), Options("njw_search"), None],
                "n_neighbors": [Interval(numbers.Integral, 1, None)],
                "n_init": [Interval(numbers.Integral, 1, None)],
            },
        )

    def fit(self, X, y=None):
        """Cluster ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
            Data, or the affinity when ``affinity="precomputed"``.
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        InvalidInputError
            Bad ``X`` (NaN, ragged, sparse data; a precomputed affinity that
            is not square, symmetric and >= 0), ``n_clusters`` or parameter
            values, or ``sigma="njw_search"`` with a precomputed affinity.
        """
        self._validate()
        X = _check_input(X, self.affinity)
        self.n_features_in_ = X.shape[1]
        n = X.shape[0]
        K = check_n_clusters(self.n_clusters, n)
        if self.affinity == "precomputed" and self.sigma == "njw_search":
            raise InvalidInputError('sigma="njw_search" needs data, not a precomputed affinity', field="sigma")
        cb = self.callback
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        if cb is not None:
            cb("graph", 0.1)
        diagnostics = {}
        if self.sigma == "njw_search":
            base = kth_neighbor_sigma(X, self.n_neighbors)
            best = None
            search = []
            for i, mult in enumerate(NJW_SIGMA_GRID):
                W, s = _build_affinity(X, self.affinity, base * mult, self.n_neighbors)
                Y, info = njw_embedding(W, K, random_state=seed)
                labels = kmeans_labels(Y, K, n_init=self.n_init, random_state=seed)
                dist = _distortion(Y, labels, K)
                search.append({"sigma": float(s), "distortion": dist})
                if best is None or dist < best[0]:
                    best = (dist, W, s, Y, info, labels)
                if cb is not None:
                    cb("sigma_search", 0.1 + 0.8 * (i + 1) / len(NJW_SIGMA_GRID))
            _, W, sigma, Y, info, labels = best
            diagnostics["sigma_search"] = search
        else:
            W, sigma = _build_affinity(X, self.affinity, self.sigma, self.n_neighbors)
            if cb is not None:
                cb("embedding", 0.4)
            Y, info = njw_embedding(W, K, random_state=seed)
            if cb is not None:
                cb("kmeans", 0.8)
            labels = kmeans_labels(Y, K, n_init=self.n_init, random_state=seed)
        warn_if_disconnected(info, K)
        diagnostics.update(_info_json(info))
        diagnostics["sigma"] = None if sigma is None else float(sigma)
        self.affinity_matrix_ = W
        self.embedding_ = Y
        self.labels_ = labels
        self.sigma_ = None if sigma is None else float(sigma)
        self.n_clusters_ = K
        self.diagnostics_ = diagnostics
        if cb is not None:
            cb("done", 1.0)
        return self
