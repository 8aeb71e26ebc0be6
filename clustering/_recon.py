"""ReCon: hierarchical clustering that satisfies relative constraints ab|c.

Implements ``shared/specs/recon.md`` (Liu, Zhang, Wang, KDD 2011): the
OneTree/BUILD feasibility test with a minimal conflicting subset (RC-5, §4.1),
the agglomerative centroid-linkage algorithm that never merges into a dead
end (RC-6 .. RC-10, §4.3, §4.4), the flat k-cut with outlier branches (§4.5)
and the generation of informative constraints from class labels (RC-12) or
from a known hierarchy (RC-13).

Everything here is numpy / scipy only; :func:`check_relative_feasibility` is
cheap enough for the HTTP layer to call synchronously.
"""

import heapq
import math
import numbers
import time

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.base import BaseEstimator, ClusterMixin

from ._params import Interval, Options, validate_params
from .exceptions import InfeasibleConstraintsError, InvalidInputError
from .validation import check_data, check_hierarchy, check_triplets

__all__ = [
    "ReCon",
    "check_feasibility",
    "check_relative_feasibility",
    "generate_constraints",
    "hierarchy_triplets",
    "informative_triplets",
    "one_tree",
    "partition_satisfies",
    "relative_from_answers",
    "satisfies",
    "triplets_from_hierarchy",
]


# ---------------------------------------------------------------------------
# BUILD / OneTree (RC-4, RC-5, spec §4.1)
# ---------------------------------------------------------------------------


def _build(triplets, n_vertices, *, want_tree=True):
    """Unchecked BUILD on ``triplets`` (t, 3) over vertices ``0..n_vertices-1``.

    Only vertices that occur in ``triplets`` are placed in the tree.

    Returns
    -------
    ok : bool
    result : nested list (the least-resolved tree) or None when ``want_tree``
        is False; on failure the int64 array of triplet indices of the failing
        item (itself inconsistent, RC-5).
    """
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    if t.shape[0] == 0:
        return True, ([] if want_tree else None)
    verts = np.unique(t)
    pos = np.empty(n_vertices, dtype=np.int64)
    root = [] if want_tree else None
    # work list of (vertices (global ids), triplet indices, node list to fill)
    stack = [(verts, np.arange(t.shape[0]), root)]
    while stack:
        V, idx, node = stack.pop()
        k = V.shape[0]
        if k <= 2 or idx.shape[0] == 0:
            if want_tree:
                node.extend(int(v) for v in V)
            continue
        pos[V] = np.arange(k)
        sub = t[idx]
        la, lb, lc = pos[sub[:, 0]], pos[sub[:, 1]], pos[sub[:, 2]]
        roots, lab = np.unique(_root_labels(k, la, lb), return_inverse=True)
        ncomp = roots.shape[0]
        if ncomp == 1:
            return False, idx
        ta = lab[la]
        inside = (ta == lab[lb]) & (ta == lab[lc])
        # group vertices and inside triplets by component
        vorder = np.argsort(lab, kind="stable")
        vcut = np.searchsorted(lab[vorder], np.arange(ncomp + 1))
        tin = idx[inside]
        tlab = ta[inside]
        torder = np.argsort(tlab, kind="stable")
        tcut = np.searchsorted(tlab[torder], np.arange(ncomp + 1))
        for comp in range(ncomp):
            Vc = V[vorder[vcut[comp]:vcut[comp + 1]]]
            ic = tin[torder[tcut[comp]:tcut[comp + 1]]]
            if Vc.shape[0] == 1:
                if want_tree:
                    node.append(int(Vc[0]))
                continue
            child = [] if want_tree else None
            if want_tree:
                node.append(child)
            stack.append((Vc, ic, child))
    return True, root


def _consistent(triplets, n_vertices):
    return _build(triplets, n_vertices, want_tree=False)[0]


MINIMAL_CONFLICT_BUDGET = 200_000


