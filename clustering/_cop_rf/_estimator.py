"""COP-RF: Constraint Propagation Random Forest (Zhu, Loy & Gong, ICDM 2013).

A clustering forest (pseudo two-class trees, real data against uniform fake
data) whose splits honour pairwise constraints; two points are similar when
many trees put them in the same leaf. A root-node filter scores every
constraint by the impurity gain it allows, so that noisy constraints shape
the root split less. The forest affinity feeds a kNN graph and
Ng-Jordan-Weiss spectral clustering.

Implementation spec: ``shared/specs/cop_rf.md`` (equations CR-1..CR-17,
algorithm §4). The numeric kernels live in :mod:`clustering._cop_rf._kernels`
(growing) and :mod:`clustering._cop_rf._affinity` (leaves, affinity, neighbours),
the tree growing and the forest affinity in :mod:`clustering._cop_rf._forest`.
"""

import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from sklearn.base import BaseEstimator, ClusterMixin
from threadpoolctl import threadpool_limits

from . import _kernels as _k
from ._forest import _grow_batch, constraint_scores, forest_knn_graph
from .._constraints import PairwiseConstraints, check_pairwise
from .._metrics import constraint_satisfaction, violated_constraints
from .._numba import HAVE_NUMBA
from .._params import Interval, Options, validate_params
from ._rca import check_n_features as check_rca_features
from ._rca import rca_components
from .._spectral import kmeans_labels, njw_embedding
from ..exceptions import ConstraintWarning, InvalidInputError
from ..validation import (
    COP_RF_AUTO_MAX_SAMPLES,
    COP_RF_MAX_TREE_ROWS,
    DENSE_AFFINITY_LIMIT,
    check_data,
    check_n_clusters,
)

__all__ = ["COPRF"]

MAX_TREES = 65535
# Per-constraint outputs in the caller's order, and diagnostics that index the
# caller's constraints: with drop_violated they come from the first fit.
_PER_CONSTRAINT = ("constraint_scores_", "constraint_selection_rate_", "constraint_coverage_")
_CALLER_INDEXED = ("conflicts", "n_conflicts", "conflicting_pairs", "unsatisfiable_cannot_links")


