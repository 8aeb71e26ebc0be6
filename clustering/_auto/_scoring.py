"""Held-out constraint scores: balanced accuracy from pooled counts, bootstrap spread.

``specs/auto.md`` §3.2: a fit satisfies a test constraint iff "same label"
equals "must-link"; weighted counts are pooled over folds and repeats before
any ratio; BA = (s_ML + s_CL) / 2 with add-one rates s_k = (sat_k + 1) /
(tot_k + 2); spreads come from a bootstrap over units, paired by sharing the
resamples.
"""

import numpy as np

from .._constraints import MUST_LINK

__all__ = ["satisfied", "UnitCounts", "balanced_accuracy", "bootstrap_weights"]


def satisfied(labels, pairs, kind):
    """Per constraint: does ``labels`` satisfy it?  Label permutations change nothing.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
    pairs : ndarray of shape (m, 2), int
    kind : ndarray of shape (m,), {+1, -1}

    Returns
    -------
    ndarray of shape (m,), bool
    """
    labels = np.asarray(labels)
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    return same == (np.asarray(kind) == MUST_LINK)


class UnitCounts:
    """Weighted satisfied / total counts per (unit, kind), pooled over test folds.

    Parameters
    ----------
    n_units : int
    """

    def __init__(self, n_units):
        self.sat = np.zeros((n_units, 2))
        self.tot = np.zeros((n_units, 2))
        self.n_scored = 0

    def add(self, unit, kind, weight, sat):
        """Add scored test constraints (arrays of equal length)."""
        col = (np.asarray(kind) != MUST_LINK).astype(np.int64)
        np.add.at(self.tot, (unit, col), weight)
        np.add.at(self.sat, (unit, col), weight * np.asarray(sat, dtype=float))
        self.n_scored += int(len(unit))

    def rates(self):
        """``(ml_rate, cl_rate, accuracy, f_measure)`` from the pooled counts (None where undefined)."""
        s, t = self.sat.sum(axis=0), self.tot.sum(axis=0)
        ml = float(s[0] / t[0]) if t[0] > 0 else None
        cl = float(s[1] / t[1]) if t[1] > 0 else None
        acc = float(s.sum() / t.sum()) if t.sum() > 0 else None
        # CVCP's F-measure over the two constraint classes (pooled counts)
        f = []
        for c in (0, 1):
            tp = s[c]
            fp = t[1 - c] - s[1 - c]  # the other kind's violations are predicted as this kind
            fn = t[c] - s[c]
            f.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn > 0 else 0.0)
        return ml, cl, acc, float(np.mean(f)) if t.sum() > 0 else None


def balanced_accuracy(sat, tot, *, kinds=(0, 1)):
    """BA with add-one rates from counts summed over units.

    Parameters
    ----------
    sat, tot : ndarray of shape (..., 2)
        Weighted satisfied and total counts per kind (must-link, cannot-link).
    kinds : tuple of int
        The kinds that count (one kind only: BA is that kind's rate).

    Returns
    -------
    ndarray of shape (...,)
    """
    rates = (sat + 1.0) / (tot + 2.0)
    return rates[..., list(kinds)].mean(axis=-1)


def bootstrap_weights(n_units, n_resamples, rng):
    """Multiplicity of every unit in each bootstrap resample, shape (n_resamples, n_units)."""
    if n_units == 0:
        return np.zeros((n_resamples, 0))
    draws = rng.integers(0, n_units, size=(n_resamples, n_units))
    w = np.zeros((n_resamples, n_units))
    np.add.at(w, (np.repeat(np.arange(n_resamples), n_units), draws.ravel()), 1.0)
    return w


def resampled_ba(counts, boot, kinds):
    """BA of one candidate under every bootstrap resample, shape (n_resamples,)."""
    sat = boot @ counts.sat
    tot = boot @ counts.tot
    return balanced_accuracy(sat, tot, kinds=kinds)