def _minimal_conflict(triplets, cert, n_vertices, *, budget=MINIMAL_CONFLICT_BUDGET, info=None):
    """Shrink an inconsistent subset ``cert`` (indices into ``triplets``) to a
    minimal inconsistent one: every proper subset is consistent.

    Progressive binary search ("QuickXplain, linear variant"): repeatedly find
    the shortest prefix of the remaining candidates that, with the core found
    so far, is inconsistent; its last element belongs to the core. Uses
    O(r log |cert|) BUILD runs for a core of size r (the deletion filter of
    spec §4.1 needs |cert| runs; both return a minimal subset).

    Noisy sets can have long minimal conflicts (cycles through hundreds of
    triplets). ``budget`` bounds the work (total number of triplets fed to
    BUILD); when it runs out the current core plus the remaining candidates
    is returned (still inconsistent, not necessarily minimal) and
    ``info["minimal"]`` is set to False.
    """
    cand = [int(c) for c in cert]
    core = []
    work = 0
    minimal = True
    while True:
        if core:
            work += len(core)
            if not _consistent(triplets[core], n_vertices):
                break
        if work > budget:
            minimal = False
            core = core + cand
            break
        lo, hi = 1, len(cand)  # smallest p with core + cand[:p] inconsistent
        while lo < hi:
            mid = (lo + hi) // 2
            work += len(core) + mid
            if _consistent(triplets[core + cand[:mid]], n_vertices):
                lo = mid + 1
            else:
                hi = mid
        core.append(cand[lo - 1])
        cand = cand[: lo - 1]
    if info is not None:
        info["minimal"] = minimal
    return np.asarray(sorted(core), dtype=np.int64)


def _normalise_relative(rel):
    """Store ab|c with a < b."""
    rel = np.asarray(rel, dtype=np.int64).reshape(-1, 3).copy()
    ab = np.sort(rel[:, :2], axis=1)
    rel[:, :2] = ab
    return rel


