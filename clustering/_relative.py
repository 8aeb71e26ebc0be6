"""Relative constraints ab|c: feasibility, answered triplets, informative sets.

The OneTree/BUILD test (Aho et al. 1981) with a minimal conflicting subset
(``shared/specs/recon.md`` RC-4, RC-5, §4.1), triplet answers turned into
relative constraints (RC-1) and the generation of informative constraints
from class labels (RC-12) or from a known hierarchy (RC-13); Liu, Zhang,
Wang, KDD 2011. Numpy only; :func:`check_relative_feasibility` is cheap
enough for the HTTP layer to call synchronously.
"""

import numbers

import numpy as np

from .validation import check_hierarchy, check_triplets

__all__ = [
    "check_feasibility",
    "check_relative_feasibility",
    "generate_constraints",
    "hierarchy_triplets",
    "informative_triplets",
    "one_tree",
    "relative_from_answers",
    "triplets_from_hierarchy",
]


# ---------------------------------------------------------------------------
# BUILD / OneTree (RC-4, RC-5, spec §4.1)
# ---------------------------------------------------------------------------


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
    verts = np.flatnonzero(np.bincount(t.ravel(), minlength=n_vertices))  # np.unique(t), without its sort
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
    # arrays, not lists: cert holds the failing item's triplets, often tens of thousands, and every
    # step indexed ``triplets`` with a list built from them (a quarter of ReCon's repair time)
    cand = np.asarray(cert, dtype=np.int64)
    core = np.empty(0, dtype=np.int64)
    work = 0
    minimal = True
    while True:
        if core.size:
            work += core.size
            if not _consistent(triplets[core], n_vertices):
                break
        if work > budget:
            minimal = False
            core = np.concatenate([core, cand])
            break
        lo, hi = 1, cand.size  # smallest p with core + cand[:p] inconsistent
        while lo < hi:
            mid = (lo + hi) // 2
            work += core.size + mid
            if _consistent(triplets[np.concatenate([core, cand[:mid]])], n_vertices):
                lo = mid + 1
            else:
                hi = mid
        core = np.append(core, cand[lo - 1])
        cand = cand[: lo - 1]
    if info is not None:
        info["minimal"] = minimal
    return np.sort(core)


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

    Raises
    ------
    InvalidInputError
        Malformed triplets (see :func:`clustering.validation.check_triplets`).
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
