"""COP-RF: properties from ``specs/cop_rf.md`` §8 (test oracles)."""

import json
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from clustering._cop_rf import _kernels as K
from clustering._cop_rf import COPRF
from clustering._metrics import constraint_satisfaction
from clustering.exceptions import InvalidInputError

from .test_rca import _oblique_classes


def _blobs(n=90, k=3, d=4, seed=0, std=0.4):
    X, y = make_blobs(n_samples=n, centers=k, n_features=d, cluster_std=std, center_box=(-10, 10), random_state=seed)
    return X, y


def _pairs(y, m, rng):
    n = len(y)
    pairs = []
    seen = set()
    while len(pairs) < m:
        i, j = (int(v) for v in rng.integers(0, n, 2))
        if i != j and (min(i, j), max(i, j)) not in seen:
            seen.add((min(i, j), max(i, j)))
            pairs.append((i, j))
    pairs = np.array(pairs)
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    return pairs, kind


def _walk(tree, X, e0, e1, kind):
    """Yield (node, search set, feature, threshold) for every internal node.

    The search set is the root subset at the root and, below, the P^t
    constraints whose endpoints both reached the node (CR-5)."""
    feat, thr = tree["feature"], tree["threshold"]
    left, right = tree["children_left"], tree["children_right"]
    stack = [(0, np.asarray(tree["constraints"]))]
    while stack:
        node, active = stack.pop()
        f = feat[node]
        if f < 0:
            continue
        search = np.asarray(tree["root_constraints"]) if node == 0 else active
        yield node, search, f, thr[node]
        gl = X[e0[active], f] <= thr[node]
        gr = X[e1[active], f] <= thr[node]
        stack.append((left[node], active[gl & gr]))
        stack.append((right[node], active[~gl & ~gr]))


# ---------------------------------------------------------------- split search
def _brute(v_sorted, g, m, lohi, kinds):
    strict = ml = -1.0
    ps = pm = -1
    bc, bcg, pc = 0, -1.0, -1
    for p in range(m - 1):
        if g[p] < -0.5:
            continue
        sep = [(lo <= v_sorted[p]) and (hi > v_sorted[p]) for lo, hi in lohi]
        if any(s for s, kd in zip(sep, kinds) if kd > 0):
            continue
        if g[p] > K.GAIN_EPS:
            if g[p] > ml:
                ml, pm = g[p], p
            if all(s for s, kd in zip(sep, kinds) if kd < 0) and g[p] > strict:
                strict, ps = g[p], p
        ncov = sum(1 for s, kd in zip(sep, kinds) if kd < 0 and s)
        if ncov > 0 and (ncov > bc or (ncov == bc and g[p] > bcg)):
            bc, bcg, pc = ncov, g[p], p
    return ps, pm, pc


def test_scan_feature_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(300):
        m = int(rng.integers(3, 25))
        vals = rng.integers(0, 6, m).astype(float)
        y = rng.integers(0, 2, m)
        Zt = vals[None, :]
        idx = np.arange(m)
        v = np.empty(m)
        yr = np.empty(m, dtype=np.int64)
        g = np.empty(m)
        R = K._sort_feature(Zt, y, idx, 0, m, 0, v, yr)
        K._gains(v, yr, m, R, g)
        nc = int(rng.integers(0, 5))
        e0 = rng.integers(0, m, nc)
        e1 = rng.integers(0, m, nc)
        kind = rng.choice([-1, 1], nc).astype(np.int64)
        out = np.empty(6)
        K.scan_feature(v, g, m, 0, Zt, e0, e1, kind, np.arange(nc), 0, nc, True, out)
        lohi = [(min(vals[a], vals[b]), max(vals[a], vals[b])) for a, b in zip(e0, e1)]
        ps, pm, pc = _brute(v, g, m, lohi, kind)
        assert (int(out[1]), int(out[3]), int(out[5])) == (ps, pm, pc)


def test_equal_values_cannot_link_blocks_feature_must_link_does_not():
    Zt = np.array([[0.0, 1.0, 2.0, 3.0]])
    y = np.array([1, 0, 1, 0])
    v, yr, g = np.empty(4), np.empty(4, dtype=np.int64), np.empty(4)
    R = K._sort_feature(Zt, y, np.arange(4), 0, 4, 0, v, yr)
    K._gains(v, yr, 4, R, g)
    out = np.empty(6)
    # cannot-link between two rows with the same value (row 1 with itself)
    K.scan_feature(v, g, 4, 0, Zt, np.array([1]), np.array([1]), np.array([-1]), np.array([0]), 0, 1, False, out)
    assert out[1] == -1 and out[3] >= 0
    K.scan_feature(v, g, 4, 0, Zt, np.array([1]), np.array([1]), np.array([1]), np.array([0]), 0, 1, False, out)
    assert out[1] >= 0 and out[3] >= 0


