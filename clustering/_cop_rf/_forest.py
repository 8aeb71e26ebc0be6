"""COP-RF's forest: growing one COP-tree, the constraint scores and the leaf co-occurrence affinity.

Private to :class:`clustering.COPRF` (``shared/specs/cop_rf.md``): a tree from
its own seed streams (bag, pseudo samples, feature draws; CR-1, CR-2, §4.2),
with the root filter's constraint scores (averaged over the forest, CR-15),
and the forest affinity from leaf ids and its kNN graph (CR-9, CR-10): dense
co-occurrence counts, the in-bag affinity, or the top-k neighbours without the
dense matrix (§4.6). The numeric kernels are in
:mod:`clustering._cop_rf._kernels` (growing) and :mod:`clustering._cop_rf._affinity`
(leaves and affinity).
"""

import math

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed

from . import _affinity as _a
from . import _kernels as _k


def _grow_batch(X, Xt, lo, hi, e0, e1, kind, seeds, s):
    return [_grow_one(X, Xt, lo, hi, e0, e1, kind, ss, s) for ss in seeds]


def _grow_one(X, Xt, lo, hi, e0, e1, kind, seed, s):
    """One COP-tree (§4.2) from its own seed; returns leaf ids and filter output."""
    sa, sb, sc = seed.spawn(3)
    ga = np.random.default_rng(sa)
    gb = np.random.default_rng(sb)
    gc = np.random.default_rng(sc)
    N, d = X.shape
    mtry = s["mtry"]
    # stream a: bag and pseudo samples (CR-1, CR-2)
    bag = ga.integers(0, N, N)
    if s["marginal"]:
        # Shi & Horvath's Addcl1: every coordinate drawn independently from
        # that feature's observed values (product of the empirical marginals)
        pseudo = np.take_along_axis(X, ga.integers(0, N, (N, d)), axis=0)
    else:
        pseudo = ga.uniform(lo, hi, size=(N, d))
    in_bag = np.zeros(N, dtype=bool)
    in_bag[bag] = True
    pt = np.flatnonzero(in_bag[e0] & in_bag[e1]).astype(np.int64)
    Zt = np.empty((d, 2 * N))
    Zt[:, :N] = Xt[:, bag]
    Zt[:, N:] = pseudo.T
    yv = np.zeros(2 * N, dtype=np.int64)
    yv[:N] = 1
    # stream b: one row of uniforms per searched node (feature draws)
    feat_rand = gb.random((4 * N + 2, mtry))
    p = pt.size
    scores = None
    selected = np.ones(p)
    zero_fraction = None
    root_active = pt
    if s["filter"] and p > 0:
        q = int(math.ceil(s["alpha"] * p))
        f = s["repeats"]
        Q = _k.draw_subsets(gc.random((f, q)), p, q)
        feat_mask = np.zeros((f, d), dtype=bool)
        if s["share"]:
            root_feats = _k.draw_features(np.arange(d), feat_rand[0], mtry)
            feat_mask[:, root_feats] = True
        else:
            fk = gc.random((f, d))
            pick = np.argpartition(fk, mtry - 1, axis=1)[:, :mtry] if mtry < d else np.tile(np.arange(d), (f, 1))
            np.put_along_axis(feat_mask, pick, True, axis=1)
        dI = _k.root_filter(Zt, yv, Xt, e0, e1, kind, pt, feat_mask, Q, s["soft"])
        sums = np.bincount(Q.ravel(), weights=np.repeat(dI, q), minlength=p)
        r = np.bincount(Q.ravel(), minlength=p)
        with np.errstate(invalid="ignore", divide="ignore"):
            scores = np.where(r > 0, sums / np.maximum(r, 1), -np.inf)
        tie = gc.random(p)
        order = np.lexsort((tie, -scores))
        sel_local = np.sort(order[:q])
        selected = np.zeros(p)
        selected[sel_local] = 1.0
        root_active = pt[sel_local]
        zero_fraction = float(np.mean(dI <= _k.GAIN_EPS))
    feature, threshold, left, right, nsamp, nreal, depth, stype, n_nodes = _k.grow_tree(
        Zt, yv, Xt, e0, e1, kind, pt, np.ascontiguousarray(root_active), feat_rand, mtry,
        s["min_samples_split"], s["max_depth"], s["policy"],
    )
    feature = feature[:n_nodes]
    threshold = threshold[:n_nodes]
    left = left[:n_nodes]
    right = right[:n_nodes]
    leaves = _a.apply_tree(X, feature, threshold, left, right)
    internal = feature >= 0
    out = {
        "leaves": leaves,
        "bag": bag,
        "root_leaf": bool(feature[0] < 0),
        "pt": pt,
        "scores": scores,
        "selected": selected,
        "zero_fraction": zero_fraction,
        "n_internal": int(internal.sum()),
        "n_leaves": int(n_nodes - internal.sum()),
        "depth": int(depth[:n_nodes].max()),
        "n_forced": int(np.sum(stype[:n_nodes][internal] == _k.SPLIT_FORCED)),
        "n_ml_only": int(np.sum(stype[:n_nodes][internal] == _k.SPLIT_ML_ONLY)),
    }
    if s["keep_tree"]:
        out["tree"] = {
            "feature": feature,
            "threshold": threshold,
            "children_left": left,
            "children_right": right,
            "n_node_samples": nsamp[:n_nodes],
            "n_node_real": nreal[:n_nodes],
            "split_type": stype[:n_nodes],
            "constraints": pt,
            "root_constraints": np.asarray(root_active),
            "bag": bag,
        }
    return out


