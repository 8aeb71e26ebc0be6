"""CCSKL: Constrained Clustering by Spectral Kernel Learning (Li and Liu, ICCV 2009).

Implements ``specs/ccskl.md``: a kernel ``K = F diag(beta) F^T`` whose
eigenvectors ``F`` are the ``m`` smoothest eigenvectors of the normalised
Laplacian of a sparse Gaussian kNN graph and whose eigenvalues ``beta`` are
fitted, under the ordering ``beta_1 >= ... >= beta_m >= 0``, so that ``K`` is
as close as possible to the ideal kernel on the constrained pairs. The convex
QP (Eqs. 9-16 of the paper) is solved exactly as a non-negative least-squares
problem in the increments ``delta`` (``beta = U delta``, spec C11); the rows
of ``F diag(beta)^{1/2}`` are then clustered with k-means (C12). The
spectral basis and the QP live in :mod:`clustering._ccskl._qp`.
"""

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state

from ._qp import (
    _balance_rows,
    _beta_from_delta,
    _laplacian_eigenpairs,
    _null_components,
    _objective,
    _solve_delta,
    _target_rows,
)
from .._constraints import CANNOT_LINK, MUST_LINK, check_pairwise, transitive_closure
from .._graph import (
    add_gaussian_edges,
    component_bridges,
    degrees,
    knn_distances,
    knn_gaussian_graph,
    kth_neighbor_sigma,
    normalized_adjacency,
)
from .._params import Interval, Options, validate_params
from .._spectral import kmeans_labels, kmeans_labels_by_constraints
from ..exceptions import ConstraintWarning, InvalidInputError
from ..validation import CCSKL_SELECT_MAX_SAMPLES, check_affinity, check_data, check_magnitude, check_n_clusters

__all__ = ["CCSKL"]

# Transitive closure (closure=True) is skipped, with a warning, above this many
# derived pairs (spec §7.9).
_MAX_CLOSURE_PAIRS = 2_000_000

# --------------------------------------------------------------------------
# Public estimator
# --------------------------------------------------------------------------


def _row_indices(idx, name, n):
    """``idx`` (an int or a 1-D array-like of ints) as a 1-D int64 array of rows in ``[0, n)``.

    The range is checked before the cast: 1.5 would truncate to row 1 and 2**70 overflow.
    """
    try:
        arr = np.atleast_1d(np.asarray(idx))
    except ValueError as exc:  # ragged
        raise InvalidInputError(f"{name} must be an integer or a 1-D list of integers", field=name) from exc
    if arr.dtype == object and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in arr.flat):
        # Python ints beyond int64 (and float64: 10**400): their range is checked as ints, before any cast
        if arr.ndim == 1 and arr.size and (min(arr.flat) < 0 or max(arr.flat) >= n):
            raise InvalidInputError(f"{name} has indices outside [0, {n - 1}]", field=name)
        arr = arr.astype(np.int64) if arr.ndim == 1 else arr
    if arr.ndim != 1 or arr.dtype.kind not in "iuf":
        raise InvalidInputError(f"{name} must be an integer or a 1-D list of integers", field=name)
    if arr.dtype.kind == "f" and not np.all(arr == np.round(arr)):  # also refuses NaN and inf
        raise InvalidInputError(f"{name} must be an integer or a 1-D list of integers", field=name)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise InvalidInputError(f"{name} has indices outside [0, {n - 1}]", field=name)
    return arr.astype(np.int64)


