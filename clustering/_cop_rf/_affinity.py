"""Numeric kernels of the COP-RF affinity (unchecked; see :mod:`clustering._cop_rf`).

The grown trees are applied to every row (leaf ids), and leaf co-occurrence
gives the affinity (``specs/cop_rf.md`` §4.6): dense counts, in-bag
normalised counts, or the top-k neighbours without the dense matrix. Compiled
with numba like the tree-growing kernels of :mod:`clustering._cop_rf._kernels`
(same :func:`clustering._numba.njit`: plain Python without numba). Inputs are assumed valid.
"""

import numpy as np

from .._numba import njit


@njit(cache=True, nogil=True)
def apply_tree(X, feature, threshold, left, right):
    """Leaf node id of every row of ``X`` (int32)."""
    n = X.shape[0]
    out = np.empty(n, dtype=np.int32)
    for i in range(n):
        node = 0
        while feature[node] >= 0:
            if X[i, feature[node]] <= threshold[node]:
                node = left[node]
            else:
                node = right[node]
        out[i] = node
    return out


@njit(cache=True, nogil=True)
def accumulate_counts(C, leaves, row_lo, row_hi, big):
    """Co-occurrence counts for rows ``row_lo <= i < row_hi`` of ``C`` (int32).

    For every tree (row of ``leaves``) and every leaf, adds 1 to ``C[i, j]``
    for the members i, j of that leaf (row-major, members in index order).
    A leaf holding more than ``big * n`` points is counted by complement: the
    returned offset gets +1 (to be added to every entry) and 1 is subtracted
    where i or j is outside that leaf, which costs ``n^2 - s^2`` instead of
    ``s^2``. The true count is ``C + offset``; diagonal entries are garbage.
    """
    T = leaves.shape[0]
    n = leaves.shape[1]
    offset = 0
    inside = np.zeros(n, dtype=np.bool_)
    for t in range(T):
        row = leaves[t]
        o = np.argsort(row, kind="mergesort")
        s = 0
        while s < n:
            e = s + 1
            while e < n and row[o[e]] == row[o[s]]:
                e += 1
            size = e - s
            if size > big * n:
                offset += 1
                for a in range(s, e):
                    inside[o[a]] = True
                for ia in range(row_lo, row_hi):
                    if inside[ia]:
                        for jb in range(n):
                            if not inside[jb]:
                                C[ia, jb] -= 1
                    else:
                        for jb in range(n):
                            C[ia, jb] -= 1
                for a in range(s, e):
                    inside[o[a]] = False
            elif size > 1:
                for a in range(s, e):
                    ia = o[a]
                    if ia < row_lo or ia >= row_hi:
                        continue
                    for b in range(s, e):
                        C[ia, o[b]] += 1
            s = e
    return offset


@njit(cache=True, nogil=True)
def _top_k_row(cnt, i, k, porder, hist, out_j, out_c):
    """The ``k`` columns with the largest positive count, ties broken by the
    seeded permutation (``porder`` lists columns by increasing ``perm``).

    Counting selection, O(n + max count): no sort."""
    n = cnt.shape[0]
    hist[:] = 0
    for j in range(n):
        if j != i and cnt[j] > 0:
            hist[cnt[j]] += 1
    acc = 0
    v = hist.shape[0] - 1
    while v > 0 and acc + hist[v] < k:
        acc += hist[v]
        v -= 1
    t = 0
    if v == 0:  # fewer than k positive columns: take them all
        for j in range(n):
            if j != i and cnt[j] > 0:
                out_j[t] = j
                out_c[t] = cnt[j]
                t += 1
        return t
    need = k - acc  # columns with count == v, first in permutation order
    for j in range(n):
        if j != i and cnt[j] > v:
            out_j[t] = j
            out_c[t] = cnt[j]
            t += 1
    for r in range(n):
        if need == 0:
            break
        j = porder[r]
        if j != i and cnt[j] == v:
            out_j[t] = j
            out_c[t] = v
            t += 1
            need -= 1
    return t