class COPRF(ClusterMixin, BaseEstimator):
    """Constraint Propagation Random Forest with spectral clustering.

    Parameters
    ----------
    n_clusters : int, default=2
        K for the spectral step, ``2 <= K <= n_samples``.
    n_estimators : int, default=1000
        Number of COP-trees T (paper T_c), in [1, 65535]; samples x T at
        most ``COP_RF_MAX_TREE_ROWS`` (``clustering.validation``: every
        tree's leaf of every sample is kept while the graph is built).
    max_features : "sqrt", int, float or None, default="sqrt"
        Features tried per node (mtry): "sqrt" = floor(sqrt(d)); an int;
        a float in (0, 1] = fraction of d; None = all d. At least 1.
    min_samples_split : int, default=2
        Nodes with fewer training samples become leaves (paper phi = 1).
    max_depth : int or None, default=None
        Maximum tree depth (root = depth 0).
    cannot_link_policy : {"relaxed", "separate", "literal", "strict"}, default="relaxed"
        "literal" (alias "strict") is the paper's Algorithm 1: a split must
        keep every active must-link together and cut every active
        cannot-link, else the node is a leaf. "relaxed" (spec §4.3) falls
        back to must-link-only validity, then to the must-link-respecting cut
        that separates the most cannot-links. "separate" (our extension) is
        "relaxed" plus: a pure real-only node that still holds an active
        cannot-link is split by that last rule instead of becoming a leaf, so
        in-bag cannot-links end in different leaves whenever a must-link-free
        axis cut exists. Must-links are never cut by any policy (below the
        root; see ``filter_constraints``). "separate" is the better choice
        measured so far (bench/results/passive_cop_rf_separate_*.json, 10
        trials, T=1000): area under the ARI curve on ionosphere .58 clean /
        .30 noisy against .39 / .20 for "relaxed", iris 3.50 / 3.32
        against 3.50 / 3.33. The default stays "relaxed", the spec's policy (§4.3) that
        the product promises; "separate" is selectable per job.
    filter_constraints : bool, default=True
        Run the root-node noisy-constraint filter (CR-12..CR-14).
    filter_fraction : float, default=0.5
        alpha in (0, 1): size of the random subsets Q and of the kept root
        subset S^t, as ``ceil(alpha * |P^t|)``.
    filter_repeats : int, default=500
        f, the number of random subsets per tree.
    filter_share_features : bool, default=True
        Use the root's mtry features for every filter repetition (spec §4.5
        [choice]); False draws fresh features per repetition.
    filter_score : {"strict", "soft"}, default="strict"
        "strict" is the paper's score (Eq. 7-8); "soft" is CR-16.
    pseudo_samples : {"uniform", "marginal"}, default="uniform"
        Reference distribution of the N pseudo samples per tree. "uniform"
        is the paper's (CR-1: each coordinate uniform on that feature's
        observed range, Shi & Horvath's Addcl2). "marginal" (option, not
        in the paper) is Shi & Horvath's Addcl1: each coordinate drawn
        independently from that feature's observed values. On ionosphere
        the unconstrained forest reaches ARI ~.13 with "marginal" against
        ~.01 with "uniform" (kNN graph, k=N/10), but constraints then add
        little (T=100, 6 trials: .14/.16/.16 at 20/60/100 pairs without the
        filter); it is therefore not the default.
    affinity_samples : {"all", "in_bag"}, default="all"
        Which co-occurrences make the forest affinity. "all" (spec CR-8/9):
        every real point is routed through every tree and
        A_ij = (trees with i, j in one leaf) / T. "in_bag" (option): a tree
        votes on (i, j) only when its bag holds both points (the paper's
        Eq. 6 speaks of "the training samples at its leaves"), so
        A_ij = (such trees with i, j in one leaf) / (trees whose bag holds
        both), 0 when no bag held both. Every tree whose bag holds a
        must-link pair then votes 1 for it, and out-of-bag routing no longer
        dilutes the constraints: on ionosphere (T=200, 6 trials, policy
        "separate") mean ARI at 20/60/100 pairs .02/.14/.45 clean and
        .02/.09/.32 noisy against .02/.10/.23 and .02/.07/.24 with "all";
        iris, wine and segment210 equal within about .03 (4 trials). Costs
        a dense (n, n) matrix (memory O(n^2) even with
        ``store_affinity="none"``) and O(T (0.63 n)^2) time.
    n_neighbors : "auto", "select" or int, default="auto"
        k of the kNN graph; "auto" = max(1, min(n - 1, round(n / 10))) (the
        paper's k = N/10). "select" [extension]: spectral clustering of both
        the "auto" kNN graph and the whole forest affinity (k = n - 1), and
        the labels that satisfy more of the given constraints win (a tie, or
        no constraint, keeps "auto"); needs the dense affinity (n <= 3000, or
        ``store_affinity="dense"``). On ionosphere the N/10 graph cuts the
        forest's class structure: AUC of the ARI curve (policy "separate", 5
        trials, scratch runs) .41 clean / .17 noisy with "auto", 1.45 / .92
        with the whole affinity, 1.41 / .88 with "select"; on iris and wine
        the whole affinity is worse (iris 3.45 / 2.90 against 3.50 / 3.32)
        and "select" keeps "auto" (iris 3.49 / 3.32, wine 3.55 clean).
        bench/results/passive_cop_rf_separate_select_*.json (10 trials):
        ionosphere 1.78 / 1.17, iris 3.49 / 3.33.
    drop_violated : bool, default=False
        [extension, not in the paper] Fit twice: the labels of a first fit
        mark the constraints they violate (``constraint_violated_``), and a
        second forest, kNN graph and spectral step are fitted without them;
        ``labels_``, the affinity and the graph come from the second fit, the
        per-constraint scores and the conflict diagnostics from the first.
        A second noisy-constraint filter after the root filter, whose scores
        rank wrong constraints low but whose root subsets still hold them
        about as often as the right ones. It pays only when the first
        clustering is good: then the constraints it violates are mostly the
        wrong ones (iris, 15% flipped, 100 pairs, trials 0-2: 14 of 16, 13
        of 23 and 13 of 18 violated constraints were flipped ones); when it
        is poor they are mostly right ones, and the most informative.
        Measured (bench/results/passive_cop_rf_separate_drop_{small,segment}
        .json, 10 trials, policy "separate", AUC clean / 15% flipped,
        without the option in brackets): iris 3.48 / 3.43 (3.50 / 3.32),
        wine 3.53 / 3.41 (3.54 / 3.39), segment210 2.07 / 2.02 (2.20 /
        2.09), wdbc 2.74 / 2.59 (2.92 / 2.80), ionosphere .53 / .29 (.58 /
        .30), segment (2310 rows) 1.98 / 1.86 (2.09 / 1.94). Dropping
        only the violated constraints whose filter score is below the median
        gave the same (iris 3.48 / 3.40, segment210 2.08 / 2.04, wdbc 2.74 /
        2.59). Twice the fit time.
    rca_components : None, "all" or int, default=None
        [extension, not in the paper] Grow the trees on the data plus
        c relevant-component features learned from the must-links
        (:func:`clustering._cop_rf._rca.rca_components`: the generalised
        eigenvectors of the data covariance against the must-link
        difference covariance, Bar-Hillel et al. 2005), so that axis-aligned
        splits can also cut along the directions where the constraints say
        the clusters part. "all" = c = n_features; an int is capped at
        n_features; None (the spec's forest) grows on the data alone, as
        does a fit without must-links. ``max_features`` counts the added
        columns (d + c). With ``drop_violated=True`` the second fit learns
        them again from the kept constraints. Measured
        (bench/results/passive_cop_rf_rca_*.json, 10 trials, AUC of the ARI
        curve clean / 15% flipped): with ``cannot_link_policy="separate"``
        and ``n_neighbors="select"`` iris 3.65 / 3.34, ionosphere 2.34 /
        1.74, wine 3.62 / 3.36, wdbc 3.10 / 2.97, segment210 2.24 / 2.03
        (without: 3.49 / 3.33, 1.78 / 1.17, 3.56 / 3.40, 2.96 / 2.86,
        2.19 / 2.04); adding ``affinity_samples="in_bag"`` and
        ``drop_violated=True``: iris 3.68 / 3.52, ionosphere 2.26 / 1.68
        (the paper: 3.51 / 3.39 and 2.15 / 1.38). bench/README, "COP-RF
        with relevant components".
    store_affinity : {"auto", "dense", "none"}, default="auto"
        Keep the dense forest affinity (``affinity_matrix_``) for
        n <= 3000 ("auto") or always ("dense"); "none" never builds it and
        computes the kNN graph block-wise.
    keep_leaves : bool, default=False
        Store ``leaves_`` (n, T).
    keep_trees : bool, default=False
        Store ``trees_`` (node arrays and constraint sets of every tree).
    n_init : int, default=10
        k-means restarts of the spectral step.
    n_jobs : int other than 0, or None, default=None
        Threads for growing trees (numba kernels release the GIL); -1 all
        CPUs, -2 all but one (joblib's rule), more than the CPUs as many
        as the CPUs. Results do not depend on it.
    random_state : int, RandomState or None, default=None
        Seeds everything (one ``SeedSequence`` child per tree).
    callback : callable or None, default=None
        ``callback(stage, fraction)``, called after each batch of trees and
        before the spectral step. Exceptions it raises abort ``fit``.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit``.
    labels_ : ndarray of shape (n_samples,), int64
        Cluster of each sample, in ``[0, n_clusters)``.
    n_clusters_ : int
    affinity_matrix_ : ndarray of shape (n_samples, n_samples) float64, or csr_matrix
        Forest affinity A (CR-9; the spec's ``affinity_``): symmetric, zero
        diagonal, values in [0, 1], multiples of 1/T. When it is not stored
        (n > 3000 with "auto", or "none") this is the kNN graph.
    knn_graph_ : csr_matrix of shape (n_samples, n_samples), float64
        Symmetric kNN graph W (CR-10, union rule), weights equal to A.
    constraint_scores_ : ndarray of shape (n_pairs,), float64
        Mean filter score of each input constraint over the trees whose bag
        holds both endpoints (CR-15), in the caller's order. NaN when never
        covered, when the filter is off, or when the pair was dropped as
        contradictory (same pair given as both kinds, see diagnostics).
    constraint_selection_rate_ : ndarray of shape (n_pairs,), float64
        Fraction of the covering trees whose root subset S^t held the
        constraint (1.0 when the filter is off); NaN when never covered.
    constraint_coverage_ : ndarray of shape (n_pairs,), int64
        Number of trees whose bag contained both endpoints.
    constraint_violated_ : ndarray of shape (n_pairs,), bool
        Whether the labels violate each input constraint (a must-link across
        two clusters, a cannot-link inside one), in the caller's order; with
        ``drop_violated=True`` the labels of the first fit, and these
        constraints were left out of the second.
    rca_components_ : ndarray of shape (c, n_features), float64, or None
        With ``rca_components``: the learned directions; the trees grow on
        ``np.hstack([X, (X - rca_mean_) @ rca_components_.T])``, so
        ``trees_`` feature indices >= n_features refer to these columns.
        None otherwise or without must-links.
    rca_mean_ : ndarray of shape (n_features,), float64, or None
    pairs_ : ndarray of shape (u, 2), int64
        Normalised constraints actually used (``i < j``, duplicates merged).
    pair_kind_ : ndarray of shape (u,), int8
    leaves_ : ndarray of shape (n_samples, n_estimators), int32
        Only with ``keep_leaves=True``.
    trees_ : list of dict
        Only with ``keep_trees=True``: per tree ``feature``, ``threshold``,
        ``children_left``, ``children_right``, ``n_node_samples``,
        ``n_node_real``, ``split_type`` (0 strict, 1 must-link only, 2 forced),
        ``constraints`` (P^t, indices into ``pairs_``), ``root_constraints``
        (the set the root split was searched with), ``bag``.
    diagnostics_ : dict
        JSON-serialisable: ``root_leaf_fraction``, ``mean_depth``,
        ``mean_leaf_size``, ``ml_satisfaction``, ``cl_satisfaction``,
        ``filter_zero_fraction``, ``forced_split_fraction``,
        ``ml_only_split_fraction``, ``conflicts``, ``n_conflicts``,
        ``conflicting_pairs``, ``unsatisfiable_cannot_links``,
        ``n_neighbors``, ``n_graph_components``, ``isolated_samples``,
        ``degenerate_forest``, ``numba``; with ``drop_violated=True`` also
        ``n_dropped_violated`` (int) and ``first_fit_constraint_satisfaction``
        (float in [0, 1], or None without constraints), and the four conflict
        entries come from the first fit (indices into the caller's pairs).

    Raises
    ------
    InvalidInputError
        From ``fit``: bad parameters, bad X (NaN, ragged, ...), bad pairs
        (out of range, self-pairs, kinds other than +/-1, weights outside
        (0, 1]). Contradictory constraints are never an error.

    Notes
    -----
    Zhu, Loy & Gong (2013): pseudo two-class trees (CR-1, paper Sec. II-B),
    bagged constraint subsets (CR-2), Gini gain (CR-4, Eq. 4) maximised under
    the constraint validity of Eq. 5 / Algorithm 1 (CR-6, CR-7), root filter
    Eqs. 7-8 (CR-12..CR-14), tree and forest affinity Eq. 6 (CR-8, CR-9),
    kNN graph (CR-10) and NJW spectral clustering (CR-11).

    Deviations (spec-marked): the default ``cannot_link_policy="relaxed"``
    (spec §7.1: the literal rule turns most roots into leaves once a bag
    holds a few dozen cannot-links across three or more clusters); the
    filter repetitions share the root features. Duplicate pairs are merged
    summing weights; a pair given as both kinds keeps the kind of larger
    summed weight (dropped on a tie). When every tree's root is a leaf the
    affinity is constant: fit warns (``ConstraintWarning``) and clusters it
    anyway instead of raising. ``constraint_scores_`` (CR-15) averages the
    finite per-tree scores: a tree whose bag holds the constraint but whose
    f random subsets Q_r all missed it (r_j = 0, score -inf in CR-13, ranked
    last for S^t) is left out of the mean rather than making it -inf.

    References
    ----------
    .. [1] X. Zhu, C. C. Loy, S. Gong. "Constrained Clustering: Effective
       Constraint Propagation with Imperfect Oracles". ICDM 2013.
    .. [2] T. Shi, S. Horvath. "Unsupervised learning with random forest
       predictors". J. Comput. Graph. Stat. 15(1), 2006.
    .. [3] A. Ng, M. Jordan, Y. Weiss. "On spectral clustering: analysis and
       an algorithm". NIPS 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from clustering._cop_rf import COPRF
    >>> X = np.array([[0., 0.], [0.1, 0.], [0., 0.1], [5., 5.], [5.1, 5.], [5., 5.1]])
    >>> model = COPRF(n_clusters=2, n_estimators=50, random_state=0)
    >>> model = model.fit(X, pairs=[[0, 1], [0, 3]], pair_kind=[1, -1])
    >>> model.labels_.shape
    (6,)
    >>> bool(model.labels_[0] == model.labels_[1] != model.labels_[3])
    True
    """

    def __init__(
        self,
        n_clusters=2,
        *,
        n_estimators=1000,
        max_features="sqrt",
        min_samples_split=2,
        max_depth=None,
        cannot_link_policy="relaxed",
        filter_constraints=True,
        filter_fraction=0.5,
        filter_repeats=500,
        filter_share_features=True,
        filter_score="strict",
        pseudo_samples="uniform",
        affinity_samples="all",
        n_neighbors="auto",
        drop_violated=False,
        rca_components=None,
        store_affinity="auto",
        keep_leaves=False,
        keep_trees=False,
        n_init=10,
        n_jobs=None,
        random_state=None,
        callback=None,
    ):
        self.n_clusters = n_clusters
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.min_samples_split = min_samples_split
        self.max_depth = max_depth
        self.cannot_link_policy = cannot_link_policy
        self.filter_constraints = filter_constraints
        self.filter_fraction = filter_fraction
        self.filter_repeats = filter_repeats
        self.filter_share_features = filter_share_features
        self.filter_score = filter_score
        self.pseudo_samples = pseudo_samples
        self.affinity_samples = affinity_samples
        self.n_neighbors = n_neighbors
        self.drop_violated = drop_violated
        self.rca_components = rca_components
        self.store_affinity = store_affinity
        self.keep_leaves = keep_leaves
        self.keep_trees = keep_trees
        self.n_init = n_init
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.callback = callback

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 2, None)],
        "n_estimators": [Interval(numbers.Integral, 1, MAX_TREES)],
        "max_features": [
            Options("sqrt"),
            Interval(numbers.Integral, 1, None),
            Interval(numbers.Real, 0.0, 1.0, closed="right"),
            None,
        ],
        "min_samples_split": [Interval(numbers.Integral, 2, None)],
        "max_depth": [Interval(numbers.Integral, 1, None), None],
        "cannot_link_policy": [Options("relaxed", "literal", "strict", "separate")],
        "filter_constraints": [bool],
        "filter_fraction": [Interval(numbers.Real, 0.0, 1.0, closed="neither")],
        "filter_repeats": [Interval(numbers.Integral, 1, 100000)],
        "filter_share_features": [bool],
        "filter_score": [Options("strict", "soft")],
        "pseudo_samples": [Options("uniform", "marginal")],
        "affinity_samples": [Options("all", "in_bag")],
        "n_neighbors": [Options("auto", "select"), Interval(numbers.Integral, 1, None)],
        "drop_violated": [bool],
        "rca_components": [None, Options("all"), Interval(numbers.Integral, 1, None)],
        "store_affinity": [Options("auto", "dense", "none")],
        "keep_leaves": [bool],
        "keep_trees": [bool],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "n_jobs": [Interval(numbers.Integral, 1, None), Interval(numbers.Integral, None, -1), None],
        "random_state": [numbers.Integral, np.random.RandomState, None],
    }

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None, *, pairs=None, pair_kind=None, pair_weight=None):
        """Grow the forest, build the kNN graph and cluster it (all twice with
        ``drop_violated=True``, the second time without the constraints the
        first labels violate).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite numbers.
        y : ignored
        pairs : array-like of shape (n_pairs, 2) of int, optional
            Row indices of constrained pairs.
        pair_kind : array-like of shape (n_pairs,), optional
            +1 must-link, -1 cannot-link.
        pair_weight : array-like of shape (n_pairs,), optional
            Confidence in (0, 1]; only used to merge duplicates and to
            resolve a pair given as both kinds.

        Returns
        -------
        self : COPRF

        Raises
        ------
        InvalidInputError
            Bad parameters, data or constraints (never for contradictory
            constraints, which are reported in ``diagnostics_``),
            ``affinity_samples="in_bag"`` or ``n_neighbors="select"`` with
            more than 3000 samples and no dense affinity,
            ``n_neighbors="auto"`` with more than ``COP_RF_AUTO_MAX_SAMPLES``
            samples, samples x ``n_estimators`` above ``COP_RF_MAX_TREE_ROWS``,
            or ``rca_components`` with more than 2000 features.
        """
        validate_params(self, self._parameter_constraints)
        X = check_data(X)
        self.n_features_in_ = X.shape[1]
        n, d = X.shape
        K = check_n_clusters(self.n_clusters, n)
        if self.affinity_samples == "in_bag" and n > DENSE_AFFINITY_LIMIT:
            raise InvalidInputError(
                f"affinity_samples='in_bag' builds a dense n x n matrix and is limited to "
                f"{DENSE_AFFINITY_LIMIT} samples (got {n}); use affinity_samples='all'",
                field="affinity_samples",
            )
        select = self.n_neighbors == "select"
        if select and self.affinity_samples != "in_bag" and not (
                self.store_affinity == "dense" or (self.store_affinity == "auto" and n <= DENSE_AFFINITY_LIMIT)):
            raise InvalidInputError(
                f"n_neighbors='select' clusters the dense forest affinity: it needs n <= {DENSE_AFFINITY_LIMIT} "
                f"with store_affinity='auto' (got n = {n}, store_affinity={self.store_affinity!r}), or "
                "store_affinity='dense'",
                field="n_neighbors",
            )
        if self.n_neighbors == "auto" and n > COP_RF_AUTO_MAX_SAMPLES:
            raise InvalidInputError(
                f"n_neighbors='auto' builds a kNN graph with n / 10 neighbours per sample, n^2 / 10 entries, and "
                f"is limited to {COP_RF_AUTO_MAX_SAMPLES} samples (got {n}); give an integer n_neighbors",
                field="n_neighbors",
            )
        if n * int(self.n_estimators) > COP_RF_MAX_TREE_ROWS:
            raise InvalidInputError(
                f"n_estimators={self.n_estimators} keeps every tree's leaf of every sample: samples x trees "
                f"({n} x {self.n_estimators}) is limited to {COP_RF_MAX_TREE_ROWS}; use at most "
                f"{COP_RF_MAX_TREE_ROWS // n} trees on {n} samples",
                field="n_estimators",
            )
        if self.rca_components is not None:
            check_rca_features(d, field="rca_components")
        pc = check_pairwise(pairs, pair_kind, pair_weight, n)
        if not self.drop_violated:
            self._fit_once(X, pc, K, select, self.callback)
            self.constraint_violated_ = violated_constraints(self.labels_, pc.pairs, pc.kind)
            return self

        # [extension] fit twice: the second forest never sees the constraints
        # that the first fit's labels violate (drop_violated)
        cb = self.callback
        self._fit_once(X, pc, K, select, None if cb is None else (lambda stage, f: cb(f"first fit: {stage}", f)))
        violated = violated_constraints(self.labels_, pc.pairs, pc.kind)
        first = {name: getattr(self, name) for name in _PER_CONSTRAINT}
        first_diag = self.diagnostics_
        keep = ~violated
        self._fit_once(X, PairwiseConstraints(pc.pairs[keep], pc.kind[keep], pc.weight[keep], pc.n_samples),
                       K, select, cb)
        for name, value in first.items():
            setattr(self, name, value)
        self.constraint_violated_ = violated
        self.diagnostics_.update(
            {key: first_diag[key] for key in _CALLER_INDEXED},
            n_dropped_violated=int(violated.sum()),
            first_fit_constraint_satisfaction=float(1.0 - violated.mean()) if len(pc) else None,
        )
        return self

    def _fit_once(self, X, pc, K, select, cb):
        """One forest, kNN graph and spectral step on validated inputs (sets every fitted attribute)."""
        n, d = X.shape
        T = int(self.n_estimators)

        e0, e1, kind, weight, row_map, conflicting = _normalise_pairs(pc, n)
        u = e0.shape[0]
        conflicts, n_conflicts = pc.conflicts()
        identical = np.all(X[pc.pairs[:, 0]] == X[pc.pairs[:, 1]], axis=1) if len(pc) else np.zeros(0, bool)
        unsat = np.flatnonzero(identical & (pc.kind < 0)).tolist()

        X = self._with_rca_features(X, e0, e1, kind, weight)
        mtry = _mtry(self.max_features, X.shape[1])
        literal = self.cannot_link_policy in ("literal", "strict")
        settings = dict(
            mtry=mtry,
            min_samples_split=int(self.min_samples_split),
            max_depth=np.iinfo(np.int32).max if self.max_depth is None else int(self.max_depth),
            policy=_k.POLICY_LITERAL if literal else (_k.POLICY_SEPARATE if self.cannot_link_policy == "separate" else _k.POLICY_RELAXED),
            filter=bool(self.filter_constraints),
            alpha=float(self.filter_fraction),
            repeats=int(self.filter_repeats),
            share=bool(self.filter_share_features),
            soft=self.filter_score == "soft",
            marginal=self.pseudo_samples == "marginal",
            keep_tree=bool(self.keep_trees),
        )

        root_ss = _seed_sequence(self.random_state)
        tree_ss, misc_ss = root_ss.spawn(2)
        seeds = tree_ss.spawn(T)
        misc = np.random.default_rng(misc_ss)

        lo = X.min(axis=0)
        hi = X.max(axis=0)
        Xt = np.ascontiguousarray(X.T)
        # never more threads than CPUs: joblib refuses n_jobs above 500000 (pre_dispatch = 2 * n_jobs). Counted
        # for the threading backend the forest runs on: the default (loky) answers 1, with a UserWarning, in a
        # daemonic process such as a Celery prefork child, where threads work.
        with parallel_config(backend="threading"):
            n_jobs = max(1, min(int(effective_n_jobs(self.n_jobs)), int(effective_n_jobs(-1))))
        n_batches = min(T, max(4 * n_jobs, 8))
        bounds = np.linspace(0, T, n_batches + 1).round().astype(int)
        jobs = (
            delayed(_grow_batch)(X, Xt, lo, hi, e0, e1, kind, seeds[bounds[b] : bounds[b + 1]], settings)
            for b in range(n_batches)
        )
        results = []
        if cb is not None:
            cb("forest", 0.0)
        if n_jobs == 1:
            for b, job in enumerate(jobs):
                fn, args, kwargs = job
                results.extend(fn(*args, **kwargs))
                if cb is not None:
                    cb("forest", bounds[b + 1] / T)
        else:
            par = Parallel(n_jobs=n_jobs, backend="threading", return_as="generator")
            for b, batch in enumerate(par(jobs)):
                results.extend(batch)
                if cb is not None:
                    cb("forest", bounds[b + 1] / T)

        leaves = np.empty((T, n), dtype=np.int32)
        root_leaf = np.zeros(T, dtype=bool)
        in_bag = np.zeros((T, n), dtype=bool) if self.affinity_samples == "in_bag" else None
        for t, res in enumerate(results):
            leaves[t] = res["leaves"]
            root_leaf[t] = res["root_leaf"]
            if in_bag is not None:
                in_bag[t, res["bag"]] = True

        # ---- constraint scores (CR-15)
        score_u, rate_u, cover, (ml_ok, ml_tot, cl_ok, cl_tot) = constraint_scores(results, e0, e1, kind)
        m = len(pc)
        kept = row_map >= 0
        self.constraint_scores_ = np.full(m, np.nan)
        self.constraint_selection_rate_ = np.full(m, np.nan)
        self.constraint_coverage_ = np.zeros(m, dtype=np.int64)
        self.constraint_scores_[kept] = score_u[row_map[kept]]
        self.constraint_selection_rate_[kept] = rate_u[row_map[kept]]
        self.constraint_coverage_[kept] = cover[row_map[kept]]
        self.pairs_ = np.stack([e0, e1], axis=1) if u else np.empty((0, 2), dtype=np.int64)
        self.pair_kind_ = kind.astype(np.int8)

        # ---- affinity and kNN graph (CR-9, CR-10, §4.6)
        if cb is not None:
            cb("affinity", 0.0)
        k = _n_neighbors(self.n_neighbors, n)
        perm = misc.permutation(n).astype(np.int64)
        degenerate = bool(root_leaf.all())
        if degenerate:
            warnings.warn(
                "every tree's root is a leaf: the forest affinity is constant and carries no "
                "information (try cannot_link_policy='relaxed' or fewer constraints)",
                ConstraintWarning,
                stacklevel=2,
            )
        dense = self.store_affinity == "dense" or (self.store_affinity == "auto" and n <= DENSE_AFFINITY_LIMIT)
        W, A = forest_knn_graph(leaves, root_leaf, in_bag, k, perm, dense=dense, keep_affinity=dense or select,
                                n_jobs=n_jobs)
        self.knn_graph_ = W
        self.affinity_matrix_ = A if A is not None else W
        if self.keep_leaves:
            self.leaves_ = np.ascontiguousarray(leaves.T)
        if self.keep_trees:
            self.trees_ = [res["tree"] for res in results]

        # ---- NJW spectral clustering (CR-11)
        if cb is not None:
            cb("spectral", 0.0)
        spec_seed = int(misc.integers(0, 2**31 - 1))
        self.labels_, info = self._njw_labels(W, K, spec_seed)
        selection = None
        if select:
            # [extension] the whole forest affinity as a second graph; the labels
            # that satisfy more of the given constraints win, a tie keeps N/10
            W_all = sp.csr_matrix(A)
            labels_all, info_all = self._njw_labels(W_all, K, spec_seed)
            sat_knn = constraint_satisfaction(self.labels_, self.pairs_, self.pair_kind_)
            sat_all = constraint_satisfaction(labels_all, self.pairs_, self.pair_kind_)
            selection = [{"n_neighbors": int(k), "constraint_satisfaction": sat_knn},
                         {"n_neighbors": int(n - 1), "constraint_satisfaction": sat_all}]
            if sat_knn is not None and sat_all > sat_knn:
                k, W, info, self.labels_ = n - 1, W_all, info_all, labels_all
                self.knn_graph_ = W
                if A is None:
                    self.affinity_matrix_ = W
        if info["n_components_graph"] > K:
            warnings.warn(
                f"the kNN graph has {info['n_components_graph']} connected components, more than "
                f"n_clusters={K}; the spectral embedding is not unique (increase n_neighbors)",
                ConstraintWarning,
                stacklevel=2,
            )
        self.n_clusters_ = int(K)

        # ---- diagnostics
        zero = [r["zero_fraction"] for r in results if r["zero_fraction"] is not None]
        n_internal = sum(r["n_internal"] for r in results)
        self.diagnostics_ = {
            "n_trees": T,
            "max_features": int(mtry),
            "root_leaf_fraction": float(root_leaf.mean()),
            "mean_depth": float(np.mean([r["depth"] for r in results])),
            "mean_leaf_size": float(np.mean([2.0 * n / r["n_leaves"] for r in results])),
            "ml_satisfaction": float(ml_ok / ml_tot) if ml_tot else None,
            "cl_satisfaction": float(cl_ok / cl_tot) if cl_tot else None,
            "filter_zero_fraction": float(np.mean(zero)) if zero else None,
            "forced_split_fraction": float(sum(r["n_forced"] for r in results) / max(n_internal, 1)),
            "ml_only_split_fraction": float(sum(r["n_ml_only"] for r in results) / max(n_internal, 1)),
            "n_constraints_used": int(u),
            "conflicts": _jsonable(conflicts),
            "n_conflicts": int(n_conflicts),
            "conflicting_pairs": conflicting,
            "unsatisfiable_cannot_links": [int(i) for i in unsat],
            "n_neighbors": int(k),
            "neighbor_selection": selection,
            "n_graph_components": int(info["n_components_graph"]),
            "isolated_samples": [int(i) for i in info["zero_rows"]],
            "degenerate_forest": bool(degenerate),
            "numba": bool(HAVE_NUMBA),
        }
        if cb is not None:
            cb("done", 1.0)
        return self

    def _with_rca_features(self, X, e0, e1, kind, weight):
        """X, or X plus its relevant-component features (sets ``rca_components_``, ``rca_mean_``)."""
        self.rca_components_ = self.rca_mean_ = None
        if self.rca_components is None:
            return X
        c = None if self.rca_components == "all" else int(self.rca_components)
        comps, mean = rca_components(X, np.stack([e0, e1], axis=1), kind, weight, n_components=c)
        if comps is None:
            return X
        self.rca_components_, self.rca_mean_ = comps, mean
        return np.ascontiguousarray(np.hstack([X, (X - mean) @ comps.T]))

    def _njw_labels(self, W, K, seed):
        """NJW spectral clustering of graph W (CR-11): (labels (n,) int64, embedding info)."""
        Y, info = njw_embedding(W, K, random_state=seed)
        if W.shape[0] <= DENSE_AFFINITY_LIMIT:
            with threadpool_limits(limits=1):
                return kmeans_labels(Y, K, n_init=int(self.n_init), random_state=seed), info
        return kmeans_labels(Y, K, n_init=int(self.n_init), random_state=seed), info