class CCSKL(ClusterMixin, BaseEstimator):
    """Constrained Clustering by Spectral Kernel Learning.

    Learns the eigenvalues ``beta`` of a spectral kernel ``K = F diag(beta) F^T``
    built on the ``m`` smoothest eigenvectors of the normalised graph Laplacian
    so that ``K`` matches the ideal kernel (1 on the diagonal and on must-links,
    0 on cannot-links) in least squares, under ``beta_1 >= ... >= beta_m >= 0``;
    then runs k-means on the rows of ``F diag(beta)^{1/2}``. Constraints are
    soft: contradictory constraints are fitted as a least-squares compromise
    and reported, never rejected.

    Parameters
    ----------
    n_clusters : int, default=2
        K, the number of clusters of the final k-means; ``2 <= K <= n``.
        ``K == n`` gives every sample its own cluster (labels ``0..n-1``,
        the only partition into n non-empty clusters), without k-means: the
        basis has at most n - 1 vectors (spec §7.8), which for n = 2 is the
        trivial one alone, so the embedding could not separate them.
    n_components : int, default=20
        m, the number of Laplacian eigenvectors. The value used is
        ``min(max(n_components, n_clusters), n_samples - 1)`` (spec §7.8),
        recorded in ``diagnostics_["n_components"]``.
    n_neighbors : int, default=20
        k of the kNN graph (union rule); clipped to ``n_samples - 1``.
    sigma : "auto", "select" or float, default="auto"
        Gaussian width of the graph weights; "auto" is r, the mean distance to
        the ``n_neighbors``-th nearest neighbour (C1). "select" picks one of
        the paper's 9 candidates {0.1r, ..., r, ..., 10r} by held-out
        constraint satisfaction (5-fold over the constraints, spec §5; about
        9x the cost of one fit; the folds use the same ``weighting``).
        Ignored with ``affinity="precomputed"``. Refused (``InvalidInputError``
        on ``sigma``) above ``CCSKL_SELECT_MAX_SAMPLES`` (20000) samples
        (``clustering.validation``): 12 s at 5000 rows of ``make_blobs``
        (2.3 s at sigma = r), 52 s at 10000, 156 s and 0.75 GiB at 20000
        (``bench/scale_limits.py``). The narrowest width nearly cuts the
        graph; its eigenpairs come from a smaller shift-invert shift than the
        others' (``sigma_selection["eigen_solvers"]``; see
        ``clustering._ccskl._qp._laplacian_eigenpairs``). Before that ladder it
        did not finish in 900 s at 10000 rows. Above 1000 samples a width
        whose graph has more than m groups of samples cut off to rounding
        (m eigenvalues 0, any m of the groups' indicators an equally exact
        basis, so the held-out score would rate an arbitrary choice) is
        skipped: its score is None and it is listed in
        ``diagnostics_["sigma_selection"]["skipped"]`` with its number of
        groups (``letter`` at 0.1 r: 31 groups for m = 26). If every width is
        skipped, r is used.
        The folds cluster as the final fit does (``restart_selection``), and
        a width whose fold partitions hold a cluster of fewer than
        max(3, n / (20 K)) rows loses to every other width
        (``diagnostics_["sigma_selection"]["degenerate"]``): a partition with
        almost everything in one cluster satisfies every held-out must-link
        and won with mostly must-links, returning 2-row clusters.
    affinity : {"knn", "precomputed"}, default="knn"
        "precomputed": ``X`` is a symmetric non-negative (n, n) affinity W
        (dense or sparse, entries within ``MAX_ABS_VALUE`` = 1e100 as any
        data); its diagonal is ignored.
    connect_graph : bool, default=True
        Join the components of a disconnected kNN graph with the shortest
        inter-component edges (spec §7.1); otherwise warn. With
        ``affinity="precomputed"`` a disconnected graph only warns.
    pair_convention : {"ordered", "unordered"}, default="ordered"
        "ordered" counts each off-diagonal constraint twice as in Eq. (8);
        "unordered" once as in Eq. (7).
    closure : bool, default=False
        Add the transitive closure of the constraints (derived pairs get weight
        1). Cannot-links inside a must-link component are kept as given and
        reported; the closure is skipped with a warning above 2e6 pairs.
    weighting : {"balanced", "none"}, default="balanced"
        "none": the paper's literal loss, every constraint row has weight
        ``c_ij`` (1 or the given ``pair_weight``) like each of the n diagonal
        targets. "balanced": the paper's weighted-constraint mechanism (§4.4,
        ``c_ij`` replaced by a weight) with one common factor on all
        constraint rows so that their total squared weight is ``balance``
        times that of the n diagonal rows; relative ``pair_weight`` values are
        kept. [deviation]: the default is "balanced" because with 20-100
        constraints against n diagonal targets the literal loss barely moves
        ``beta`` (the constant-like kernel that fits ``k_ii = 1`` wins).
        Measured (``bench/passive.py`` protocol, AUC of ARI over 20..100
        pairs, 3 trials, clean / 15% flipped): segment210 at sigma = r
        1.12/1.17 -> 2.01/1.82; ionosphere at sigma = 0.55 r 1.10/0.62 ->
        1.97/1.44; iris unchanged (2.47/2.50 -> 2.48/2.41). See
        ``bench/results/passive_ccskl_*.json`` for the 10-trial runs.
    balance : float > 0, default=10.0
        Ratio of the constraint rows' total squared weight to the diagonal
        rows' (n) under ``weighting="balanced"``. Measured on ionosphere
        (sigma = 0.55 r): 1 -> 1.83/1.27, 3 -> 2.12/1.34, 10 -> 1.97/1.44,
        30 -> 1.83/1.22, 100 -> 1.56/1.11; on segment210 (sigma = r) 10 was
        needed (3 -> 1.58/1.22). With balancing, ``pair_convention`` and a
        common scale of all weights no longer matter.
    drop_trivial_in_kmeans : bool, default=False
        Leave the first (degree-following) column out of the k-means input
        (spec §7.10); the kernel is unchanged.
    solver : {"nnls", "bvls"}, default="nnls"
        Lawson-Hanson NNLS (``scipy.optimize.nnls``) or bounded-variable least
        squares (``scipy.optimize.lsq_linear(method="bvls")``) on the system
        C11; both are exact active-set methods.
    n_init : int, default=10
        k-means restarts.
    restart_selection : {"constraints", "inertia"}, default="constraints"
        Which of the ``n_init`` k-means restarts on the rows of ``F
        diag(beta)^{1/2}`` is kept (C12). "inertia": the lowest inertia, the
        paper's plain k-means. "constraints" [deviation]: the restart that
        satisfies the most constraint weight, ties to the lower inertia
        (``diagnostics_["kmeans_constraints_satisfied"]`` reports the
        fraction). Measured (``bench/passive.py`` protocol, 10 trials, AUC
        clean / 15% flipped, inertia -> constraints): ionosphere sigma="auto"
        0.65/0.66 -> 1.49/1.58, sigma="select" 1.57/1.33 -> 2.07/1.87 (two
        partitions of nearly equal inertia; inertia picks the one that
        ignores the constraints); iris 2.49/2.44 -> 2.57/2.64; wine and wdbc
        unchanged (3.79/3.79, 3.10/3.14 -> 3.10/3.15).
    max_dense_kernel : int, default=5000
        Store the dense ``kernel_matrix_`` only when ``n_samples`` is at most this.
    random_state : int, RandomState instance or None, default=None
        Seeds the eigen-solver start vector and k-means.
    callback : callable or None, default=None
        ``callback(stage, fraction)`` after each stage ("graph", "eigen",
        "qp", "kmeans", "done"); exceptions it raises propagate (cancel).

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit`` (n_samples for a precomputed
        affinity).
    labels_ : ndarray of shape (n_samples,), int64
        Cluster of each sample, in ``[0, n_clusters)``.
    n_clusters_ : int
    beta_ : ndarray of shape (m,), float64
        Learned kernel eigenvalues, non-increasing and non-negative.
    eigenvalues_ : ndarray of shape (m,), float64
        The m smallest eigenvalues of the normalised Laplacian, ascending.
    eigenvectors_ : ndarray of shape (n_samples, m), float64
        F, orthonormal columns (sign fixed: largest-magnitude entry positive).
    embedding_ : ndarray of shape (n_samples, m), float64
        ``F diag(beta)^{1/2}``; its rows are what k-means clusters.
    objective_ : float
        Value of Eq. (C8) at ``beta_`` (constant included) in the chosen
        ``pair_convention``.
    kernel_matrix_ : ndarray of shape (n_samples, n_samples) float64, or None
        ``F diag(beta) F^T`` when ``n_samples <= max_dense_kernel``; use
        :meth:`kernel` otherwise.
    affinity_matrix_ : csr_matrix of shape (n_samples, n_samples)
        The graph W actually used (after connecting components).
    sigma_ : float or None
        Gaussian width used (None with a precomputed affinity).
    diagnostics_ : dict
        JSON-serialisable: graph components and added edges, isolated
        samples, constraint counts (given, merged duplicates, used), conflicts,
        same pair given as both kinds, QP residual, active ordering
        constraints, ``beta_1 / beta_2``, rank deficiency, timings, the eigen-solver
        (``eigen_solver``; with ``sigma="select"`` also one per candidate width in
        ``sigma_selection["eigen_solvers"]``).

    Raises
    ------
    InvalidInputError
        Invalid parameters, data, constraints or precomputed affinity.

    Notes
    -----
    Li and Liu (2009), Eqs. (1)-(16) and Algorithm 1, as restated in
    ``specs/ccskl.md``: graph C1, Laplacian C2 (Eq. 1), eigenpairs C3 (Eq. 2),
    kernel family C5 (Eqs. 5, 10), target set C7 (Eqs. 6-7), weighted loss C8
    (Eqs. 8, 12, weights replace ``c_ij`` so they enter squared), QP C9-C10
    (Eqs. 13-16), solved exactly by the NNLS reparameterisation C11
    ``beta_k = sum_{l >= k} delta_l``, ``delta >= 0``; clustering C12 (§4.5).
    The paper's ``quadprog`` is replaced by NNLS (same minimiser). The QP
    matrix A is only positive *semi*-definite (C10 note), so ``beta`` may be
    non-unique while the fitted kernel values on S are unique. Memory is
    O(n (k + m)); the dense kernel is only materialised for small n.

    Differences from the spec's input handling (not in the paper): a pair
    given as both must-link and cannot-link keeps one row of each kind (the
    fit settles between them by their weights; listed in
    ``diagnostics_["same_pair_both_kinds"]``) where spec §4 step 1 / §7.5
    rejects it or keeps the heavier kind; ``pair_weight`` lies in (0, 1]
    (the spec's weight 0 is written by leaving the pair out); m is raised to
    K and clamped to n - 1 without §7.8's warning (recorded in
    ``diagnostics_["n_components"]``); the edges that join a disconnected
    kNN graph (§7.1) get their Gaussian weight floored at the weakest
    existing edge, so that a long bridge does not underflow to 0.

    References
    ----------
    .. [1] Z. Li and J. Liu, "Constrained Clustering by Spectral Kernel
       Learning", ICCV 2009, pp. 421-427.

    Examples
    --------
    >>> import numpy as np
    >>> from clustering._ccskl import CCSKL
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.1],
    ...               [5.0, 5.0], [5.1, 5.0], [5.0, 5.1]])
    >>> est = CCSKL(n_clusters=2, n_neighbors=2, random_state=0)
    >>> est = est.fit(X, pairs=[[0, 1], [3, 4], [0, 3]], pair_kind=[1, 1, -1])
    >>> bool(est.labels_[0] == est.labels_[2] != est.labels_[3] == est.labels_[5])
    True
    >>> bool(np.all(np.diff(est.beta_) <= 1e-12))
    True
    """

    def __init__(
        self,
        n_clusters=2,
        *,
        n_components=20,
        n_neighbors=20,
        sigma="auto",
        affinity="knn",
        connect_graph=True,
        pair_convention="ordered",
        closure=False,
        weighting="balanced",
        balance=10.0,
        drop_trivial_in_kmeans=False,
        solver="nnls",
        n_init=10,
        restart_selection="constraints",
        max_dense_kernel=5000,
        random_state=None,
        callback=None,
    ):
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.n_neighbors = n_neighbors
        self.sigma = sigma
        self.affinity = affinity
        self.connect_graph = connect_graph
        self.pair_convention = pair_convention
        self.closure = closure
        self.weighting = weighting
        self.balance = balance
        self.drop_trivial_in_kmeans = drop_trivial_in_kmeans
        self.solver = solver
        self.n_init = n_init
        self.restart_selection = restart_selection
        self.max_dense_kernel = max_dense_kernel
        self.random_state = random_state
        self.callback = callback

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 2, None)],
        "n_components": [Interval(numbers.Integral, 1, None)],
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "sigma": [Options("auto", "select"), Interval(numbers.Real, 0, None, closed="neither")],
        "affinity": [Options("knn", "precomputed")],
        "connect_graph": [bool],
        "pair_convention": [Options("ordered", "unordered")],
        "closure": [bool],
        "weighting": [Options("balanced", "none")],
        "balance": [Interval(numbers.Real, 0, None, closed="neither")],
        "drop_trivial_in_kmeans": [bool],
        "solver": [Options("nnls", "bvls")],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "restart_selection": [Options("constraints", "inertia")],
        "max_dense_kernel": [Interval(numbers.Integral, 0, None)],
    }

    # -- helpers -----------------------------------------------------------

    def _rows(self, n, pairs, kind, weight):
        """Target rows (C7, C8), balanced against the diagonal unless weighting="none"."""
        I, J, t, c = _target_rows(n, pairs, kind, weight, self.pair_convention)
        if self.weighting == "balanced":
            c = _balance_rows(c, n, float(self.balance))
        return I, J, t, c

    def _progress(self, stage, fraction):
        if self.callback is not None:
            self.callback(stage, float(fraction))

    def _check_affinity(self, X):
        """Validate a precomputed affinity (symmetric to 1e-10); returns symmetric CSR, zero diagonal."""
        W = sp.csr_matrix(check_affinity(X, rtol=1e-10))  # zero diagonal, no stored zeros
        return sp.csr_matrix((W + W.T) * 0.5)

    def _constraint_rows(self, pc, n):
        """Deduplicated (and optionally closed) pairs, kinds and weights + report."""
        info = {"n_constraints_given": len(pc)}
        conflicts, n_conflicts = pc.conflicts()
        info["conflicts"] = conflicts
        info["n_conflicts"] = int(n_conflicts)
        if len(pc) == 0:
            info.update(n_duplicates_merged=0, same_pair_both_kinds=[], n_constraints_used=0)
            return np.empty((0, 2), np.int64), np.empty(0, np.int8), np.empty(0), info
        pairs, kind, weight, _ = pc.unique()
        info["n_duplicates_merged"] = int(len(pc) - len(pairs))
        # Same unordered pair given as both kinds: both rows are kept, the
        # least-squares fit settles between them (weights decide).
        key = pairs[:, 0] * n + pairs[:, 1]
        ml_keys = set(key[kind == MUST_LINK].tolist())
        both = sorted(k for k in set(key[kind == CANNOT_LINK].tolist()) if k in ml_keys)
        info["same_pair_both_kinds"] = [[int(k // n), int(k % n)] for k in both[:100]]
        info["n_same_pair_both_kinds"] = len(both)
        if self.closure:
            pairs, kind, weight, info["closure"] = self._closure(pairs, kind, weight, n)
        info["n_constraints_used"] = int(len(pairs))
        return pairs, kind, weight, info

    def _closure(self, pairs, kind, weight, n):
        ml = pairs[kind == MUST_LINK]
        cl = pairs[kind == CANNOT_LINK]
        from .._constraints import must_link_components

        _, comp = must_link_components(ml, n)
        sizes = np.bincount(comp)
        n_ml = int(np.sum(sizes * (sizes - 1) // 2))
        if n_ml + len(cl) * int(sizes.max()) ** 2 > _MAX_CLOSURE_PAIRS:
            warnings.warn(
                f"the transitive closure would add more than {_MAX_CLOSURE_PAIRS} pairs; "
                "closure skipped, constraints used as given",
                ConstraintWarning,
                stacklevel=4,
            )
            return pairs, kind, weight, {"applied": False, "reason": "too many derived pairs"}
        ml_c, cl_c = transitive_closure(ml, cl, n)
        all_pairs = np.concatenate([pairs, ml_c, cl_c])
        all_kind = np.concatenate(
            [kind, np.full(len(ml_c), MUST_LINK, np.int8), np.full(len(cl_c), CANNOT_LINK, np.int8)]
        )
        all_w = np.concatenate([weight, np.ones(len(ml_c) + len(cl_c))])
        # Derived pairs that repeat a given one keep the given weight.
        lo = np.minimum(all_pairs[:, 0], all_pairs[:, 1])
        hi = np.maximum(all_pairs[:, 0], all_pairs[:, 1])
        key = np.stack([lo, hi, all_kind.astype(np.int64)], axis=1)
        _, first = np.unique(key, axis=0, return_index=True)
        first = np.sort(first)
        added = int(len(first) - len(pairs))
        return (
            np.stack([lo[first], hi[first]], axis=1),
            all_kind[first],
            all_w[first],
            {"applied": True, "n_derived_pairs": added},
        )

    def _spectral(self, X, m, seed, *, sigma=None, W=None):
        """Graph (C1, connected per §7.1) and its m smoothest eigenpairs (C2, C3)."""
        t0 = time.perf_counter()
        if W is None:
            k = int(min(self.n_neighbors, X.shape[0] - 1))
            W, sigma = knn_gaussian_graph(X, k, sigma=sigma, symmetrize="max")
        else:
            sigma = None
        n_comp_graph, _ = connected_components(W, directed=False)
        edges = []
        if n_comp_graph > 1:
            if self.connect_graph and X is not None:
                edges, _ = component_bridges(X, W)
                # floored at the weakest existing edge (spec §7.1)
                W = add_gaussian_edges(W, edges, sigma, float(W.data[W.data > 0].min()) if W.nnz else 1.0)
            else:
                warnings.warn(
                    f"the affinity graph has {n_comp_graph} connected components; the "
                    "eigenvectors of the repeated eigenvalue 0 are not unique and beta depends "
                    "on the solver's basis (spec §7.1)",
                    ConstraintWarning,
                    stacklevel=4,
                )
        t1 = time.perf_counter()
        self._progress("eigen", 0.2)
        lam, F, isolated, solver = _laplacian_eigenpairs(W, m, seed)
        t2 = time.perf_counter()
        return W, sigma, edges, n_comp_graph, lam, F, isolated, solver, t1 - t0, t2 - t1

    def _select_sigma(self, X, m, K, pairs, kind, weight, seed_eig, seed_km):
        """sigma from the paper's 9 candidates {0.1r .. r .. 10r} by held-out
        constraint satisfaction, 5-fold over the constraints (spec §5 [choice],
        a label-free stand-in for the paper's ground-truth selection). Ties go
        to the candidate closest to r (log scale); fewer than 2 constraints:
        sigma = r."""
        k = int(min(self.n_neighbors, X.shape[0] - 1))
        dist, _ = knn_distances(X, k)
        r = kth_neighbor_sigma(X, k, dist=dist)
        mults = np.unique(np.concatenate([np.linspace(0.1, 1.0, 5), np.linspace(1.0, 10.0, 5)]))
        p = len(pairs)
        if p < 2:
            return self._spectral(X, m, seed_eig, sigma=r), {"applied": False, "r": float(r)}
        n_folds = int(min(5, p))
        fold = np.arange(p) % n_folds
        check_random_state(seed_km).shuffle(fold)
        n = X.shape[0]
        scores, solvers, skipped, best, best_key = [], [], [], None, None
        degenerate, degenerate_below = [], max(3, n // (20 * K))
        for c_i, mult in enumerate(mults):
            self._progress("sigma_selection", 0.2 + 0.5 * c_i / len(mults))
            spec = self._spectral(X, m, seed_eig, sigma=float(mult * r))
            F = spec[5]
            solvers.append(spec[7])
            if spec[7] == "components":
                n_null = _null_components(spec[0], normalized_adjacency(spec[0])[0], 0)[0]
                if n_null > m:  # m of the n_null null vectors: any choice is right, none is better
                    scores.append(None)
                    skipped.append({"sigma": float(mult * r), "null_groups": int(n_null)})
                    continue
            agree, smallest = 0, n
            for f in range(n_folds):
                tr = fold != f
                I, J, t, c = self._rows(n, pairs[tr], kind[tr], weight[tr])
                delta, _ = _solve_delta(F, I, J, t, c, self.solver)
                beta = _beta_from_delta(delta)
                Z = F * np.sqrt(beta)
                # the folds cluster as the final fit does (its k-means restarts are kept by the training
                # constraints by default); scoring inertia restarts rated a different procedure
                if self.restart_selection == "constraints":
                    lab, _ = kmeans_labels_by_constraints(Z, K, pairs[tr], kind[tr] == MUST_LINK, weight[tr],
                                                          n_init=self.n_init, random_state=seed_km)
                else:
                    lab = kmeans_labels(Z, K, n_init=self.n_init, random_state=seed_km)
                smallest = min(smallest, int(np.bincount(lab, minlength=K).min()))
                te = ~tr
                same = lab[pairs[te, 0]] == lab[pairs[te, 1]]
                agree += float(np.sum(weight[te] * (same == (kind[te] == MUST_LINK))))
            score = agree / float(np.sum(weight))
            scores.append(score)
            # a width whose fold partitions hold a near-empty cluster (a few rows split off) loses to every
            # other width, whatever its held-out score (an all-in-one partition satisfies every must-link)
            is_degenerate = smallest < degenerate_below
            degenerate.append(bool(is_degenerate))
            key = (is_degenerate, -score, abs(np.log(mult)))
            if best_key is None or key < best_key:
                best, best_key = spec, key
        info = {
            "applied": True,
            "r": float(r),
            "candidates": [float(v * r) for v in mults],
            "held_out_satisfaction": [None if v is None else float(v) for v in scores],
            "eigen_solvers": solvers,
            "skipped": skipped,
            "degenerate": degenerate,
            "degenerate_below_rows": int(degenerate_below),
            "n_folds": n_folds,
        }
        if best is None:  # every width skipped: the default width, with its groups' basis
            best = self._spectral(X, m, seed_eig, sigma=r)
        return best, info

    # -- fit ---------------------------------------------------------------

    def fit(self, X, y=None, *, pairs=None, pair_kind=None, pair_weight=None):
        """Learn the spectral kernel and cluster.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), float64
            Data, or with ``affinity="precomputed"`` a symmetric non-negative
            (n_samples, n_samples) affinity (dense or scipy sparse).
        y : ignored
        pairs : array-like of shape (n_pairs, 2), int, optional
            Constrained index pairs (i != j).
        pair_kind : array-like of shape (n_pairs,), optional
            +1 must-link, -1 cannot-link.
        pair_weight : array-like of shape (n_pairs,), optional
            Confidence in (0, 1]; replaces ``c_ij`` in Eq. (8) (enters squared).

        Returns
        -------
        self : CCSKL

        Raises
        ------
        InvalidInputError
            Invalid parameters, data or constraints (indices out of range,
            self-pairs, unknown kinds, weights outside (0, 1]), or
            ``sigma="select"`` on more than ``CCSKL_SELECT_MAX_SAMPLES`` samples.
        """
        t_start = time.perf_counter()
        validate_params(self, self._parameter_constraints)
        rng = check_random_state(self.random_state)
        seed_eig = int(rng.randint(np.iinfo(np.int32).max))
        seed_km = int(rng.randint(np.iinfo(np.int32).max))
        diag = {}
        timings = {}

        # 1. Graph (C1) -------------------------------------------------------
        self._progress("graph", 0.0)
        if self.affinity == "precomputed":
            W0 = self._check_affinity(X)
            n = W0.shape[0]
            self.n_features_in_ = n
        else:
            X = check_data(X)
            check_magnitude(X)
            n = X.shape[0]
            self.n_features_in_ = X.shape[1]
        K = check_n_clusters(self.n_clusters, n)
        if self.sigma == "select" and self.affinity != "precomputed" and n > CCSKL_SELECT_MAX_SAMPLES:
            raise InvalidInputError(
                f"sigma='select' fits 9 widths x 5 folds and is limited to {CCSKL_SELECT_MAX_SAMPLES} samples "
                f"(got {n}): the largest size measured within a job's time and memory; give "
                "sigma='auto' or a number",
                field="sigma",
            )
        pc = check_pairwise(pairs, pair_kind, pair_weight, n)
        m = int(min(max(self.n_components, K), n - 1))
        diag["n_components"] = m
        diag["n_neighbors"] = None if self.affinity == "precomputed" else int(min(self.n_neighbors, n - 1))
        cpairs, ckind, cweight, cinfo = self._constraint_rows(pc, n)

        if self.affinity == "precomputed":
            spectral = self._spectral(None, m, seed_eig, W=W0)
        elif self.sigma == "select":
            spectral, diag["sigma_selection"] = self._select_sigma(
                X, m, K, cpairs, ckind, cweight, seed_eig, seed_km
            )
        else:
            spectral = self._spectral(X, m, seed_eig, sigma=None if self.sigma == "auto" else float(self.sigma))
        W, sigma, edges, n_comp_graph, lam, F, isolated, eig_solver, t_graph, t_eig = spectral
        diag["graph_components"] = int(n_comp_graph)
        diag["graph_edges_added"] = [[int(a), int(b), float(d)] for a, b, d in edges[:100]]
        diag["n_graph_edges_added"] = len(edges)
        diag["sigma"] = None if sigma is None else float(sigma)
        diag["isolated_samples"] = np.flatnonzero(isolated)[:100].tolist()
        diag["n_isolated_samples"] = int(isolated.sum())
        diag["eigen_solver"] = eig_solver
        timings["graph"] = t_graph
        timings["eigen"] = t_eig

        # 4. QP by NNLS (C7-C11) ------------------------------------------------
        self._progress("qp", 0.7)
        t0 = time.perf_counter()
        diag.update(cinfo)
        I, J, t, c = self._rows(n, cpairs, ckind, cweight)
        delta, reduced = _solve_delta(F, I, J, t, c, self.solver)
        beta = _beta_from_delta(delta)
        objective = _objective(F, beta, I, J, t, c)
        timings["qp"] = time.perf_counter() - t0
        scale = float(delta.max()) if delta.size and delta.max() > 0 else 1.0
        active = np.flatnonzero(delta <= 1e-12 * scale)
        diag["qp_solver"] = self.solver + ("+cholesky_reduction" if reduced else "")
        diag["qp_rows"] = int(I.shape[0])
        diag["weighting"] = self.weighting
        # Weight of one unit-weight constraint row relative to a diagonal row.
        n_con = I.shape[0] - n
        diag["constraint_row_weight"] = float(np.max(c[n:])) if n_con else None
        diag["qp_residual"] = float(np.sqrt(max(objective, 0.0)))
        # delta_l = 0 <=> beta_l = beta_{l+1} (l < m-1) or beta_m = 0 (l = m-1).
        diag["active_ordering_constraints"] = [int(a) for a in active if a < m - 1]
        diag["beta_last_zero"] = bool((m - 1) in set(active.tolist()))
        n_pos = int(np.sum(beta > 1e-12 * max(float(beta.max()), 1e-300)))
        diag["n_positive_beta"] = n_pos
        diag["beta_ratio_1_2"] = float(beta[0] / beta[1]) if m > 1 and beta[1] > 0 else None
        diag["rank_deficient_embedding"] = bool(n_pos < K)
        if n_pos < K and K < n:  # K == n: the labels are fixed below
            warnings.warn(
                f"only {n_pos} learned kernel eigenvalues are positive, fewer than "
                f"n_clusters={K}; the embedding cannot separate all clusters (add constraints "
                "or raise n_components)",
                ConstraintWarning,
                stacklevel=2,
            )

        # 5. Embed and cluster (C12) ---------------------------------------------
        self._progress("kmeans", 0.8)
        t0 = time.perf_counter()
        Z = F * np.sqrt(beta)[None, :]
        Zk = Z[:, 1:] if self.drop_trivial_in_kmeans and m > 1 else Z
        if K == n:
            # one sample per cluster is the only partition; m <= n - 1 eigenvectors cannot
            # always separate n rows (n = 2: the trivial eigenvector alone, both rows equal)
            labels = np.arange(n, dtype=np.int64)
            if self.restart_selection == "constraints":  # the cannot-links, as k-means would score it
                total = float(np.sum(cweight))
                diag["kmeans_constraints_satisfied"] = (
                    float(np.sum(cweight[ckind != MUST_LINK])) / total if total > 0 else 1.0)
        elif self.restart_selection == "constraints":
            labels, diag["kmeans_constraints_satisfied"] = kmeans_labels_by_constraints(
                Zk, K, cpairs, ckind == MUST_LINK, cweight, n_init=self.n_init, random_state=seed_km)
        else:
            labels = kmeans_labels(Zk, K, n_init=self.n_init, random_state=seed_km)
        timings["kmeans"] = time.perf_counter() - t0

        self.labels_ = labels
        self.n_clusters_ = K
        self.beta_ = beta
        self.eigenvalues_ = lam
        self.eigenvectors_ = F
        self.embedding_ = Z
        self.objective_ = objective
        self.affinity_matrix_ = sp.csr_matrix(W)
        self.sigma_ = None if sigma is None else float(sigma)
        self.kernel_matrix_ = (Z @ Z.T) if n <= self.max_dense_kernel else None
        timings["total"] = time.perf_counter() - t_start
        diag["timings"] = {key: float(v) for key, v in timings.items()}
        diag["degree_min"] = float(degrees(W).min())
        self.diagnostics_ = diag
        self._progress("done", 1.0)
        return self

    def kernel(self, i_idx, j_idx):
        """Entries of the learned kernel ``K = F diag(beta) F^T`` on demand.

        Parameters
        ----------
        i_idx, j_idx : int or array-like of int
            Row and column indices.

        Returns
        -------
        K_sub : ndarray of shape (len(i_idx), len(j_idx)), float64

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        InvalidInputError
            An index outside ``[0, n_samples)``, or indices that are not integers
            (integer-valued floats are accepted) given as a scalar or a 1-D list.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "embedding_")
        n = self.embedding_.shape[0]
        i, j = _row_indices(i_idx, "i_idx", n), _row_indices(j_idx, "j_idx", n)
        return self.embedding_[i] @ self.embedding_[j].T
