"""CCSKL: Constrained Clustering by Spectral Kernel Learning (Li and Liu, ICCV 2009)."""

from ._estimator import CCSKL

__all__ = ["CCSKL"]
