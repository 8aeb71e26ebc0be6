"""A small parameter checker (Interval / Options), so estimators validate
their ``__init__`` parameters in ``fit`` without scikit-learn privates."""

import numbers

from .exceptions import InvalidInputError


class Interval:
    """Numbers of ``kind`` (``numbers.Integral`` or ``numbers.Real``) in a range.

    ``closed`` is one of "both", "left", "right", "neither".
    """

    def __init__(self, kind, low, high, closed="both"):
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def accepts(self, value):
        if isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        lo_ok = self.low is None or (value >= self.low if self.closed in ("both", "left") else value > self.low)
        hi_ok = self.high is None or (value <= self.high if self.closed in ("both", "right") else value < self.high)
        return lo_ok and hi_ok

    def __str__(self):
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        lo = "-inf" if self.low is None else self.low
        hi = "inf" if self.high is None else self.high
        kind = "an integer" if self.kind is numbers.Integral else "a number"
        return f"{kind} in {left}{lo}, {hi}{right}"


class Options:
    """One of a fixed set of values."""

    def __init__(self, *values):
        self.values = values

    def accepts(self, value):
        return any(value is v or (type(value) is type(v) and value == v) for v in self.values)

    def __str__(self):
        return "one of " + ", ".join(repr(v) for v in self.values)


class ListOf:
    """A list of at least ``min_len`` values, each accepted by ``item`` (an :class:`Options`)."""

    def __init__(self, item, min_len=1):
        self.item, self.min_len = item, min_len

    def accepts(self, value):
        return (isinstance(value, (list, tuple)) and len(value) >= self.min_len
                and all(self.item.accepts(v) for v in value))

    def __str__(self):
        return f"a list of at least {self.min_len}, each {self.item}"


def validate_params(estimator, constraints):
    """Check ``estimator.get_params()`` against ``{name: [Interval | Options | type | None]}``.

    ``None`` in the list allows None; a type allows its instances.

    Raises
    ------
    InvalidInputError
        ``field`` is the parameter name; the message says what is allowed.
    """
    params = estimator.get_params(deep=False)
    for name, allowed in constraints.items():
        value = params[name]
        ok = False
        for rule in allowed:
            if rule is None:
                ok = ok or value is None
            elif isinstance(rule, type):
                ok = ok or (isinstance(value, rule) and not (rule is not bool and isinstance(value, bool)))
            else:
                ok = ok or rule.accepts(value)
        if not ok:
            desc = " or ".join("None" if r is None else (r.__name__ if isinstance(r, type) else str(r)) for r in allowed)
            raise InvalidInputError(
                f"{type(estimator).__name__}: {name} == {value!r}, must be {desc}", field=name
            )
