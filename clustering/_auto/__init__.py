"""``auto``: the method, its settings and K chosen from the constraints (``specs/auto.md``)."""

from ._candidates import DEFAULT_PRIOR, Candidate, default_candidates
from ._estimator import AutoClustering

__all__ = ["AutoClustering", "Candidate", "DEFAULT_PRIOR", "default_candidates"]
