"""Folds over constraint units that never leak a held-out constraint through closure.

``specs/auto.md`` §3.1: pairs are deduplicated, grouped into units (the
must-link component of a must-link; the two components a cannot-link joins,
or the one it contradicts), units go to folds stratified by kind, and a
guard drops from each test fold what its training closure (and, for K = 2,
the 2-colouring) fixes.
"""

import numpy as np

from .._constraints import MUST_LINK
from ..validation import must_link_components

__all__ = ["ConstraintUnits", "constraint_units", "assign_folds", "fixed_by_training"]


class ConstraintUnits:
    """Deduplicated pairwise constraints with their units.

    Attributes
    ----------
    pairs : ndarray of shape (m, 2), int64
        ``i < j``.
    kind : ndarray of shape (m,), int8
        +1 must-link, -1 cannot-link (a pair given as both kinds stays twice).
    weight : ndarray of shape (m,), float64
        Summed over repeats of the same (pair, kind).
    unit : ndarray of shape (m,), int64
        Unit id in ``[0, n_units)``.
    component : ndarray of shape (n_samples,), int64
        Must-link component of every row (all must-links).
    contradiction : ndarray of shape (m,), bool
        Cannot-links inside one must-link component.
    """

    def __init__(self, pairs, kind, weight, unit, component, contradiction):
        self.pairs, self.kind, self.weight = pairs, kind, weight
        self.unit, self.component, self.contradiction = unit, component, contradiction

    @property
    def n_units(self):
        return int(self.unit.max()) + 1 if len(self.unit) else 0

    def __len__(self):
        return int(len(self.kind))


