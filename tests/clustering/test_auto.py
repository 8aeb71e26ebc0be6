"""``clustering._auto``: the test oracles of specs/auto.md §6 (T1-T9, T12; T7 and T9 on fewer seeds)."""

import math

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.datasets import make_blobs, make_circles

from clustering._auto import AutoClustering, Candidate, default_candidates
from clustering._auto._folds import assign_folds, constraint_units, fixed_by_training
from clustering._auto._relative import rc3_satisfied, relative_candidates
from clustering._auto._scoring import UnitCounts, balanced_accuracy, satisfied


def _random_constraints(rng, n=30, m=None):
    m = m or int(rng.integers(5, 40))
    pairs = []
    while len(pairs) < m:
        i, j = rng.integers(0, n, 2)
        if i != j:
            pairs.append((i, j))
    kind = rng.choice([1, -1], size=m, p=[0.4, 0.6]).astype(np.int8)
    # chains: link some consecutive must-links
    return np.asarray(pairs), kind


def _closure_brute(n, pairs, kind):
    """Implied relations by repeated relaxation of a dense relation matrix (independent of union-find)."""
    same = np.eye(n, dtype=bool)
    diff = np.zeros((n, n), dtype=bool)
    for (a, b), k in zip(pairs, kind):
        if k == 1:
            same[a, b] = same[b, a] = True
        else:
            diff[a, b] = diff[b, a] = True
    for _ in range(n):
        new_same = (same.astype(int) @ same.astype(int)) > 0
        if (new_same == same).all():
            break
        same = new_same
    diff = (same.astype(int) @ diff.astype(int) @ same.astype(int)) > 0
    return same, diff


def _two_colouring_fixed(n, pairs, kind):
    """Pairs whose relation every 2-colouring consistent with the constraints fixes (BFS on parity)."""
    adj = {i: [] for i in range(n)}
    for (a, b), k in zip(pairs, kind):
        adj[a].append((b, 0 if k == 1 else 1))
        adj[b].append((a, 0 if k == 1 else 1))
    comp, par = -np.ones(n, int), np.zeros(n, int)
    c = 0
    for s in range(n):
        if comp[s] >= 0:
            continue
        comp[s], stack = c, [s]
        while stack:
            u = stack.pop()
            for v, odd in adj[u]:
                if comp[v] < 0:
                    comp[v], par[v] = c, par[u] ^ odd
                    stack.append(v)
        c += 1
    return comp


def test_t1_no_test_constraint_is_fixed_by_its_training_closure():
    rng = np.random.default_rng(0)
    n = 30
    for trial in range(2000):
        pairs, kind = _random_constraints(rng, n)
        u = constraint_units(pairs, kind, None, n)
        fold, _ = assign_folds(u, 5, np.random.default_rng(trial))
        f = trial % 5
        tr, te = fold != f, fold == f
        closure, by_par = fixed_by_training(u, tr, te, n, parity=True)
        scored = te & ~closure & ~by_par
        same, diff = _closure_brute(n, u.pairs[tr], u.kind[tr])
        comp = _two_colouring_fixed(n, u.pairs[tr], u.kind[tr])
        for i in np.flatnonzero(scored):
            a, b = u.pairs[i]
            assert not same[a, b] and not diff[a, b], (trial, i)
            assert comp[a] != comp[b], (trial, i)


def test_t1_guard_drops_what_closure_fixes_when_units_are_split():
    # one unit with more than half the constraints is split by edge: the guard must catch the implied ones
    pairs = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [0, 4], [5, 6]])
    kind = np.array([1, 1, 1, 1, 1, -1], dtype=np.int8)
    u = constraint_units(pairs, kind, None, 7)
    fold, split = assign_folds(u, 2, np.random.default_rng(0))
    assert split
    for f in range(2):
        closure, _ = fixed_by_training(u, fold != f, fold == f, 7)
        same, diff = _closure_brute(7, u.pairs[fold != f], u.kind[fold != f])
        for i in np.flatnonzero(fold == f):
            a, b = u.pairs[i]
            assert closure[i] == bool(same[a, b] or diff[a, b])


def test_t2_each_unit_tested_once_and_folds_keep_the_must_link_share():
    rng = np.random.default_rng(1)
    for trial in range(200):
        pairs, kind = _random_constraints(rng, 60, 80)
        u = constraint_units(pairs, kind, None, 60)
        fold, split = assign_folds(u, 5, np.random.default_rng(trial))
        if split:
            continue
        for unit in range(u.n_units):
            assert len(set(fold[u.unit == unit].tolist())) == 1
        share = np.mean(u.kind == 1)
        biggest = np.bincount(u.unit).max()
        for f in range(5):
            k = u.kind[fold == f]
            if len(k):
                assert abs(np.sum(k == 1) - share * len(k)) <= biggest + 1


