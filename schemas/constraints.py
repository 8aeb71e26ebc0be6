"""Side information: pairwise, triplet, relative and hierarchical constraints."""

from marshmallow import Schema, ValidationError, fields, validates_schema

from .fields import FiniteFloat, IndexTuples

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
