"""COP-RF: Constraint Propagation Random Forest (Zhu, Loy & Gong, ICDM 2013): estimator, forest, kernels, RCA."""

from ._estimator import COPRF

__all__ = ["COPRF"]
