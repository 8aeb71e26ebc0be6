"""COP-KMeans never fails on satisfiable constraints; true infeasibility names the constraints at fault."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from clustering.baselines import COPKMeans
from clustering.exceptions import InfeasibleConstraintsError


def test_true_constraints_on_iris_always_place_every_sample():
    # the greedy pass in dataset order stranded a sample in 31 of these 50 fits
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    for seed in range(50):
        rng = np.random.default_rng(seed)
        p = rng.integers(0, len(y), (100, 2))
        p = p[p[:, 0] != p[:, 1]]
        k = np.where(y[p[:, 0]] == y[p[:, 1]], 1, -1)
        m = COPKMeans(3, random_state=seed).fit(X, pairs=p, pair_kind=k)
        same = m.labels_[p[:, 0]] == m.labels_[p[:, 1]]
        assert (same == (k == 1)).all()


def test_more_mutually_cannot_linked_groups_than_clusters_names_them():
    X = np.arange(20, dtype=float).reshape(10, 2)
    pairs = [[0, 1], [0, 2], [1, 2], [2, 3], [0, 3], [1, 3], [4, 5]]
    kind = [-1, -1, -1, -1, -1, -1, 1]
    with pytest.raises(InfeasibleConstraintsError) as err:
        COPKMeans(3, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    named = {tuple(sorted(c["cannot_link"])) for c in err.value.conflicts}
    assert named == {(0, 1), (0, 2), (1, 2), (2, 3), (0, 3), (1, 3)}


def test_runs_that_place_every_sample_first_time_keep_their_labels():
    # no cannot-link strands anyone here: the retry machinery must not change the answer
    X, y = load_iris(return_X_y=True)
    p = np.array([[0, 1], [50, 51], [100, 101], [0, 50], [50, 100]])
    k = np.array([1, 1, 1, -1, -1])
    a = COPKMeans(3, random_state=3).fit(X, pairs=p, pair_kind=k).labels_

    b = COPKMeans(3, random_state=3).fit(X, pairs=p, pair_kind=k).labels_
    assert (a == b).all()