def _unique_rows(rel):
    """Unique rows of ``rel`` in first-occurrence order and, for every row,
    the index of its unique representative."""
    if rel.shape[0] == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    _, first, inverse = np.unique(rel, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    return first[order], rank[inverse.ravel()]


def relative_from_answers(triplets, answers=None):
    """Convert answered triplets to relative constraints ab|c (RC-1).

    Parameters
    ----------
    triplets : ndarray of shape (m, 3), int64
        Already validated ``(a, b, c)`` rows ("is a closer to b than to c?").
    answers : ndarray of shape (m,), int8 or None
        +1 yes -> ab|c; -1 no -> ac|b; 0 don't know -> dropped. None means
        every answer is yes.

    Returns
    -------
    relative : ndarray of shape (r, 3), int64
        Rows ``(a, b, c)`` meaning ab|c with a < b.
    rows : ndarray of shape (r,), int64
        Input row of every relative constraint.
    """
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    ans = np.ones(t.shape[0], dtype=np.int8) if answers is None else np.asarray(answers)
    rows = np.flatnonzero(ans != 0)
    rel = t[rows].copy()
    no = ans[rows] < 0
    rel[no] = rel[no][:, [0, 2, 1]]
    return _normalise_relative(rel), rows.astype(np.int64)


def check_feasibility(triplets, n_samples, *, minimal=True, info=None):
    """OneTree verdict on relative constraints ab|c (RC-5).

    Parameters
    ----------
    triplets : ndarray of shape (m, 3), int64
        Validated rows ``(a, b, c)`` meaning ab|c, indices in ``[0, n_samples)``.
    n_samples : int
    minimal : bool, default=True
        Shrink the certificate to a minimal inconsistent subset (within a
        work budget, see ``_minimal_conflict``).
    info : dict or None
        If given, ``info["minimal"]`` tells whether the certificate is
        proven minimal.

    Returns
    -------
    feasible : bool
    certificate : ndarray of int64 or None
        Sorted row indices of an inconsistent subset (None when feasible).
    """
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    ok, cert = _build(t, n_samples, want_tree=False)
    if ok:
        return True, None
    cert = _minimal_conflict(t, cert, n_samples, info=info) if minimal else np.sort(cert)
    return False, cert


def check_relative_feasibility(triplets, n_samples, answers=None, *, minimal=True):
    """Is there a hierarchy that displays every relative constraint?

    Numpy/scipy only and synchronous: the HTTP layer's constraint check calls
    it with the stored ``n_samples``.

    Parameters
    ----------
    triplets : array-like of shape (m, 3)
        Integer rows ``(a, b, c)``; with ``answers=None`` each row means ab|c
        ("a and b are closer to each other than either is to c").
    n_samples : int
        Number of items of the dataset.
    answers : array-like of shape (m,) or None
        Optional answers (+1/"yes" -> ab|c, -1/"no" -> ac|b, 0/"dont_know" ->
        no constraint).
    minimal : bool, default=True
        Return a minimal conflicting subset (every proper subset consistent);
        otherwise the (larger) failing BUILD component.

    Returns
    -------
    result : dict
        ``{"feasible": bool, "conflicting_triplets": list of int}``: input
        row indices of an inconsistent subset (empty when feasible), plus
        ``"minimal"`` (False when the work budget stopped the shrinking
        before minimality was proven: long conflict cycles in large noisy
        sets) and ``"n_relative"`` (number of ab|c constraints checked).

    Raises
    ------
    InvalidInputError
        Malformed triplets or answers (see :func:`clustering.validation.check_triplets`).

    Examples
    --------
    >>> check_relative_feasibility([[0, 1, 2], [0, 2, 1]], 3)["conflicting_triplets"]
    [0, 1]
    >>> check_relative_feasibility([[0, 1, 2], [0, 1, 3]], 4)["feasible"]
    True
    """
    t, ans = check_triplets(triplets, n_samples, answers)
    rel, rows = relative_from_answers(t, ans)
    info = {"minimal": False}
    feasible, cert = check_feasibility(rel, n_samples, minimal=minimal, info=info)
    conflict = [] if feasible else sorted(int(r) for r in rows[cert])
    return {"feasible": bool(feasible), "conflicting_triplets": conflict,
            "minimal": bool(feasible or info["minimal"]), "n_relative": int(rel.shape[0])}


def one_tree(triplets, n_samples):
    """OneTree / BUILD (Aho et al. 1981): the least-resolved tree displaying ab|c rows.

    Parameters
    ----------
    triplets : array-like of shape (m, 3)
        Rows ``(a, b, c)`` meaning ab|c.
    n_samples : int
        Items not occurring in any triplet are attached to the root.

    Returns
    -------
    tree : nested list or None
        Nested lists of item indices (internal nodes have >= 2 children), or
        None when the set is inconsistent.
    certificate : ndarray of int64 or None
        Row indices of a minimal inconsistent subset when ``tree`` is None.
    """
    t, _ = check_triplets(triplets, n_samples)
    ok, res = _build(t, n_samples)
    if not ok:
        return None, _minimal_conflict(t, res, n_samples)
    used = np.zeros(n_samples, dtype=bool)
    used[t.ravel()] = True
    res.extend(int(v) for v in np.flatnonzero(~used))
    if len(res) == 1:
        res = res[0]
    return res, None


# ---------------------------------------------------------------------------
# Informative constraints (RC-12, RC-13)
# ---------------------------------------------------------------------------


def informative_triplets(y):
    """Informative relative constraints from class labels (RC-12, GenerateConstraints).

    Parameters
    ----------
    y : array-like of shape (n,)
        Class labels (any hashable values).

    Returns
    -------
    triplets : ndarray of shape ((k - 1) * (n - k), 3), int64
        Rows ``(d1, dj, e1)`` meaning d1 dj | e1, with d1 the first member of
        a class, dj another member of it and e1 the first member of another
        class. In every hierarchy displaying them each class is a clade.

    Examples
    --------
    >>> informative_triplets([0, 0, 1, 1]).tolist()
    [[0, 1, 2], [2, 3, 0]]
    """
    y = np.asarray(y).ravel()
    _, lab = np.unique(y, return_inverse=True)
    lab = lab.ravel()
    k = int(lab.max()) + 1 if lab.size else 0
    members = [np.flatnonzero(lab == c) for c in range(k)]
    firsts = np.array([m[0] for m in members], dtype=np.int64)
    out = []
    for c in range(k):
        others = members[c][1:]
        if others.size == 0:
            continue
        for c2 in range(k):
            if c2 == c:
                continue
            block = np.empty((others.size, 3), dtype=np.int64)
            block[:, 0] = firsts[c]
            block[:, 1] = others
            block[:, 2] = firsts[c2]
            out.append(block)
    return np.concatenate(out) if out else np.empty((0, 3), dtype=np.int64)


generate_constraints = informative_triplets


def hierarchy_triplets(tree):
    """Minimal identifying relative constraints of a hierarchy (RC-13).

    Parameters
    ----------
    tree : nested list
        Leaves are item indices; internal nodes are lists with >= 2 children.

    Returns
    -------
    triplets : ndarray of shape (m, 3), int64
        BUILD on them returns ``tree`` (same set of clusters). n - 2 rows for
        a binary tree on n leaves; (k - 1)(n - k) for a two-level hierarchy.

    Raises
    ------
    InvalidInputError
        Malformed tree (see :func:`clustering.validation.check_hierarchy`).

    Examples
    --------
    >>> hierarchy_triplets([[0, 1], [2, [3, 4]]]).tolist()
    [[0, 1, 2], [2, 3, 0], [3, 4, 2]]
    """
    if isinstance(tree, numbers.Integral):
        return np.empty((0, 3), dtype=np.int64)
    flat = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (list, tuple)):
            stack.extend(node)
        else:
            flat.append(node)
    n = (max(int(v) for v in flat) + 1) if flat and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in flat) else 1
    check_hierarchy(tree, n, name="hierarchy")
    # representative (smallest leaf) of every node, iteratively (post-order)
    rep = {}
    order = []
    stack = [tree]
    while stack:
        node = stack.pop()
        order.append(node)
        if isinstance(node, (list, tuple)):
            stack.extend(node)

    def key(node):
        return id(node)

    for node in reversed(order):
        if isinstance(node, (list, tuple)):
            rep[key(node)] = min(rep[key(c)] if isinstance(c, (list, tuple)) else int(c) for c in node)

    def r(node):
        return rep[key(node)] if isinstance(node, (list, tuple)) else int(node)

    out = []
    for u in order:
        if not isinstance(u, (list, tuple)):
            continue
        for vi, v in enumerate(u):
            if not isinstance(v, (list, tuple)):
                continue
            reps = [r(w) for w in v]
            for vj, v2 in enumerate(u):
                if vj == vi:
                    continue
                c = r(v2)
                for h in range(len(reps) - 1):
                    out.append((reps[h], reps[h + 1], c))
    return np.asarray(out, dtype=np.int64).reshape(-1, 3)


