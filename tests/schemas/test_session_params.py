"""URASC session parameters on the wire: explore is "auto" or a fraction in [0, 1]."""

import pytest
from marshmallow import ValidationError

from schemas.sessions import URASCParamsSchema


@pytest.mark.parametrize("value", ["auto", 0, 0.0, 0.25, 1])
def test_explore_accepts_auto_or_a_fraction(value):
    out = URASCParamsSchema().load({"explore": value})
    assert out["explore"] == value and type(out["explore"]) is (str if value == "auto" else float)


@pytest.mark.parametrize("value", [-0.1, 1.5, "always", True, None, float("nan")])
def test_explore_rejects_other_values_naming_the_field(value):
    with pytest.raises(ValidationError) as err:
        URASCParamsSchema().load({"explore": value})
    assert "explore" in err.value.messages


def test_explore_defaults_to_auto():
    assert URASCParamsSchema().load({})["explore"] == "auto"
