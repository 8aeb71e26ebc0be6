"""ReCon: hierarchical clustering that satisfies relative constraints ab|c."""

from ._estimator import ReCon

__all__ = ["ReCon"]