@njit(cache=True, nogil=True)
def knn_from_counts(C, k, perm):
    """Row-wise top-k of a dense count matrix. Returns (cols (n,k), counts (n,k), sizes (n,))."""
    n = C.shape[0]
    cols = np.full((n, k), -1, dtype=np.int64)
    cnts = np.zeros((n, k), dtype=np.int64)
    sizes = np.zeros(n, dtype=np.int64)
    porder = np.argsort(perm)
    maxc = 0
    for i in range(n):
        for j in range(n):
            if C[i, j] > maxc:
                maxc = C[i, j]
    hist = np.zeros(maxc + 1, dtype=np.int64)
    for i in range(n):
        sizes[i] = _top_k_row(C[i], i, k, porder, hist, cols[i], cnts[i])
    return cols, cnts, sizes


@njit(cache=True, nogil=True)
def knn_blockwise(order, gstart, gend, rows, k, perm):
    """Top-k without the dense matrix (§4.6, large n).

    ``order[t]`` lists the points of tree ``t`` sorted by leaf; point ``i``'s
    leaf occupies ``order[t, gstart[t, i]:gend[t, i]]``.
    """
    T = order.shape[0]
    n = order.shape[1]
    nr = rows.shape[0]
    cols = np.full((nr, k), -1, dtype=np.int64)
    cnts = np.zeros((nr, k), dtype=np.int64)
    sizes = np.zeros(nr, dtype=np.int64)
    cnt = np.zeros(n, dtype=np.int64)
    porder = np.argsort(perm)
    hist = np.zeros(T + 1, dtype=np.int64)
    for ri in range(nr):
        i = rows[ri]
        for t in range(T):
            for a in range(gstart[t, i], gend[t, i]):
                cnt[order[t, a]] += 1
        sizes[ri] = _top_k_row(cnt, i, k, porder, hist, cols[ri], cnts[ri])
        for t in range(T):
            for a in range(gstart[t, i], gend[t, i]):
                cnt[order[t, a]] = 0
    return cols, cnts, sizes


@njit(cache=True, nogil=True)
def accumulate_in_bag(leaves, in_bag, row_lo, row_hi, C, N):
    """In-bag co-occurrence (option ``affinity_samples="in_bag"``).

    For rows ``row_lo <= i < row_hi``: ``N[i, j]`` += 1 for every tree whose
    bag holds both i and j, ``C[i, j]`` += 1 when they also share a leaf.
    """
    T = leaves.shape[0]
    n = leaves.shape[1]
    members = np.empty(n, dtype=np.int64)
    for t in range(T):
        row = leaves[t]
        m = 0
        for j in range(n):
            if in_bag[t, j]:
                members[m] = j
                m += 1
        for a in range(m):
            i = members[a]
            if i < row_lo or i >= row_hi:
                continue
            li = row[i]
            for b in range(m):
                j = members[b]
                N[i, j] += 1
                if row[j] == li:
                    C[i, j] += 1


@njit(cache=True, nogil=True)
def knn_from_affinity(A, k, perm):
    """Row-wise top-k of a dense float affinity: the ``k`` largest positive
    entries off the diagonal, ties broken by the seeded permutation (CR-10).
    Returns (cols (n,k) int64, -1 padded, sizes (n,))."""
    n = A.shape[0]
    cols = np.full((n, k), -1, dtype=np.int64)
    sizes = np.zeros(n, dtype=np.int64)
    porder = np.argsort(perm)
    key = np.empty(n)
    for i in range(n):
        for r in range(n):
            key[r] = -A[i, porder[r]]
        o = np.argsort(key, kind="mergesort")
        t = 0
        for r in range(n):
            if t == k:
                break
            j = porder[o[r]]
            if j == i or A[i, j] <= 0.0:
                continue
            cols[i, t] = j
            t += 1
        sizes[i] = t
    return cols, sizes
