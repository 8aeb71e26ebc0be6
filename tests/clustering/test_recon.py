"""Tests for ReCon (specs/recon.md §8 test oracles)."""

import itertools
import json

import numpy as np
import pytest
from scipy.cluster.hierarchy import is_valid_linkage, linkage
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from clustering._recon._hierarchy import partition_satisfies, satisfies
from clustering._recon import ReCon
from clustering._relative import (
    check_feasibility,
    check_relative_feasibility,
    hierarchy_triplets,
    informative_triplets,
    one_tree,
)
from clustering.exceptions import InfeasibleConstraintsError, InvalidInputError


# --------------------------------------------------------------------------- helpers


def random_tree(leaves, rng, max_group=3):
    """Random rooted tree (nested lists, possibly non-binary) on ``leaves``."""
    nodes = [int(v) for v in leaves]
    while len(nodes) > 1:
        g = int(rng.integers(2, min(max_group, len(nodes)) + 1))
        pick = sorted(rng.choice(len(nodes), size=g, replace=False).tolist(), reverse=True)
        group = [nodes.pop(p) for p in pick]
        nodes.append(group)
    return nodes[0]


def random_binary_tree(leaves, rng):
    return random_tree(leaves, rng, max_group=2)


def tree_clusters(tree):
    """Set of leaf sets of the internal nodes of a nested-list tree."""
    out = set()
    stack = [(tree, False)]
    sets = {}
    order = []
    stack = [tree]
    while stack:
        node = stack.pop()
        order.append(node)
        if isinstance(node, list):
            stack.extend(node)
    for node in reversed(order):
        if isinstance(node, list):
            s = frozenset().union(*(sets[id(c)] if isinstance(c, list) else {c} for c in node))
            sets[id(node)] = s
            out.add(s)
    return out


def linkage_clusters(Z):
    n = Z.shape[0] + 1
    members = {i: frozenset([i]) for i in range(n)}
    out = set()
    for s, row in enumerate(Z):
        m = members[int(row[0])] | members[int(row[1])]
        members[n + s] = m
        out.add(m)
    return out


def displayed_triplets(tree):
    """All ab|c (a < b) displayed by a nested-list tree (brute force via clusters)."""
    clusters = tree_clusters(tree)
    leaves = sorted(max(clusters, key=len))
    out = []
    for a, b, c in itertools.permutations(leaves, 3):
        if a < b and any(a in s and b in s and c not in s for s in clusters):
            out.append((a, b, c))
    return out


def all_binary_trees(leaves):
    leaves = list(leaves)
    if len(leaves) == 1:
        yield leaves[0]
        return
    first, rest = leaves[0], leaves[1:]
    # split into two non-empty parts, the part containing ``first`` listed first
    for r in range(0, len(rest)):
        for left_rest in itertools.combinations(rest, r):
            left = [first, *left_rest]
            right = [x for x in rest if x not in left_rest]
            for lt in all_binary_trees(left):
                for rt in all_binary_trees(right):
                    yield [lt, rt]


def consistent_brute(triplets, tree_sets):
    t = {tuple(x) for x in triplets}
    return any(t <= s for s in tree_sets)


def centroid_distance(X, Z):
    n = Z.shape[0] + 1
    members = {i: [i] for i in range(n)}
    out = []
    for s, row in enumerate(Z):
        a, b = members[int(row[0])], members[int(row[1])]
        out.append(np.linalg.norm(X[a].mean(0) - X[b].mean(0)))
        members[n + s] = a + b
    return np.asarray(out)


def class_triplets(y, m, rng):
    n = len(y)
    out = []
    while len(out) < m:
        a, b, c = rng.integers(0, n, size=3)
        if len({a, b, c}) == 3 and y[a] == y[b] != y[c]:
            out.append((a, b, c))
    return np.asarray(out, dtype=np.int64)


# --------------------------------------------------------------------------- feasibility


def test_one_tree_rejects_contradictory_pair():
    tree, cert = one_tree([[0, 1, 2], [0, 2, 1]], 3)
    assert tree is None
    assert cert.tolist() == [0, 1]
    res = check_relative_feasibility([[0, 1, 2], [0, 2, 1]], 3)
    assert res["feasible"] is False and res["conflicting_triplets"] == [0, 1]


