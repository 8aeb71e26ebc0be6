"""Relative-constraint checks for the HTTP layer and the workers: feasibility (Aho et al.'s BUILD)
and the ab|c constraints a hierarchy stands for.

Thin entry points over :mod:`clustering._relative` (numpy only, no estimator), above
:mod:`clustering.validation`, which ``_relative`` uses to check its inputs.
"""

import numpy as np

from ._relative import check_relative_feasibility as _check
from ._relative import hierarchy_triplets

__all__ = ["check_relative_feasibility", "hierarchy_constraints"]


def check_relative_feasibility(triplets, n_samples, answers=None, *, minimal=True):
    """Is there a hierarchy displaying every relative constraint ab|c?

    Thin entry point for the HTTP layer; the BUILD test itself lives with
    ReCon (:func:`clustering._relative.check_relative_feasibility`, Aho et al.'s
    OneTree, ``specs/recon.md`` §4.1-4.2).

    Parameters
    ----------
    triplets : array-like of shape (m, 3)
        Rows ``(a, b, c)``; with ``answers=None`` each means ab|c.
    n_samples : int
    answers : array-like of shape (m,) or None
        +1/"yes" -> ab|c, -1/"no" -> ac|b, 0/"dont_know" -> no constraint.
    minimal : bool, default=True
        Return a minimal conflicting subset.

    Returns
    -------
    dict
        ``{"feasible": bool, "conflicting_triplets": [row indices], "n_relative": int}``.

    Raises
    ------
    InvalidInputError
        Malformed triplets or answers.
    """
    return _check(triplets, n_samples, answers, minimal=minimal)


def hierarchy_constraints(tree):
    """The ab|c relative constraints a hierarchy stands for, as ReCon takes them with it.

    Thin entry point for the HTTP layer and the workers
    (:func:`clustering._relative.hierarchy_triplets`, RC-13): BUILD on these
    rows gives back the tree.

    Parameters
    ----------
    tree : nested list
        The hierarchy, leaves being row indices (as :func:`clustering.validation.check_hierarchy`
        accepted it).

    Returns
    -------
    ndarray of shape (m, 3), int64
        Rows ``(a, b, c)`` meaning ab|c; ``m`` is :func:`clustering.validation.count_hierarchy_constraints`.
    """
    return np.asarray(hierarchy_triplets(tree), dtype=np.int64).reshape(-1, 3)
