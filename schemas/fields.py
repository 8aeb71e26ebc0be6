"""Custom fields: numeric matrices and index tuples, checked without loss.

Values are never coerced silently: strings, booleans and nulls inside a
matrix are errors, not numbers; NaN and infinity (which Python's JSON
parser accepts) are rejected with the offending cell named.
"""

import math
import numbers
from itertools import chain

import numpy as np
from marshmallow import ValidationError, fields, validate


def one_of(default, choices, description=None):
    """A string parameter that must be one of ``choices``, ``default`` when absent.

    Parameters
    ----------
    default : str
        Value loaded when the field is missing.
    choices : list of str
        Accepted values; anything else is a ``ValidationError`` naming them.
    description : str or None
        OpenAPI / ``GET /v1/methods`` description.

    Returns
    -------
    marshmallow.fields.String
    """
    metadata = {"description": description} if description else {}
    return fields.String(load_default=default, validate=validate.OneOf(list(choices)), metadata=metadata)


def no_repeats(what):
    """A list validator refusing repeated values, e.g. ``no_repeats("item id")``.

    Parameters
    ----------
    what : str
        What one value is, for the message.

    Returns
    -------
    callable
        ``check(values)`` raising ``marshmallow.ValidationError`` ("item id 'a'
        appears more than once") on the first repeated value.
    """

    def check(values):
        seen = set()
        for v in values:
            if v in seen:
                raise ValidationError(f"{what} {v!r} appears more than once")
            seen.add(v)

    return check


def _is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


class Matrix(fields.Field):
    """A non-empty rectangular list of lists of finite numbers -> float64 ndarray.

    Deserialises to ``ndarray of shape (n_rows, n_cols), dtype float64``.
    Errors name the first bad cell as ``[row][col]``.
    """

    default_error_messages = {
        "type": "must be a list of rows, each a list of numbers",
        "empty": "must have at least one row and one column",
        "ragged": "row {row} has {got} values, row 0 has {want}; all rows must have the same length",
        "cell": "cell [{row}][{col}] = {value} is not a number",
        "finite": "cell [{row}][{col}] is {value}; values must be finite (no NaN or Infinity)",
    }

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, list) or not value:
            raise self.make_error("type" if not isinstance(value, list) else "empty")
        want = None
        for r, row in enumerate(value):
            if not isinstance(row, list):
                raise self.make_error("type")
            if want is None:
                want = len(row)
                if want == 0:
                    raise self.make_error("empty")
            elif len(row) != want:
                raise self.make_error("ragged", row=r, got=len(row), want=want)
        flat = list(chain.from_iterable(value))
        if not set(map(type, flat)) <= {int, float}:
            k = next(i for i, v in enumerate(flat) if not _is_number(v))
            r, c = divmod(k, want)
            raise self.make_error("cell", row=r, col=c, value=repr(value[r][c])[:40])
        try:
            out = np.array(flat, dtype=np.float64).reshape(len(value), want)
        except OverflowError as exc:  # integers beyond float range
            raise ValidationError("contains a number too large for 64-bit floating point") from exc
        finite = np.isfinite(out)
        if not finite.all():
            r, c = map(int, np.argwhere(~finite)[0])
            raise self.make_error("finite", row=r, col=c, value=value[r][c])
        return np.ascontiguousarray(out)

    def _serialize(self, value, attr, obj, **kwargs):
        return None if value is None else np.asarray(value).tolist()


class StrictInteger(fields.Integer):
    """Integer that rejects floats, booleans and numeric strings."""

    def __init__(self, **kwargs):
        super().__init__(strict=True, **kwargs)

    def _validated(self, value):
        if isinstance(value, bool):
            raise self.make_error("invalid")
        return super()._validated(value)


class FiniteFloat(fields.Float):
    """Float that rejects NaN, infinity, booleans and strings."""

    def __init__(self, **kwargs):
        super().__init__(allow_nan=False, **kwargs)

    def _validated(self, value):
        if isinstance(value, (bool, str)):
            raise self.make_error("invalid")
        out = super()._validated(value)
        if out is not None and not math.isfinite(out):
            raise self.make_error("special")
        return out


