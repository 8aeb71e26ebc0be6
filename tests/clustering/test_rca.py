"""Relevant-component directions from must-links (clustering._cop_rf._rca)."""

import numpy as np
import pytest

from clustering._cop_rf._rca import rca_components
from clustering.exceptions import InvalidInputError


def _oblique_classes(n=200, seed=0):
    """Two classes 3 apart along (1, 1)/sqrt(2); a nuisance spread of sd 6
    along (1, -1)/sqrt(2), so the data's largest variance is the nuisance."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    u = np.array([1.0, 1.0]) / np.sqrt(2)
    v = np.array([1.0, -1.0]) / np.sqrt(2)
    X = np.outer(3.0 * y + 0.3 * rng.standard_normal(n), u) + np.outer(6.0 * rng.standard_normal(n), v)
    return X, y


def _must_links(y, m, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < m:
        i, j = rng.integers(0, len(y), 2)
        if i != j and y[i] == y[j]:
            out.append((i, j))
    return np.array(out)


def test_first_component_is_the_class_direction_not_the_largest_variance():
    X, y = _oblique_classes()
    pairs = _must_links(y, 15, 1)
    comps, mean = rca_components(X, pairs, np.ones(len(pairs)))
    assert comps.shape == (2, 2) and mean.shape == (2,)
    first = comps[0] / np.linalg.norm(comps[0])
    assert abs(first @ np.array([1.0, 1.0]) / np.sqrt(2)) > 0.99
    Z = (X - mean) @ comps.T
    np.testing.assert_allclose(Z.std(axis=0), 1.0)
    # the first feature separates the classes by a threshold; PCA's would not
    z = Z[:, 0] * np.sign(np.corrcoef(Z[:, 0], y)[0, 1])
    assert np.mean((z > 0) == (y == 1)) > 0.98
    top_pc = np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
    assert abs(top_pc @ np.array([1.0, 1.0]) / np.sqrt(2)) < 0.3


def test_features_do_not_depend_on_the_scale_or_offset_of_the_columns():
    X, y = _oblique_classes(seed=2)
    pairs = _must_links(y, 10, 3)
    kind = np.ones(len(pairs))
    c1, m1 = rca_components(X, pairs, kind, shrinkage=0.0)
    Xs = X * np.array([100.0, 0.01]) + np.array([5.0, -3.0])
    c2, m2 = rca_components(Xs, pairs, kind, shrinkage=0.0)
    Z1 = (X - m1) @ c1.T
    Z2 = (Xs - m2) @ c2.T
    np.testing.assert_allclose(np.abs(Z1), np.abs(Z2), atol=1e-6)


def test_only_must_links_and_their_weights_count():
    X, y = _oblique_classes(seed=4)
    ml = _must_links(y, 10, 5)
    cl = np.array([[0, 1], [2, 3], [4, 5]])  # cannot-links: ignored
    pairs = np.vstack([ml, cl])
    kind = np.r_[np.ones(len(ml)), -np.ones(len(cl))]
    c1, _ = rca_components(X, ml, np.ones(len(ml)))
    c2, _ = rca_components(X, pairs, kind)
    np.testing.assert_allclose(c1, c2)
    # a must-link across the classes, weighted down, moves the result less
    wrong = np.vstack([ml, [[0, 1]]])
    k = np.ones(len(wrong))
    full, _ = rca_components(X, wrong, k)
    light, _ = rca_components(X, wrong, k, np.r_[np.ones(len(ml)), 0.01])
    assert np.abs(light - c1).max() < np.abs(full - c1).max()


def test_without_must_links_there_is_nothing_to_learn():
    X, _ = _oblique_classes()
    assert rca_components(X, np.array([[0, 1]]), np.array([-1])) == (None, None)
    assert rca_components(X, np.empty((0, 2), int), np.empty(0)) == (None, None)


def test_n_components_is_capped_and_checked():
    X, y = _oblique_classes()
    pairs = _must_links(y, 5, 0)
    assert rca_components(X, pairs, np.ones(5), n_components=1)[0].shape == (1, 2)
    assert rca_components(X, pairs, np.ones(5), n_components=7)[0].shape == (2, 2)
    for kw in (dict(n_components=0), dict(shrinkage=1.0), dict(shrinkage=-0.1)):
        with pytest.raises(InvalidInputError):
            rca_components(X, pairs, np.ones(5), **kw)