triplets_from_hierarchy = hierarchy_triplets


# ---------------------------------------------------------------------------
# Tree utilities on a linkage matrix
# ---------------------------------------------------------------------------


def _tree_arrays(Z):
    """Children, parent and depth arrays of the binary tree of linkage ``Z``."""
    Z = np.asarray(Z)
    n = Z.shape[0] + 1
    n_nodes = 2 * n - 1
    kids = Z[:, :2].astype(np.int64)
    parent = np.empty(n_nodes, dtype=np.int64)
    parent[kids[:, 0]] = np.arange(n, n_nodes)
    parent[kids[:, 1]] = np.arange(n, n_nodes)
    parent[n_nodes - 1] = n_nodes - 1
    depth = np.zeros(n_nodes, dtype=np.int64)
    for s in range(n - 2, -1, -1):  # parents before children (ids decrease)
        d = depth[n + s] + 1
        depth[kids[s, 0]] = d
        depth[kids[s, 1]] = d
    return kids, parent, depth


def _lca(parent, depth, u, v):
    """Vectorised lowest common ancestors by binary lifting (iterative, deep-tree safe)."""
    u = np.asarray(u, dtype=np.int64).copy()
    v = np.asarray(v, dtype=np.int64).copy()
    levels = max(1, int(depth.max()).bit_length())
    up = [parent]
    for _ in range(1, levels):
        up.append(up[-1][up[-1]])
    swap = depth[u] < depth[v]
    u[swap], v[swap] = v[swap], u[swap].copy()
    diff = depth[u] - depth[v]
    for k in range(levels):
        sel = ((diff >> k) & 1).astype(bool)
        u[sel] = up[k][u[sel]]
    for k in range(levels - 1, -1, -1):
        sel = up[k][u] != up[k][v]
        u[sel] = up[k][u[sel]]
        v[sel] = up[k][v[sel]]
    return np.where(u == v, u, parent[u])


def _triplet_lcas(Z, triplets):
    kids, parent, depth = _tree_arrays(Z)
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    ab = _lca(parent, depth, t[:, 0], t[:, 1])
    ac = _lca(parent, depth, t[:, 0], t[:, 2])
    bc = _lca(parent, depth, t[:, 1], t[:, 2])
    return ab, ac, bc