class NumberOrChoice(fields.Field):
    """A finite number in a range, or one of the given strings.

    ``low < value`` (``low <= value`` with ``low_inclusive``) and, when
    ``high`` is given, ``value <= high``; e.g. URASC's ``explore``: "auto" or a
    fraction in [0, 1].

    Parameters
    ----------
    choices : sequence of str
        Accepted strings, loaded unchanged.
    low : float, default=0.0
        Lower bound of the numbers (unitless; the parameter's own unit).
    low_inclusive : bool, default=False
        Whether ``low`` itself is accepted.
    high : float or None, default=None
        Inclusive upper bound; None = unbounded.
    integer : bool, default=False
        Accept only JSON integers (``3``; not ``3.0`` or ``2.5``, as
        :class:`StrictInteger`), loaded as ``int``.
    **kwargs
        marshmallow ``Field`` options (``load_default``, ``metadata``, ...).

    Raises
    ------
    marshmallow.ValidationError
        On load: not one of ``choices`` and not a finite number in range
        (booleans are not numbers); the message names both.
    """

    default_error_messages = {"invalid": "Must be a finite {number} {range} or one of: {choices}."}

    def __init__(self, choices, *, low=0.0, low_inclusive=False, high=None, integer=False, **kwargs):
        super().__init__(**kwargs)
        self.choices = tuple(choices)
        self.low, self.low_inclusive, self.high = float(low), bool(low_inclusive), high
        self.integer = bool(integer)

    def _range(self):
        lo = f"{'>=' if self.low_inclusive else '>'} {self.low:g}"
        return lo if self.high is None else f"{lo} and <= {self.high:g}"

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str) and value in self.choices:
            return value
        number = None
        if _is_number(value) and (isinstance(value, int) or not self.integer):
            try:  # integers stay exact; float(10**400) overflows
                number = value if self.integer else float(value)
            except OverflowError:
                pass
        if number is not None and (self.integer or math.isfinite(number)):
            above = number >= self.low if self.low_inclusive else number > self.low
            if above and (self.high is None or number <= self.high):
                return number
        raise self.make_error("invalid", number="integer" if self.integer else "number", range=self._range(),
                              choices=", ".join(self.choices))

    def _serialize(self, value, attr, obj, **kwargs):
        return value


class PositiveOrChoice(NumberOrChoice):
    """A finite number > 0, or one of the given strings (e.g. ``sigma``: 0.8, "auto" or "select")."""

    def __init__(self, choices, **kwargs):
        super().__init__(choices, low=0.0, **kwargs)


class IndexTuples(fields.Field):
    """A list of fixed-width integer tuples (pairs, triplets) -> int64 ndarray.

    Parameters
    ----------
    width : int
        2 for pairs, 3 for triplets.
    answer : bool
        If True each tuple carries a trailing answer string
        (``"yes"``, ``"no"``, ``"dont_know"``); deserialises to
        ``(indices (m, width) int64, answers list of str)``.
    """

    ANSWERS = ("yes", "no", "dont_know")
    default_error_messages = {
        "type": "must be a list of [{spec}] lists",
        "entry": "entry {row} must be [{spec}], got {value}",
        "index": "entry {row}: {value} is not a non-negative integer index",
        "answer": "entry {row}: answer {value} must be one of yes, no, dont_know",
    }

    def __init__(self, width, *, answer=False, **kwargs):
        super().__init__(**kwargs)
        self.width = width
        self.answer = answer
        names = ["a", "b", "c"][:width] if width == 3 else ["i", "j"]
        self.spec = ", ".join(names + (["answer"] if answer else []))

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, list):
            raise self.make_error("type", spec=self.spec)
        size = self.width + (1 if self.answer else 0)
        out = np.empty((len(value), self.width), dtype=np.int64)
        answers = []
        for r, item in enumerate(value):
            if not isinstance(item, list) or len(item) != size:
                raise self.make_error("entry", row=r, spec=self.spec, value=repr(item)[:80])
            for c in range(self.width):
                v = item[c]
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise self.make_error("index", row=r, value=repr(v)[:40])
                if v > np.iinfo(np.int64).max:
                    raise self.make_error("index", row=r, value=repr(v)[:40])
                out[r, c] = v
            if self.answer:
                a = item[self.width]
                if a not in self.ANSWERS:
                    raise self.make_error("answer", row=r, value=repr(a)[:40])
                answers.append(a)
        return (out, answers) if self.answer else out

    def _serialize(self, value, attr, obj, **kwargs):
        if value is None:
            return None
        if self.answer:
            idx, answers = value
            return [list(map(int, row)) + [a] for row, a in zip(idx, answers)]
        return np.asarray(value).tolist()
