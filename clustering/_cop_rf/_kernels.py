"""Numeric kernels that grow COP-RF's trees (unchecked; see :mod:`clustering._cop_rf`).

Applying the trees and turning leaf co-occurrence into an affinity:
:mod:`clustering._cop_rf._affinity`.

Every function here is plain numpy-subset Python compiled with numba
(``cache=True, nogil=True``, through :func:`clustering._numba.njit`) when numba
is importable; without numba the same code runs as ordinary Python (correct,
but slow). Inputs are assumed valid.

Conventions (``specs/cop_rf.md``):

* training rows ``Zt`` are stored feature-major, shape ``(d, 2N)``; ``y`` is 1
  for real rows and 0 for pseudo rows (CR-1);
* constraint ``c`` has endpoints ``e0[c], e1[c]`` (rows of ``X``) and ``kind[c]``
  (+1 must-link, -1 cannot-link); its values on feature ``f`` are read from
  ``Xt[f, e0[c]]`` (the endpoints are in the bag, so these equal training values);
* a cut at sorted position ``p`` sends sorted positions ``0..p`` left; thresholds
  use the "<= goes left" convention (CR-3, §7.6);
* cut position ``p`` separates a pair with sorted insertion indices ``a <= b``
  iff ``a <= p < b`` (§4.4 step 3).
"""

import numpy as np

from .._numba import njit


# A split must improve the Gini impurity by more than this (CR-7 "> 0";
# a tolerance absorbs rounding of gains that are exactly 0 in real numbers).
GAIN_EPS = 1e-12

POLICY_LITERAL = 0
POLICY_RELAXED = 1
POLICY_SEPARATE = 2  # relaxed + pure real nodes holding cannot-links are cut too

SPLIT_STRICT = 0  # valid_strict (CR-6)
SPLIT_ML_ONLY = 1  # relaxed step 2
SPLIT_FORCED = 2  # relaxed step 3 (most cannot-links separated, gain may be 0)


