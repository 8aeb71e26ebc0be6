"""ReCon's agglomeration and flat cut (``shared/specs/recon.md`` §4.3 - §4.5).

Centroid-linkage merging that never merges into a dead end (RC-6 .. RC-10,
BUILD checks before merges) and the flat k-cut with outlier branches; Liu,
Zhang, Wang, KDD 2011. Called by :class:`clustering.ReCon`.
"""

import heapq
import math
import time

import numpy as np
from scipy.spatial.distance import cdist

from ._hierarchy import _triplet_lcas, partition_satisfies
from .._relative import _build, _root_labels
from ..exceptions import InfeasibleConstraintsError, InvalidInputError


# ---------------------------------------------------------------------------
# ReCon agglomeration (spec §4.3, §4.4)
# ---------------------------------------------------------------------------


def _rc6_violated(TL, i, j):
    """RC-6: merging i and j directly violates a triplet (c is one of them,
    the other is in the pair)."""
    c = TL[:, 2]
    pair_i = (TL[:, 0] == i) | (TL[:, 1] == i)
    pair_j = (TL[:, 0] == j) | (TL[:, 1] == j)
    return bool(np.any(((c == j) & pair_i) | ((c == i) & pair_j)))


def _test_compatibility(TL, i, j, pos, verts):
    """TestCompatibility (RC-8, §4.4): BUILD with i and j forced together,
    following only the block that contains them. ``TL`` is consistent and
    ``verts`` are the clusters occurring in it (i and j among them)."""
    A, B, C = TL[:, 0], TL[:, 1], TL[:, 2]
    while True:
        k = verts.shape[0]
        if k <= 2 or A.shape[0] == 0:
            return True
        pos[verts] = np.arange(k)
        a = pos[A]
        b = pos[B]
        pi, pj = pos[i], pos[j]
        lab = _root_labels(k, np.append(a, pi), np.append(b, pj))
        li = lab[pi]
        inblock = lab == li
        if inblock.all():
            return False
        keept = inblock[a] & inblock[b] & inblock[pos[C]]
        verts = verts[inblock]
        A, B, C = A[keept], B[keept], C[keept]


class _BuildTree:
    """The BUILD tree of the live triplets, maintained across merges.

    Leaves are cluster slots (< n), internal nodes have ids >= n. After a
    compatible merge of i and j the new BUILD tree differs from the old one
    only locally (module notes in ``_linkage``), so it is updated in
    place instead of re-running BUILD on every triplet.
    """

    def __init__(self, n):
        self.par = {}
        self.kids = {}
        self.root = None
        self.next_id = n

    def attach(self, nested, parent):
        """Create nodes for a nested-list tree under ``parent``; returns its top id."""
        if not isinstance(nested, list):
            self.par[int(nested)] = parent
            return int(nested)
        top = self.next_id
        stack = [(nested, parent)]
        while stack:
            node, p = stack.pop()
            nid = self.next_id
            self.next_id += 1
            self.par[nid] = p
            self.kids[nid] = set()
            if p is not None:
                self.kids[p].add(nid)
            for c in node:
                if isinstance(c, list):
                    stack.append((c, nid))
                else:
                    self.par[int(c)] = nid
                    self.kids[nid].add(int(c))
        return top

    def lca_children(self, i, j):
        """(lca v of leaves i and j, child of v above i, child of v above j)."""
        par = self.par
        path = {}
        prev, x = None, i
        while x is not None:
            path[x] = prev
            prev, x = x, par[x]
        prev, x = None, j
        while x not in path:
            prev, x = x, par[x]
        # walk i's side: the child of x on the path from i
        ci, y = i, i
        while y != x:
            ci, y = y, par[y]
        return x, ci, prev

    def leaves(self, node):
        if node not in self.kids:
            return [node]
        out, stack = [], [node]
        kids = self.kids
        while stack:
            v = stack.pop()
            for c in kids[v]:
                if c in kids:
                    stack.append(c)
                else:
                    out.append(c)
        return out

    def drop_subtree(self, node):
        stack = [node]
        while stack:
            v = stack.pop()
            self.par.pop(v, None)
            ch = self.kids.pop(v, None)
            if ch:
                stack.extend(c for c in ch if c in self.kids)

    def fix(self, v):
        """Suppress unary nodes and remove empty ones, from ``v`` upwards."""
        kids, par = self.kids, self.par
        while v is not None and v in kids and len(kids[v]) <= 1:
            p = par[v]
            if len(kids[v]) == 1:
                (c,) = kids[v]
                par[c] = p
                if p is None:
                    self.root = c if c in kids else None
                    if c not in kids:
                        par.pop(c)
                else:
                    kids[p].discard(v)
                    kids[p].add(c)
                del kids[v]
                del par[v]
                return
            del kids[v]
            del par[v]
            if p is None:
                self.root = None
                return
            kids[p].discard(v)
            v = p

    def remove_leaf(self, x):
        p = self.par.pop(x, None)
        if p is not None:
            self.kids[p].discard(x)
            self.fix(p)

    def rename_leaf(self, old, new):
        p = self.par.pop(old)
        self.par[new] = p
        self.kids[p].discard(old)
        self.kids[p].add(new)

    def clusters(self):
        """Leaf sets of the internal nodes (for checks)."""
        return {frozenset(self.leaves(v)) for v in self.kids}


