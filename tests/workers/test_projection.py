"""The 2-D map of a result's rows (workers.projection)."""

import numpy as np
from sklearn.datasets import make_blobs

from workers.projection import N_NEIGHBOURS, project


def test_map_of_every_row_with_nearest_neighbours_in_the_same_blob():
    X, y = make_blobs(90, centers=[[0, 0, 0], [20, 0, 0], [0, 20, 0]], cluster_std=0.5, random_state=0)
    out = project(X)
    assert out["source"] == "data" and not out["sampled"]
    assert out["rows"] == list(range(90)) and np.asarray(out["xy"]).shape == (90, 2)
    assert sum(out["explained_variance_ratio"]) > 0.99  # three blobs in a plane
    assert all(len(nb) == N_NEIGHBOURS for nb in out["neighbours"])
    assert all(i not in nb and all(y[j] == y[i] for j in nb) for i, nb in enumerate(out["neighbours"]))


def test_large_data_is_a_seeded_sample_and_an_embedding_replaces_the_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    a, b = project(X, max_points=100, random_state=3), project(X, max_points=100, random_state=3)
    assert a["sampled"] and a["n_samples"] == 500 and len(a["rows"]) == len(a["xy"]) == 100
    assert a["rows"] == b["rows"] == sorted(a["rows"]) and a["xy"] == b["xy"]
    assert set(r for nb in a["neighbours"] for r in nb) <= set(a["rows"])
    E = np.c_[np.arange(500.0), np.zeros(500)]
    emb = project(X, embedding=E)
    assert emb["source"] == "embedding"
    assert abs(np.corrcoef(np.asarray(emb["xy"])[:, 0], np.arange(500))[0, 1]) > 0.999


def test_one_column_constant_and_single_row_inputs_are_drawn():
    line = project(np.arange(10.0)[:, None])
    assert np.allclose(np.asarray(line["xy"])[:, 1], 0) and line["explained_variance_ratio"][1] == 0
    flat = project(np.ones((5, 3)))
    assert np.allclose(flat["xy"], 0) and len(flat["neighbours"][0]) == 4
    one = project(np.ones((1, 3)))
    assert one["xy"] == [[0.0, 0.0]] and one["neighbours"] == [[]]


def test_values_near_the_float_limit_are_mapped_like_the_same_rows_scaled_down():
    X, _ = make_blobs(40, centers=3, n_features=3, random_state=2)
    big, small = project(X * (1e300 / np.abs(X).max())), project(X)
    assert np.isfinite(big["xy"]).all() and big["neighbours"] == small["neighbours"]
    assert np.allclose(np.abs(big["xy"]), np.abs(small["xy"]), atol=1e-3)
    assert np.allclose(big["explained_variance_ratio"], small["explained_variance_ratio"])
