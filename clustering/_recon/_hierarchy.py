"""Which relative constraints ab|c a hierarchy or a flat partition displays.

Lowest common ancestors on a scipy linkage matrix by binary lifting
(``shared/specs/recon.md`` RC-2, oracle 7) and the flat-partition test (RC-3).
"""

import numpy as np

__all__ = ["partition_satisfies", "satisfies"]


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

    ab|c holds unless c shares a cluster with a or b while a and b are not
    all in one cluster (formally: g(c) in {g(a), g(b)} implies
    g(a) = g(b) = g(c)).

    Parameters
    ----------
    labels : array-like of shape (n,)
        Cluster label g(i) of every item (any comparable values).
    triplets : array-like of shape (m, 3)
        Rows ``(a, b, c)`` meaning ab|c, indices in ``[0, n)`` (not checked).

    Returns
    -------
    ok : ndarray of shape (m,), bool
    """
    g = np.asarray(labels)
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    ga, gb, gc = g[t[:, 0]], g[t[:, 1]], g[t[:, 2]]
    touch = (gc == ga) | (gc == gb)
    return ~touch | ((ga == gb) & (gb == gc))
