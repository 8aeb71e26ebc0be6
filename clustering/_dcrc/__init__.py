"""DCRC: discriminative clustering with relative constraints, and its active form."""

from ._active import ActiveDCRC
from ._estimator import DCRC

__all__ = ["ActiveDCRC", "DCRC"]