def satisfies(linkage, triplets):
    """Which relative constraints a binary hierarchy displays (RC-2, oracle 7).

    Parameters
    ----------
    linkage : ndarray of shape (n - 1, 4)
        Scipy linkage matrix.
    triplets : array-like of shape (m, 3)
        Rows ``(a, b, c)`` meaning ab|c.

    Returns
    -------
    ok : ndarray of shape (m,), bool
        True where the merge first joining a and b comes strictly before the
        merge first joining c with either.
    """
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    if t.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    ab, ac, bc = _triplet_lcas(linkage, t)
    return ab < np.minimum(ac, bc)


def partition_satisfies(labels, triplets):
    """Which relative constraints a flat partition satisfies (RC-3).

    ab|c holds unless c shares a cluster with exactly one of a, b, or with
    both while ... (formally: g(c) in {g(a), g(b)} implies g(a) = g(b) = g(c)).

    Returns
    -------
    ok : ndarray of shape (m,), bool
    """
    g = np.asarray(labels)
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    ga, gb, gc = g[t[:, 0]], g[t[:, 1]], g[t[:, 2]]
    touch = (gc == ga) | (gc == gb)
    return ~touch | ((ga == gb) & (gb == gc))


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


def _root_labels(k, a, b):
    """Component labels (the smallest vertex of each component) of the graph
    on ``k`` vertices with edges (a, b): min-label hooking plus pointer
    jumping, all vectorised (a few rounds on Aho graphs; cheaper than building
    a sparse matrix for scipy at this size)."""
    lab = np.arange(k)
    while True:
        la, lb = lab[a], lab[b]
        diff = la != lb
        if not diff.any():
            return lab
        la, lb = la[diff], lb[diff]
        np.minimum.at(lab, np.maximum(la, lb), np.minimum(la, lb))
        while True:
            nxt = lab[lab]
            if np.array_equal(nxt, lab):
                break
            lab = nxt


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
    only locally (module notes in ``_recon_linkage``), so it is updated in
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


# ---------------------------------------------------------------------------
# Estimator
# ---------------------------------------------------------------------------