class _Recorder(ClusterMixin, BaseEstimator):
    """Records the constraints each fit receives; labels by the first coordinate's sign."""

    seen = []

    def __init__(self, n_clusters=2, random_state=None):
        self.n_clusters = n_clusters
        self.random_state = random_state

    def fit(self, X, y=None, *, pairs=None, pair_kind=None, pair_weight=None):
        _Recorder.seen.append({tuple(sorted(p)) for p in np.asarray(pairs).tolist()})
        self.labels_ = (X[:, 0] > np.median(X[:, 0])).astype(int)
        return self


def _recorder_candidate(cid="rec"):
    return Candidate(cid, "rec", "spectral", {}, lambda k, rs, p: _Recorder(k, rs), (0.001, 1.0))


def test_t3_fold_fits_never_receive_the_constraints_they_are_scored_on(monkeypatch):
    X, y = make_blobs(120, centers=2, random_state=0)
    rng = np.random.default_rng(0)
    pairs, kind = _random_constraints(rng, 120, 60)
    scored = []
    import clustering._auto._estimator as est_mod

    real = est_mod.satisfied

    def spy(labels, p, k):
        scored.append({tuple(sorted(q)) for q in np.asarray(p).tolist()})
        return real(labels, p, k)

    monkeypatch.setattr(est_mod, "satisfied", spy)
    _Recorder.seen = []
    m = AutoClustering(2, candidates=[_recorder_candidate(), _recorder_candidate("rec2")], random_state=0).fit(
        X, pairs=pairs, pair_kind=kind)
    fold_fits = _Recorder.seen[:-1]  # the last fit is the refit on all
    folds = m.auto_["folds"]
    assert folds["n_folds"] == (3 if folds["n_constraints"] < 60 else 5)  # fewer folds for few constraints
    assert len(fold_fits) == len(scored) == 2 * folds["n_folds"] * 2  # folds x 2 repeats, two candidates
    for train, test in zip(fold_fits, scored):
        assert not (train & test)
    assert len(_Recorder.seen[-1]) == len({tuple(sorted(p)) for p in pairs.tolist()})


def test_t4_permuting_labels_changes_no_score():
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 4, 50)
    pairs, kind = _random_constraints(rng, 50, 40)
    perm = rng.permutation(4)
    assert (satisfied(labels, pairs, kind) == satisfied(perm[labels], pairs, kind)).all()


