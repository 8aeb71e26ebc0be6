"""URASC: active spectral clustering by uncertainty reduction (estimator and its parts)."""

from ._estimator import URASC

__all__ = ["URASC"]
