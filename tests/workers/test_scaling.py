"""The worker's z-scoring: the same result at any scale, never overflowing to a column of zeros."""

import numpy as np
import pytest

from workers.tasks import zscore, zscore_stats

RNG = np.random.default_rng(0)
X = np.column_stack([RNG.normal(size=50), RNG.normal(3, 2, size=50), np.full(50, 7.0)])


@pytest.mark.parametrize("scale", [1.0, 1e100, 1e300, 1e-300])
def test_zscore_does_not_depend_on_the_scale_of_the_data(scale):
    Z = zscore(X * scale)  # np.std(X * 1e300) is inf: every value became 0
    assert np.isfinite(Z).all()
    np.testing.assert_allclose(Z, zscore(X), atol=1e-12)
    np.testing.assert_allclose(Z[:, :2].mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Z[:, :2].std(axis=0), 1, atol=1e-12)
    assert (Z[:, 2] == 0).all()  # a constant column


def test_stored_statistics_standardise_new_rows_as_the_training_rows():
    mean, std = zscore_stats(X * 1e300)
    assert np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()
    np.testing.assert_allclose(zscore(X[:5] * 1e300, mean, std), zscore(X * 1e300)[:5], atol=1e-12)
