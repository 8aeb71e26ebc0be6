"""CCSKL ``sigma="select"``: a width whose partitions split off a few rows loses the selection."""

import numpy as np
import pytest

from clustering import CCSKL


def _overlapping_with_a_far_pair(seed):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (100, 2)), rng.normal([1.0, 0], 1, (100, 2)), [[9, 9], [9.05, 9.0]]])
    y = np.r_[np.zeros(100), np.ones(100), [0, 1]].astype(int)
    # mostly must-links: a partition with everything in one cluster satisfies 90% of them
    ml = [(a, b) for a, b in rng.integers(0, 200, (400, 2)) if a != b and y[a] == y[b]][:54]
    cl = [(a, b) for a, b in rng.integers(0, 200, (400, 2)) if y[a] != y[b]][:6]
    return X, np.array(ml + cl), np.r_[np.ones(len(ml)), -np.ones(len(cl))]


@pytest.mark.parametrize("seed", [0, 3])
def test_a_degenerate_width_loses_to_any_other(seed):
    # before: the far pair alone in one cluster, [200, 2], chosen for its held-out must-link score
    X, pairs, kind = _overlapping_with_a_far_pair(seed)
    m = CCSKL(2, sigma="select", random_state=seed).fit(X, pairs=pairs, pair_kind=kind)
    sel = m.diagnostics_["sigma_selection"]
    chosen = int(np.argmin(np.abs(np.asarray(sel["candidates"]) - m.diagnostics_["sigma"])))
    assert not all(sel["degenerate"])
    assert sel["degenerate"][chosen] is False
    assert np.bincount(m.labels_).min() > 2


def test_when_every_width_is_degenerate_the_score_decides():
    X, pairs, kind = _overlapping_with_a_far_pair(1)
    m = CCSKL(2, sigma="select", random_state=1).fit(X, pairs=pairs, pair_kind=kind)
    sel = m.diagnostics_["sigma_selection"]
    assert all(sel["degenerate"]) and sel["degenerate_below_rows"] == 5
    best = max(s for s in sel["held_out_satisfaction"] if s is not None)
    chosen = int(np.argmin(np.abs(np.asarray(sel["candidates"]) - m.diagnostics_["sigma"])))
    assert sel["held_out_satisfaction"][chosen] == best
