"""URASC non-regression tests for edge cases: the fit-time budget, the answer codes ``tell``
accepts, restoring a state saved between ``tell`` and re-clustering, and every answer "no"."""

import json

import numpy as np
import pytest
from sklearn.base import clone

from clustering._urasc import URASC
from clustering.exceptions import InvalidInputError

from .urasc_helpers import _blobs, _oracle


def _round_trip(state):
    return json.loads(json.dumps(state))


# ----------------------------------------------------------------------------- fit(budget=...)

def test_fit_budget_is_the_sessions_and_leaves_the_parameter_alone():
    """Non-regression: fit(X, budget=5) overwrote the constructor parameter (get_params, clone)."""
    X, y = _blobs(40, 3, seed=1)
    est = URASC(budget=50, random_state=0, n_init=2)
    est.fit(X, oracle=_oracle(y), budget=5)
    assert est.get_params()["budget"] == 50 and clone(est).budget == 50
    assert est.budget_ == 5 and est.n_questions_ == 5
    assert est.suggest_queries(3) == []
    restored = URASC.from_state(X, _round_trip(est.get_state()))
    assert restored.budget == 50 and restored.budget_ == 5 and restored.suggest_queries(3) == []
    # without the argument the parameter is the session's budget
    assert URASC(budget=7, random_state=0).fit(X).budget_ == 7
    assert URASC(budget=None, random_state=0).fit(X, budget=None).budget_ is None
    # a state saved before "budget" was part of it kept the session's budget in its params
    old = _round_trip(est.get_state())
    del old["budget"]
    old["params"]["budget"] = 5
    assert URASC.from_state(X, old).budget_ == 5


@pytest.mark.parametrize("budget", [-1, 2.5, "10", True])
def test_fit_rejects_an_invalid_budget(budget):
    X, _ = _blobs(20, 2, seed=0)
    with pytest.raises(InvalidInputError, match="budget"):
        URASC(random_state=0).fit(X, budget=budget)
