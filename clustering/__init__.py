"""Shoal's constrained-clustering algorithms (numpy / scipy / scikit-learn only).

Public estimators follow scikit-learn: parameters in ``__init__``,
``fit(X, ...)`` returns ``self``, learned state ends in ``_``.
Pairwise constraints go to ``fit`` as ``pairs`` (m, 2), ``pair_kind`` (m,)
in {+1 must-link, -1 cannot-link} and optional ``pair_weight`` (m,) in (0, 1];
relative constraints as ``triplets`` (t, 3) and ``triplet_answer`` (t,) in
{+1 yes, -1 no, 0 don't know}.
"""

from ._dcrc import ActiveDCRC
from ._ccskl import CCSKL
from ._cop_rf import COPRF
from ._dcrc import DCRC
from ._recon import ReCon
from ._urasc import URASC
from .baselines import E2CP, COPKMeans, SpectralClustering, SpectralLearning
from .exceptions import ConstraintWarning, InfeasibleConstraintsError, InvalidInputError

__all__ = [
    "ActiveDCRC",
    "CCSKL",
    "COPKMeans",
    "COPRF",
    "ConstraintWarning",
    "DCRC",
    "E2CP",
    "InfeasibleConstraintsError",
    "InvalidInputError",
    "ReCon",
    "SpectralClustering",
    "SpectralLearning",
    "URASC",
]