def _count_matrix(leaves, n_jobs, big=0.75):
    """Dense co-occurrence counts (int32, zero diagonal) of the trees in
    ``leaves`` (T', n); rows split across threads (§4.6)."""
    n = leaves.shape[1]
    C = np.zeros((n, n), dtype=np.int32)
    n_parts = max(1, min(n_jobs, n // 64))
    cuts = np.linspace(0, n, n_parts + 1).round().astype(int)
    if n_parts == 1:
        offsets = [_a.accumulate_counts(C, leaves, 0, n, big)]
    else:
        offsets = Parallel(n_jobs=n_parts, backend="threading")(
            delayed(_a.accumulate_counts)(C, leaves, cuts[i], cuts[i + 1], big) for i in range(n_parts)
        )
    C += np.int32(offsets[0])  # every part sees the same big leaves
    np.fill_diagonal(C, 0)
    return C


def _in_bag_affinity(leaves, in_bag, n_jobs):
    """A_ij = (#trees with i, j in the bag and in one leaf) / (#trees with
    i, j in the bag); 0 when no bag held both; zero diagonal."""
    T, n = leaves.shape
    C = np.zeros((n, n), dtype=np.int32)
    N = np.zeros((n, n), dtype=np.int32)
    n_parts = max(1, min(n_jobs, n // 64))
    cuts = np.linspace(0, n, n_parts + 1).round().astype(int)
    Parallel(n_jobs=n_parts, backend="threading")(
        delayed(_a.accumulate_in_bag)(leaves, in_bag, cuts[i], cuts[i + 1], C, N) for i in range(n_parts)
    )
    A = np.zeros((n, n))
    np.divide(C, N, out=A, where=N > 0)
    np.fill_diagonal(A, 0.0)
    return A


def _knn_blockwise(leaves, k, perm, n_jobs, block=256):
    """Top-k neighbours from leaf ids without the dense matrix (§4.6)."""
    T, n = leaves.shape
    order = np.argsort(leaves, axis=1, kind="stable").astype(np.int64)
    gstart = np.empty((T, n), dtype=np.int64)
    gend = np.empty((T, n), dtype=np.int64)
    for t in range(T):
        sl = leaves[t, order[t]]
        change = np.empty(n, dtype=bool)
        change[0] = True
        change[1:] = sl[1:] != sl[:-1]
        starts = np.flatnonzero(change)
        ends = np.append(starts[1:], n)
        grp = np.cumsum(change) - 1
        gstart[t, order[t]] = starts[grp]
        gend[t, order[t]] = ends[grp]
    blocks = [np.arange(a, min(a + block, n)) for a in range(0, n, block)]
    if n_jobs > 1 and len(blocks) > 1:
        parts = Parallel(n_jobs=n_jobs, backend="threading")(
            delayed(_a.knn_blockwise)(order, gstart, gend, b, k, perm) for b in blocks
        )
    else:
        parts = [_a.knn_blockwise(order, gstart, gend, b, k, perm) for b in blocks]
    cols = np.concatenate([p[0] for p in parts])
    cnts = np.concatenate([p[1] for p in parts])
    sizes = np.concatenate([p[2] for p in parts])
    return cols, cnts, sizes


def constraint_scores(results, e0, e1, kind):
    """Per-constraint root-filter scores and selection rates over the forest (CR-15).

    Parameters
    ----------
    results : list of dict
        One :func:`_grow_batch` record per tree (``pt``, ``selected``,
        ``scores``, ``leaves``).
    e0, e1 : ndarray of shape (u,), int64
        Endpoints of the normalised constraints.
    kind : ndarray of shape (u,), int64
        +1 must-link, -1 cannot-link.

    Returns
    -------
    score : ndarray of shape (u,), float64
        Mean finite root-filter score over the trees that drew the constraint
        (NaN when none scored it).
    rate : ndarray of shape (u,), float64
        Fraction of those trees whose root filter selected it (NaN when no
        tree drew it).
    cover : ndarray of shape (u,), int64
        Number of trees that drew it.
    satisfaction : tuple of 4 int
        Must-links in one leaf, must-links drawn, cannot-links in two leaves,
        cannot-links drawn, summed over the trees.
    """
    u = e0.shape[0]
    score_sum = np.zeros(u)
    score_n = np.zeros(u)
    sel_sum = np.zeros(u)
    cover = np.zeros(u, dtype=np.int64)
    ml_ok = ml_tot = cl_ok = cl_tot = 0
    for res in results:
        pt = res["pt"]
        cover[pt] += 1
        sel_sum[pt] += res["selected"]
        s = res["scores"]
        if s is not None:
            fin = np.isfinite(s)
            score_sum[pt[fin]] += s[fin]
            score_n[pt[fin]] += 1
        same = res["leaves"][e0[pt]] == res["leaves"][e1[pt]]
        is_ml = kind[pt] > 0
        ml_ok += int(np.sum(same & is_ml))
        ml_tot += int(np.sum(is_ml))
        cl_ok += int(np.sum(~same & ~is_ml))
        cl_tot += int(np.sum(~is_ml))
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(score_n > 0, score_sum / np.maximum(score_n, 1), np.nan)
        rate = np.where(cover > 0, sel_sum / np.maximum(cover, 1), np.nan)
    return score, rate, cover, (ml_ok, ml_tot, cl_ok, cl_tot)


def forest_knn_graph(leaves, root_leaf, in_bag, k, perm, *, dense, keep_affinity, n_jobs):
    """The forest affinity and its symmetric kNN graph (CR-9, CR-10, §4.6).

    Trees whose root is a leaf join every pair: they add a constant offset to
    the counts instead of being counted (when every root is a leaf, the first
    tree is counted, and the affinity is constant).

    Parameters
    ----------
    leaves : ndarray of shape (T, n), int32
        Leaf id of every row in every tree.
    root_leaf : ndarray of shape (T,), bool
        Trees that never split.
    in_bag : ndarray of shape (T, n), bool, or None
        Bag membership for the in-bag affinity; None counts every row.
    k : int
        Neighbours per row (ties broken by ``perm``).
    perm : ndarray of shape (n,), int64
        A random permutation of the rows.
    dense : bool
        Build the dense n x n affinity (else top-k neighbours blockwise).
    keep_affinity : bool
        Return the in-bag affinity even when ``dense`` is False.
    n_jobs : int
        Threads.

    Returns
    -------
    W : csr_matrix of shape (n, n), float64
        Symmetric kNN graph (``max(W, W.T)``), sorted indices.
    A : ndarray of shape (n, n), float64, or None
        The dense forest affinity (zero diagonal), or None when not built or
        not kept.
    """
    T, n = leaves.shape
    nondeg = np.flatnonzero(~root_leaf)
    if nondeg.size == 0:
        nondeg = np.array([0])
    offset = T - nondeg.size  # root-leaf trees join every pair
    use = leaves[nondeg]
    rows = np.repeat(np.arange(n), k)
    if in_bag is not None:
        A = _in_bag_affinity(leaves, in_bag, n_jobs)
        cols, _ = _a.knn_from_affinity(A, k, perm)
        valid = cols.ravel() >= 0
        vals = A[rows[valid], cols.ravel()[valid]]
        if not keep_affinity:
            A = None
    else:
        if dense:
            C = _count_matrix(use, n_jobs)
            cols, cnts, _ = _a.knn_from_counts(C, k, perm)
            A = (C + float(offset)) / T
            np.fill_diagonal(A, 0.0)
            del C
        else:
            cols, cnts, _ = _knn_blockwise(use, k, perm, n_jobs)
            A = None
        valid = cols.ravel() >= 0
        vals = (cnts.ravel()[valid] + offset) / T
    W = sp.csr_matrix((vals, (rows[valid], cols.ravel()[valid])), shape=(n, n))
    W = sp.csr_matrix(W.maximum(W.T))
    W.sort_indices()
    return W, A