def test_feasibility_answers_convert_no_and_ignore_dont_know():
    # (0,1,2,no) means 02|1, which contradicts 01|2; don't know carries nothing
    res = check_relative_feasibility([[0, 1, 2], [0, 1, 2], [0, 2, 1]], 3, ["yes", "no", "dont_know"])
    assert not res["feasible"] and res["conflicting_triplets"] == [0, 1]
    res = check_relative_feasibility([[0, 1, 2], [0, 2, 1]], 3, [1, 0])
    assert res["feasible"] and res["conflicting_triplets"] == [] and res["n_relative"] == 1


@pytest.mark.parametrize("seed", range(6))
def test_subsets_of_displayed_triplets_are_accepted_and_displayed(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 13))
    tree = random_tree(range(n), rng)
    disp = np.asarray(displayed_triplets(tree), dtype=np.int64).reshape(-1, 3)
    if disp.shape[0] == 0:
        return
    sub = disp[rng.random(disp.shape[0]) < 0.5]
    out, cert = one_tree(sub, n)
    assert cert is None
    got = set(displayed_triplets(out))
    assert {tuple(x) for x in sub.tolist()} <= got


@pytest.mark.parametrize("n_leaves,n_sets", [(5, 150), (6, 60)])
def test_build_verdict_equals_brute_force(n_leaves, n_sets):
    rng = np.random.default_rng(n_leaves)
    tree_sets = [set(displayed_triplets(t)) for t in all_binary_trees(range(n_leaves))]
    assert len(tree_sets) == {5: 105, 6: 945}[n_leaves]
    all_trip = [(a, b, c) for a, b, c in itertools.permutations(range(n_leaves), 3) if a < b]
    n_bad = 0
    for _ in range(n_sets):
        m = int(rng.integers(2, 7))
        pick = rng.choice(len(all_trip), size=m, replace=False)
        t = np.asarray([all_trip[p] for p in pick], dtype=np.int64)
        ok, _ = check_feasibility(t, n_leaves)
        n_bad += ok != consistent_brute(t.tolist(), tree_sets)
    assert n_bad == 0


@pytest.mark.parametrize("seed", range(5))
def test_minimal_certificate_is_inconsistent_and_minimal(seed):
    rng = np.random.default_rng(100 + seed)
    n = 9
    all_trip = [(a, b, c) for a, b, c in itertools.permutations(range(n), 3) if a < b]
    for _ in range(50):
        t = np.asarray([all_trip[p] for p in rng.choice(len(all_trip), size=25, replace=False)])
        ok, cert = check_feasibility(t, n)
        if not ok:
            break
    assert not ok
    sub = t[cert]
    assert not check_feasibility(sub, n)[0]
    for r in range(len(sub)):
        assert check_feasibility(np.delete(sub, r, axis=0), n)[0]
    # the HTTP helper reports the same kind of subset in input-row terms
    res = check_relative_feasibility(t, n)
    assert not res["feasible"]
    assert not check_feasibility(t[res["conflicting_triplets"]], n)[0]


def test_infeasible_input_raises_with_conflicting_rows():
    X, y = make_blobs(n_samples=30, centers=3, random_state=0)
    T = np.array([[0, 1, 2], [5, 6, 7], [0, 2, 1], [3, 4, 5]])
    with pytest.raises(InfeasibleConstraintsError) as exc:
        ReCon(n_clusters=3).fit(X, triplets=T)
    rows = exc.value.conflicts[0]["conflicting_triplets"]
    assert sorted(rows) == [0, 2]
    assert not check_feasibility(T[rows], 30)[0]


