"""Every numeric bound GET /v1/methods advertises is the bound the validators apply."""

import math

import pytest
from marshmallow import ValidationError

from service.methods import METHODS
from schemas.sessions import TripletParamsSchema, URASCParamsSchema

SESSION_SCHEMAS = {"pairwise": URASCParamsSchema, "triplet": TripletParamsSchema}


def _advertised(client):
    """(where, params schema, param doc) for every parameter with a numeric bound."""
    cat = client.get("/v1/methods").json
    out = []
    for m in cat["methods"]:
        out += [(m["id"], METHODS[m["id"]]["params"], p) for p in m["params"]]
    for s in cat["session_strategies"]:
        out += [(f"session {s['question_type']}", SESSION_SCHEMAS[s["question_type"]], p) for p in s["params"]]
    return [o for o in out if o[2].get("minimum") is not None or o[2].get("maximum") is not None]


def _accepted(schema, name, value):
    try:
        schema().load({name: value})
        return True
    except ValidationError as exc:
        assert list(exc.messages) == [name], exc.messages
        return False


def _step(bound, direction, integer):
    """The next value past ``bound`` in ``direction`` (+1 up, -1 down) of the parameter's type."""
    return int(bound) + direction if integer else math.nextafter(bound, direction * math.inf)


def test_every_advertised_bound_is_accepted_or_refused_exactly_as_advertised(client):
    checked, wrong = 0, []
    for where, schema, p in _advertised(client):
        integer = p["type"].startswith("integer")
        for bound, flag, outward in (("minimum", "exclusiveMinimum", -1), ("maximum", "exclusiveMaximum", +1)):
            b = p.get(bound)
            if b is None:
                continue
            assert isinstance(p.get(flag, False), bool), (where, p)
            exclusive = p.get(flag, False)
            at = int(b) if integer else float(b)
            expect = {at: not exclusive,                              # the bound itself
                      _step(at, outward, integer): False,             # just outside
                      _step(at, -outward, integer): True}             # just inside
            for value, ok in expect.items():
                checked += 1
                if _accepted(schema, p["name"], value) != ok:
                    wrong.append(f"{where} {p['name']}={value!r}: advertised {'valid' if ok else 'invalid'}")
    assert not wrong, wrong
    assert checked > 100  # the whole catalogue, not a handful


@pytest.mark.parametrize("method, name", [("dcrc", "l2_penalty"), ("ccskl", "balance"), ("ccskl", "sigma"),
                                          ("e2cp", "sigma"), ("spectral", "sigma"),
                                          ("spectral_learning", "sigma"), ("cop_rf", "filter_fraction")])
def test_the_reported_exclusive_bounds_are_advertised_as_exclusive(client, method, name):
    (doc,) = [p for m in client.get("/v1/methods").json["methods"] if m["id"] == method
              for p in m["params"] if p["name"] == name]
    assert doc["minimum"] == 0 and doc["exclusiveMinimum"] is True
    if name == "filter_fraction":
        assert doc["maximum"] == 1 and doc["exclusiveMaximum"] is True