# ---------------------------------------------------------------- helpers


def _seed_sequence(random_state):
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(int(random_state.randint(0, 2**31 - 1)))
    if random_state is None:
        return np.random.SeedSequence()
    return np.random.SeedSequence(int(random_state))


def _mtry(max_features, d):
    if max_features == "sqrt":
        k = int(math.floor(math.sqrt(d)))
    elif max_features is None:
        k = d
    elif isinstance(max_features, numbers.Integral):
        k = int(max_features)
    else:
        k = int(math.floor(float(max_features) * d))
    return int(min(max(k, 1), d))


def _n_neighbors(n_neighbors, n):
    if n_neighbors in ("auto", "select"):
        return int(max(1, min(n - 1, round(n / 10))))
    return int(max(1, min(int(n_neighbors), n - 1)))


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    return obj


def _normalise_pairs(pc, n, max_report=100):
    """Spec §2: unordered pairs, duplicates merged (weights summed), a pair
    given as both kinds keeps the heavier kind (dropped on a tie).

    Returns e0, e1 (u,), kind (u,) int64, weight (u,), row_map (m,) int64
    (normalised index of each input row, -1 when dropped or overruled) and
    the JSON list of conflicting pairs.
    """
    m = len(pc)
    if m == 0:
        z = np.zeros(0, dtype=np.int64)
        return z, z.copy(), z.copy(), np.zeros(0), z.copy(), []
    lo = np.minimum(pc.pairs[:, 0], pc.pairs[:, 1])
    hi = np.maximum(pc.pairs[:, 0], pc.pairs[:, 1])
    key = lo * n + hi
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = inv.ravel()
    is_ml = pc.kind > 0
    wml = np.bincount(inv, weights=np.where(is_ml, pc.weight, 0.0), minlength=uniq.size)
    wcl = np.bincount(inv, weights=np.where(~is_ml, pc.weight, 0.0), minlength=uniq.size)
    both = (wml > 0) & (wcl > 0)
    keep_kind = np.where(wml > wcl, 1, np.where(wcl > wml, -1, 0))
    # order of the normalised constraints: first occurrence in the input
    order = np.argsort(first, kind="stable")
    keep = order[keep_kind[order] != 0]
    new_index = np.full(uniq.size, -1, dtype=np.int64)
    new_index[keep] = np.arange(keep.size)
    row_kind_ok = np.where(is_ml, 1, -1) == keep_kind[inv]
    row_map = np.where(row_kind_ok, new_index[inv], -1).astype(np.int64)
    conflicting = []
    for g in np.flatnonzero(both)[np.argsort(first[both], kind="stable")][:max_report]:
        conflicting.append(
            {
                "pair": [int(lo[first[g]]), int(hi[first[g]])],
                "indices": [int(i) for i in np.flatnonzero(inv == g)],
                "must_link_weight": float(wml[g]),
                "cannot_link_weight": float(wcl[g]),
                "kept": {1: "must_link", -1: "cannot_link", 0: "none"}[int(keep_kind[g])],
            }
        )
    e0 = lo[first[keep]].astype(np.int64)
    e1 = hi[first[keep]].astype(np.int64)
    kind = keep_kind[keep].astype(np.int64)
    weight = np.where(kind > 0, wml[keep], wcl[keep])
    return e0, e1, kind, weight, row_map, conflicting
