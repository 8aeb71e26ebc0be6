"""Side information: pairwise, triplet, relative and hierarchical constraints."""

from marshmallow import Schema, ValidationError, fields, validates_schema

from .fields import FiniteFloat, IndexTuples
from .results import ConflictSchema

_PAIRS = {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2}}
_TRIPLETS = {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 3, "maxItems": 3}}
_ANSWERED = {
    "type": "array",
    "items": {"type": "array", "minItems": 4, "maxItems": 4,
              "items": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "enum": ["yes", "no", "dont_know"]}]}},
}


class ConstraintsSchema(Schema):
    """Constraints on 0-based row indices of the job's dataset."""

    must_link = IndexTuples(2, load_default=None, metadata={**_PAIRS, "description": "[i, j]: same cluster"})
    cannot_link = IndexTuples(2, load_default=None, metadata={**_PAIRS, "description": "[i, j]: different clusters"})
    must_link_weights = fields.List(FiniteFloat(), load_default=None,
                                    metadata={"description": "confidence in (0, 1] per must-link"})
    cannot_link_weights = fields.List(FiniteFloat(), load_default=None,
                                      metadata={"description": "confidence in (0, 1] per cannot-link"})
    triplets = IndexTuples(3, answer=True, load_default=None,
                           metadata={**_ANSWERED, "description": "[a, b, c, answer]: is a closer to b than to c?"})
    relative = IndexTuples(3, load_default=None, metadata={**_TRIPLETS, "description": "[a, b, c] meaning ab|c"})
    hierarchy = fields.Raw(load_default=None,
                           metadata={"description": "rooted tree as nested lists of row indices: the root is a "
                                                    "list, every inner node has at least two children, at most "
                                                    "500 levels deep"})

    @validates_schema
    def _weights_match(self, data, **kwargs):
        errors = {}
        for kind in ("must_link", "cannot_link"):
            w = data.get(f"{kind}_weights")
            if w is None:
                continue
            pairs = data.get(kind)
            n = 0 if pairs is None else len(pairs)
            if len(w) != n:
                errors[f"{kind}_weights"] = [f"has {len(w)} values for {n} {kind} pairs"]
            else:
                bad = [i for i, v in enumerate(w) if not 0 < v <= 1]
                if bad:
                    errors[f"{kind}_weights"] = [f"[{bad[0]}] = {w[bad[0]]}, must be in (0, 1]"]
        if errors:
            raise ValidationError(errors)


class RelativeConflictSchema(Schema):
    """One relative constraint of a conflicting subset, by its position in the request."""

    field = fields.String(metadata={"description": "triplets, relative or hierarchy"})
    index = fields.Integer(allow_none=True, metadata={"description": "position in the request's list; null for "
                                                                     "an ab|c constraint of the hierarchy"})
    items = fields.List(fields.Integer(), metadata={"description": "[a, b, c]"})
    answer = fields.String(metadata={"description": "yes, no or dont_know (relative and hierarchy: yes)"})
    item_ids = fields.List(fields.String(), allow_none=True)


class RelativeFeasibilitySchema(Schema):
    feasible = fields.Boolean()
    n_relative = fields.Integer(metadata={"description": "relative constraints checked together"})
    minimal = fields.Boolean(metadata={"description": "whether the conflicting subset is proven minimal (false "
                                                      "when the bounded search stopped first)"})
    conflicting = fields.List(fields.Nested(RelativeConflictSchema))


class ConstraintCheckSchema(Schema):
    """``POST /v1/constraints/check``: the consistency of a constraint set."""

    consistent = fields.Boolean()
    n_constraints = fields.Dict(keys=fields.String(), values=fields.Integer(), metadata={
        "description": "constraints per list given (hierarchy_leaves: the leaves of the hierarchy)"})
    n_conflicts = fields.Integer(metadata={"description": "cannot-links contradicting must-link chains (all of "
                                                         "them; conflicts lists at most 100)"})
    conflicts = fields.List(fields.Nested(ConflictSchema))
    relative = fields.Nested(RelativeFeasibilitySchema, metadata={
        "description": "with triplets, relative or hierarchy constraints only: whether a hierarchy satisfies "
                       "them all, with a conflicting subset"})
