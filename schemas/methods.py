"""The wire form of the method catalogue: parameter schemas built from plain constraint data, and the
documents ``GET /v1/methods`` serves.

A method's parameters are declared once, as constraint data (its card, ``clustering.cards``); the
service passes them to :func:`params_schema`, which builds the marshmallow schema that validates
``POST /v1/jobs``' ``params`` and that ``GET /v1/methods`` documents. Field names equal the
estimator's ``__init__`` names.
"""

import numbers

from marshmallow import RAISE, Schema, fields, validate

from .fields import FiniteFloat, NumberOrChoice, StrictInteger, one_of


class _Params(Schema):
    class Meta:
        unknown = RAISE


def _bounds(rule):
    """``(low, high, low_inclusive, high_inclusive)`` of an interval rule."""
    return (rule.low, rule.high, rule.closed in ("both", "left") or rule.low is None,
            rule.closed in ("both", "right") or rule.high is None)


def param_field(rules, default=None, description=None):
    """The marshmallow field that takes exactly the values ``rules`` allow.

    Parameters
    ----------
    rules : sequence
        Plain constraint data, any of which accepts a value: an interval (an object with ``kind``
        ``numbers.Integral`` or ``numbers.Real``, ``low``, ``high`` (None: unbounded) and ``closed``
        in "both", "left", "right", "neither"), a set of strings (an object with ``values``),
        ``bool``, or ``None`` (null allowed). At most one interval and one set of strings; or a list
        rule alone (an object with ``item``, a set of strings, and ``min_len``).
    default : object
        Loaded when the field is missing.
    description : str or None
        OpenAPI / ``GET /v1/methods`` description.

    Returns
    -------
    marshmallow.fields.Field
        ``Boolean``; ``String`` with ``OneOf``; ``StrictInteger`` / ``FiniteFloat`` with ``Range``;
        for an interval beside strings, ``NumberOrChoice``; for a list rule, ``List`` of its item's field.

    Raises
    ------
    ValueError
        Rules this builder has no field for (an open upper bound beside strings, another type).
    """
    allow_none = None in rules
    rules = [r for r in rules if r is not None]
    metadata = {"description": description} if description else {}
    lists = [r for r in rules if hasattr(r, "item")]
    if lists and len(rules) == 1:
        return fields.List(param_field([lists[0].item]), load_default=default, allow_none=allow_none,
                           validate=validate.Length(min=lists[0].min_len), metadata=metadata)
    intervals = [r for r in rules if hasattr(r, "closed")]
    options = [r for r in rules if hasattr(r, "values")]
    if rules == [bool]:
        return fields.Boolean(load_default=default, allow_none=allow_none, metadata=metadata)
    if len(intervals) + len(options) != len(rules) or len(intervals) > 1 or len(options) > 1:
        raise ValueError(f"no wire field for the rules {rules!r}")
    if options and not intervals:
        field = one_of(default, options[0].values, description)
        field.allow_none = allow_none
        return field
    low, high, low_in, high_in = _bounds(intervals[0])
    integer = intervals[0].kind is numbers.Integral
    if options:
        if not high_in:
            raise ValueError("a number-or-string parameter has an inclusive upper bound")
        return NumberOrChoice(options[0].values, low=0.0 if low is None else low, low_inclusive=low_in,
                              high=high, integer=integer, load_default=default, allow_none=allow_none,
                              metadata=metadata)
    kind = StrictInteger if integer else FiniteFloat
    return kind(load_default=default, allow_none=allow_none, metadata=metadata,
                validate=validate.Range(min=low, max=high, min_inclusive=low_in, max_inclusive=high_in))


def params_schema(name, params):
    """A params schema class (unknown names refused) from ``{name: param}``.

    Parameters
    ----------
    name : str
        The class name ("COPRFParams").
    params : dict of str -> object
        Each with ``rules``, ``default`` and ``description`` (see :func:`param_field`), in the
        order ``GET /v1/methods`` lists them.

    Returns
    -------
    type
        A ``marshmallow.Schema`` subclass.
    """
    return type(name, (_Params,), {k: param_field(p.rules, p.default, p.description) for k, p in params.items()})