@njit(cache=True, nogil=True)
def _bisect_left(v, m, x):
    lo = 0
    hi = m
    while lo < hi:
        mid = (lo + hi) >> 1
        if v[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def draw_features(perm, r, mtry):
    """Partial Fisher-Yates: the first ``mtry`` entries of ``perm`` become the draw."""
    d = perm.shape[0]
    for i in range(mtry):
        j = i + int(r[i] * (d - i))
        if j >= d:
            j = d - 1
        t = perm[i]
        perm[i] = perm[j]
        perm[j] = t
    return perm[:mtry].copy()


@njit(cache=True, nogil=True)
def draw_subsets(u, p, q):
    """Row ``r``: ``q`` distinct positions of ``0..p-1`` by a partial
    Fisher-Yates shuffle driven by the uniforms ``u[r, :q]`` (CR-12)."""
    f = u.shape[0]
    Q = np.empty((f, q), dtype=np.int64)
    perm = np.empty(p, dtype=np.int64)
    for r in range(f):
        for i in range(p):
            perm[i] = i
        for i in range(q):
            j = i + int(u[r, i] * (p - i))
            if j >= p:
                j = p - 1
            t = perm[i]
            perm[i] = perm[j]
            perm[j] = t
            Q[r, i] = perm[i]
    return Q


@njit(cache=True, nogil=True)
def _sort_feature(Zt, y, idx, start, end, f, v, yr):
    """Sorted values ``v[:m]`` of feature ``f`` over the node's rows and the
    matching real/pseudo flags ``yr[:m]``; returns the real count R."""
    m = end - start
    tmp = np.empty(m)
    for k in range(m):
        tmp[k] = Zt[f, idx[start + k]]
    o = np.argsort(tmp)
    R = 0
    for k in range(m):
        r = idx[start + o[k]]
        v[k] = tmp[o[k]]
        yr[k] = y[r]
        R += y[r]
    return R


@njit(cache=True, nogil=True)
def _gains(v, yr, m, R, g):
    """Gini gain of every cut position (CR-4); -1 where ``v[p] == v[p+1]``."""
    parent = 2.0 * R * (m - R) / m
    rl = 0
    for p in range(m - 1):
        rl += yr[p]
        if v[p] < v[p + 1]:
            nl = p + 1
            nr = m - nl
            rr = R - rl
            child = 2.0 * rl * (nl - rl) / nl + 2.0 * rr * (nr - rr) / nr
            g[p] = (parent - child) / m
        else:
            g[p] = -1.0


@njit(cache=True, nogil=True)
def _threshold(v, p):
    th = v[p] / 2.0 + v[p + 1] / 2.0
    if th >= v[p + 1]:
        th = v[p]
    return th


@njit(cache=True, nogil=True)
def scan_feature(v, g, m, f, Xt, e0, e1, kind, cons, cs, ce, want_cover, out):
    """Best cut positions of one sorted feature under the three validity rules.

    ``out`` (float64, 6) receives: best strict gain, its position, best
    must-link-only gain, its position, best cannot-link coverage, its position
    (ties in coverage -> larger gain). Gains must exceed ``GAIN_EPS`` for the
    first two; coverage mode needs only a usable, must-link-free cut.
    """
    diff_ml = np.zeros(m + 1, dtype=np.int64)
    diff_cl = np.zeros(m + 1, dtype=np.int64)
    cl_lo = 0
    cl_hi = m - 1
    cl_impossible = False
    for k in range(cs, ce):
        c = cons[k]
        u = Xt[f, e0[c]]
        w = Xt[f, e1[c]]
        lo = u if u < w else w
        hi = w if u < w else u
        a = _bisect_left(v, m, lo)
        b = _bisect_left(v, m, hi)
        if kind[c] > 0:
            if a < b:
                diff_ml[a] += 1
                diff_ml[b] -= 1
        else:
            if a >= b:
                cl_impossible = True
            else:
                if a > cl_lo:
                    cl_lo = a
                if b < cl_hi:
                    cl_hi = b
                if want_cover:
                    diff_cl[a] += 1
                    diff_cl[b] -= 1
    best_s = -1.0
    pos_s = -1
    best_m = -1.0
    pos_m = -1
    best_c = 0
    best_cg = -1.0
    pos_c = -1
    cov_ml = 0
    cov_cl = 0
    for p in range(m - 1):
        cov_ml += diff_ml[p]
        cov_cl += diff_cl[p]
        gp = g[p]
        if gp < -0.5 or cov_ml > 0:
            continue
        if gp > GAIN_EPS:
            if gp > best_m:
                best_m = gp
                pos_m = p
            if (not cl_impossible) and p >= cl_lo and p < cl_hi and gp > best_s:
                best_s = gp
                pos_s = p
        if want_cover and cov_cl > 0:
            if cov_cl > best_c or (cov_cl == best_c and gp > best_cg):
                best_c = cov_cl
                best_cg = gp
                pos_c = p
    out[0] = best_s
    out[1] = pos_s
    out[2] = best_m
    out[3] = pos_m
    out[4] = best_c
    out[5] = pos_c


@njit(cache=True, nogil=True)
def find_split(Zt, y, idx, start, end, Xt, e0, e1, kind, cons, cs, ce, feats, policy, v, yr, g):
    """Split search at one node (CR-7 with CR-6, §4.3).

    Returns ``(feature, threshold, gain, split_type)``; feature -1 = leaf.
    """
    m = end - start
    d = Zt.shape[0]
    out = np.empty(6)
    bs_gain = -1.0
    bs_f = -1
    bs_th = 0.0
    bm_gain = -1.0
    bm_f = -1
    bm_th = 0.0
    n_cl = 0
    for k in range(cs, ce):
        if kind[cons[k]] < 0:
            n_cl += 1
    for fi in range(feats.shape[0]):
        f = feats[fi]
        R = _sort_feature(Zt, y, idx, start, end, f, v, yr)
        _gains(v, yr, m, R, g)
        scan_feature(v, g, m, f, Xt, e0, e1, kind, cons, cs, ce, False, out)
        if out[1] >= 0 and out[0] > bs_gain:
            bs_gain = out[0]
            bs_f = f
            bs_th = _threshold(v, int(out[1]))
        if out[3] >= 0 and out[2] > bm_gain:
            bm_gain = out[2]
            bm_f = f
            bm_th = _threshold(v, int(out[3]))
    if bs_f >= 0:
        return bs_f, bs_th, bs_gain, SPLIT_STRICT
    if policy == POLICY_LITERAL:
        return -1, 0.0, 0.0, SPLIT_STRICT
    if bm_f >= 0:
        return bm_f, bm_th, bm_gain, SPLIT_ML_ONLY
    if n_cl == 0:
        return -1, 0.0, 0.0, SPLIT_STRICT
    # Relaxed step 3: over all features, the must-link-respecting cut that
    # separates the most active cannot-links (ties -> larger gain).
    best_c = 0.0
    best_cg = -2.0
    best_f = -1
    best_th = 0.0
    for f in range(d):
        R = _sort_feature(Zt, y, idx, start, end, f, v, yr)
        _gains(v, yr, m, R, g)
        scan_feature(v, g, m, f, Xt, e0, e1, kind, cons, cs, ce, True, out)
        if out[5] >= 0:
            p = int(out[5])
            gp = g[p]
            if out[4] > best_c or (out[4] == best_c and gp > best_cg):
                best_c = out[4]
                best_cg = gp
                best_f = f
                best_th = _threshold(v, p)
    if best_f >= 0:
        return best_f, best_th, max(best_cg, 0.0), SPLIT_FORCED
    return -1, 0.0, 0.0, SPLIT_STRICT


@njit(cache=True, nogil=True)
def root_filter(Zt, y, Xt, e0, e1, kind, pt, feat_mask, Q, soft):
    """Root filter over ``f`` repetitions (CR-12, CR-13; §4.5).

    Parameters
    ----------
    pt : int64 (p,) constraint ids of P^t.
    feat_mask : bool (f, d) features usable by each repetition (rows equal when
        the repetitions share the root features).
    Q : int64 (f, q) local positions (into ``pt``) of each repetition's subset.
    soft : bool, use the CR-16 score.

    Returns
    -------
    dI : float64 (f,) best root gain per repetition (0 if none).
    """
    d = Zt.shape[0]
    n2 = Zt.shape[1]
    f_rep = Q.shape[0]
    q = Q.shape[1]
    p_all = pt.shape[0]
    dI = np.zeros(f_rep)
    idx = np.arange(n2)
    v = np.empty(n2)
    yr = np.empty(n2, dtype=y.dtype)
    g = np.empty(n2)
    a = np.empty(p_all, dtype=np.int64)
    b = np.empty(p_all, dtype=np.int64)
    m = n2
    for f in range(d):
        used = False
        for r in range(f_rep):
            if feat_mask[r, f]:
                used = True
                break
        if not used:
            continue
        R = _sort_feature(Zt, y, idx, 0, n2, f, v, yr)
        _gains(v, yr, m, R, g)
        # breakpoints: {0, m-1} U {a_j} U {b_j}
        bp = np.empty(2 * p_all + 2, dtype=np.int64)
        bp[0] = 0
        bp[1] = m - 1
        for j in range(p_all):
            c = pt[j]
            u = Xt[f, e0[c]]
            w = Xt[f, e1[c]]
            lo = u if u < w else w
            hi = w if u < w else u
            a[j] = _bisect_left(v, m, lo)
            b[j] = _bisect_left(v, m, hi)
            bp[2 + 2 * j] = a[j]
            bp[3 + 2 * j] = b[j]
        B = np.unique(bp)  # sorted boundaries, last = m-1
        S = B.shape[0] - 1  # segments [B[s], B[s+1])
        segbest = np.full(S, -1.0)
        for s in range(S):
            best = -1.0
            for pp in range(B[s], B[s + 1]):
                if g[pp] > best:
                    best = g[pp]
            segbest[s] = best
        sa = np.empty(p_all, dtype=np.int64)
        sb = np.empty(p_all, dtype=np.int64)
        for j in range(p_all):
            sa[j] = _bisect_left(B, S + 1, a[j])
            sb[j] = _bisect_left(B, S + 1, b[j])
        dml = np.zeros(S + 1, dtype=np.int64)
        dcl = np.zeros(S + 1, dtype=np.int64)
        for r in range(f_rep):
            if not feat_mask[r, f]:
                continue
            dml[:] = 0
            dcl[:] = 0
            clo = 0
            chi = S
            ncl = 0
            impossible = False
            for qi in range(q):
                j = Q[r, qi]
                if kind[pt[j]] > 0:
                    if sa[j] < sb[j]:
                        dml[sa[j]] += 1
                        dml[sb[j]] -= 1
                else:
                    ncl += 1
                    if sa[j] >= sb[j]:
                        impossible = True
                    else:
                        if sa[j] > clo:
                            clo = sa[j]
                        if sb[j] < chi:
                            chi = sb[j]
                        dcl[sa[j]] += 1
                        dcl[sb[j]] -= 1
            best = dI[r]
            cov = 0
            ccov = 0
            for s in range(S):
                cov += dml[s]
                ccov += dcl[s]
                if cov > 0 or segbest[s] <= GAIN_EPS:
                    continue
                if soft:
                    val = segbest[s] if ncl == 0 else segbest[s] * ccov / ncl
                    if val > best:
                        best = val
                elif (not impossible) and s >= clo and s < chi:
                    if segbest[s] > best:
                        best = segbest[s]
            dI[r] = best
    return dI


@njit(cache=True, nogil=True)
def grow_tree(Zt, y, Xt, e0, e1, kind, pt, root_active, feat_rand, mtry, min_samples_split, max_depth, policy):
    """Grow one COP-tree depth-first (§4.2).

    ``pt`` is P^t (handed to the children, CR-5); ``root_active`` the set the
    root split is searched with (S^t when filtering, else P^t). Row ``k`` of
    ``feat_rand`` draws the features of the ``k``-th searched node.

    Returns
    -------
    feature (int32), threshold (float64), left, right (int32), n_samples,
    n_real (int32), depth (int32), split_type (int8) arrays of the nodes and
    the node count. Leaves have feature -1.
    """
    d = Zt.shape[0]
    n2 = Zt.shape[1]
    cap = 2 * n2 + 1
    feature = np.full(cap, -1, dtype=np.int32)
    threshold = np.zeros(cap)
    left = np.full(cap, -1, dtype=np.int32)
    right = np.full(cap, -1, dtype=np.int32)
    nsamp = np.zeros(cap, dtype=np.int32)
    nreal = np.zeros(cap, dtype=np.int32)
    depth = np.zeros(cap, dtype=np.int32)
    stype = np.zeros(cap, dtype=np.int8)
    idx = np.arange(n2)
    tmp_idx = np.empty(n2, dtype=np.int64)
    p_all = pt.shape[0]
    cons = pt.copy()
    tmp_c = np.empty(max(p_all, 1), dtype=np.int64)
    v = np.empty(n2)
    yr = np.empty(n2, dtype=y.dtype)
    g = np.empty(n2)
    perm = np.arange(d)
    # stack of (start, end, cstart, cend, node)
    stack = np.empty((cap, 5), dtype=np.int64)
    sp = 0
    stack[0, 0] = 0
    stack[0, 1] = n2
    stack[0, 2] = 0
    stack[0, 3] = p_all
    stack[0, 4] = 0
    sp = 1
    n_nodes = 1
    searched = 0
    while sp > 0:
        sp -= 1
        start = stack[sp, 0]
        end = stack[sp, 1]
        cs = stack[sp, 2]
        ce = stack[sp, 3]
        node = stack[sp, 4]
        m = end - start
        R = 0
        for k in range(start, end):
            R += y[idx[k]]
        nsamp[node] = m
        nreal[node] = R
        if m < min_samples_split or depth[node] >= max_depth:
            continue
        if R == 0 or R == m:
            # pure node: a leaf, except under POLICY_SEPARATE when it still
            # holds an active cannot-link (then only the forced cut applies)
            if policy != POLICY_SEPARATE or R == 0:
                continue
            has_cl = False
            if node == 0:
                for k in range(root_active.shape[0]):
                    if kind[root_active[k]] < 0:
                        has_cl = True
            else:
                for k in range(cs, ce):
                    if kind[cons[k]] < 0:
                        has_cl = True
            if not has_cl:
                continue
        feats = draw_features(perm, feat_rand[searched], mtry)
        searched += 1
        if node == 0:
            fbest, th, gain, st = find_split(
                Zt, y, idx, start, end, Xt, e0, e1, kind, root_active, 0, root_active.shape[0],
                feats, policy, v, yr, g,
            )
        else:
            fbest, th, gain, st = find_split(
                Zt, y, idx, start, end, Xt, e0, e1, kind, cons, cs, ce, feats, policy, v, yr, g
            )
        if fbest < 0:
            continue
        # partition samples (stable): left block then right block
        nl = 0
        for k in range(start, end):
            if Zt[fbest, idx[k]] <= th:
                tmp_idx[nl] = idx[k]
                nl += 1
        nr = 0
        for k in range(start, end):
            if Zt[fbest, idx[k]] > th:
                tmp_idx[nl + nr] = idx[k]
                nr += 1
        for k in range(m):
            idx[start + k] = tmp_idx[k]
        # partition constraints: both endpoints left / both right; cut ones dropped
        cl_n = 0
        for k in range(cs, ce):
            c = cons[k]
            if Xt[fbest, e0[c]] <= th and Xt[fbest, e1[c]] <= th:
                tmp_c[cl_n] = c
                cl_n += 1
        cr_n = 0
        for k in range(cs, ce):
            c = cons[k]
            if Xt[fbest, e0[c]] > th and Xt[fbest, e1[c]] > th:
                tmp_c[cl_n + cr_n] = c
                cr_n += 1
        for k in range(cl_n + cr_n):
            cons[cs + k] = tmp_c[k]
        ln = n_nodes
        rn = n_nodes + 1
        n_nodes += 2
        feature[node] = fbest
        threshold[node] = th
        left[node] = ln
        right[node] = rn
        stype[node] = st
        depth[ln] = depth[node] + 1
        depth[rn] = depth[node] + 1
        # push right first so that the left child is grown first
        stack[sp, 0] = start + nl
        stack[sp, 1] = end
        stack[sp, 2] = cs + cl_n
        stack[sp, 3] = cs + cl_n + cr_n
        stack[sp, 4] = rn
        sp += 1
        stack[sp, 0] = start
        stack[sp, 1] = start + nl
        stack[sp, 2] = cs
        stack[sp, 3] = cs + cl_n
        stack[sp, 4] = ln
        sp += 1
    return feature, threshold, left, right, nsamp, nreal, depth, stype, n_nodes
