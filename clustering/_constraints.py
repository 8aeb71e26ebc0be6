"""Constraint containers and closure helpers shared by every method.

Estimators receive pairwise constraints as ``pairs (m, 2)``, ``pair_kind (m,)``
in {+1 must-link, -1 cannot-link} and optional ``pair_weight (m,)`` in (0, 1]
(metric-learn's label convention); :func:`check_pairwise` validates them once
and returns a :class:`PairwiseConstraints`.
"""

from dataclasses import dataclass

import numpy as np

from .exceptions import InvalidInputError
from .validation import (  # must_link_components: used here, and imported from here by the estimators
    check_pairs,
    check_triplets,
    check_weights,
    find_pairwise_conflicts,
    must_link_components,
)

MUST_LINK = 1
CANNOT_LINK = -1


@dataclass(frozen=True)
class PairwiseConstraints:
    """Validated pairwise constraints in the caller's order.

    Attributes
    ----------
    pairs : ndarray of shape (m, 2), dtype int64
        Row indices, as given (orientation kept).
    kind : ndarray of shape (m,), dtype int8
        +1 must-link, -1 cannot-link.
    weight : ndarray of shape (m,), dtype float64
        Confidence in (0, 1].
    n_samples : int
    """

    pairs: np.ndarray
    kind: np.ndarray
    weight: np.ndarray
    n_samples: int

    def __len__(self):
        return int(self.pairs.shape[0])

    @property
    def must_link(self):
        """ndarray of shape (n_ml, 2): must-link pairs."""
        return self.pairs[self.kind == MUST_LINK]

    @property
    def cannot_link(self):
        """ndarray of shape (n_cl, 2): cannot-link pairs."""
        return self.pairs[self.kind == CANNOT_LINK]

    def unique(self):
        """Deduplicate unordered pairs of the same kind (max weight kept).

        Returns
        -------
        pairs : ndarray of shape (u, 2), int64, with ``i < j``
        kind : ndarray of shape (u,), int8
        weight : ndarray of shape (u,), float64
        index : ndarray of shape (u,), int64
            Position in the input of the first occurrence of each kept row.
        """
        lo = np.minimum(self.pairs[:, 0], self.pairs[:, 1])
        hi = np.maximum(self.pairs[:, 0], self.pairs[:, 1])
        key = np.stack([lo, hi, self.kind.astype(np.int64)], axis=1)
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        weight = np.zeros(first.size)
        np.maximum.at(weight, inverse, self.weight)
        order = np.argsort(first, kind="stable")
        first = first[order]
        weight = weight[order]
        return np.stack([lo[first], hi[first]], axis=1), self.kind[first], weight, first

    def conflicts(self, max_conflicts=100):
        """Cannot-links contradicting must-link chains (see
        :func:`clustering.validation.find_pairwise_conflicts`); the
        ``cannot_link_index`` refers to the position in ``pairs``."""
        cl_pos = np.flatnonzero(self.kind == CANNOT_LINK)
        found, count = find_pairwise_conflicts(
            self.must_link, self.cannot_link, self.n_samples, max_conflicts=max_conflicts
        )
        for c in found:
            c["cannot_link_index"] = int(cl_pos[c["cannot_link_index"]])
        return found, count


def check_pairwise(pairs, pair_kind, pair_weight, n_samples):
    """Validate pairwise constraints for ``fit``.

    Parameters
    ----------
    pairs : array-like of shape (m, 2) or None
    pair_kind : array-like of shape (m,) or None
        +1 must-link, -1 cannot-link. Required when ``pairs`` is non-empty.
    pair_weight : array-like of shape (m,) or None
        Confidence in (0, 1]; None means 1.
    n_samples : int

    Returns
    -------
    PairwiseConstraints

    Raises
    ------
    InvalidInputError
        Bad indices or self-pairs (:func:`check_pairs`), kinds other than
        +/-1, mismatched lengths, weights outside (0, 1].
    """
    p = check_pairs(pairs, n_samples, name="pairs")
    m = p.shape[0]
    if m and pair_kind is None:
        raise InvalidInputError("pair_kind is required when pairs are given", field="pair_kind")
    # compared as floats before any cast to an integer type: int64 would turn 1.5 into a must-link and the
    # uint64 2**64 - 1 into a cannot-link (-1), and raise ValueError / OverflowError on NaN or huge ints
    try:
        raw = np.asarray(pair_kind if pair_kind is not None else [])
        if raw.dtype.kind == "c":
            raise TypeError("complex")
        kind = raw.astype(np.float64).ravel()
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(
            "pair_kind must contain only numbers, +1 (must-link) or -1 (cannot-link)", field="pair_kind"
        ) from exc
    if kind.shape[0] != m:
        raise InvalidInputError(
            f"pair_kind has {kind.shape[0]} values for {m} pairs; lengths must match",
            field="pair_kind",
        )
    bad = (kind != MUST_LINK) & (kind != CANNOT_LINK)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(
            f"pair_kind[{r}] = {kind[r]:g}, must be +1 (must-link) or -1 (cannot-link)",
            field="pair_kind",
            index=(r,),
        )
    w = check_weights(pair_weight, m, name="pair_weight")
    return PairwiseConstraints(p, kind.astype(np.int8), w, int(n_samples))