def _recon_linkage(X, rel, callback=None, *, maintain_tree=True, check_tree=False):
    """Unchecked ReCon main loop. ``rel`` (m, 3) must be consistent.

    Notes
    -----
    TestCompatibility(i, j) (RC-8) follows BUILD with i and j identified.
    Down to v = lca(i, j) in the BUILD tree T0 of the live triplets this is
    BUILD itself, so the test starts at v: if v has two children the forced
    block is all of v -> incompatible; if i and j are both leaf children of
    v -> compatible; otherwise the recursion continues on the union of the
    two children's leaves with the triplets inside it (exactly the
    paper's next level). After a compatible merge T0 changes only there:
    sibling leaves collapse to one leaf (a cherry becomes a leaf); otherwise the two children of v
    are replaced by BUILD of their union; ancestors are unchanged (i and j
    are in one component at every ancestor level); items left without any
    triplet were isolated leaves of the root and are removed. With
    ``maintain_tree=False`` every test runs the full recursion from the top
    (the paper's listing; same decisions, slower).

    Returns
    -------
    Z : ndarray of shape (n - 1, 4)
    stats : dict (n_compatibility_tests, n_rejected_merges)
    """
    n = X.shape[0]
    cent = X.copy()
    size = np.ones(n, dtype=np.int64)
    lid = np.arange(n, dtype=np.int64)
    active = np.ones(n, dtype=bool)
    TL = rel.copy()  # live triplets on slot ids
    occ = np.bincount(TL.ravel(), minlength=n).astype(np.int64)
    blocked = {}
    pos = np.empty(n, dtype=np.int64)
    mask = np.zeros(n, dtype=bool)
    Z = np.empty((n - 1, 4), dtype=np.float64)
    n_tests = 0
    n_rejected = 0
    tree = None
    if maintain_tree and TL.shape[0]:
        ok, nested = _build(TL, n)
        if not ok:
            raise InfeasibleConstraintsError("ReCon needs a consistent triplet set")
        tree = _BuildTree(n)
        tree.root = tree.attach(nested, None)

    def rows(ks):
        D = cdist(cent[ks], cent, "sqeuclidean")
        D[:, ~active] = np.inf
        D[np.arange(len(ks)), ks] = np.inf
        for r, k in enumerate(ks):
            bl = blocked.get(int(k))
            if bl:
                D[r, list(bl)] = np.inf
        return D

    def inside(block):
        mask[block] = True
        sel = mask[TL].all(axis=1)
        mask[block] = False
        return TL[sel]

    nn = np.empty(n, dtype=np.int64)
    nn_d2 = np.empty(n, dtype=np.float64)
    step = max(1, (1 << 24) // max(1, n * 8))
    for s0 in range(0, n, step):
        ks = np.arange(s0, min(n, s0 + step))
        D = rows(ks)
        nn[ks] = np.argmin(D, axis=1)
        nn_d2[ks] = D[np.arange(len(ks)), nn[ks]]

    last = time.monotonic()
    s = 0
    while s < n - 1:
        i = int(np.argmin(nn_d2))
        j = int(nn[i])
        if not np.isfinite(nn_d2[i]):
            raise AssertionError(
                f"ReCon reached a dead end after {s} merges with {TL.shape[0]} live triplets"
            )
        both = bool(occ[i] and occ[j])
        if both:
            n_tests += 1
            if tree is None:
                ok = not _rc6_violated(TL, i, j) and _test_compatibility(TL, i, j, pos, np.flatnonzero(occ))
            else:
                v, ci, cj = tree.lca_children(i, j)
                if ci == i and cj == j:
                    ok = True
                elif len(tree.kids[v]) == 2:
                    ok = False
                else:
                    block = np.asarray(tree.leaves(ci) + tree.leaves(cj), dtype=np.int64)
                    sub = inside(block)
                    ok = not _rc6_violated(sub, i, j) and _test_compatibility(sub, i, j, pos, np.sort(block))
                if check_tree:
                    full = not _rc6_violated(TL, i, j) and _test_compatibility(TL, i, j, pos, np.flatnonzero(occ))
                    if full != ok:
                        raise AssertionError(
                            f"fast test {ok} != full test {full} for ({i}, {j}); v={v} ci={ci} cj={cj} "
                            f"kids={tree.kids[v]}"
                        )
            if not ok:
                n_rejected += 1
                blocked.setdefault(i, set()).add(j)
                blocked.setdefault(j, set()).add(i)
                ks = np.array([i, j])
                D = rows(ks)
                nn[ks] = np.argmin(D, axis=1)
                nn_d2[ks] = D[[0, 1], nn[ks]]
                continue
        # merge j into slot i
        d2 = float(((cent[i] - cent[j]) ** 2).sum())
        a_id, b_id = lid[i], lid[j]
        ni, nj = size[i], size[j]
        Z[s] = (min(a_id, b_id), max(a_id, b_id), math.sqrt(d2), ni + nj)
        if not np.array_equal(cent[i], cent[j]):
            # (ni x + nj x) / (ni + nj) is not always x in floating point: equal centroids stay exact, so
            # the rows nearest to either (distance 0) keep the merged cluster below without a new row
            cent[i] = (ni * cent[i] + nj * cent[j]) / (ni + nj)
        size[i] = ni + nj
        lid[i] = n + s
        active[j] = False
        nn_d2[j] = np.inf
        # UpdateConstraints (RC-7)
        if occ[j]:
            hit = TL == j
            touched = np.flatnonzero(hit.any(axis=1))
            TL[hit] = i
            TL[touched, :2] = np.sort(TL[touched, :2], axis=1)
            occ[i] += occ[j]
            occ[j] = 0
            dead = TL[touched, 0] == TL[touched, 1]
            gone = ()
            if dead.any():
                dead_rows = touched[dead]
                gone = np.unique(TL[dead_rows])
                occ -= np.bincount(TL[dead_rows].ravel(), minlength=n)
                TL = np.delete(TL, dead_rows, axis=0)
            if tree is not None:
                if both:
                    if ci == i and cj == j:
                        tree.kids[v].discard(j)
                        del tree.par[j]
                        tree.fix(v)
                    else:
                        block = [x for x in tree.leaves(ci) + tree.leaves(cj) if x != j]
                        tree.kids[v].discard(ci)
                        tree.kids[v].discard(cj)
                        tree.drop_subtree(ci)
                        tree.drop_subtree(cj)
                        block = np.asarray(block, dtype=np.int64)
                        sub = inside(block)
                        ok, nested = _build(sub, n)
                        if not ok:
                            raise AssertionError("ReCon: inconsistent block after a compatible merge")
                        placed = set(int(x) for x in np.unique(sub)) if sub.shape[0] else set()
                        nested = list(nested) + [int(x) for x in block if int(x) not in placed]
                        top = nested[0] if len(nested) == 1 else nested
                        tree.kids[v].add(tree.attach(top, v))
                else:
                    tree.rename_leaf(j, i)
                for x in gone:
                    if occ[x] == 0 and x in tree.par:
                        tree.remove_leaf(int(x))
                if tree.root is None or TL.shape[0] == 0:
                    tree = None if TL.shape[0] == 0 else tree
            if check_tree and tree is not None:
                okc, ref = _build(TL, n)
                ref_t = _BuildTree(n)
                ref_t.attach(ref, None)
                if ref_t.clusters() != tree.clusters():
                    raise AssertionError(f"maintained BUILD tree differs after merge {s}")
        # blocked pairs not involving i or j stay blocked (a compatible merge
        # cannot make an incompatible pair compatible); drop those with i, j
        for x in (i, j):
            for p in blocked.pop(x, ()):
                bp = blocked.get(p)
                if bp is not None:
                    bp.discard(i)
                    bp.discard(j)
        s += 1
        if s == n - 1:
            break
        # nearest neighbours (§4.3 step 5)
        stale = np.flatnonzero(active & ((nn == i) | (nn == j)))
        r = rows(np.array([i]))[0]
        nn[i] = int(np.argmin(r))
        nn_d2[i] = r[nn[i]]
        closer = active & (r < nn_d2)
        closer[i] = False
        nn[closer] = i
        nn_d2[closer] = r[closer]
        stale = stale[(stale != i) & ~closer[stale]]
        # No other distance changed, so a slot whose nearest was i or j and that is as close to the new
        # cluster as it was to its nearest keeps the new cluster as a nearest. Without this, n coinciding
        # rows (all nearest to one of them) were all recomputed after each merge: O(n^2 d) per merge, a
        # 5200-row job with 5190 equal rows ran for more than 5 minutes (0.8 s for 5000 distinct rows).
        tied = r[stale] <= nn_d2[stale]
        nn[stale[tied]] = i
        nn_d2[stale[tied]] = r[stale[tied]]
        stale = stale[~tied]
        if stale.size:
            D = rows(stale)
            nn[stale] = np.argmin(D, axis=1)
            nn_d2[stale] = D[np.arange(stale.size), nn[stale]]
        if callback is not None and time.monotonic() - last > 0.5:
            last = time.monotonic()
            callback("agglomerate", s / (n - 1))
    return Z, {"n_compatibility_tests": n_tests, "n_rejected_merges": n_rejected}


def _resolved_counts(Z, rel):
    """RC-15: per merge row, the number of triplets whose lca(a, b, c) it creates."""
    n1 = Z.shape[0]
    if rel.shape[0] == 0:
        return np.zeros(n1, dtype=np.int64)
    _, ac, bc = _triplet_lcas(Z, rel)
    top = np.maximum(ac, bc) - (n1 + 1)
    return np.bincount(top, minlength=n1).astype(np.int64)


# ---------------------------------------------------------------------------
# Flat cut with outlier branches (spec §4.5)
# ---------------------------------------------------------------------------


def _leaf_order(Z):
    """DFS leaf order and the start of every node's leaf interval in it."""
    n = Z.shape[0] + 1
    kids = Z[:, :2].astype(np.int64)
    size = np.ones(2 * n - 1, dtype=np.int64)
    size[n:] = Z[:, 3].astype(np.int64)
    start = np.zeros(2 * n - 1, dtype=np.int64)
    for s in range(n - 2, -1, -1):
        left, right = kids[s]
        start[left] = start[n + s]
        start[right] = start[n + s] + size[left]
    order = np.empty(n, dtype=np.int64)
    order[start[:n]] = np.arange(n)
    return order, start, size


def _flat_cut(Z, X, rel, k, s_min, rule, resolved):
    """Top-down k-cut; returns labels, outlier mask, violated triplet indices, s_min used."""
    n = Z.shape[0] + 1
    order, start, size = _leaf_order(Z)
    height = np.zeros(2 * n - 1)
    height[n:] = Z[:, 2]
    rcount = np.zeros(2 * n - 1, dtype=np.int64)
    rcount[n:] = resolved
    kids = Z[:, :2].astype(np.int64)

    def key(v):  # heapq is a min-heap: negate
        if rule == "constraint_guided":
            return (-int(rcount[v]), -float(height[v]), -int(v))
        if rule == "height":
            return (-float(height[v]), -int(v))
        return (-int(v),)

    root = 2 * n - 2
    while True:
        active, heap, outl = [], [], []

        def add(v):
            active.append(v)
            if v >= n:
                heapq.heappush(heap, (key(v), v))

        removed = set()
        add(root)
        n_active = 1
        while n_active < k and heap:
            _, v = heapq.heappop(heap)
            removed.add(v)
            n_active -= 1
            for c in kids[v - n]:
                if size[c] < s_min:
                    outl.append(int(c))
                else:
                    add(int(c))
                    n_active += 1
        if n_active >= k:
            break
        if s_min <= 1:
            raise InvalidInputError(
                f"n_clusters == {k} cannot be reached by cutting the hierarchy", field="n_clusters"
            )
        s_min = max(1, s_min // 2)
    clusters = [v for v in active if v not in removed]
    members = [order[start[v]:start[v] + size[v]] for v in clusters]
    members.sort(key=lambda m: int(m.min()))
    labels = np.full(n, -1, dtype=np.int64)
    for g, m in enumerate(members):
        labels[m] = g
    outlier_mask = labels < 0
    violations = []
    if outl:
        cents = np.array([X[m].mean(axis=0) for m in members])
        branches = [order[start[v]:start[v] + size[v]] for v in outl]
        branches.sort(key=lambda m: (-m.size, int(m.min())))
        for m in branches:
            inb = np.zeros(n, dtype=bool)
            inb[m] = True
            touch = rel[inb[rel].any(axis=1)] if rel.shape[0] else rel
            dist = ((cents - X[m].mean(axis=0)) ** 2).sum(axis=1)
            cand = np.argsort(dist, kind="stable")
            chosen = None
            for g in cand:
                labels[m] = g
                lab3 = labels[touch]
                full = (lab3 >= 0).all(axis=1)
                if partition_satisfies(labels, touch[full]).all():
                    chosen = g
                    break
            if chosen is None:
                labels[m] = cand[0]
    if rel.shape[0]:
        violations = np.flatnonzero(~partition_satisfies(labels, rel))
    return labels, outlier_mask, np.asarray(violations, dtype=np.int64), s_min
