"""COP-KMeans (Wagstaff, Cardie, Rogers, Schroedl 2001): k-means whose
assignments respect every must-link and cannot-link (``specs/baselines.md`` §4)."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import kmeans_plusplus
from sklearn.utils import check_random_state

from .._constraints import CANNOT_LINK, check_pairwise, must_link_components
from .._params import Interval, Options, validate_params
from ..exceptions import InfeasibleConstraintsError, InvalidInputError
from ..validation import check_data, check_magnitude, check_n_clusters

__all__ = ["COPKMeans"]


class _Failure(Exception):
    """One run found no admissible cluster for ``point``."""

    def __init__(self, point, blocked):
        super().__init__(point)
        self.point = point
        self.blocked = blocked  # {cluster: component that blocks it}


def _sq_dist(X, centres):
    d = (X * X).sum(axis=1)[:, None] - 2.0 * X @ centres.T + (centres * centres).sum(axis=1)[None, :]
    return np.maximum(d, 0.0)


def _assign(d2, comp, comp_cl, constrained, rng_order, seq=None):
    """One assignment pass (Eq. B18).

    ``comp`` gives each sample's must-link component; ``comp_cl[a]`` lists the
    components cannot-linked to component ``a``. Samples in singleton
    components without cannot-links are assigned vectorised (their choice
    does not affect anyone); the others one by one (dataset order, or
    shuffled by ``rng_order``).
    Raises :class:`_Failure` when no cluster is admissible for a sample.
    """
    labels = np.argmin(d2, axis=1)
    comp_label = {}
    ranks = np.argsort(d2[constrained], axis=1, kind="stable")
    pos = {int(i): r for r, i in enumerate(constrained)}
    if seq is None:
        seq = constrained if rng_order is None else constrained[rng_order.permutation(constrained.size)]
    for i in seq.tolist():
        a = int(comp[i])
        fixed = comp_label.get(a)
        forbidden = {}
        for b in comp_cl.get(a, ()):
            lb = comp_label.get(b)
            if lb is not None:
                forbidden.setdefault(lb, b)
        chosen = None
        for c in ranks[pos[i]].tolist():
            if fixed is not None and c != fixed:
                continue
            if c in forbidden:
                continue
            chosen = c
            break
        if chosen is None:
            blocked = dict(forbidden)
            raise _Failure(i, blocked)
        labels[i] = chosen
        comp_label[a] = chosen
    return labels


#: Further assignment orders a pass tries after the first fails (most-constrained first, then random).
ORDER_RETRIES = 20


def _assign_retrying(d2, comp, comp_cl, constrained, rng_order, retry_rng):
    """:func:`_assign`, trying other orders when the greedy pass strands a sample.

    The original pass places constrained samples one by one and fails when
    every cluster already holds a sample the next one is cannot-linked to,
    although another order places all of them (satisfiable constraints
    failed 31 of 50 fits on z-scored iris with 100 true pairs). On failure
    the pass is tried with the components that have the most cannot-linked
    components first (a DSatur-like order), then with ``ORDER_RETRIES``
    random orders; the first failure is raised if all fail. A pass that
    succeeds first time is unchanged (same labels as before).
    """
    try:
        return _assign(d2, comp, comp_cl, constrained, rng_order)
    except _Failure as first:
        deg = np.array([len(comp_cl.get(int(comp[i]), ())) for i in constrained.tolist()])
        orders = [constrained[np.argsort(-deg, kind="stable")]]
        orders += (constrained[retry_rng.permutation(constrained.size)] for _ in range(ORDER_RETRIES))
        for seq in orders:
            try:
                return _assign(d2, comp, comp_cl, constrained, None, seq=seq)
            except _Failure:
                continue
        raise first


def cannot_link_clique(comp, comp_cl, K):
    """A set of more than K mutually cannot-linked must-link components, found greedily (or None).

    Such a set proves the constraints infeasible for K clusters.
    """
    for start in sorted(comp_cl, key=lambda a: -len(comp_cl[a])):
        clique = [start]
        for b in sorted(comp_cl[start], key=lambda b: -len(comp_cl.get(b, ()))):
            if all(b in comp_cl.get(a, ()) for a in clique):
                clique.append(b)
        if len(clique) > K:
            return clique
    return None


class COPKMeans(ClusterMixin, BaseEstimator):
    """k-means with hard must-link / cannot-link constraints.

    Parameters
    ----------
    n_clusters : int, default=2
        K.
    init : {"k-means++", "random"} or ndarray of shape (n_clusters, n_features), default="k-means++"
        Initial centres: k-means++ seeding, K distinct samples at random
        (the original), or given centres (then one run per restart, all
        starting there).
    order : {"dataset", "random"}, default="dataset"
        Order in which constrained samples are assigned in each pass
        (dataset order as the original, or reshuffled every pass).
    n_init : int, default=10
        Restarts; the feasible run with the smallest within-cluster SSE wins.
    max_iter : int, default=300
        Maximum assignment/update passes per run.
    tol : float, default=1e-4
        Stop when the centres move less than ``tol`` times the mean
        per-feature variance (as scikit-learn), or when no label changes.
    random_state : int, RandomState or None, default=None
    callback : callable or None, default=None
        ``callback(stage, fraction)``, called once per restart; may raise to
        cancel.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit``.
    labels_ : ndarray of shape (n_samples,), int64
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    inertia_ : float
        Within-cluster sum of squared distances (Eq. B17).
    n_iter_ : int
        Passes of the returned run.
    n_clusters_ : int
    diagnostics_ : dict
        ``n_failed_runs``, ``converged``, ``empty_clusters`` (count over the
        returned run's updates), ``n_must_link_components``,
        ``n_cannot_link_component_pairs``, ``conflicts`` (always empty on
        success).

    Raises
    ------
    InfeasibleConstraintsError
        Contradictory constraints (a cannot-link inside a must-link chain,
        or a pair given as both kinds): raised before any iteration, with
        ``conflicts`` listing each cannot-link and its must-link chain.
        Also raised, before any iteration, when more than K must-link groups
        are mutually cannot-linked (found greedily; ``conflicts`` lists their
        cannot-links), and when all ``n_init`` runs fail to place some sample
        although every pass tried other assignment orders (the most
        constrained first, then ``ORDER_RETRIES`` random ones); the
        ``conflicts`` then list, for the last failed run, the sample that could
        not be placed and the cannot-links blocking each cluster.
    InvalidInputError
        Bad data, constraint indices, kinds, weights or parameters.

    Notes
    -----
    ``specs/baselines.md`` §4, Eqs. B17-B19 with the transitive closure of
    §0.2: must-link components are assigned as one (every assigned member of
    a component shares its label), cannot-links are checked between
    components. The violation test reads "partner assigned to a different
    cluster" (§4.2, [recon]); -1 is the "unassigned" sentinel. Empty clusters
    keep their previous centre. Constraint weights are ignored (constraints
    are hard). Every loop is bounded (``n_init * max_iter`` passes).

    References
    ----------
    K. Wagstaff, C. Cardie, S. Rogers, S. Schroedl. Constrained k-means
    clustering with background knowledge. ICML 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from clustering.baselines import COPKMeans
    >>> X = np.array([[0, 0], [0, 1], [1, 0], [10, 10], [10, 11], [11, 10]], dtype=float)
    >>> model = COPKMeans(n_clusters=2, random_state=0)
    >>> model = model.fit(X, pairs=[[0, 1], [2, 3]], pair_kind=[1, -1])
    >>> bool(model.labels_[0] == model.labels_[1] and model.labels_[2] != model.labels_[3])
    True
    """

    def __init__(
        self,
        n_clusters=2,
        *,
        init="k-means++",
        order="dataset",
        n_init=10,
        max_iter=300,
        tol=1e-4,
        random_state=None,
        callback=None,
    ):
        self.n_clusters = n_clusters
        self.init = init
        self.order = order
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.callback = callback

    def _validate(self):
        validate_params(
            self,
            {
                "init": [Options("k-means++", "random"), np.ndarray],
                "order": [Options("dataset", "random")],
                "n_init": [Interval(numbers.Integral, 1, None)],
                "max_iter": [Interval(numbers.Integral, 1, None)],
                "tol": [Interval(numbers.Real, 0, None)],
            },
        )

    def _init_centres(self, X, K, rng):
        if isinstance(self.init, np.ndarray):
            return np.array(self.init, dtype=np.float64, copy=True)
        if self.init == "random":
            return X[rng.choice(X.shape[0], size=K, replace=False)].copy()
        centres, _ = kmeans_plusplus(X, K, random_state=rng.randint(np.iinfo(np.int32).max))
        return centres

    def _run(self, X, K, centres, comp, comp_cl, constrained, rng, tol_abs, retry_rng):
        rng_order = rng if self.order == "random" else None
        prev = None
        n_empty = 0
        converged = False
        it = 0
        for it in range(1, self.max_iter + 1):
            labels = _assign_retrying(_sq_dist(X, centres), comp, comp_cl, constrained, rng_order, retry_rng)
            if prev is not None and np.array_equal(labels, prev):
                converged = True
                break
            new = centres.copy()
            counts = np.bincount(labels, minlength=K)
            sums = np.zeros_like(centres)
            np.add.at(sums, labels, X)
            full = counts > 0
            new[full] = sums[full] / counts[full, None]
            n_empty += int((~full).sum())
            shift = float(((new - centres) ** 2).sum())
            centres = new
            prev = labels
            if shift <= tol_abs:
                labels = _assign_retrying(_sq_dist(X, centres), comp, comp_cl, constrained, rng_order, retry_rng)
                converged = True
                break
        inertia = float(((X - centres[labels]) ** 2).sum())
        return labels, centres, inertia, it, converged, n_empty

    def fit(self, X, y=None, *, pairs=None, pair_kind=None, pair_weight=None):
        """Cluster ``X`` under hard pairwise constraints.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        pairs : array-like of shape (m, 2), int, optional
        pair_kind : array-like of shape (m,), optional
            +1 must-link, -1 cannot-link.
        pair_weight : array-like of shape (m,), optional
            Validated, then ignored (hard constraints).

        Returns
        -------
        self

        Raises
        ------
        InfeasibleConstraintsError
            Contradictory constraints, or no run could place every sample
            (see the class docstring).
        InvalidInputError
            Bad data, constraint indices, kinds, weights, ``init`` (shape, or
            values that are not finite numbers within ``MAX_ABS_VALUE``, as data)
            or parameters.
        """
        self._validate()
        X = check_data(X)
        check_magnitude(X)
        self.n_features_in_ = X.shape[1]
        n, d = X.shape
        K = check_n_clusters(self.n_clusters, n)
        if isinstance(self.init, np.ndarray):
            if self.init.shape != (K, d):
                raise InvalidInputError(
                    f"init has shape {self.init.shape}, expected ({K}, {d})", field="init"
                )
            check_data(self.init, name="init", min_samples=1)  # numbers, finite, within 1e100
        cons = check_pairwise(pairs, pair_kind, pair_weight, n)
        conflicts, n_conflicts = cons.conflicts()
        if n_conflicts:
            first = conflicts[0]
            raise InfeasibleConstraintsError(
                f"{n_conflicts} cannot-link constraint(s) contradict the must-links, e.g. cannot_link "
                f"{first['cannot_link']} (pairs[{first['cannot_link_index']}]) against the must-link chain "
                f"{first['must_link_chain']}; COP-KMeans has no feasible assignment",
                conflicts=conflicts,
            )
        ml = cons.must_link
        n_comp, comp = must_link_components(ml, n)
        cl_pos = np.flatnonzero(cons.kind == CANNOT_LINK)
        comp_cl = {}
        cl_by_comp_pair = {}
        for k in cl_pos.tolist():
            a, b = (int(v) for v in cons.pairs[k])
            ca, cb_ = int(comp[a]), int(comp[b])
            comp_cl.setdefault(ca, set()).add(cb_)
            comp_cl.setdefault(cb_, set()).add(ca)
            cl_by_comp_pair.setdefault((min(ca, cb_), max(ca, cb_)), k)
        comp_size = np.bincount(comp, minlength=n_comp)
        is_constrained = (comp_size[comp] > 1) | np.isin(comp, list(comp_cl.keys()))
        constrained = np.flatnonzero(is_constrained).astype(np.int64)
        tol_abs = float(self.tol) * float(np.mean(np.var(X, axis=0)))
        rng = check_random_state(self.random_state)
        clique = cannot_link_clique(comp, comp_cl, K)
        if clique is not None:
            raise InfeasibleConstraintsError(
                f"{len(clique)} must-link groups are mutually cannot-linked, more than n_clusters={K}: no "
                f"assignment satisfies the constraints",
                conflicts=[{"sample": int(cons.pairs[k][1]), "cannot_link": [int(v) for v in cons.pairs[k]],
                            "cannot_link_index": int(k)}
                           for k in (cl_by_comp_pair[(min(a, b), max(a, b))]
                                     for i, a in enumerate(clique) for b in clique[i + 1:])],
            )
        # a generator of its own, so runs that place every sample first time keep their labels
        retry_rng = np.random.default_rng(
            [int(self.random_state)] if isinstance(self.random_state, numbers.Integral) else None)
        cb = self.callback
        best = None
        n_failed = 0
        last_failure = None
        n_runs = 1 if isinstance(self.init, np.ndarray) and self.order == "dataset" else self.n_init
        for r in range(n_runs):
            if cb is not None:
                cb("restart", r / n_runs)
            centres = self._init_centres(X, K, rng)
            try:
                res = self._run(X, K, centres, comp, comp_cl, constrained, rng, tol_abs, retry_rng)
            except _Failure as f:
                n_failed += 1
                last_failure = f
                continue
            if best is None or res[2] < best[2]:
                best = res
        if best is None:
            details = self._failure_conflicts(last_failure, cons, comp, cl_by_comp_pair)
            raise InfeasibleConstraintsError(
                f"COP-KMeans found no assignment satisfying all constraints in {n_runs} run(s) with "
                f"n_clusters={K}: sample {last_failure.point} could not be placed because every cluster "
                f"holds a sample it is cannot-linked to (or its must-link group)",
                conflicts=details,
            )
        labels, centres, inertia, n_iter, converged, n_empty = best
        self.labels_ = labels.astype(np.int64)
        self.cluster_centers_ = centres
        self.inertia_ = inertia
        self.n_iter_ = int(n_iter)
        self.n_clusters_ = K
        self.diagnostics_ = {
            "n_failed_runs": int(n_failed),
            "n_runs": int(n_runs),
            "converged": bool(converged),
            "empty_clusters": int(n_empty),
            "n_must_link_components": int(np.count_nonzero(comp_size > 1)),
            "n_cannot_link_component_pairs": int(len(cl_by_comp_pair)),
            "conflicts": [],
        }
        if cb is not None:
            cb("done", 1.0)
        return self

    @staticmethod
    def _failure_conflicts(failure, cons, comp, cl_by_comp_pair):
        """For the sample that could not be placed: per blocked cluster, the
        cannot-link (input index) that blocks it."""
        i = failure.point
        a = int(comp[i])
        out = []
        for cluster, b in sorted(failure.blocked.items()):
            k = cl_by_comp_pair[(min(a, b), max(a, b))]
            out.append(
                {
                    "sample": int(i),
                    "blocked_cluster": int(cluster),
                    "cannot_link": [int(v) for v in cons.pairs[k]],
                    "cannot_link_index": int(k),
                }
            )
        return out