# ---------------------------------------------------------------- tree structure
@pytest.mark.parametrize("policy", ["literal", "relaxed", "separate"])
def test_every_split_respects_its_node_constraints(policy):
    X, y = _blobs(n=60, k=3, d=3, seed=1, std=1.5)
    pairs, kind = _pairs(y, 30, np.random.default_rng(1))
    model = COPRF(3, n_estimators=15, cannot_link_policy=policy, keep_trees=True, filter_repeats=50, random_state=0)
    model.fit(X, pairs=pairs, pair_kind=kind)
    e0, e1 = model.pairs_[:, 0], model.pairs_[:, 1]
    kn = model.pair_kind_
    n_checked = 0
    for tree in model.trees_:
        assert len(tree["root_constraints"]) == (
            int(np.ceil(0.5 * len(tree["constraints"]))) if len(tree["constraints"]) else 0
        )
        for node, search, f, th in _walk(tree, X, e0, e1, kn):
            side0 = X[e0[search], f] <= th
            side1 = X[e1[search], f] <= th
            cut = side0 != side1
            assert not np.any(cut & (kn[search] > 0)), "a must-link was cut"
            if policy == "literal":
                assert np.all(cut[kn[search] < 0]), "a cannot-link was not cut"
            if tree["split_type"][node] != K.SPLIT_FORCED:
                n_checked += 1
    assert n_checked > 0


