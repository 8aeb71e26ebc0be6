"""Relevant component analysis (RCA) directions learned from must-links.

Must-link pairs show which differences between points do not matter: their
covariance is the within-class ("chunklet") covariance of Bar-Hillel et al.
Whitening the data by it and taking the principal axes of the whitened data
gives directions along which the data spread most relative to how far
must-linked points lie apart. These are the generalised eigenvectors of

    C_total v = lambda C_ml v,                                       (RCA-1)

with C_total the covariance of X and C_ml the weighted covariance of the
must-link differences (RCA-2 below), shrunk towards a multiple of the
data's diagonal covariance (the identity on z-scored data) so that a handful
of must-links in many dimensions still gives a well-posed problem.
Axis-aligned learners (COP-RF's trees) can then cut across the original axes
where the constraints say the classes part.
"""

import numpy as np
from scipy.linalg import eigh

from ..exceptions import InvalidInputError
from ..validation import RCA_MAX_FEATURES as MAX_FEATURES

__all__ = ["rca_components", "check_n_features", "DEFAULT_SHRINKAGE", "MAX_FEATURES"]

DEFAULT_SHRINKAGE = 0.1


def check_n_features(d, field="n_features"):
    """Refuse more columns than the dense (d, d) eigenproblem allows.

    Parameters
    ----------
    d : int
        Number of features.
    field : str, default="n_features"
        Field named by the error (an estimator passes its parameter).

    Raises
    ------
    InvalidInputError
        ``d > MAX_FEATURES`` (2000, ``clustering.validation.RCA_MAX_FEATURES``).
    """
    if d > MAX_FEATURES:
        raise InvalidInputError(f"relevant components solve a dense d x d eigenproblem: at most {MAX_FEATURES} "
                                f"features (got {d})", field=field)


def rca_components(X, pairs, kind, weight=None, *, n_components=None, shrinkage=DEFAULT_SHRINKAGE):
    """Directions of largest total variance relative to must-link variance.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
        Finite data (validated by the caller).
    pairs : ndarray of shape (m, 2), int
        Row indices of constrained pairs; only must-links are used.
    kind : ndarray of shape (m,), int
        +1 must-link, -1 cannot-link.
    weight : ndarray of shape (m,), float64, optional
        Confidence in (0, 1] of each pair (default 1).
    n_components : int or None, default=None
        Number of directions c, at most ``n_features``; None keeps all.
    shrinkage : float, default=0.1
        gamma in [0, 1): the must-link covariance used is
        ``(1 - gamma) C_ml + gamma tr(C_ml) / tr(C_total) diag(C_total)``
        plus a ridge of ``1e-9 diag(C_total)`` (on z-scored data the target
        is ``tr(C_ml) / d I``). Both keep the result independent of the
        scale of each column.

    Returns
    -------
    components : ndarray of shape (c, n_features), float64, or None
        (c is at most the number of non-constant columns, which get zero
        weight.)
        Row r maps centred data to the r-th feature, scaled so that the
        feature has unit variance over X; ordered by decreasing generalised
        eigenvalue of RCA-1. None when there is no must-link or every
        column is constant (nothing to learn from).
    mean : ndarray of shape (n_features,), float64, or None
        Column means of X; features are ``(X - mean) @ components.T``.

    Raises
    ------
    InvalidInputError
        ``n_components`` below 1, ``shrinkage`` outside [0, 1), or more
        than ``MAX_FEATURES`` (2000) columns.

    Notes
    -----
    RCA-2: ``C_ml = sum_l w_l (x_i - x_j)(x_i - x_j)^T / (2 sum_l w_l)``
    over must-links l = (i, j), the covariance of the points about their
    pair's midpoint. Solving RCA-1 equals RCA (whitening by ``C_ml^(-1/2)``)
    followed by PCA of the whitened data. The generalised eigenproblem and
    the diagonal shrinkage target make the features independent of the
    scale and offset of each column. Our addition to COP-RF (not in Zhu et
    al. 2013); the measured effect is in COPRF's ``rca_components``.

    References
    ----------
    .. [1] A. Bar-Hillel, T. Hertz, N. Shental, D. Weinshall. "Learning a
       Mahalanobis metric from equivalence constraints". JMLR 6, 2005.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if n_components is not None and int(n_components) < 1:
        raise InvalidInputError(f"n_components must be >= 1 (got {n_components})", field="n_components")
    check_n_features(d)
    if not 0.0 <= float(shrinkage) < 1.0:
        raise InvalidInputError(f"shrinkage must be in [0, 1) (got {shrinkage})", field="shrinkage")
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    kind = np.asarray(kind).reshape(-1)
    w = np.ones(len(kind)) if weight is None else np.asarray(weight, dtype=np.float64).reshape(-1)
    ml = kind > 0
    if not ml.any():
        return None, None
    mean = X.mean(axis=0)
    Xc = X - mean
    var = Xc.var(axis=0, ddof=1) if n > 1 else np.zeros(d)
    active = var > 0  # constant columns carry nothing and would make C_ml singular
    if not active.any():
        return None, None
    Xa = Xc[:, active]
    da = Xa.shape[1]
    diff = Xa[pairs[ml, 0]] - Xa[pairs[ml, 1]]
    w = w[ml]
    c_ml = (diff * w[:, None]).T @ diff / (2.0 * w.sum())
    c_total = Xa.T @ Xa / (n - 1)
    target = (np.trace(c_ml) / np.trace(c_total)) * np.diag(var[active])
    c_ml = (1.0 - shrinkage) * c_ml + shrinkage * target + 1e-9 * np.diag(var[active])
    vecs = eigh(c_total, c_ml)[1]
    c = da if n_components is None else min(int(n_components), da)
    vecs = vecs[:, ::-1][:, :c]
    scale = (Xa @ vecs).std(axis=0)
    vecs = vecs / np.where(scale > 0, scale, 1.0)
    comps = np.zeros((c, d))
    comps[:, active] = vecs.T
    return comps, mean
