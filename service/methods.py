"""The method catalogue: ``GET /v1/methods``, and each method's wire form built from its card.

:data:`METHODS` holds, per method id, what the HTTP layer serves and checks: the card's
``clustering.cards`` data with its params schema built by ``schemas.methods.params_schema``.
Nothing here names a method.
"""

import functools

from flask_smorest import Blueprint
from marshmallow import fields as mfields
from marshmallow import validate

from clustering.cards import CARDS
from schemas.methods import CatalogueSchema, params_schema
from schemas.sessions import SESSION_PRESETS, SESSION_STRATEGIES, TripletParamsSchema, URASCParamsSchema



def _wire(card):
    """The catalogue entry of a card: ``params`` a schema class, limits under their catalogue names."""
    entry = {
        "title": card.title,
        "estimator": card.estimator,
        "params": params_schema(card.estimator.rsplit(":", 1)[-1] + "Params", card.params),
        "constraints": list(card.constraints),
        "hard_constraints": card.hard_constraints,
        "outputs": list(card.outputs),
        "reference": card.reference,
        "presets": [dict(p) for p in card.presets],
        "max_samples": card.max_samples,
        "max_samples_reason": card.max_samples_reason,
        "max_propagation": None,
        "max_closure_pairs": None,
    }
    entry.update({lim.name: lim.value for lim in card.constraint_limits})
    return entry


#: Method id -> its wire entry (what ``POST /v1/jobs`` checks against and ``GET /v1/methods`` lists).
METHODS = {name: _wire(card) for name, card in CARDS.items()}

blp = Blueprint("methods", __name__, url_prefix="/v1/methods", description="Available clustering methods")


def _param_doc(name, field):
    """One parameter as ``GET /v1/methods`` lists it.

    Bounds follow OpenAPI 3.0 (the version of ``openapi.yaml``): ``minimum`` / ``maximum`` with
    ``exclusiveMinimum`` / ``exclusiveMaximum: true`` beside them when the bound itself is refused.

    Parameters
    ----------
    name : str
    field : marshmallow.fields.Field
        The field of the method's (or session strategy's) params schema.

    Returns
    -------
    dict
        ``name``, ``type``, ``default``, ``nullable`` and, where they apply, ``choices``,
        ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``description``.
    """
    kind = {mfields.Integer: "integer", mfields.Float: "number", mfields.Boolean: "boolean",
            mfields.String: "string"}
    typ = next((v for k, v in kind.items() if isinstance(field, k)), "any")
    doc = {"name": name, "type": typ, "default": field.load_default, "nullable": field.allow_none}
    if hasattr(field, "choices"):  # NumberOrChoice: a number in a range or one of the named strings
        doc["type"] = "integer or string" if field.integer else "number or string"
        doc["choices"] = list(field.choices)
        low = int(field.low) if field.integer else field.low
        doc["minimum"] = low
        if not field.low_inclusive:
            doc["exclusiveMinimum"] = True
            doc["minimum_exclusive"] = low  # deprecated spelling of the same bound, kept for v1 clients
        if field.high is not None:
            doc["maximum"] = field.high
    for v in field.validators:
        if hasattr(v, "choices"):
            doc["choices"] = list(v.choices)
        if isinstance(v, validate.Range) and (v.min is not None or v.max is not None):
            doc["minimum"], doc["maximum"] = v.min, v.max
            if v.min is not None and not v.min_inclusive:
                doc["exclusiveMinimum"] = True
            if v.max is not None and not v.max_inclusive:
                doc["exclusiveMaximum"] = True
    if field.metadata.get("description"):
        doc["description"] = field.metadata["description"]
    return doc


@functools.cache
def catalogue():
    """The catalogue as a JSON-able dict (what ``GET /v1/methods`` serves).

    Built from the static schemas once per process, on the first request; callers must not
    change it.
    """
    out = []
    for name, m in sorted(METHODS.items()):
        out.append({
            "id": name,
            "title": m["title"],
            "constraints": m["constraints"],
            "hard_constraints": m["hard_constraints"],
            "outputs": m["outputs"],
            "reference": m["reference"],
            "presets": m["presets"],
            "max_samples": m.get("max_samples"),
            "max_samples_reason": m.get("max_samples_reason"),
            "max_propagation": m.get("max_propagation"),
            "max_closure_pairs": m.get("max_closure_pairs"),
            "params": _params_doc(m["params"]),
        })
    params = {"pairwise": URASCParamsSchema, "triplet": TripletParamsSchema}
    sessions = [{"question_type": kind, "strategies": list(strategies), "params": _params_doc(params[kind])}
                for kind, strategies in SESSION_STRATEGIES.items()]
    return {"methods": out, "session_strategies": sessions, "session_presets": SESSION_PRESETS}


def _params_doc(schema_cls):
    return [_param_doc(k, f) for k, f in schema_cls().fields.items()]


@blp.route("")
@blp.response(200, CatalogueSchema)
def list_methods():
    """Every method with its parameters, defaults, constraint kinds and presets.

    ``session_strategies`` gives the strategies and parameters of active sessions per
    ``question_type``, and ``session_presets`` their presets.
    """
    return catalogue()