class ReCon(ClusterMixin, BaseEstimator):
    """Hierarchical clustering satisfying every relative constraint ab|c (ReCon).

    Centroid-linkage agglomeration that, before each merge, checks with the
    BUILD test that a complete hierarchy satisfying all constraints still
    exists, so it never violates a triplet and never reaches a dead end.

    Parameters
    ----------
    n_clusters : int >= 1 or None, default=None
        Number of clusters of the flat cut ``labels_``. None: hierarchy only
        (``labels_`` is all zeros, ``n_clusters_ == 1``).
    feature_weights : array-like of shape (n_features,) >= 0 or None, default=None
        Diagonal metric: the algorithm runs on ``X * sqrt(w)`` (RC-9).
    cut : {"constraint_guided", "height", "merge_order"}, default="constraint_guided"
        Rule choosing which node to split next in the top-down k-cut (§4.5).
    min_branch_size : int >= 1 or "auto", default="auto"
        Branches smaller than this are set aside as outliers during the cut
        and re-attached afterwards; "auto" = max(2, ceil(0.05 n / k)).
    on_inconsistent : {"raise", "repair"}, default="raise"
        Inconsistent constraints: raise :class:`InfeasibleConstraintsError`
        (with the conflicting input rows), or drop triplets until consistent
        (a maximal consistent subset, §4.2) and report them in ``dropped_``.
    minimal_conflict : bool, default=True
        Shrink the reported conflicting subset to a minimal one.
    random_state : None, int or RandomState, default=None
        Unused (ReCon is deterministic); kept for the common interface.
    callback : callable or None, default=None
        ``callback(stage, fraction)`` called a few times during ``fit``; it
        may raise to cancel the fit.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
        Flat partition in ``[0, n_clusters_)``.
    n_clusters_ : int
    children_ : ndarray of shape (n_samples - 1, 2), int64
        As in :class:`sklearn.cluster.AgglomerativeClustering`: at step ``i``
        nodes ``children_[i][0]`` and ``children_[i][1]`` are merged into node
        ``n_samples + i``; values below ``n_samples`` are items.
    distances_ : ndarray of shape (n_samples - 1,), float64
        Centroid distance of every merge (may decrease: centroid linkage and
        constraints produce inversions).
    linkage_ : ndarray of shape (n_samples - 1, 4), float64
        Scipy linkage matrix ``[children_, distances_, size]``; ``linkage_matrix_``
        is the same array.
    is_monotonic_ : bool
        Whether the merge heights never decrease.
    resolved_counts_ : ndarray of shape (n_samples - 1,), int64
        Per merge, the number of constraints resolved there (RC-15).
    feasible_ : bool
        OneTree verdict on the input constraints.
    conflict_ : ndarray of shape (r,), int64 or None
        Input rows of an inconsistent subset (None when feasible).
    dropped_ : ndarray of shape (q,), int64
        Input rows removed by ``on_inconsistent="repair"``.
    relative_ : ndarray of shape (m, 3), int64
        The ab|c constraints used (a < b, de-duplicated, after repair).
    outliers_ : ndarray of shape (n_samples,), bool
        Items that were in outlier branches during the cut.
    cut_violations_ : ndarray of shape (v,), int64
        Input rows of constraints the flat partition violates (only possible
        through outlier re-attachment).
    n_compatibility_tests_ : int
    diagnostics_ : dict
        JSON-serialisable summary (counts of yes/no/don't-know answers, tests,
        conflicts, dropped rows, cut details, timings).

    Raises
    ------
    InvalidInputError
        Bad parameters, data or triplets (from ``fit``).
    InfeasibleConstraintsError
        Inconsistent constraints with ``on_inconsistent="raise"``;
        ``conflicts[0]["conflicting_triplets"]`` lists input rows.

    Notes
    -----
    Liu, Zhang and Wang (2011), Section 4: feasibility by OneTree (spec RC-5,
    §4.1), merge admissibility and TestCompatibility (RC-6 .. RC-8, §4.4),
    centroid linkage (RC-9, RC-10), k-partition by cutting (§4.1.2, RC-3,
    spec §4.5 with the "constraint_guided" rule), informative constraints
    (RC-12, :func:`informative_triplets`; RC-13, :func:`hierarchy_triplets`).
    Answers: yes -> ab|c, no -> ac|b, don't know -> ignored (counted in
    ``diagnostics_["n_dont_know"]``).

    Implementation: the nearest-neighbour scheme of spec §4.3 (exact, no
    n x n matrix); TestCompatibility starts at lca(i, j) of the BUILD tree of
    the live triplets, which is maintained across merges (same decisions as
    the paper's full recursion, tested). A pair found incompatible stays
    incompatible after any compatible merge not involving it, so blocked
    pairs are only released when one of their clusters is merged (the spec
    clears them on every constraint change; same result, less work).
    Ties in the merge distance are broken by slot order (smallest slot
    first), not by linkage ids. Cost: about 4 s for Letters-IJLT (3059 rows)
    with 3000 clean random triplets; noisy triplets force many rejected
    merges (minutes at n = 3000 with 10% wrong answers).

    References
    ----------
    .. [1] E. Y. Liu, Z. Zhang, W. Wang, "Clustering with Relative
       Constraints", KDD 2011.
    .. [2] A. V. Aho, Y. Sagiv, T. G. Szymanski, J. D. Ullman, "Inferring a
       tree from lowest common ancestors ...", SIAM J. Comput. 10(3), 1981.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [1.0, 0.0], [5.0, 0.0], [5.1, 0.0], [6.5, 0.0]])
    >>> model = ReCon(n_clusters=2, min_branch_size=1).fit(X, triplets=[[2, 3, 0]])
    >>> model.labels_.tolist()
    [0, 0, 1, 1, 1, 1]
    >>> model.children_.shape
    (5, 2)
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 1, None), None],
        "cut": [Options("constraint_guided", "height", "merge_order")],
        "min_branch_size": [Interval(numbers.Integral, 1, None), Options("auto")],
        "on_inconsistent": [Options("raise", "repair")],
        "minimal_conflict": [bool],
    }

    def __init__(
        self,
        n_clusters=None,
        *,
        feature_weights=None,
        cut="constraint_guided",
        min_branch_size="auto",
        on_inconsistent="raise",
        minimal_conflict=True,
        random_state=None,
        callback=None,
    ):
        self.n_clusters = n_clusters
        self.feature_weights = feature_weights
        self.cut = cut
        self.min_branch_size = min_branch_size
        self.on_inconsistent = on_inconsistent
        self.minimal_conflict = minimal_conflict
        self.random_state = random_state
        self.callback = callback

    def fit(self, X, y=None, *, triplets=None, triplet_answer=None, triplet_weight=None):
        """Build the constrained hierarchy and (with ``n_clusters``) the flat cut.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        triplets : array-like of shape (m, 3) or None
            Rows ``(a, b, c)``: "is a closer to b than to c?".
        triplet_answer : array-like of shape (m,) or None
            +1/"yes" (ab|c), -1/"no" (ac|b), 0/"dont_know" (ignored). None
            means every row is a "yes", i.e. a relative constraint ab|c.
        triplet_weight : array-like of shape (m,) > 0 or None
            Only used by ``on_inconsistent="repair"`` (lowest weight dropped first).

        Returns
        -------
        self : ReCon

        Raises
        ------
        InvalidInputError
        InfeasibleConstraintsError
        """
        t0 = time.monotonic()
        validate_params(self, self._parameter_constraints)
        if self.callback is not None and not callable(self.callback):
            raise InvalidInputError("ReCon: callback must be callable or None", field="callback")
        X = check_data(X)
        n, d = X.shape
        k = self.n_clusters
        if k is not None and k > n:
            raise InvalidInputError(f"n_clusters == {k}, must be <= n_samples ({n})", field="n_clusters")
        if self.feature_weights is not None:
            w = np.asarray(self.feature_weights, dtype=np.float64).ravel()
            if w.shape != (d,) or not np.isfinite(w).all() or (w < 0).any():
                raise InvalidInputError(
                    f"feature_weights must be {d} finite non-negative numbers", field="feature_weights"
                )
            X = X * np.sqrt(w)
        t, ans = check_triplets(triplets, n, triplet_answer, name="triplets")
        if triplet_weight is None:
            tw = np.ones(t.shape[0])
        else:
            tw = np.asarray(triplet_weight, dtype=np.float64).ravel()
            if tw.shape != (t.shape[0],) or not np.isfinite(tw).all() or (tw <= 0).any():
                raise InvalidInputError(
                    f"triplet_weight must be {t.shape[0]} finite positive numbers", field="triplet_weight"
                )
        cb = self.callback
        if cb is not None:
            cb("feasibility", 0.0)
        rel_all, rows_all = relative_from_answers(t, ans)
        first, inverse = _unique_rows(rel_all)
        rel = rel_all[first]
        rows = rows_all[first]  # first input row of every unique constraint
        weight = np.bincount(inverse, weights=tw[rows_all], minlength=first.shape[0]) if first.size else np.zeros(0)

        cinfo = {"minimal": False}
        feasible, cert = check_feasibility(rel, n, minimal=self.minimal_conflict, info=cinfo)
        conflict = None if feasible else np.asarray(sorted(rows[cert]), dtype=np.int64)
        dropped = np.empty(0, dtype=np.int64)
        if not feasible:
            if self.on_inconsistent == "raise":
                raise InfeasibleConstraintsError(
                    f"the relative constraints are inconsistent: no hierarchy displays triplet rows "
                    f"{conflict.tolist()} together",
                    conflicts=[{"conflicting_triplets": conflict.tolist(), "minimal": bool(cinfo["minimal"]),
                                "relative": rel_all[np.searchsorted(rows_all, conflict)].tolist()}],
                )
            keep, drop_idx = self._repair(rel, weight, cert, n, cb)
            dropped = np.asarray(sorted(rows[drop_idx]), dtype=np.int64)
            rel, rows = rel[keep], rows[keep]
        if cb is not None:
            cb("agglomerate", 0.0)
        Z, stats = _recon_linkage(X, rel, cb)
        resolved = _resolved_counts(Z, rel)
        heights = Z[:, 2]
        monotone = bool(np.all(np.diff(heights) >= 0))

        if cb is not None:
            cb("cut", 0.95)
        if k is None or k == 1:
            labels = np.zeros(n, dtype=np.int64)
            outliers = np.zeros(n, dtype=bool)
            viol = np.empty(0, dtype=np.int64)
            s_min = None
            n_clusters_ = 1
        else:
            s_min = (max(2, math.ceil(0.05 * n / k)) if self.min_branch_size == "auto"
                     else int(self.min_branch_size))
            labels, outliers, viol, s_min = _flat_cut(Z, X, rel, k, s_min, self.cut, resolved)
            viol = np.asarray(sorted(rows[viol]), dtype=np.int64)
            n_clusters_ = int(labels.max()) + 1

        self.linkage_ = Z
        self.linkage_matrix_ = Z
        self.children_ = Z[:, :2].astype(np.int64)
        self.distances_ = Z[:, 2].copy()
        self.is_monotonic_ = monotone
        self.resolved_counts_ = resolved
        self.feasible_ = bool(feasible)
        self.conflict_ = conflict
        self.dropped_ = dropped
        self.relative_ = rel
        self.labels_ = labels
        self.n_clusters_ = n_clusters_
        self.outliers_ = outliers
        self.cut_violations_ = viol
        self.n_compatibility_tests_ = int(stats["n_compatibility_tests"])
        self.n_samples_ = n
        self.diagnostics_ = {
            "n_triplets": int(t.shape[0]),
            "n_yes": int((ans > 0).sum()),
            "n_no": int((ans < 0).sum()),
            "n_dont_know": int((ans == 0).sum()),
            "n_relative": int(first.shape[0]),
            "n_duplicates": int(rel_all.shape[0] - first.shape[0]),
            "n_relative_used": int(rel.shape[0]),
            "feasible": bool(feasible),
            "conflicting_triplets": [] if conflict is None else conflict.tolist(),
            "conflicts": [] if conflict is None else [{"conflicting_triplets": conflict.tolist()}],
            "conflict_is_minimal": bool(conflict is not None and cinfo["minimal"]),
            "dropped_triplets": dropped.tolist(),
            "n_compatibility_tests": int(stats["n_compatibility_tests"]),
            "n_rejected_merges": int(stats["n_rejected_merges"]),
            "is_monotonic": monotone,
            "cut": self.cut,
            "min_branch_size": None if s_min is None else int(s_min),
            "n_outliers": int(outliers.sum()),
            "cut_violations": viol.tolist(),
            "fit_seconds": float(time.monotonic() - t0),
        }
        if cb is not None:
            cb("done", 1.0)
        return self

    @staticmethod
    def _repair(rel, weight, cert, n, cb):
        """Spec §4.2 "repair": drop the lowest-weight (then latest) triplet of a
        minimal conflict until consistent, then re-add dropped ones greedily."""
        keep = np.ones(rel.shape[0], dtype=bool)
        dropped = []
        last = time.monotonic()
        while cert is not None:
            # cert indexes rel; minimal conflicts are small
            c = np.asarray(cert)
            worst = c[np.lexsort((-c, weight[c]))[0]]
            keep[worst] = False
            dropped.append(int(worst))
            idx = np.flatnonzero(keep)
            ok, sub = _build(rel[idx], n, want_tree=False)
            if ok:
                cert = None
            else:
                cert = idx[_minimal_conflict(rel[idx], sub, n, budget=100_000)]
            if cb is not None and time.monotonic() - last > 0.5:
                last = time.monotonic()
                cb("repair", 0.0)
        # re-add in decreasing weight (ties: earliest row first)
        order = sorted(dropped, key=lambda r: (-weight[r], r))
        final_drop = []
        for r in order:
            keep[r] = True
            if not _consistent(rel[keep], n):
                keep[r] = False
                final_drop.append(r)
        return np.flatnonzero(keep), np.asarray(sorted(final_drop), dtype=np.int64)

    def fit_predict(self, X, y=None, **fit_params):
        """Fit and return ``labels_``."""
        return self.fit(X, y, **fit_params).labels_

    def to_newick(self, item_names=None):
        """The fitted hierarchy as a Newick string (topology with merge heights
        as node labels omitted; leaves named by ``item_names`` or row index).

        Parameters
        ----------
        item_names : sequence of str of length n_samples or None

        Returns
        -------
        newick : str
            Ends with ``";"``.
        """
        Z = self.linkage_
        n = Z.shape[0] + 1
        if item_names is None:
            names = [str(i) for i in range(n)]
        else:
            if len(item_names) != n:
                raise InvalidInputError(
                    f"item_names has {len(item_names)} entries for {n} items", field="item_names"
                )
            names = [_newick_name(str(v)) for v in item_names]
        if n == 1:
            return names[0] + ";"
        kids = Z[:, :2].astype(np.int64)
        out = []
        stack = [2 * n - 2]
        while stack:
            v = stack.pop()
            if isinstance(v, str):
                out.append(v)
            elif v < n:
                out.append(names[v])
            else:
                left, right = kids[v - n]
                stack.extend([")", int(right), ",", int(left)])
                out.append("(")
        return "".join(out) + ";"


def _newick_name(s):
    if any(ch in s for ch in " ()[]':;,") or s == "":
        return "'" + s.replace("'", "''") + "'"
    return s