def test_t5_random_labellings_score_one_half():
    rng = np.random.default_rng(3)
    n, m = 100, 60
    truth = rng.integers(0, 3, n)
    pairs = rng.integers(0, n, (m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
    bas = []
    for _ in range(10_000):
        K = int(rng.integers(2, 8))
        lab = rng.choice(K, n, p=rng.dirichlet(np.ones(K)))
        s = satisfied(lab, pairs, kind)
        tot = np.array([[np.sum(kind == 1), np.sum(kind == -1)]], float)
        sat = np.array([[np.sum(s & (kind == 1)), np.sum(s & (kind == -1))]], float)
        bas.append(float(((sat / tot).mean())))  # before add-one
    assert abs(np.mean(bas) - 0.5) < 0.01


def test_t5_flips_keep_the_order_of_two_partitions_in_expectation():
    rng = np.random.default_rng(4)
    n = 150
    truth = np.repeat([0, 1, 2], 50)
    good = truth.copy()
    good[:10] = 1
    bad = rng.integers(0, 3, n)
    means = {"good": [], "bad": []}
    for _ in range(400):
        pairs = rng.integers(0, n, (100, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        kind = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
        flip = rng.random(len(kind)) < 0.15
        kind = np.where(flip, -kind, kind)
        for name, lab in (("good", good), ("bad", bad)):
            c = UnitCounts(len(kind))
            c.add(np.arange(len(kind)), kind, np.ones(len(kind)), satisfied(lab, pairs, kind))
            means[name].append(float(balanced_accuracy(c.sat.sum(0), c.tot.sum(0))))
    assert np.mean(means["good"]) > np.mean(means["bad"]) + 0.1


def _iris_like(seed=0, n_pairs=60):
    X, y = make_blobs(150, centers=3, cluster_std=1.5, random_state=seed)
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, 150, (n_pairs, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1).astype(np.int8)
    return X, y, pairs, kind


CHEAP = ["ccskl-1", "ccskl-3.25", "sc-rbf", "sc-knn", "sl-knn", "e2cp-0.6", "ckm"]


def test_t6_same_seed_same_scores_and_an_added_candidate_moves_no_seed():
    X, y, pairs, kind = _iris_like()
    a = AutoClustering(3, candidates=CHEAP[:4], random_state=5).fit(X, pairs=pairs, pair_kind=kind).auto_
    b = AutoClustering(3, candidates=CHEAP[:4], random_state=5).fit(X, pairs=pairs, pair_kind=kind).auto_
    c = AutoClustering(3, candidates=CHEAP[:5], random_state=5).fit(X, pairs=pairs, pair_kind=kind).auto_
    assert a["chosen"] == b["chosen"]
    sa = {r["id"]: r.get("ba") for r in a["candidates"]}
    assert sa == {r["id"]: r.get("ba") for r in b["candidates"]}
    # the rung-0 score of a shared candidate does not depend on who else runs
    rung0 = lambda auto: {r["id"]: r["ba"] for r in auto["candidates"] if r["folds_scored"] == 2}
    shared = set(rung0(a)) & set(rung0(c))
    assert all(math.isclose(rung0(a)[i], rung0(c)[i]) for i in shared)


def test_t7_rings_choose_a_graph_family():
    wins = 0
    for seed in range(3):
        X, y = make_circles(200, factor=0.4, noise=0.05, random_state=seed)
        rng = np.random.default_rng(seed)
        pairs = rng.integers(0, 200, (100, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
        m = AutoClustering(2, candidates=["rf-def", "ckm", "ccskl-1", "sc-knn", "e2cp-0.6"], budget_factor=20,
                           random_state=seed).fit(X, pairs=pairs, pair_kind=kind)
        wins += m.auto_["chosen"]["method"] in ("ccskl", "spectral", "spectral_learning", "e2cp")
    assert wins >= 2


def test_t8_few_constraints_fall_back_to_the_prior_without_fold_fits():
    X, y, pairs, kind = _iris_like(n_pairs=9)
    pairs, kind = pairs[:8], kind[:8]
    _Recorder.seen = []
    m = AutoClustering(3, candidates=[_recorder_candidate()], random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    assert m.auto_["rule"] == "prior_only"
    assert "too_few_constraints" in [w["code"] for w in m.auto_["warnings"]]
    assert len(_Recorder.seen) == 1  # the refit only


def test_t8_must_links_only_single_kind_and_k_from_the_eigengap():
    X, y = make_blobs(150, centers=3, cluster_std=0.5, random_state=0)
    rng = np.random.default_rng(0)
    same = [(i, j) for i, j in rng.integers(0, 150, (400, 2)) if i != j and y[i] == y[j]][:40]
    m = AutoClustering(None, candidates=CHEAP[:3], random_state=0).fit(X, pairs=same, pair_kind=[1] * len(same))
    codes = [w["code"] for w in m.auto_["warnings"]]
    assert "single_kind" in codes and "k_from_prior" in codes
    assert m.auto_["k"]["rule"] == "eigengap" and m.n_clusters_ == 3


@pytest.mark.parametrize("K", [3, 5, 7])
def test_t9_k_is_found_on_blobs(K):
    hits = 0
    for seed in range(2):
        X, y = make_blobs(40 * K, centers=K, cluster_std=0.6, random_state=seed, center_box=(-20, 20))
        rng = np.random.default_rng(seed)
        pairs = rng.integers(0, len(y), (100, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
        m = AutoClustering(None, candidates=["ccskl-1", "sc-rbf"], random_state=seed).fit(X, pairs=pairs,
                                                                                         pair_kind=kind)
        hits += m.auto_["k"]["chosen"] == K
    assert hits == 2


def test_t9_three_mutually_cannot_linked_components_bound_k():
    X, y = make_blobs(100, centers=2, random_state=0)
    pairs = [[0, 1], [2, 3], [4, 5], [1, 3], [3, 5], [1, 5]] + [[6 + i, 7 + i] for i in range(0, 20, 2)]
    kind = [1, 1, 1, -1, -1, -1] + [1] * 10
    m = AutoClustering(None, candidates=["ccskl-1", "sc-rbf"], random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    assert m.auto_["k"]["cl_clique_bound"] == 3
    assert m.auto_["k"]["chosen"] >= 3


def _finite(v):
    if isinstance(v, dict):
        return all(_finite(x) for x in v.values())
    if isinstance(v, list):
        return all(_finite(x) for x in v)
    if isinstance(v, float):
        return math.isfinite(v)
    return True


def test_t12_every_report_field_present_and_finite():
    X, y, pairs, kind = _iris_like()
    m = AutoClustering(3, candidates=CHEAP, random_state=0).fit(X, pairs=pairs, pair_kind=kind)
    a = m.auto_
    for key in ("chosen", "rule", "candidates", "k", "folds", "timing", "noise", "warnings"):
        assert key in a
    for key in ("id", "method", "preset", "params", "n_clusters", "k_selected"):
        assert key in a["chosen"]
    for key in ("total_s", "search_s", "refit_s", "budget_s", "t_ref_s", "ratio_to_t_ref", "budget_exhausted"):
        assert key in a["timing"]
    for key in ("n_folds", "repeats", "units", "scored_by_kind", "dropped_closure", "dropped_parity"):
        assert key in a["folds"]
    assert a["chosen"]["id"] in {r["id"] for r in a["candidates"]}
    assert _finite(a)
    assert len(m.labels_) == 150 and m.n_clusters_ == 3
    finalists = [r for r in a["candidates"] if r["status"] == "finalist"]
    assert finalists and all("ba" in r and "ba_se" in r and "diff_se" in r for r in finalists)


def test_scale_auto_picks_zscore_when_a_column_dwarfs_the_structure():
    X, y = make_blobs(150, centers=3, cluster_std=0.5, random_state=1)
    rng = np.random.default_rng(1)
    X = np.hstack([X, rng.normal(0, 1000, (150, 1))])  # a loud column without structure
    pairs = rng.integers(0, 150, (80, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1)
    m = AutoClustering(3, candidates=["ccskl-1", "sc-rbf", "ckm"], scale="auto", random_state=0).fit(
        X, pairs=pairs, pair_kind=kind)
    assert m.auto_["scale"]["chosen"] == "zscore"
    assert m.auto_["chosen"]["scale"] == "zscore"


def test_mixed_constraints_are_refused():
    from clustering.exceptions import InvalidInputError

    X, y, pairs, kind = _iris_like()
    with pytest.raises(InvalidInputError):
        AutoClustering(3).fit(X, pairs=pairs, pair_kind=kind, triplets=[[0, 1, 2]], triplet_answer=[1])


def test_rc3_semantics():
    lab = np.array([0, 0, 1, 1])
    t = np.array([[0, 1, 2], [0, 2, 1], [0, 2, 3]])
    # ab|c with a,b together and c apart: yes satisfied; a,c apart and b... (0,2,1): g(c)=g(b)=0? no: b=2->1, c=1->0
    assert rc3_satisfied(lab, t[:1], np.array([1])).all()
    assert not rc3_satisfied(lab, t[1:2], np.array([1]))  # c with a, b elsewhere
    assert rc3_satisfied(lab, t[1:2], np.array([-1]))  # "no" to 02|1 is 01|2


def test_relative_auto_chooses_between_dcrc_and_recon():
    X, y = make_blobs(90, centers=3, cluster_std=0.7, random_state=0)
    rng = np.random.default_rng(0)
    trip = []
    while len(trip) < 90:
        a, b, c = rng.integers(0, 90, 3)
        if len({a, b, c}) == 3 and y[a] == y[b] != y[c]:
            trip.append((a, b, c))
    m = AutoClustering(3, random_state=0).fit(X, triplets=trip, triplet_answer=[1] * len(trip))
    a = m.auto_
    assert a["chosen"]["method"] in ("dcrc", "recon")
    assert {r["id"] for r in a["candidates"]} == {c.id for c in relative_candidates()}
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(y, m.labels_) > 0.8


def test_wire_candidate_ids_match_the_estimators():
    from clustering.cards import AUTO_CANDIDATES  # noqa: PLC0415 - the wire's list, compared here

    assert set(AUTO_CANDIDATES) == {c.id for c in default_candidates()} | {c.id for c in relative_candidates()}


def test_the_budget_is_a_multiple_of_the_default_cop_rf_fit_and_a_dear_refit_leaves_rung_0_alone():
    X, y, pairs, kind = _iris_like()
    dear = Candidate("dear", "rec", "spectral", {}, lambda k, rs, p: _Recorder(k, rs), (1000.0, 1.0))
    m = AutoClustering(3, candidates=["rf-def", *CHEAP, dear], budget_factor=3, random_state=0).fit(
        X, pairs=pairs, pair_kind=kind)
    t = m.auto_["timing"]
    assert t["budget_s"] == pytest.approx(max(1.0, 3 * t["t_default_s"]))
    assert t["ratio_to_default"] == pytest.approx(t["cpu_s"] / t["t_default_s"])
    rows = {r["id"]: r for r in m.auto_["candidates"]}
    # its predicted refit (150 s) is beyond any budget here: it is left out, the others still run
    assert rows["dear"]["status"] == "pruned_rung_0" and rows["dear"]["reason"] == "budget"
    assert rows["dear"]["folds_scored"] == 0 and t["budget_exhausted"]
    assert all(rows[c]["folds_scored"] >= 2 or rows[c]["status"] == "failed" for c in CHEAP), rows
    assert m.auto_["chosen"]["id"] != "dear"
