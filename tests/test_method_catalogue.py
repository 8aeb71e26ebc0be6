"""The wire catalogue (schemas.methods) and the worker registry agree with the estimators."""

import pytest

from service.methods import METHODS as WIRE
from workers.registry import METHODS as REGISTRY


def test_same_methods_on_both_sides():
    assert set(WIRE) == set(REGISTRY)


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_wire_params_are_estimator_params_with_same_defaults(method):
    est_params = REGISTRY[method].load_class()().get_params(deep=False)
    fields = WIRE[method]["params"]().fields
    assert set(fields) <= set(est_params), set(fields) - set(est_params)
    for name, field in fields.items():
        assert field.load_default == est_params[name], (name, field.load_default, est_params[name])


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_estimator_takes_what_the_registry_passes(method):
    names = REGISTRY[method].load_class()().get_params(deep=False)
    assert "n_clusters" in names and "random_state" in names and "callback" in names


def test_session_params_are_urasc_params_with_same_defaults():
    from clustering import URASC
    from schemas.sessions import URASCParamsSchema

    est = URASC().get_params(deep=False)
    for name, field in URASCParamsSchema().fields.items():
        assert name in est and field.load_default == est[name], name


def test_triplet_session_params_are_active_dcrc_params_with_same_defaults():
    from clustering import ActiveDCRC
    from schemas.sessions import TripletParamsSchema

    est = ActiveDCRC().get_params(deep=False)
    for name, field in TripletParamsSchema().fields.items():
        assert name in est and field.load_default == est[name], name


def test_rca_components_wire_bound_is_the_rca_column_limit():
    from clustering.validation import RCA_MAX_FEATURES

    assert WIRE["cop_rf"]["params"]().fields["rca_components"].high == RCA_MAX_FEATURES


def test_row_limits_on_the_wire_are_the_estimators_limits():
    """GET /v1/methods' max_samples and the service's refusal use the numbers fit refuses above."""
    from clustering.validation import COP_RF_AUTO_MAX_SAMPLES, E2CP_MAX_SAMPLES

    assert WIRE["e2cp"]["max_samples"] == E2CP_MAX_SAMPLES
    assert WIRE["cop_rf"]["max_samples"] == COP_RF_AUTO_MAX_SAMPLES
    # the wire offers no integer n_neighbors, so the "auto" graph's limit holds for every cop_rf job
    assert set(WIRE["cop_rf"]["params"]().fields["n_neighbors"].validators[0].choices) == {"auto", "select"}
    assert {k for k, m in WIRE.items() if m.get("max_samples") is not None} == {"e2cp", "cop_rf"}


def test_propagation_limit_on_the_wire_is_the_estimators_limit():
    from clustering.validation import E2CP_MAX_PROPAGATION

    assert WIRE["e2cp"]["max_propagation"] == E2CP_MAX_PROPAGATION
    assert {k for k, m in WIRE.items() if m.get("max_propagation") is not None} == {"e2cp"}


def test_ccskl_sigma_select_limit_in_the_catalogue_is_the_estimators_limit():
    """GET /v1/methods quotes sigma="select"'s row limit in the parameter's description."""
    from clustering.validation import CCSKL_SELECT_MAX_SAMPLES

    doc = WIRE["ccskl"]["params"]().fields["sigma"].metadata["description"]
    assert f"most {CCSKL_SELECT_MAX_SAMPLES} rows" in doc and "dataset_too_large_for_option" in doc


def test_closure_limit_on_the_wire_is_the_estimators_limit():
    from clustering.validation import SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS

    assert WIRE["spectral_learning"]["max_closure_pairs"] == SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS
    assert {k for k, m in WIRE.items() if m.get("max_closure_pairs") is not None} == {"spectral_learning"}


def test_cop_rf_tree_rows_limit_in_the_catalogue_is_the_estimators_limit():
    from clustering.validation import COP_RF_AUTO_MAX_SAMPLES, COP_RF_MAX_TREE_ROWS

    doc = WIRE["cop_rf"]["params"]().fields["n_estimators"].metadata["description"]
    assert f"at most {COP_RF_MAX_TREE_ROWS} " in doc and "dataset_too_large_for_option" in doc
    most = COP_RF_MAX_TREE_ROWS // COP_RF_AUTO_MAX_SAMPLES
    assert f"at most {most} trees on {COP_RF_AUTO_MAX_SAMPLES} rows" in doc


def _wire_samples(p):
    """The default and the edge values a card's parameter takes on the wire (bounds, or just inside open ones)."""
    import math

    out = [p.default]
    for r in p.rules:
        if r is None or r is bool:
            out += [None] if r is None else [True, False]
        elif hasattr(r, "values"):
            out += list(r.values)
        elif hasattr(r, "item"):  # a list of options: the shortest (which options fit depends on the constraints)
            out += [list(r.item.values[:r.min_len])]
        else:
            integer = r.kind.__name__ == "Integral"
            for b, inward, closed in ((r.low, 1, r.closed in ("both", "left")),
                                      (r.high, -1, r.closed in ("both", "right"))):
                if b is not None:
                    out.append(b if closed else (b + inward if integer else math.nextafter(b, inward * math.inf)))
    return out


@pytest.mark.parametrize("method", sorted(REGISTRY))
def test_every_edge_value_the_wire_takes_passes_the_estimators_own_checks(method):
    """The card's rules are the wire's; the estimator's constraints (checked in fit) may be wider, never
    narrower: every edge value the wire takes reaches fit's first progress callback (stopped there)."""
    import warnings

    import numpy as np
    from sklearn.datasets import make_blobs

    from clustering.cards import CARDS
    from workers.registry import build, fit_kwargs

    class Reached(Exception):
        pass

    def stop(stage, fraction):
        raise Reached

    X, _ = make_blobs(1200, centers=3, random_state=0)  # more rows than any n_neighbors the wire takes
    card = CARDS[method]
    given = {"pairwise": {"must_link": [[0, 1]], "cannot_link": [[0, 2]]},
             "triplets": {"triplets": [[0, 1, 2, "yes"]]}}.get(card.inputs[0] if card.inputs else None, {})
    checked = 0
    for name, p in card.params.items():
        for value in _wire_samples(p):
            assert WIRE[method]["params"]().load({name: value})[name] == value
            est = build(method, n_clusters=3, params={name: value}, random_state=0, callback=stop)
            with warnings.catch_warnings(), pytest.raises(Reached):
                warnings.simplefilter("ignore")
                est.fit(np.asarray(X), **fit_kwargs(method, given))
            checked += 1
    assert checked >= 2 * len(card.params)
