"""One contract over every estimator (scikit-learn shape, errors, cancellation, determinism)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from clustering.exceptions import InvalidInputError
from clustering.validation import MAX_ABS_VALUE
from workers.registry import METHODS, build, fit_kwargs

X, Y = make_blobs(45, centers=[[0, 0], [6, 6], [-6, 6]], cluster_std=0.6, random_state=2)

FAST = {"cop_rf": {"n_estimators": 20, "filter_repeats": 20}}


def _constraints(kind):
    rng = np.random.default_rng(0)
    if kind == "pairwise":
        ml, cl = [], []
        while len(ml) + len(cl) < 12:
            i, j = map(int, rng.choice(len(Y), 2, replace=False))
            (ml if Y[i] == Y[j] else cl).append([i, j])
        return {"must_link": ml, "cannot_link": cl}
    if kind == "triplets":
        trip = []
        while len(trip) < 15:
            a, b, c = map(int, rng.choice(len(Y), 3, replace=False))
            if Y[a] == Y[b] != Y[c]:
                trip.append([a, b, c, "yes"])
        return {"triplets": trip}
    return {}


def _case(method, callback=None, random_state=0):
    spec = METHODS[method]
    kind = spec.inputs[0] if spec.inputs else None
    est = build(method, n_clusters=3, params=FAST.get(method, {}), random_state=random_state, callback=callback)
    return est, fit_kwargs(method, _constraints(kind))


@pytest.mark.parametrize("method", sorted(METHODS))
def test_fit_returns_self_with_valid_labels(method):
    est, kw = _case(method)
    assert est.fit(X, **kw) is est
    labels = est.labels_
    assert labels.shape == (len(Y),) and labels.dtype == np.int64
    assert labels.min() >= 0 and labels.max() < 3
    clone(est)  # parameters round-trip through get_params


@pytest.mark.parametrize("method", sorted(METHODS))
def test_deterministic_for_a_seed(method):
    a, kw = _case(method)
    b, _ = _case(method)
    np.testing.assert_array_equal(a.fit(X, **kw).labels_, b.fit(X, **kw).labels_)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_nan_is_a_clear_error(method):
    est, kw = _case(method)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"X\[3\]\[1\]"):
        est.fit(bad, **kw)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_value_beyond_the_magnitude_limit_is_a_clear_error(method):
    """Finite but huge values overflowed once squared (reshape errors, 'Range exceeds valid bounds')."""
    est, kw = _case(method)
    bad = X.copy()
    bad[3, 1], bad[7, 0] = 1e308, -1e308
    with pytest.raises(InvalidInputError, match=r"X\[3\]\[1\] = 1e\+308 is too large"):
        est.fit(bad, **kw)


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("scale", [MAX_ABS_VALUE, 1 / MAX_ABS_VALUE])
def test_data_scaled_to_the_magnitude_limit_clusters_as_the_original(method, scale):
    est, kw = _case(method)
    big = X * (scale / np.abs(X).max())
    assert np.abs(big).max() <= MAX_ABS_VALUE
    labels = est.fit(big, **kw).labels_
    assert adjusted_rand_score(Y, labels) > 0.9, method


#: Methods that clustered data of any magnitude: COP-RF's trees only compare values; DCRC standardises
#: each column first.
ANY_MAGNITUDE = {"cop_rf", "dcrc"}


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("scale", [1e-170, 1e-300])
def test_data_too_small_to_square_clusters_as_the_original_or_is_refused(method, scale):
    """Non-regression: on data within 1e-170 every squared distance underflowed to 0, and every method but
    COP-RF returned labels no better than chance (ARI 0; 1 at scale 1e-100) without a word (DCRC's
    column standard deviations were 0 as well, so it put every row in one cluster)."""
    est, kw = _case(method)
    tiny = X * scale
    if method in ANY_MAGNITUDE:
        assert adjusted_rand_score(Y, est.fit(tiny, **kw).labels_) > 0.9, method
    else:
        with pytest.raises(InvalidInputError, match=r"every value of X lies within .* rescale the data"):
            est.fit(tiny, **kw)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_callback_exception_cancels_the_fit(method):
    class Cancelled(Exception):
        pass

    calls = []

    def callback(stage, fraction):
        calls.append((stage, fraction))
        raise Cancelled

    est, kw = _case(method, callback=callback)
    with pytest.raises(Cancelled):
        est.fit(X, **kw)
    assert calls and 0.0 <= calls[0][1] <= 1.0


@pytest.mark.parametrize("method", [m for m in sorted(METHODS) if "pairwise" in METHODS[m].inputs
                                    and m != "cop_kmeans"])
def test_soft_methods_accept_contradictions(method):
    est, kw = _case(method)
    kw["pairs"] = np.vstack([kw["pairs"], kw["pairs"][:1]])
    kw["pair_kind"] = np.concatenate([kw["pair_kind"], -kw["pair_kind"][:1]])
    kw["pair_weight"] = np.concatenate([kw["pair_weight"], [1.0]])
    est.fit(X, **kw)
    assert est.labels_.shape == (len(Y),)
