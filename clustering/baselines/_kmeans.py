"""k-means (Lloyd's algorithm, k-means++ seeding), the unconstrained reference: scikit-learn's
``KMeans`` behind the checks every Shoal estimator makes."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans as _SKLearnKMeans

from .._params import Interval, Options, validate_params
from ..validation import check_data, check_magnitude, check_n_clusters

__all__ = ["KMeans"]


class KMeans(ClusterMixin, BaseEstimator):
    """k-means clustering, constraints ignored (the reference the constrained methods are measured against).

    Parameters
    ----------
    n_clusters : int, default=2
    init : {"k-means++", "random"}, default="k-means++"
        Seeding (Arthur & Vassilvitskii 2007), or rows drawn at random.
    n_init : int, default=10
        Restarts; the lowest inertia is kept.
    max_iter : int, default=300
        Lloyd iterations per restart.
    tol : float, default=1e-4
        Convergence: centre shift relative to the mean per-feature variance.
    random_state : int, RandomState or None, default=None
    callback : callable or None, default=None
        ``callback(stage, fraction)`` before and after the fit; may raise to cancel.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    inertia_ : float
        Sum of squared distances of the rows to their centre.
    n_iter_ : int
    n_features_in_ : int

    References
    ----------
    Lloyd, S. Least squares quantization in PCM. IEEE Trans. Inf. Theory 28(2), 1982.
    """

    def __init__(self, n_clusters=2, *, init="k-means++", n_init=10, max_iter=300, tol=1e-4, random_state=None,
                 callback=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.callback = callback

    def fit(self, X, y=None):
        """Cluster ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self

        Raises
        ------
        InvalidInputError
            Bad ``X`` (NaN, ragged, beyond 1e100 or all within 1e-100), ``n_clusters`` or parameter values.
        """
        validate_params(self, {
            "init": [Options("k-means++", "random")],
            "n_init": [Interval(numbers.Integral, 1, None)],
            "max_iter": [Interval(numbers.Integral, 1, None)],
            "tol": [Interval(numbers.Real, 0, None)],
        })
        X = check_data(X)
        check_magnitude(X)
        K = check_n_clusters(self.n_clusters, X.shape[0])
        cb = self.callback
        if cb is not None:
            cb("kmeans", 0.0)
        km = _SKLearnKMeans(K, init=self.init, n_init=self.n_init, max_iter=self.max_iter, tol=self.tol,
                            random_state=self.random_state).fit(X)
        self.labels_ = km.labels_.astype(np.int64)
        self.cluster_centers_ = km.cluster_centers_
        self.inertia_ = float(km.inertia_)
        self.n_iter_ = int(km.n_iter_)
        self.n_features_in_ = X.shape[1]
        if cb is not None:
            cb("done", 1.0)
        return self