# ---------------------------------------------------------------- the catalogue as served


class ParamDocSchema(Schema):
    """One parameter of a method or session strategy, as ``GET /v1/methods`` lists it."""

    name = fields.String()
    type = fields.String(metadata={"description": "integer, number, boolean, string, 'integer or string', ..."})
    default = fields.Raw(allow_none=True)
    nullable = fields.Boolean()
    choices = fields.List(fields.Raw(), metadata={"description": "the accepted strings"})
    minimum = fields.Raw(allow_none=True, metadata={"description": "lower bound, accepted itself unless "
                                                                   "exclusiveMinimum is true"})
    maximum = fields.Raw(allow_none=True, metadata={"description": "upper bound, accepted itself unless "
                                                                   "exclusiveMaximum is true"})
    exclusiveMinimum = fields.Boolean(metadata={"description": "true: values must be greater than minimum "
                                                               "(OpenAPI 3.0); absent: minimum is allowed"})
    exclusiveMaximum = fields.Boolean(metadata={"description": "true: values must be less than maximum "
                                                               "(OpenAPI 3.0); absent: maximum is allowed"})
    minimum_exclusive = fields.Raw(allow_none=True, metadata={
        "description": "deprecated: the same bound as minimum with exclusiveMinimum, on number-or-string "
                       "parameters only"})
    description = fields.String()


class PresetSchema(Schema):
    """A measured parameter set that a job (or a session) names in ``preset``."""

    name = fields.String()
    description = fields.String(metadata={"description": "what it is for, with its measured numbers"})
    params = fields.Dict(keys=fields.String())
    question_type = fields.String(metadata={"description": "session presets only: the sessions it is for"})


class MethodDocSchema(Schema):
    id = fields.String()
    max_samples = fields.Integer(allow_none=True, metadata={
        "description": "most rows a job of this method may have (more is a 422 dataset_too_large_for_method at "
                       "/dataset_id): the largest dataset it fits in one worker's 4 GiB and 3300 s; null: any "
                       "dataset the service accepts (SHOAL_MAX_ROWS). Some options have lower limits, quoted in "
                       "their description"})
    max_propagation = fields.Integer(allow_none=True, metadata={
        "description": "most rows x distinct rows named in must_link / cannot_link (e2cp: its two n x c "
                       "propagation factors; more is a 422 constraints_too_large_for_method at /constraints); "
                       "null: no such limit"})
    max_closure_pairs = fields.Integer(allow_none=True, metadata={
        "description": "with closure=true: most pairs the transitive closure may overwrite (every pair inside a "
                       "must-link group, s (s - 1) / 2 for a group of s rows, plus s_a x s_b for every two "
                       "groups a cannot-link joins); more is a 422 constraints_too_large_for_option at "
                       "/params/closure; null: no such limit"})
    max_samples_reason = fields.String(allow_none=True, metadata={
        "description": "why, with the measurements, and what to use instead on more rows"})
    title = fields.String()
    constraints = fields.List(fields.String(), metadata={"description": "constraint kinds the method reads"})
    hard_constraints = fields.Boolean()
    outputs = fields.List(fields.String())
    reference = fields.String()
    presets = fields.List(fields.Nested(PresetSchema))
    params = fields.List(fields.Nested(ParamDocSchema))


class SessionStrategiesSchema(Schema):
    """The strategies and ``params`` of the sessions of one ``question_type``."""

    question_type = fields.String()
    strategies = fields.List(fields.String(), metadata={"description": "the first is the default"})
    params = fields.List(fields.Nested(ParamDocSchema))


class CatalogueSchema(Schema):
    """``GET /v1/methods``."""

    methods = fields.List(fields.Nested(MethodDocSchema))
    session_strategies = fields.List(fields.Nested(SessionStrategiesSchema))
    session_presets = fields.List(fields.Nested(PresetSchema))
