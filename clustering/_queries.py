"""Shared active-query helper: scores -> top-k indices with a seeded tie-break."""

import numpy as np
from sklearn.utils import check_random_state


def top_k(scores, k, *, random_state=None):
    """Indices of the ``k`` largest finite scores, ties broken at random.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        NaN marks ineligible entries.
    k : int
    random_state : int, RandomState or None

    Returns
    -------
    idx : ndarray of shape (min(k, n_finite),), int64, best first
    """
    s = np.asarray(scores, dtype=float)
    eligible = np.flatnonzero(np.isfinite(s))
    if eligible.size == 0 or k <= 0:
        return np.empty(0, dtype=np.int64)
    rng = check_random_state(random_state)
    tie = rng.random_sample(eligible.size)
    order = np.lexsort((tie, -s[eligible]))
    return eligible[order[:k]].astype(np.int64)