def test_repair_returns_maximal_consistent_set():
    rng = np.random.default_rng(3)
    X, y = make_blobs(n_samples=60, centers=3, random_state=1)
    T = class_triplets(y, 60, rng)
    ans = np.where(rng.random(60) < 0.3, -1, 1)
    model = ReCon(n_clusters=3, on_inconsistent="repair").fit(X, triplets=T, triplet_answer=ans)
    assert not model.feasible_ and model.dropped_.size > 0
    rel = model.relative_
    assert check_feasibility(rel, 60)[0]
    assert satisfies(model.linkage_, rel).all()
    rows = np.flatnonzero(ans != 0)
    conv = T.copy()
    conv[ans < 0] = conv[ans < 0][:, [0, 2, 1]]
    for r in model.dropped_:
        tr = np.sort(conv[r, :2]).tolist() + [int(conv[r, 2])]
        assert not check_feasibility(np.vstack([rel, [tr]]), 60)[0]
    assert set(model.diagnostics_["dropped_triplets"]) == set(model.dropped_.tolist())
    assert rows.size == 60


# --------------------------------------------------------------------------- hierarchy


@pytest.mark.parametrize("seed", range(4))
def test_linkage_is_valid_and_displays_every_triplet(seed):
    rng = np.random.default_rng(seed)
    X, y = make_blobs(n_samples=120, centers=4, cluster_std=3.0, random_state=seed)
    T = class_triplets(y, 100, rng)
    model = ReCon(n_clusters=4).fit(X, triplets=T)
    Z = model.linkage_
    assert is_valid_linkage(Z)
    assert model.children_.shape == (119, 2) and model.children_.dtype == np.int64
    assert np.array_equal(model.children_, Z[:, :2].astype(np.int64))
    assert np.array_equal(model.distances_, Z[:, 2])
    assert model.linkage_matrix_ is Z
    sizes = [len(c) for c in sorted(linkage_clusters(Z), key=len)]
    assert sorted(Z[:, 3].astype(int).tolist()) == sizes
    np.testing.assert_allclose(Z[:, 2], centroid_distance(X, Z), rtol=1e-10, atol=1e-10)
    assert satisfies(Z, T).all()
    # independent check of lca(a, b) strictly below lca(a, b, c) via member sets
    clusters = linkage_clusters(Z)
    for a, b, c in T[:30]:
        smallest_ab = min((s for s in clusters if a in s and b in s), key=len)
        assert c not in smallest_ab
    assert model.is_monotonic_ == bool(np.all(np.diff(Z[:, 2]) >= 0))
    assert model.resolved_counts_.sum() == len(model.relative_)
    assert model.labels_.dtype == np.int64 and set(model.labels_.tolist()) == set(range(4))
    json.dumps(model.diagnostics_)


def test_dead_end_example_is_avoided():
    # a=0, b=1, c=2, d=3 on a line: b and d are the closest pair, but ab|c and
    # cd|a imply ab|d, so (b, d) must never be merged first.
    X = np.array([[-1.5, 0.0], [0.0, 0.0], [2.0, 0.0], [0.5, 0.0]])
    model = ReCon().fit(X, triplets=[[0, 1, 2], [2, 3, 0]])
    Z = model.linkage_
    assert satisfies(Z, [[0, 1, 2], [2, 3, 0], [0, 1, 3], [2, 3, 1]]).all()
    assert model.diagnostics_["n_rejected_merges"] >= 1
    assert linkage_clusters(Z) == {frozenset({0, 1}), frozenset({2, 3}), frozenset(range(4))}


@pytest.mark.parametrize("seed", range(3))
def test_no_triplets_equals_scipy_centroid(seed):
    X = np.random.default_rng(seed).normal(size=(50, 3))
    Z = ReCon().fit(X).linkage_
    Zs = linkage(X, "centroid")
    np.testing.assert_array_equal(np.sort(Z[:, :2], axis=1), np.sort(Zs[:, :2], axis=1))
    np.testing.assert_allclose(Z[:, 2], Zs[:, 2], atol=1e-12)
    np.testing.assert_array_equal(Z[:, 3], Zs[:, 3])


def test_triplet_already_displayed_leaves_linkage_unchanged():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 2))
    Z0 = ReCon().fit(X).linkage_
    trip = np.array([(a, b, c) for a, b, c in itertools.permutations(range(40), 3) if a < b][:4000])
    disp = trip[satisfies(Z0, trip)]
    pick = disp[rng.choice(len(disp), size=5, replace=False)]
    Z1 = ReCon().fit(X, triplets=pick).linkage_
    np.testing.assert_array_equal(Z0, Z1)