def test_literal_leaves_have_no_acceptable_split_or_are_pure():
    X, y = _blobs(n=40, k=2, d=2, seed=3, std=1.0)
    pairs, kind = _pairs(y, 12, np.random.default_rng(3))
    model = COPRF(2, n_estimators=5, cannot_link_policy="literal", keep_trees=True, filter_constraints=False,
                  random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    for tree in model.trees_:
        feat = tree["feature"]
        leaf = feat < 0
        real = tree["n_node_real"][leaf]
        total = tree["n_node_samples"][leaf]
        impure = (real > 0) & (real < total) & (total >= 2)
        # an impure leaf is allowed only when constraints forbade every split
        assert impure.sum() == 0 or len(tree["constraints"]) > 0


# ---------------------------------------------------------------- affinity
def test_affinity_symmetric_bounded_zero_diagonal_multiple_of_one_over_T():
    X, y = _blobs(n=70, seed=2, std=1.0)
    pairs, kind = _pairs(y, 20, np.random.default_rng(2))
    T = 30
    model = COPRF(3, n_estimators=T, filter_repeats=50, keep_leaves=True, random_state=3).fit(
        X, pairs=pairs, pair_kind=kind
    )
    A = model.affinity_matrix_
    assert isinstance(A, np.ndarray) and A.shape == (70, 70)
    assert np.array_equal(A, A.T)
    assert np.all(np.diag(A) == 0) and A.min() >= 0 and A.max() <= 1
    assert np.allclose(A * T, np.round(A * T))
    # recomputing A from leaves_ reproduces it exactly (oracle 8)
    L = model.leaves_
    B = (L[:, None, :] == L[None, :, :]).mean(axis=2)
    np.fill_diagonal(B, 0)
    assert np.allclose(A, B, atol=1e-12)
    # kNN graph: symmetric, a subset of A with equal values (oracle 9)
    W = model.knn_graph_
    assert (W != W.T).nnz == 0
    r, c = W.nonzero()
    assert np.allclose(np.asarray(W[r, c]).ravel(), A[r, c])
    k = model.diagnostics_["n_neighbors"]
    assert np.all(np.diff(W.indptr) >= np.minimum(k, (A > 0).sum(1)))


def test_blockwise_knn_equals_dense_path():
    X, y = _blobs(n=80, seed=4, std=1.5)
    pairs, kind = _pairs(y, 15, np.random.default_rng(4))
    kw = dict(n_estimators=20, filter_repeats=30, random_state=5)
    dense = COPRF(3, store_affinity="dense", **kw).fit(X, pairs=pairs, pair_kind=kind)
    block = COPRF(3, store_affinity="none", **kw).fit(X, pairs=pairs, pair_kind=kind)
    assert (dense.knn_graph_ != block.knn_graph_).nnz == 0
    assert np.array_equal(dense.labels_, block.labels_)


def test_power_of_two_scaling_leaves_affinity_unchanged():
    X, y = _blobs(n=50, seed=5, std=1.0)
    pairs, kind = _pairs(y, 10, np.random.default_rng(5))
    kw = dict(n_estimators=10, filter_repeats=20, random_state=1)
    a = COPRF(3, **kw).fit(X, pairs=pairs, pair_kind=kind).affinity_matrix_
    Xs = X * np.array([4.0, 0.5, 1.0, 8.0])
    b = COPRF(3, **kw).fit(Xs, pairs=pairs, pair_kind=kind).affinity_matrix_
    assert np.array_equal(a, b)


def test_filter_and_policy_irrelevant_without_cannot_links():
    X, y = _blobs(n=50, seed=6, std=1.0)
    kw = dict(n_estimators=10, random_state=2)
    a = COPRF(3, filter_constraints=True, **kw).fit(X).affinity_matrix_
    b = COPRF(3, filter_constraints=False, **kw).fit(X).affinity_matrix_
    assert np.array_equal(a, b)
    ml = np.array([[0, 1], [2, 3], [4, 5]])
    c = COPRF(3, cannot_link_policy="literal", **kw).fit(X, pairs=ml, pair_kind=[1, 1, 1]).affinity_matrix_
    d = COPRF(3, cannot_link_policy="relaxed", **kw).fit(X, pairs=ml, pair_kind=[1, 1, 1]).affinity_matrix_
    e = COPRF(3, cannot_link_policy="separate", **kw).fit(X, pairs=ml, pair_kind=[1, 1, 1]).affinity_matrix_
    assert np.array_equal(c, d) and np.array_equal(c, e)


def test_in_bag_affinity_holds_must_links_and_matches_its_graph():
    # Without the root filter no policy cuts an in-bag must-link, so with
    # affinity_samples="in_bag" every covered must-link pair has affinity 1.
    X, y = _blobs(n=70, seed=14, std=2.5)
    pairs, kind = _pairs(y, 30, np.random.default_rng(8))
    for policy in ("relaxed", "separate"):
        fits = [
            COPRF(3, n_estimators=12, cannot_link_policy=policy, filter_constraints=False,
                  affinity_samples="in_bag", n_jobs=nj, random_state=6).fit(X, pairs=pairs, pair_kind=kind)
            for nj in (1, 2)
        ]
        A = fits[0].affinity_matrix_
        assert np.array_equal(A, fits[1].affinity_matrix_)
        assert np.array_equal(fits[0].labels_, fits[1].labels_)
        assert np.array_equal(A, A.T) and np.all(np.diag(A) == 0) and A.min() >= 0 and A.max() <= 1
        ml = (kind > 0) & (fits[0].constraint_coverage_ > 0)
        assert ml.any() and np.all(A[pairs[ml, 0], pairs[ml, 1]] == 1.0)
        W = fits[0].knn_graph_.tocoo()
        assert np.array_equal(W.data, A[W.row, W.col])
        assert (fits[0].knn_graph_ != fits[0].knn_graph_.T).nnz == 0


def test_marginal_pseudo_samples_are_observed_values():
    # Addcl1: pseudo values are drawn from the observed values of each
    # feature, so every threshold is the midpoint of two observed values
    # (CR-7 candidates, 4.4 step 7); uniform pseudo values (CR-1) fall
    # between observed values and yield other thresholds.
    X, y = _blobs(n=60, seed=13, std=1.5)
    pairs, kind = _pairs(y, 12, np.random.default_rng(3))
    mids = []
    for f in range(X.shape[1]):
        u = np.unique(X[:, f])
        mids.append(set((u[:, None] / 2.0 + u[None, :] / 2.0).ravel().tolist()))
    share = {}
    for mode in ("marginal", "uniform"):
        model = COPRF(3, n_estimators=8, filter_repeats=20, pseudo_samples=mode, keep_trees=True, random_state=4)
        model.fit(X, pairs=pairs, pair_kind=kind)
        hits = [
            float(t) in mids[f]
            for tree in model.trees_
            for f, t in zip(tree["feature"], tree["threshold"])
            if f >= 0
        ]
        share[mode] = np.mean(hits)
    assert share["marginal"] == 1.0
    assert share["uniform"] < 0.9


# ---------------------------------------------------------------- quality
def test_well_separated_blobs_are_recovered():
    X, y = _blobs(n=90, seed=7, std=0.3)
    pairs, kind = _pairs(y, 30, np.random.default_rng(7))
    model = COPRF(3, n_estimators=60, filter_repeats=50, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert model.labels_.dtype == np.int64 and set(model.labels_) == {0, 1, 2}
    # must-links outside the root subset may be cut at the root (CR-14), so
    # only the filter-free forest keeps every in-bag must-link together
    unfiltered = COPRF(3, n_estimators=20, filter_constraints=False, random_state=0)
    assert unfiltered.fit(X, pairs=pairs, pair_kind=kind).diagnostics_["ml_satisfaction"] == 1.0


def test_planted_wrong_constraint_scores_below_correct_ones():
    X, y = _blobs(n=90, k=3, d=4, seed=8, std=0.5)
    rng = np.random.default_rng(8)
    pairs, kind = _pairs(y, 30, rng)
    a = int(np.flatnonzero(y == 0)[0])
    b = int(np.flatnonzero(y == 1)[0])
    pairs = np.vstack([pairs, [a, b]])
    kind = np.append(kind, 1)  # must-link across two far-apart blobs
    model = COPRF(3, n_estimators=60, filter_repeats=100, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    s = model.constraint_scores_
    assert s.shape == (31,) and np.isfinite(s[-1])
    correct = s[:-1][np.isfinite(s[:-1])]
    assert s[-1] < np.mean(correct)
    assert s[-1] <= np.quantile(correct, 0.25)
    assert model.constraint_selection_rate_[-1] < np.nanmean(model.constraint_selection_rate_[:-1])
    assert np.all(model.constraint_coverage_ > 0)


def test_violated_constraints_are_the_ones_the_labels_break():
    X, y = _blobs(n=60, k=3, d=3, seed=14, std=2.0)
    pairs, kind = _pairs(y, 30, np.random.default_rng(14))
    model = COPRF(3, n_estimators=20, filter_repeats=30, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    lab = model.labels_
    expected = (lab[pairs[:, 0]] == lab[pairs[:, 1]]) != (kind > 0)
    assert model.constraint_violated_.dtype == bool
    np.testing.assert_array_equal(model.constraint_violated_, expected)
    assert model.constraint_violated_.mean() == pytest.approx(1 - constraint_satisfaction(lab, pairs, kind))


def test_drop_violated_refits_without_the_constraints_the_first_fit_breaks():
    """drop_violated=True = a plain fit, then a plain fit on the constraints
    that fit's labels satisfy; scores stay those of the first fit."""
    X, y = _blobs(n=90, k=3, d=4, seed=15, std=0.8)
    pairs, kind = _pairs(y, 40, np.random.default_rng(15))
    wrong = np.arange(0, 40, 8)
    kind[wrong] = -kind[wrong]  # five flipped constraints
    kw = dict(n_estimators=60, filter_repeats=50, cannot_link_policy="separate", random_state=3)
    plain = COPRF(3, **kw).fit(X, pairs=pairs, pair_kind=kind)
    dropped = plain.constraint_violated_
    assert set(np.flatnonzero(dropped)) >= set(wrong)  # the first fit breaks every flipped one
    calls = []
    model = COPRF(3, drop_violated=True, callback=lambda s, f: calls.append(s), **kw).fit(
        X, pairs=pairs, pair_kind=kind)
    second = COPRF(3, **kw).fit(X, pairs=pairs[~dropped], pair_kind=kind[~dropped])
    np.testing.assert_array_equal(model.constraint_violated_, dropped)
    np.testing.assert_array_equal(model.labels_, second.labels_)
    np.testing.assert_array_equal(model.affinity_matrix_, second.affinity_matrix_)
    np.testing.assert_array_equal(model.constraint_scores_, plain.constraint_scores_)
    assert len(model.pairs_) == int((~dropped).sum())
    assert model.diagnostics_["n_dropped_violated"] == int(dropped.sum())
    assert model.diagnostics_["first_fit_constraint_satisfaction"] == pytest.approx(1 - dropped.mean())
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert "first fit: forest" in calls and calls[-1] == "done"


def _oblique_bars(n=120, seed=0):
    """test_rca's two classes parting along a diagonal, with 30 random pairs."""
    X, y = _oblique_classes(n, seed)
    pairs = np.random.default_rng([seed, 1]).choice(n, (30, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return X, y, pairs, np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)


@pytest.mark.parametrize("seed", [0, 3])
def test_rca_features_let_axis_aligned_trees_cut_across_the_axes(seed):
    """Classes that part along a diagonal: axis-aligned trees on the data
    alone find no gap; with the relevant components learned from the
    must-links they do (spec extension, clustering._cop_rf._rca)."""
    X, y, pairs, kind = _oblique_bars(seed=seed)
    kw = dict(n_estimators=60, filter_repeats=50, cannot_link_policy="separate", random_state=0)
    plain = COPRF(2, **kw).fit(X, pairs=pairs, pair_kind=kind)
    model = COPRF(2, rca_components="all", keep_trees=True, **kw).fit(X, pairs=pairs, pair_kind=kind)
    assert adjusted_rand_score(y, plain.labels_) < 0.3
    assert adjusted_rand_score(y, model.labels_) > 0.8
    assert model.rca_components_.shape == (2, 2) and model.rca_mean_.shape == (2,)
    assert plain.rca_components_ is None and plain.rca_mean_ is None
    used = np.concatenate([t["feature"][t["feature"] >= 0] for t in model.trees_])
    assert used.max() <= 3 and np.mean(used >= 2) > 0.3  # the trees do split on the new columns
    one = COPRF(2, rca_components=5, **kw).fit(X, pairs=pairs, pair_kind=kind)
    assert one.rca_components_.shape == (2, 2)  # capped at n_features


def test_rca_without_must_links_is_the_plain_forest():
    X, y, pairs, kind = _oblique_bars()
    cl = kind < 0
    kw = dict(n_estimators=30, filter_repeats=30, random_state=1)
    plain = COPRF(2, **kw).fit(X, pairs=pairs[cl], pair_kind=kind[cl])
    model = COPRF(2, rca_components="all", **kw).fit(X, pairs=pairs[cl], pair_kind=kind[cl])
    assert model.rca_components_ is None
    np.testing.assert_array_equal(model.labels_, plain.labels_)
    np.testing.assert_array_equal(model.affinity_matrix_, plain.affinity_matrix_)


def test_drop_violated_learns_the_rca_features_again_from_the_kept_constraints():
    X, y, pairs, kind = _oblique_bars(seed=3)
    kind = kind.copy()
    kind[:4] = -kind[:4]  # four flipped constraints
    kw = dict(n_estimators=60, filter_repeats=50, cannot_link_policy="separate", rca_components="all",
              random_state=2)
    model = COPRF(2, drop_violated=True, **kw).fit(X, pairs=pairs, pair_kind=kind)
    keep = ~model.constraint_violated_
    assert 0 < keep.sum() < len(keep)
    second = COPRF(2, **kw).fit(X, pairs=pairs[keep], pair_kind=kind[keep])
    np.testing.assert_allclose(model.rca_components_, second.rca_components_)
    np.testing.assert_array_equal(model.labels_, second.labels_)


# ---------------------------------------------------------------- robustness
def test_contradictory_constraints_are_recorded_not_fatal():
    X, y = _blobs(n=40, seed=9)
    pairs = np.array([[0, 1], [1, 0], [1, 2], [0, 2], [3, 4], [4, 3], [5, 6]])
    kind = np.array([1, -1, 1, -1, 1, 1, -1])
    weight = np.array([1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 1.0])
    for policy in ("relaxed", "literal"):
        model = COPRF(3, n_estimators=10, cannot_link_policy=policy, filter_repeats=20, random_state=0)
        model.fit(X, pairs=pairs, pair_kind=kind, pair_weight=weight)
        diag = model.diagnostics_
        json.dumps(diag)
        assert diag["n_conflicts"] >= 1
        assert [c["pair"] for c in diag["conflicting_pairs"]] == [[0, 1]]
        assert diag["conflicting_pairs"][0]["kept"] == "none"
        # the tied pair is dropped, the duplicated must-link is merged
        assert np.isnan(model.constraint_scores_[0]) and np.isnan(model.constraint_scores_[1])
        assert model.constraint_coverage_[4] == model.constraint_coverage_[5]
        assert len(model.pairs_) == 4
        assert model.labels_.shape == (40,)


def test_cannot_link_between_identical_rows_is_reported():
    X, y = _blobs(n=30, seed=10)
    X[1] = X[0]
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    model = COPRF(3, n_estimators=10, filter_repeats=20, random_state=0).fit(X, pairs=pairs, pair_kind=[-1, 1, -1])
    assert model.diagnostics_["unsatisfiable_cannot_links"] == [0]
    # no subset holding it has a valid strict root split: score 0 (oracle 12)
    assert model.constraint_coverage_[0] > 0 and model.constraint_scores_[0] == 0.0


def test_relaxed_policies_never_cut_must_links_and_separate_splits_more_cannot_links():
    X, y = _blobs(n=60, k=3, d=3, seed=13, std=2.0)
    pairs, kind = _pairs(y, 40, np.random.default_rng(13))
    diag = {}
    for policy in ("relaxed", "separate"):
        model = COPRF(3, n_estimators=10, cannot_link_policy=policy, filter_constraints=False, random_state=0)
        diag[policy] = model.fit(X, pairs=pairs, pair_kind=kind).diagnostics_
        assert diag[policy]["ml_satisfaction"] == 1.0
    assert diag["separate"]["cl_satisfaction"] >= diag["relaxed"]["cl_satisfaction"]
    assert diag["separate"]["cl_satisfaction"] > 0.9


def test_deterministic_across_n_jobs():
    X, y = _blobs(n=60, seed=11, std=1.2)
    pairs, kind = _pairs(y, 20, np.random.default_rng(11))
    kw = dict(n_estimators=24, filter_repeats=40, random_state=42)
    a = COPRF(3, n_jobs=1, **kw).fit(X, pairs=pairs, pair_kind=kind)
    b = COPRF(3, n_jobs=2, **kw).fit(X, pairs=pairs, pair_kind=kind)
    assert np.array_equal(a.labels_, b.labels_)
    assert np.array_equal(a.affinity_matrix_, b.affinity_matrix_)
    assert np.array_equal(a.constraint_scores_, b.constraint_scores_, equal_nan=True)
    c = COPRF(3, n_jobs=1, **dict(kw, random_state=43)).fit(X, pairs=pairs, pair_kind=kind)
    assert not np.array_equal(a.affinity_matrix_, c.affinity_matrix_)


def test_callback_progress_and_cancellation():
    X, _ = _blobs(n=30, seed=12)
    calls = []
    COPRF(3, n_estimators=8, n_neighbors=10, random_state=0, callback=lambda s, f: calls.append((s, f))).fit(X)
    assert calls[-1] == ("done", 1.0) and all(0.0 <= f <= 1.0 for _, f in calls)

    class Cancelled(Exception):
        pass

    def cancel(stage, fraction):
        if stage == "forest" and fraction > 0:
            raise Cancelled

    with pytest.raises(Cancelled):
        COPRF(3, n_estimators=8, random_state=0, callback=cancel).fit(X)


@pytest.mark.parametrize(
    "params",
    [
        dict(n_estimators=0),
        dict(filter_fraction=1.0),
        dict(cannot_link_policy="nope"),
        dict(pseudo_samples="normal"),
        dict(affinity_samples="oob"),
        dict(max_features=0),
        dict(n_neighbors=0),
        dict(store_affinity="sparse"),
        dict(drop_violated="yes"),
        dict(rca_components=0),
        dict(rca_components="some"),
        dict(n_clusters=1),
    ],
)
def test_bad_parameters_raise(params):
    X, _ = _blobs(n=20)
    with pytest.raises(InvalidInputError):
        COPRF(**{"n_clusters": 2, **params}).fit(X)


def test_bad_pairs_raise():
    X, _ = _blobs(n=20)
    with pytest.raises(InvalidInputError):
        COPRF(2, n_estimators=2).fit(X, pairs=[[0, 20]], pair_kind=[1])
    with pytest.raises(InvalidInputError):
        COPRF(2, n_estimators=2).fit(X, pairs=[[0, 1]], pair_kind=[2])


def test_constant_data_warns_instead_of_failing():
    from clustering.exceptions import ConstraintWarning

    X = np.ones((12, 3))
    with pytest.warns(ConstraintWarning):
        model = COPRF(2, n_estimators=5, random_state=0).fit(X, pairs=[[0, 1]], pair_kind=[-1])
    assert model.diagnostics_["degenerate_forest"] is True
    assert model.diagnostics_["root_leaf_fraction"] == 1.0
    assert model.labels_.shape == (12,) and set(model.labels_) <= {0, 1}
    assert np.all(model.affinity_matrix_[~np.eye(12, dtype=bool)] == 1.0)


def test_rca_refuses_more_features_than_its_limit(monkeypatch):
    from clustering._cop_rf import _rca

    monkeypatch.setattr(_rca, "MAX_FEATURES", 3)
    X, y = _blobs(n=30, d=4)
    pairs = [[0, 3], [1, 4]]
    with pytest.raises(InvalidInputError, match="at most 3 features") as err:
        COPRF(3, n_estimators=30, filter_repeats=20, rca_components="all", random_state=0).fit(X, pairs=pairs, pair_kind=[1, 1])
    assert err.value.field == "rca_components"
    with pytest.raises(InvalidInputError):
        _rca.rca_components(X, np.array(pairs), np.ones(2))
    model = COPRF(3, n_estimators=30, filter_repeats=20, rca_components="all", random_state=0).fit(X[:, :3], pairs=pairs,
                                                                               pair_kind=[1, 1])
    assert model.rca_components_.shape == (3, 3)
    assert COPRF(3, n_estimators=30, filter_repeats=20, random_state=0).fit(X, pairs=pairs, pair_kind=[1, 1]).rca_components_ is None


@pytest.mark.parametrize("field, value", [("affinity_samples", "in_bag"), ("n_neighbors", "select")])
def test_dense_only_options_refuse_more_rows_than_the_dense_limit(monkeypatch, field, value):
    from clustering._cop_rf import _estimator as _cop_rf
    from clustering.exceptions import ConstraintWarning

    monkeypatch.setattr(_cop_rf, "DENSE_AFFINITY_LIMIT", 20)
    X = np.random.default_rng(0).normal(size=(21, 2))
    with pytest.raises(InvalidInputError, match=value) as err:
        _cop_rf.COPRF(n_clusters=2, n_estimators=2, random_state=0, **{field: value}).fit(X)
    assert err.value.field == field
    # at the limit the option is accepted; two trees on 20 points may leave the
    # kNN graph fragmented (a ConstraintWarning, depending on the forest drawn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)
        est = _cop_rf.COPRF(n_clusters=2, n_estimators=2, random_state=0, **{field: value}).fit(X[:20])
    assert est.labels_.shape == (20,) and set(est.labels_) <= {0, 1}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_neighbor_selection_keeps_the_graph_whose_labels_satisfy_more_constraints(seed):
    """n_neighbors="select" = the labels of the n/10 kNN graph or of the whole
    affinity (k = n - 1), whichever satisfies more constraints (tie: n/10)."""
    from bench.datasets import load

    X, y = load("ionosphere")
    rng = np.random.default_rng(seed)
    pairs = rng.choice(len(y), (100, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    fits = {k: COPRF(2, n_estimators=60, random_state=seed, cannot_link_policy="separate", n_neighbors=k).fit(
        X, pairs=pairs, pair_kind=kind) for k in ("auto", len(y) - 1, "select")}

    sat_auto = constraint_satisfaction(fits["auto"].labels_, pairs, kind)
    sat_all = constraint_satisfaction(fits[len(y) - 1].labels_, pairs, kind)
    chosen = fits[len(y) - 1] if sat_all > sat_auto else fits["auto"]
    sel = fits["select"]
    np.testing.assert_array_equal(sel.labels_, chosen.labels_)
    assert sel.diagnostics_["n_neighbors"] == chosen.diagnostics_["n_neighbors"]
    assert [r["constraint_satisfaction"] for r in sel.diagnostics_["neighbor_selection"]] == pytest.approx(
        [sat_auto, sat_all])
    assert (sel.knn_graph_ != chosen.knn_graph_).nnz == 0
    assert fits["auto"].diagnostics_["neighbor_selection"] is None


def test_neighbor_selection_without_constraints_keeps_the_papers_graph():
    X, _ = _blobs(60, 3, seed=1)
    auto = COPRF(3, n_estimators=20, random_state=0).fit(X)
    sel = COPRF(3, n_estimators=20, random_state=0, n_neighbors="select").fit(X)
    np.testing.assert_array_equal(sel.labels_, auto.labels_)
    assert sel.diagnostics_["n_neighbors"] == 6


def test_neighbor_selection_above_the_limit_works_with_a_stored_dense_affinity(monkeypatch):
    from clustering._cop_rf import _estimator as _cop_rf

    monkeypatch.setattr(_cop_rf, "DENSE_AFFINITY_LIMIT", 20)
    X = np.random.default_rng(0).normal(size=(21, 2))
    model = _cop_rf.COPRF(n_clusters=2, n_estimators=20, n_neighbors="select", store_affinity="dense",
                          random_state=0).fit(X, pairs=[[0, 1]], pair_kind=[-1])
    assert model.labels_.shape == (21,) and model.diagnostics_["neighbor_selection"] is not None


def test_auto_neighbours_refuse_more_rows_than_their_limit_and_an_integer_k_does_not(monkeypatch):
    """n_neighbors="auto" (k = n / 10) makes an n^2 / 10-entry graph: refused above
    COP_RF_AUTO_MAX_SAMPLES (bench/scale_limits.py); an integer k has no such limit."""
    from clustering._cop_rf import _estimator as _cop_rf
    from clustering.exceptions import ConstraintWarning

    monkeypatch.setattr(_cop_rf, "COP_RF_AUTO_MAX_SAMPLES", 20)
    X = np.random.default_rng(0).normal(size=(21, 2))
    with pytest.raises(InvalidInputError, match="integer n_neighbors") as err:
        _cop_rf.COPRF(n_clusters=2, n_estimators=2, random_state=0).fit(X)
    assert err.value.field == "n_neighbors" and "20 samples (got 21)" in str(err.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)
        at_limit = _cop_rf.COPRF(n_clusters=2, n_estimators=2, random_state=0).fit(X[:20])
        fixed_k = _cop_rf.COPRF(n_clusters=2, n_estimators=2, n_neighbors=3, random_state=0).fit(X)
    assert at_limit.labels_.shape == (20,) and fixed_k.labels_.shape == (21,)


def test_more_trees_than_the_rows_allow_are_refused_before_the_forest_grows(monkeypatch):
    """Every tree's leaf of every sample is kept while the kNN graph is built: samples x n_estimators
    above COP_RF_MAX_TREE_ROWS is refused (bench/scale_limits.py), the bound itself is fitted."""
    from clustering._cop_rf import _estimator as _cop_rf
    from clustering.exceptions import ConstraintWarning

    monkeypatch.setattr(_cop_rf, "COP_RF_MAX_TREE_ROWS", 21 * 3 - 1)
    X = np.random.default_rng(0).normal(size=(21, 2))
    with pytest.raises(InvalidInputError, match="at most 2 trees on 21 samples") as err:
        _cop_rf.COPRF(n_clusters=2, n_estimators=3, n_neighbors=3, random_state=0).fit(X)
    assert err.value.field == "n_estimators" and "(21 x 3)" in str(err.value)
    monkeypatch.setattr(_cop_rf, "COP_RF_MAX_TREE_ROWS", 21 * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstraintWarning)
        at_limit = _cop_rf.COPRF(n_clusters=2, n_estimators=3, n_neighbors=3, random_state=0).fit(X)
    assert at_limit.labels_.shape == (21,)


def test_the_wire_default_forest_fits_the_tree_rows_limit_on_cop_rf_max_samples():
    from clustering.validation import COP_RF_AUTO_MAX_SAMPLES, COP_RF_MAX_TREE_ROWS
    from service.methods import METHODS

    COPRFParams = METHODS["cop_rf"]["params"]

    assert COPRFParams().load({})["n_estimators"] * COP_RF_AUTO_MAX_SAMPLES <= COP_RF_MAX_TREE_ROWS


def test_n_jobs_zero_is_a_parameter_error_and_more_than_the_cpus_is_the_cpus():
    # n_jobs=0 reached joblib mid-fit ("n_jobs == 0 in Parallel has no meaning", a bare ValueError), and
    # n_jobs=10**6 failed there too ("Numeric literal 2000000 is too large"): the threads are capped at the CPUs
    X, y = make_blobs(60, centers=3, random_state=0)
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    with pytest.raises(InvalidInputError, match=r"n_jobs == 0, must be") as exc:
        COPRF(3, n_estimators=10, n_jobs=0).fit(X, pairs=pairs, pair_kind=kind)
    assert exc.value.field == "n_jobs"
    labels = [COPRF(3, n_estimators=10, filter_repeats=5, n_jobs=j, random_state=0).fit(X, pairs=pairs,
                                                                                           pair_kind=kind).labels_
              for j in (1, 10**6)]
    np.testing.assert_array_equal(labels[0], labels[1])


def _fit_in_daemon(queue):
    X, _ = make_blobs(n_samples=60, centers=2, random_state=0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = COPRF(n_clusters=2, n_estimators=8, n_jobs=2, random_state=0)
            model.fit(X, pairs=[[0, 1]], pair_kind=[1])
        queue.put(("ok", model.labels_.tolist()))
    except Exception as exc:  # reported to the parent, which fails the test with it
        queue.put(("error", repr(exc)))


def test_n_jobs_in_a_daemonic_process_as_a_celery_prefork_child():
    """A Celery prefork child is daemonic: loky refuses it (UserWarning, 1 job), the forest's threads do not."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_fit_in_daemon, args=(queue,), daemon=True)
    child.start()
    status, value = queue.get(timeout=120)
    child.join(timeout=30)
    assert status == "ok", value
    X, _ = make_blobs(n_samples=60, centers=2, random_state=0)
    assert value == COPRF(n_clusters=2, n_estimators=8, random_state=0).fit(X, pairs=[[0, 1]],
                                                                           pair_kind=[1]).labels_.tolist()
