"""Exceptions and warnings raised by :mod:`clustering`.

Every error derives from :class:`ValueError` so that callers who only know
scikit-learn conventions can still catch it; the subclasses carry the
structured information (field, index, conflicting constraints) that the HTTP
layer turns into problem details.
"""

__all__ = [
    "ConstraintWarning",
    "InfeasibleConstraintsError",
    "InvalidInputError",
]


class InvalidInputError(ValueError):
    """Input data or constraints are malformed.

    Parameters
    ----------
    message : str
        Human-readable reason, naming the field and the offending value.
    field : str
        Name of the offending argument (``"X"``, ``"must_link"``, ...).
    index : tuple of int or None
        Position of the offending element inside ``field`` (row, column),
        or None when the whole field is wrong.
    """

    def __init__(self, message, *, field, index=None):
        super().__init__(message)
        self.field = field
        self.index = index


class InfeasibleConstraintsError(ValueError):
    """No partition satisfies the hard constraints.

    Raised by methods that treat constraints as hard (COP-KMeans, ReCon
    in strict mode) and by ``on_conflict="reject"`` checks.

    Parameters
    ----------
    message : str
        Human-readable summary.
    conflicts : list of dict
        Each entry describes one contradiction, e.g. for pairwise
        constraints ``{"cannot_link": [a, b], "cannot_link_index": k,
        "must_link_chain": [a, ..., b]}``.
    """

    def __init__(self, message, *, conflicts=()):
        super().__init__(message)
        self.conflicts = list(conflicts)


class ConstraintWarning(UserWarning):
    """Constraints were accepted but something about them is suspicious
    (contradictions kept, constraints that cannot be satisfied, ...)."""