# --------------------------------------------------------------------------- flat partitions


@pytest.mark.parametrize("cut", ["constraint_guided", "height", "merge_order"])
def test_every_k_cut_satisfies_all_triplets(cut):
    rng = np.random.default_rng(7)
    X, y = make_blobs(n_samples=50, centers=3, cluster_std=2.5, random_state=2)
    T = class_triplets(y, 40, rng)
    model = ReCon(cut=cut, min_branch_size=1).fit(X, triplets=T)
    for k in range(2, 11):
        m = ReCon(n_clusters=k, cut=cut, min_branch_size=1).fit(X, triplets=T)
        np.testing.assert_array_equal(m.linkage_, model.linkage_)
        assert m.n_clusters_ == k and set(m.labels_.tolist()) == set(range(k))
        assert partition_satisfies(m.labels_, T).all()
        assert m.cut_violations_.size == 0 and not m.outliers_.any()


def test_height_cut_matches_fcluster_on_monotone_linkage():
    from scipy.cluster.hierarchy import fcluster

    n_checked = 0
    for seed in (3, 5, 7, 8):  # blobs whose centroid linkage has no inversion
        X, _ = make_blobs(n_samples=40, centers=3, cluster_std=0.5, random_state=seed)
        for k in (2, 3, 5):
            m = ReCon(n_clusters=k, cut="height", min_branch_size=1).fit(X)
            assert m.is_monotonic_
            ref = fcluster(m.linkage_, k, criterion="maxclust")
            assert adjusted_rand_score(ref, m.labels_) == 1.0
            n_checked += 1
    assert n_checked == 12


@pytest.mark.parametrize("seed", range(5))
def test_informative_triplets_recover_classes_on_overlapping_blobs(seed):
    X, y = make_blobs(n_samples=90, centers=3, cluster_std=3.5, random_state=seed)
    T = informative_triplets(y)
    k = 3
    assert T.shape == ((k - 1) * (90 - k), 3)
    model = ReCon(n_clusters=3).fit(X, triplets=T)
    clusters = linkage_clusters(model.linkage_)
    for c in range(3):
        assert frozenset(np.flatnonzero(y == c).tolist()) in clusters
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert satisfies(model.linkage_, T).all()


def test_informative_triplets_with_string_labels_and_singletons():
    y = np.array(["b", "a", "b", "c", "a", "b"])
    T = informative_triplets(y)
    assert T.shape == ((3 - 1) * (6 - 3), 3)
    tree, cert = one_tree(T, 6)
    assert cert is None
    assert tree_clusters(tree) == {frozenset(range(6)), frozenset({1, 4}), frozenset({0, 2, 5})}


# --------------------------------------------------------------------------- generation from a hierarchy


@pytest.mark.parametrize("seed", range(8))
def test_hierarchy_triplets_identify_the_tree(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 15))
    binary = seed % 2 == 0
    tree = random_binary_tree(range(n), rng) if binary else random_tree(range(n), rng, max_group=4)
    T = hierarchy_triplets(tree)
    if binary:
        assert T.shape == (n - 2, 3)
    out, cert = one_tree(T, n)
    assert cert is None
    assert tree_clusters(out) == tree_clusters(tree)


def test_two_level_hierarchy_gives_informative_count():
    tree = [[0, 1, 2], [3, 4], [5, 6, 7, 8]]
    assert hierarchy_triplets(tree).shape == ((3 - 1) * (9 - 3), 3)
    with pytest.raises(InvalidInputError):
        hierarchy_triplets([[0, 1], [1, 2]])


# --------------------------------------------------------------------------- robustness


def test_row_permutation_gives_isomorphic_hierarchy():
    rng = np.random.default_rng(11)
    X, y = make_blobs(n_samples=60, centers=3, cluster_std=2.0, random_state=11)
    T = class_triplets(y, 40, rng)
    perm = rng.permutation(60)
    inv = np.argsort(perm)
    Z0 = ReCon().fit(X, triplets=T).linkage_
    Z1 = ReCon().fit(X[perm], triplets=inv[T]).linkage_
    mapped = {frozenset(int(perm[i]) for i in c) for c in linkage_clusters(Z1)}
    assert mapped == linkage_clusters(Z0)