def constraint_units(pairs, kind, weight, n_samples):
    """Deduplicate pairs and group them into leakage units (spec §3.1 steps 1-3).

    Parameters
    ----------
    pairs : ndarray of shape (m, 2), int
    kind : ndarray of shape (m,), {+1, -1}
    weight : ndarray of shape (m,), float or None
    n_samples : int

    Returns
    -------
    ConstraintUnits
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    kind = np.asarray(kind, dtype=np.int8).ravel()
    weight = np.ones(len(kind)) if weight is None else np.asarray(weight, dtype=np.float64).ravel()
    lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    key = np.stack([lo, hi, kind.astype(np.int64)], axis=1)
    if len(key):
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        w = np.bincount(inv.ravel(), weights=weight, minlength=len(uniq))
    else:
        uniq, w = np.empty((0, 3), np.int64), np.empty(0)
    p, k = uniq[:, :2].copy(), uniq[:, 2].astype(np.int8)
    _, comp = must_link_components(p[k == MUST_LINK], n_samples)
    comp = np.asarray(comp, dtype=np.int64)
    ca, cb = comp[p[:, 0]], comp[p[:, 1]]
    contradiction = (k != MUST_LINK) & (ca == cb)
    ml_unit = (k == MUST_LINK) | contradiction
    # Unit keys: ("M", c) -> (c, -1); ("X", a, b) -> (min, max).
    ukey = np.where(ml_unit[:, None], np.stack([ca, np.full_like(ca, -1)], axis=1),
                    np.stack([np.minimum(ca, cb), np.maximum(ca, cb)], axis=1)) if len(p) else np.empty((0, 2))
    if len(p):
        _, unit = np.unique(ukey, axis=0, return_inverse=True)
        unit = unit.ravel().astype(np.int64)
    else:
        unit = np.empty(0, np.int64)
    return ConstraintUnits(p, k, w, unit, comp, contradiction)


def assign_folds(units, n_folds, rng):
    """Units to folds, stratified by kind (``StratifiedGroupKFold`` semantics).

    Units are taken largest first (ties in random order) and each goes to the
    fold where the per-kind shares stay closest to the global ones, the
    smaller fold on ties. A unit with more than half of all constraints is
    split by edge (at random over folds); the guard then filters.

    Parameters
    ----------
    units : ConstraintUnits
    n_folds : int
    rng : numpy.random.Generator

    Returns
    -------
    fold : ndarray of shape (m,), int64 in [0, n_folds)
    split_unit : bool
        True when a unit was split by edge.
    """
    m = len(units)
    fold = np.zeros(m, dtype=np.int64)
    if m == 0:
        return fold, False
    is_ml = (units.kind == MUST_LINK).astype(np.int64)
    n_u = units.n_units
    size = np.bincount(units.unit, minlength=n_u)
    n_ml_u = np.bincount(units.unit, weights=is_ml, minlength=n_u)
    split = np.flatnonzero(size > m / 2)
    order = rng.permutation(n_u)
    order = order[np.argsort(-size[order], kind="stable")]
    counts = np.zeros((n_folds, 2))  # (ml, cl) per fold
    unit_fold = np.full(n_u, -1)
    class_tot = np.maximum(np.array([is_ml.sum(), m - is_ml.sum()], dtype=float), 1.0)
    for u in order:
        if u in split:
            continue
        add = np.array([n_ml_u[u], size[u] - n_ml_u[u]])
        best, best_cost = 0, None
        for f in range(n_folds):
            c = counts.copy()
            c[f] += add
            # scikit-learn's StratifiedGroupKFold: spread every class evenly over the folds
            cost = (float(np.mean(np.std(c / class_tot, axis=0))), float(counts[f].sum()))
            if best_cost is None or cost < best_cost:
                best, best_cost = f, cost
        counts[best] += add
        unit_fold[u] = best
    fold = unit_fold[units.unit]
    for u in split:
        idx = np.flatnonzero(units.unit == u)
        fold[idx] = rng.permutation(np.arange(len(idx)) % n_folds)
    return fold.astype(np.int64), bool(len(split))


class _UnionFind:
    """Union-find with parity (parity 1 = different clusters)."""

    def __init__(self, n):
        self.parent = np.arange(n)
        self.parity = np.zeros(n, dtype=np.int8)

    def find(self, a):
        path = []
        while self.parent[a] != a:
            path.append(a)
            a = self.parent[a]
        root, acc = a, 0
        for node in reversed(path):
            acc ^= int(self.parity[node])
            self.parity[node] = acc
            self.parent[node] = root
        return root

    def union(self, a, b, odd):
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        self.parent[rb] = ra
        self.parity[rb] = int(self.parity[a]) ^ int(self.parity[b]) ^ int(odd)


def fixed_by_training(units, train, test, n_samples, *, parity=False):
    """Test constraints whose answer the training constraints fix (spec §3.1 step 6).

    Parameters
    ----------
    units : ConstraintUnits
    train, test : ndarray of bool, shape (m,)
    n_samples : int
    parity : bool, default=False
        Also drop what the 2-colouring of the training graph fixes (K = 2).

    Returns
    -------
    closure : ndarray of bool, shape (m,)
        Test constraints implied or contradicted by the training closure.
    by_parity : ndarray of bool, shape (m,)
        Further test constraints fixed by the 2-colouring (all False
        unless ``parity``).
    """
    p, k = units.pairs, units.kind
    ml = train & (k == MUST_LINK)
    _, comp = must_link_components(p[ml], n_samples)
    comp = np.asarray(comp)
    cl_keys = {(min(a, b), max(a, b)) for a, b in zip(comp[p[train & ~ml, 0]].tolist(), comp[p[train & ~ml, 1]].tolist())}
    ca, cb = comp[p[:, 0]], comp[p[:, 1]]
    closure = np.zeros(len(k), dtype=bool)
    for i in np.flatnonzero(test):
        a, b = int(ca[i]), int(cb[i])
        closure[i] = a == b or (min(a, b), max(a, b)) in cl_keys
    by_parity = np.zeros(len(k), dtype=bool)
    if parity:
        uf = _UnionFind(n_samples)
        for i in np.flatnonzero(train):
            uf.union(int(p[i, 0]), int(p[i, 1]), k[i] != MUST_LINK)
        for i in np.flatnonzero(test & ~closure):
            by_parity[i] = uf.find(int(p[i, 0])) == uf.find(int(p[i, 1]))
    return closure, by_parity
