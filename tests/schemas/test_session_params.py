"""URASC session parameters on the wire: explore and discriminant_weight are "auto" or a fraction in [0, 1]."""

import pytest
from marshmallow import ValidationError

from schemas.sessions import URASCParamsSchema

FRACTIONS = ["explore", "discriminant_weight"]


@pytest.mark.parametrize("field", FRACTIONS)
@pytest.mark.parametrize("value", ["auto", 0, 0.0, 0.25, 1])
def test_fractions_accept_auto_or_a_fraction(field, value):
    out = URASCParamsSchema().load({field: value})
    assert out[field] == value and type(out[field]) is (str if value == "auto" else float)


@pytest.mark.parametrize("field", FRACTIONS)
@pytest.mark.parametrize("value", [-0.1, 1.5, "always", True, None, float("nan")])
def test_fractions_reject_other_values_naming_the_field(field, value):
    with pytest.raises(ValidationError) as err:
        URASCParamsSchema().load({field: value})
    assert list(err.value.messages) == [field]


@pytest.mark.parametrize("field", FRACTIONS)
def test_fractions_default_to_auto(field):
    assert URASCParamsSchema().load({})[field] == "auto"