def test_translation_and_rotation_invariance():
    rng = np.random.default_rng(12)
    X, y = make_blobs(n_samples=50, centers=3, n_features=3, cluster_std=2.0, random_state=12)
    T = class_triplets(y, 30, rng)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    Z0 = ReCon().fit(X, triplets=T).linkage_
    Z1 = ReCon().fit(X @ Q + 7.0, triplets=T).linkage_
    np.testing.assert_array_equal(Z0[:, [0, 1, 3]], Z1[:, [0, 1, 3]])
    np.testing.assert_allclose(Z0[:, 2], Z1[:, 2], rtol=1e-9)


# --------------------------------------------------------------------------- interface


def test_answers_diagnostics_and_newick():
    X, y = make_blobs(n_samples=12, centers=2, random_state=0)
    T = [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    m = ReCon(n_clusters=2).fit(X, triplets=T, triplet_answer=["yes", "no", "dont_know"])
    d = m.diagnostics_
    assert (d["n_yes"], d["n_no"], d["n_dont_know"], d["n_relative"]) == (1, 1, 1, 2)
    # "no" on (3, 4, 5) is the constraint 35|4
    assert satisfies(m.linkage_, [[0, 1, 2], [3, 5, 4]]).all()
    json.dumps(d)
    nw = m.to_newick()
    assert nw.endswith(";") and nw.count("(") == nw.count(")") == 11
    assert all(str(i) in nw for i in range(12))
    named = m.to_newick([f"item {i}" for i in range(12)])
    assert "'item 3'" in named


def test_callback_is_called_and_may_cancel():
    X, _ = make_blobs(n_samples=20, random_state=0)
    stages = []
    ReCon(n_clusters=2, callback=lambda s, f: stages.append((s, f))).fit(X)
    assert stages and stages[-1] == ("done", 1.0)
    assert all(0.0 <= f <= 1.0 for _, f in stages)

    class Cancelled(Exception):
        pass

    def cancel(stage, fraction):
        raise Cancelled

    with pytest.raises(Cancelled):
        ReCon(callback=cancel).fit(X)


@pytest.mark.parametrize(
    "params",
    [{"n_clusters": 0}, {"cut": "bogus"}, {"min_branch_size": 0}, {"on_inconsistent": "x"},
     {"feature_weights": [1.0]}],
)
def test_invalid_parameters_raise(params):
    X, _ = make_blobs(n_samples=20, random_state=0)
    with pytest.raises(InvalidInputError):
        ReCon(**params).fit(X)


def test_invalid_triplets_raise():
    X, _ = make_blobs(n_samples=10, random_state=0)
    with pytest.raises(InvalidInputError):
        ReCon().fit(X, triplets=[[0, 0, 1]])
    with pytest.raises(InvalidInputError):
        ReCon().fit(X, triplets=[[0, 1, 10]])
    with pytest.raises(InvalidInputError):
        ReCon().fit(X, triplets=[[0, 1, 2]], triplet_answer=["maybe"])


def test_feature_weights_equal_scaled_data():
    X, y = make_blobs(n_samples=30, n_features=3, random_state=0)
    w = np.array([1.0, 4.0, 0.25])
    T = class_triplets(y, 10, np.random.default_rng(0))
    Za = ReCon(feature_weights=w).fit(X, triplets=T).linkage_
    Zb = ReCon().fit(X * np.sqrt(w), triplets=T).linkage_
    np.testing.assert_allclose(Za, Zb)


@pytest.mark.parametrize("seed", range(6))
def test_maintained_build_tree_matches_full_test(seed):
    # the incremental BUILD tree (fast path) must take exactly the decisions of
    # the paper's full TestCompatibility; check_tree re-runs BUILD after every
    # merge and the full test at every test
    from clustering._recon._linkage import _recon_linkage

    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(25, 45))
    X, y = make_blobs(n_samples=n, centers=3, cluster_std=3.0, random_state=seed)
    T = class_triplets(y, int(rng.integers(10, n)), rng)
    wrong = rng.random(len(T)) < 0.15
    T[wrong] = T[wrong][:, [0, 2, 1]]
    T[:, :2] = np.sort(T[:, :2], axis=1)
    while not check_feasibility(T, n)[0]:
        T = T[:-1]
    Z_fast, st_fast = _recon_linkage(X, T, maintain_tree=True, check_tree=True)
    Z_full, st_full = _recon_linkage(X, T, maintain_tree=False)
    np.testing.assert_array_equal(Z_fast, Z_full)
    assert st_fast == st_full
    assert satisfies(Z_fast, T).all()