def split_pairs(must_link=None, cannot_link=None, must_link_weights=None, cannot_link_weights=None):
    """Turn separate must-link / cannot-link lists into ``pairs, kind, weight``.

    Returns
    -------
    pairs : ndarray of shape (a + b, 2), int64
    kind : ndarray of shape (a + b,), int8
    weight : ndarray of shape (a + b,), float64
    """
    ml = np.asarray(must_link if must_link is not None else [], dtype=np.int64).reshape(-1, 2)
    cl = np.asarray(cannot_link if cannot_link is not None else [], dtype=np.int64).reshape(-1, 2)
    mlw = np.ones(len(ml)) if must_link_weights is None else np.asarray(must_link_weights, float)
    clw = np.ones(len(cl)) if cannot_link_weights is None else np.asarray(cannot_link_weights, float)
    pairs = np.concatenate([ml, cl])
    kind = np.concatenate([np.full(len(ml), MUST_LINK), np.full(len(cl), CANNOT_LINK)]).astype(np.int8)
    return pairs, kind, np.concatenate([mlw, clw])


def transitive_closure(must_link, cannot_link, n_samples):
    """Entailed constraints: every pair inside a must-link component, and
    every pair between two components joined by a cannot-link.

    Returns
    -------
    must_link : ndarray of shape (p, 2), int64, ``i < j``
    cannot_link : ndarray of shape (q, 2), int64, ``i < j``
        Cannot-links inside one component (contradictions) are dropped here;
        find them with :func:`clustering.validation.find_pairwise_conflicts`.
    """
    _, comp = must_link_components(must_link, n_samples)
    members = {}
    for i, c in enumerate(comp):
        members.setdefault(int(c), []).append(i)
    ml_out = []
    for mem in members.values():
        if len(mem) > 1:
            a = np.asarray(mem)
            iu, ju = np.triu_indices(len(a), 1)
            ml_out.append(np.stack([a[iu], a[ju]], axis=1))
    cl = np.asarray(cannot_link, dtype=np.int64).reshape(-1, 2)
    comp_pairs = {tuple(sorted((int(comp[a]), int(comp[b])))) for a, b in cl if comp[a] != comp[b]}
    cl_out = []
    for ca, cb in comp_pairs:
        a = np.asarray(members[ca])
        b = np.asarray(members[cb])
        aa, bb = np.meshgrid(a, b, indexing="ij")
        cl_out.append(np.stack([np.minimum(aa, bb).ravel(), np.maximum(aa, bb).ravel()], axis=1))
    empty = np.empty((0, 2), dtype=np.int64)
    ml_arr = np.unique(np.concatenate(ml_out), axis=0) if ml_out else empty
    cl_arr = np.unique(np.concatenate(cl_out), axis=0) if cl_out else empty
    return ml_arr, cl_arr


@dataclass(frozen=True)
class TripletConstraints:
    """Validated relative constraints.

    Attributes
    ----------
    triplets : ndarray of shape (t, 3), int64
        ``(a, b, c)``: "is a closer to b than to c?".
    answer : ndarray of shape (t,), int8
        +1 yes, -1 no, 0 don't know.
    n_samples : int
    """

    triplets: np.ndarray
    answer: np.ndarray
    n_samples: int

    def __len__(self):
        return int(self.triplets.shape[0])


def check_triplet_constraints(triplets, triplet_answer, n_samples):
    """Validate triplets for ``fit`` (see :func:`clustering.validation.check_triplets`).

    Returns
    -------
    TripletConstraints
    """
    t, a = check_triplets(triplets, n_samples, triplet_answer)
    return TripletConstraints(t, a, int(n_samples))
