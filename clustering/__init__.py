"""Shoal's constrained-clustering algorithms (numpy / scipy / scikit-learn only).

Public estimators follow scikit-learn: parameters in ``__init__``,
``fit(X, ...)`` returns ``self``, learned state ends in ``_``.
Pairwise constraints go to ``fit`` as ``pairs`` (m, 2), ``pair_kind`` (m,)
in {+1 must-link, -1 cannot-link} and optional ``pair_weight`` (m,) in (0, 1];
relative constraints as ``triplets`` (t, 3) and ``triplet_answer`` (t,) in
{+1 yes, -1 no, 0 don't know}.

The estimators are imported on first use (``from clustering import COPRF``), so that the modules
without estimators (``clustering.cards``, ``clustering.validation``) load alone, as in the web process.
"""

from importlib import import_module

from .exceptions import ConstraintWarning, InfeasibleConstraintsError, InvalidInputError

#: Public estimator -> the module defining it.
_ESTIMATORS = {
    "ActiveDCRC": "._dcrc",
    "CCSKL": "._ccskl",
    "COPKMeans": ".baselines",
    "COPRF": "._cop_rf",
    "DCRC": "._dcrc",
    "E2CP": ".baselines",
    "ReCon": "._recon",
    "SpectralClustering": ".baselines",
    "SpectralLearning": ".baselines",
    "URASC": "._urasc",
}

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


def __getattr__(name):
    if name in _ESTIMATORS:
        value = getattr(import_module(_ESTIMATORS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_ESTIMATORS))