def test_dropped_lists_every_input_row_of_a_dropped_constraint():
    """Non-regression: dropped_ listed only the first input row of each dropped constraint, not
    the rows that repeat it (the same triplet again, or (a, c, b) answered the other way)."""
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    T = np.array([[0, 1, 2], [0, 2, 1], [0, 1, 2], [3, 0, 1], [0, 2, 1]])
    ans = np.array([1, 1, -1, 0, 1])  # rows 1, 2 and 4 all say 02|1; row 0 says 01|2
    w = np.array([5.0, 1.0, 1.0, 1.0, 1.0])
    model = ReCon(n_clusters=2, on_inconsistent="repair").fit(X, triplets=T, triplet_answer=ans, triplet_weight=w)
    assert not model.feasible_
    assert model.dropped_.tolist() == [1, 2, 4]
    assert model.diagnostics_["dropped_triplets"] == [1, 2, 4]
    assert model.conflict_.tolist() == [0, 1]  # one row per conflicting constraint


def _count_distance_rows(monkeypatch):
    """Count the rows ReCon's linkage computes distances for: the returned list gets one length per call."""
    from clustering._recon import _linkage as _recon_linkage

    computed, cdist = [], _recon_linkage.cdist

    def counting_cdist(A, B, metric):
        computed.append(len(A))
        return cdist(A, B, metric)

    monkeypatch.setattr(_recon_linkage, "cdist", counting_cdist)
    return computed


def test_coinciding_rows_cost_one_distance_row_per_merge(monkeypatch):
    """Non-regression: every row nearest to one of many equal rows was recomputed after each merge
    (O(n^2 d) per merge): a job on 5200 rows, 5190 of them equal, ran for more than 5 minutes where
    5000 distinct rows take under a second. Only the merged cluster's row is needed there."""
    computed = _count_distance_rows(monkeypatch)
    n = 400
    X = np.zeros((n, 2))
    X[:5] = np.random.default_rng(0).normal(5.0, 1.0, (5, 2))
    model = ReCon(n_clusters=2).fit(X, triplets=[[0, 1, n - 1]])
    assert sum(computed) < 5 * n  # was 80 000 rows (one per stale slot per merge)
    assert sorted(np.bincount(model.labels_).tolist()) == [5, n - 5]
    assert is_valid_linkage(model.linkage_)


def test_groups_of_equal_rows_away_from_zero_cost_one_distance_row_per_merge(monkeypatch):
    """Non-regression: the size-weighted centroid of two clusters at the same point x, (ni x + nj x) / (ni + nj),
    is not always x in floating point; the rows whose nearest neighbour was merged then saw the new cluster a
    rounding error farther than their distance 0 and were all recomputed: 5 groups of 800 equal rows at random
    points took 5.8 s (0.6 s for 4000 distinct rows), computing about 100 distance rows per merge."""
    computed = _count_distance_rows(monkeypatch)
    n = 400
    X = np.random.default_rng(0).normal(0.0, 5.0, (5, 5))[np.arange(n) % 5]
    model = ReCon(n_clusters=5).fit(X)
    assert sum(computed) < 5 * n
    assert sorted(np.bincount(model.labels_).tolist()) == [80] * 5
    assert is_valid_linkage(model.linkage_) and np.all(model.linkage_[: n - 5, 2] == 0.0)
