"""Spectral Learning (Kamvar, Klein, Manning 2003): overwrite the affinity of
constrained pairs, then cluster spectrally (``specs/baselines.md`` §2)."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state

from .._constraints import (
    CANNOT_LINK,
    MUST_LINK,
    check_pairwise,
    must_link_components,
    transitive_closure,
)
from .._params import Interval, Options, validate_params
from .._spectral import (
    additive_embedding,
    generalized_embedding,
    kmeans_labels,
    njw_embedding,
)
from .._graph import n_connected_components
from ..exceptions import InvalidInputError
from ..validation import SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS, check_n_clusters, closure_size
from ._spectral_clustering import _build_affinity, _check_input

__all__ = ["SpectralLearning"]


def _overwrite(W, ml, ml_w, cl, cl_w):
    """Apply Eq. B7 with confidence weights; must-links first, then
    cannot-links (a cannot-link wins on a pair given as both).

    Must-link ``(i, j)`` with weight w: ``W_ij = max(W_ij, w)``;
    cannot-link: ``W_ij = W_ij (1 - w)``. With w = 1 this is exactly B7
    (1 / 0). ``W`` (dense or CSR) is not modified; a copy is returned.
    """
    ml = np.asarray(ml, dtype=np.int64).reshape(-1, 2)
    cl = np.asarray(cl, dtype=np.int64).reshape(-1, 2)
    ml_w = np.broadcast_to(np.asarray(ml_w, dtype=np.float64), (ml.shape[0],))
    cl_w = np.broadcast_to(np.asarray(cl_w, dtype=np.float64), (cl.shape[0],))
    if sp.issparse(W):
        W = sp.csr_matrix(W, copy=True)
        for pairs, weight, is_ml in ((ml, ml_w, True), (cl, cl_w, False)):
            if pairs.shape[0] == 0:
                continue
            i, j = pairs[:, 0], pairs[:, 1]
            # Last value per unordered pair wins; duplicates were removed upstream.
            old = np.asarray(W[i, j]).ravel()
            new = np.maximum(old, weight) if is_ml else old * (1.0 - weight)
            delta = new - old
            D = sp.coo_matrix((np.r_[delta, delta], (np.r_[i, j], np.r_[j, i])), shape=W.shape)
            W = sp.csr_matrix(W + D)
        W.eliminate_zeros()
        return W
    W = np.array(W, dtype=np.float64, copy=True)
    if ml.shape[0]:
        i, j = ml[:, 0], ml[:, 1]
        v = np.maximum(W[i, j], ml_w)
        W[i, j] = v
        W[j, i] = v
    if cl.shape[0]:
        i, j = cl[:, 0], cl[:, 1]
        v = W[i, j] * (1.0 - cl_w)
        W[i, j] = v
        W[j, i] = v
    return W


class SpectralLearning(ClusterMixin, BaseEstimator):
    """Spectral Learning: constrained pairs get affinity 1 (must-link) or 0
    (cannot-link), then spectral clustering.

    Parameters
    ----------
    n_clusters : int, default=2
        K.
    normalization : {"additive", "rw", "sym"}, default="sym"
        "additive": Kamvar's ``N = (A + d_max I - D) / d_max`` (Eq. B8), top-K
        eigenvectors (= bottom eigenvectors of ``L = D - A``);
        "rw": generalized ``(D - A) v = lambda D v``, K smallest (URASC's
        clustering step); "sym": NJW (Eqs. B2-B5) on the overwritten affinity
        (the COP-RF paper's reading, "SPClust with adjusted affinity").
        The default is "sym", not the spec's "additive": on z-scored UCI data
        the additive form puts almost every point in one cluster (see Notes).
    affinity : {"rbf", "knn", "precomputed"}, default="rbf"
        Graph of §0.3 (as :class:`SpectralClustering`). A precomputed affinity
        with entries above 1 is rescaled by its maximum so that "1" is the
        largest affinity (reported in ``diagnostics_["rescaled_by"]``).
    sigma : float > 0 or None, default=None
        Gaussian bandwidth; None = mean distance to the ``n_neighbors``-th
        neighbour.
    n_neighbors : int, default=20
    closure : bool, default=False
        Apply the overwrite to the transitive closure (all pairs inside a
        must-link component, all pairs between cannot-linked components).
        Entailed pairs get the smallest weight given for their kind. Refused
        (``InvalidInputError`` on ``closure``) when that is more than
        ``SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS`` pairs (``clustering.validation``).
    row_normalize : bool, default=False
        Scale embedding rows to unit length before k-means ("additive" and
        "rw"; "sym" always does).
    n_init : int, default=10
        k-means restarts.
    random_state : int, RandomState or None, default=None
    callback : callable or None, default=None
        ``callback(stage, fraction)``; may raise to cancel.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit`` (n_samples for a precomputed
        affinity).
    labels_ : ndarray of shape (n_samples,), int64
    affinity_matrix_ : ndarray of shape (n_samples, n_samples) or csr_matrix
        The overwritten affinity (symmetric, zero diagonal, in [0, 1]).
    embedding_ : ndarray of shape (n_samples, n_clusters), float64
        Rows handed to k-means.
    n_clusters_ : int
    diagnostics_ : dict
        ``conflicts`` (cannot-links inside must-link chains, see
        :meth:`PairwiseConstraints.conflicts`), ``n_conflicts``,
        ``n_must_link`` / ``n_cannot_link`` (unique pairs overwritten),
        ``eigenvalues``, ``cluster_sizes``, ``n_components_graph``, ``sigma``.

    Raises
    ------
    InvalidInputError
        Bad data, constraint indices, kinds, weights or parameters.

    Notes
    -----
    Eqs. B6-B9 of ``specs/baselines.md`` §2. Contradictory constraints are
    not an error: must-links are applied first, then cannot-links, so a
    cannot-link wins on a pair given as both kinds; conflicts are recorded
    in ``diagnostics_["conflicts"]``.

    Weights (our extension; the paper has none): a must-link of weight w sets
    ``A_ij = max(A_ij, w)`` and a cannot-link sets ``A_ij = A_ij (1 - w)``;
    weight 1 is the paper's 1 / 0 overwrite.

    Normalisation: measured on z-scored wine (178 x 13, K = 3) the additive
    form of Kamvar et al. returns one giant cluster (outlier eigenvectors,
    §2.6), while "sym" and "rw" recover the classes; see bench/README.md.

    References
    ----------
    S. Kamvar, D. Klein, C. Manning. Spectral learning. IJCAI 2003.

    Examples
    --------
    >>> import numpy as np
    >>> from clustering.baselines import SpectralLearning
    >>> X = np.array([[0, 0], [0, 1], [1, 0], [10, 10], [10, 11], [11, 10]], dtype=float)
    >>> model = SpectralLearning(n_clusters=2, n_neighbors=2, random_state=0)
    >>> model = model.fit(X, pairs=[[0, 1], [2, 3]], pair_kind=[1, -1])
    >>> bool(model.labels_[0] == model.labels_[1] != model.labels_[3])
    True
    """

    def __init__(
        self,
        n_clusters=2,
        *,
        normalization="sym",
        affinity="rbf",
        sigma=None,
        n_neighbors=20,
        closure=False,
        row_normalize=False,
        n_init=10,
        random_state=None,
        callback=None,
    ):
        self.n_clusters = n_clusters
        self.normalization = normalization
        self.affinity = affinity
        self.sigma = sigma
        self.n_neighbors = n_neighbors
        self.closure = closure
        self.row_normalize = row_normalize
        self.n_init = n_init
        self.random_state = random_state
        self.callback = callback

    def _validate(self):
        validate_params(
            self,
            {
                "normalization": [Options("additive", "rw", "sym")],
                "affinity": [Options("rbf", "knn", "precomputed")],
                "sigma": [Interval(numbers.Real, 0, None, closed="neither"), None],
                "n_neighbors": [Interval(numbers.Integral, 1, None)],
                "closure": [bool],
                "row_normalize": [bool],
                "n_init": [Interval(numbers.Integral, 1, None)],
            },
        )

    def _constraint_sets(self, cons):
        """Unique must-link / cannot-link pairs and weights to overwrite."""
        pairs, kind, weight, _ = cons.unique()
        ml_mask = kind == MUST_LINK
        ml, ml_w = pairs[ml_mask], weight[ml_mask]
        cl, cl_w = pairs[kind == CANNOT_LINK], weight[kind == CANNOT_LINK]
        if not self.closure or ml.shape[0] == 0:
            return ml, ml_w, cl, cl_w
        n = cons.n_samples
        n_ml, n_cl = closure_size(ml, cl, n)
        if n_ml + n_cl > SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS:
            raise InvalidInputError(
                f"closure=True would overwrite {n_ml + n_cl} pairs ({n_ml} inside must-link components, {n_cl} "
                f"between cannot-linked ones), more than {SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS}; use closure=False "
                "or smaller must-link groups",
                field="closure",
            )
        ml_all, cl_all = transitive_closure(ml, cl, n)
        # Explicit pairs keep their own weight; entailed pairs get the smallest
        # weight given for their kind.
        ml_w_all = np.full(ml_all.shape[0], float(ml_w.min()))
        cl_w_all = np.full(cl_all.shape[0], float(cl_w.min()) if cl_w.size else 1.0)
        ml_all, ml_w_all = _merge(ml_all, ml_w_all, ml, ml_w, n)
        _, comp = must_link_components(ml, n)
        inside = comp[cl[:, 0]] == comp[cl[:, 1]]
        # Contradicting cannot-links (inside a component) are applied last.
        cl_all, cl_w_all = _merge(cl_all, cl_w_all, cl[~inside], cl_w[~inside], n)
        cl_all = np.concatenate([cl_all, cl[inside]])
        cl_w_all = np.concatenate([cl_w_all, cl_w[inside]])
        return ml_all, ml_w_all, cl_all, cl_w_all

    def fit(self, X, y=None, *, pairs=None, pair_kind=None, pair_weight=None):
        """Cluster ``X`` under pairwise constraints.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n_samples, n_samples)
            Data, or the affinity when ``affinity="precomputed"``.
        y : ignored
        pairs : array-like of shape (m, 2), int, optional
            Constrained sample indices.
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
            Bad data or precomputed affinity, constraint indices, kinds,
            weights or parameters, or a closure of more than
            ``SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS`` pairs.
        """
        self._validate()
        X = _check_input(X, self.affinity)
        self.n_features_in_ = X.shape[1]
        n = X.shape[0]
        K = check_n_clusters(self.n_clusters, n)
        cons = check_pairwise(pairs, pair_kind, pair_weight, n)
        conflicts, n_conflicts = cons.conflicts()
        cb = self.callback
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        if cb is not None:
            cb("graph", 0.1)
        W, sigma = _build_affinity(X, self.affinity, self.sigma, self.n_neighbors)
        diagnostics = {}
        wmax = float(W.max()) if (W.nnz if sp.issparse(W) else W.size) else 0.0
        if wmax > 1.0:
            if self.affinity != "precomputed":  # pragma: no cover - Gaussian weights are <= 1
                raise InvalidInputError("affinity above 1", field="X")
            W = W / wmax
            diagnostics["rescaled_by"] = wmax
        ml, ml_w, cl, cl_w = self._constraint_sets(cons)
        W = _overwrite(W, ml, ml_w, cl, cl_w)
        if cb is not None:
            cb("embedding", 0.3)
        if self.normalization == "sym":
            E, info = njw_embedding(W, K, random_state=seed)
            eigenvalues = info["eigenvalues"]
            n_comp = info["n_components_graph"]
        else:
            if self.normalization == "additive":
                E, eigenvalues = additive_embedding(W, K, random_state=seed)
            else:
                E, eigenvalues = generalized_embedding(W, K, random_state=seed)
            n_comp = n_connected_components(W)
            if self.row_normalize:
                norms = np.linalg.norm(E, axis=1)
                ok = norms >= 1e-12
                E = E.copy()
                E[ok] /= norms[ok, None]
                E[~ok] = 0.0
        if cb is not None:
            cb("kmeans", 0.8)
        labels = kmeans_labels(E, K, n_init=self.n_init, random_state=seed)
        diagnostics.update(
            {
                "conflicts": conflicts,
                "n_conflicts": int(n_conflicts),
                "n_must_link": int(ml.shape[0]),
                "n_cannot_link": int(cl.shape[0]),
                "eigenvalues": [float(v) for v in np.asarray(eigenvalues)],
                "cluster_sizes": np.bincount(labels, minlength=K).astype(int).tolist(),
                "n_components_graph": int(n_comp),
                "sigma": None if sigma is None else float(sigma),
            }
        )
        self.affinity_matrix_ = W
        self.embedding_ = E
        self.labels_ = labels
        self.n_clusters_ = K
        self.diagnostics_ = diagnostics
        if cb is not None:
            cb("done", 1.0)
        return self


def _merge(pairs_a, w_a, pairs_b, w_b, n):
    """Union of two pair lists (``i < j``); weights of ``pairs_b`` win."""
    if pairs_b.shape[0] == 0:
        return pairs_a, w_a
    key_a = pairs_a[:, 0] * n + pairs_a[:, 1]
    key_b = pairs_b[:, 0] * n + pairs_b[:, 1]
    keep = ~np.isin(key_a, key_b)
    return np.concatenate([pairs_a[keep], pairs_b]), np.concatenate([w_a[keep], w_b])
