"""What the result pages show, as plain JSON-able data (:mod:`service.ui` renders it).

Nothing here fits a model: the 2-D map was made on the worker (:mod:`workers.projection`) and is
read from the store with the result.
"""

import numpy as np

#: Constraint lines drawn at most (those between two drawn rows; the page says how many were left out).
MAX_LINES = 5000
#: Sample items listed per cluster.
SAMPLES_PER_CLUSTER = 5


def item_content(store, dataset_id, rows):
    """What a person sees of each row (``text``, ``image_url``, ``fields``), where the dataset has it.

    Parameters
    ----------
    store : workers.store.Store
    dataset_id : str
    rows : list of int

    Returns
    -------
    dict of int to dict
        Row -> its content (members absent or None when not given); rows without content are left out.
    """
    rows = [int(r) for r in rows]
    return {r: {k: c.get(k) for k in ("text", "image_url", "fields")}
            for r, c in zip(rows, store.get_items(dataset_id, rows)) if c}


def points(projection, labels, item_ids):
    """The drawn rows: their map coordinates, cluster and item id (column-wise lists)."""
    rows = projection["rows"]
    xy = np.asarray(projection["xy"], dtype=float).reshape(-1, 2)
    return {"rows": rows, "x": xy[:, 0].tolist(), "y": xy[:, 1].tolist(),
            "cluster": [int(labels[r]) for r in rows],
            "item_id": [item_ids[r] for r in rows] if item_ids else None}


def constraint_lines(drawn, must_link, cannot_link, violated=(), contradictory=()):
    """The pairwise constraints between drawn rows, each with its kind and whether it is violated.

    Parameters
    ----------
    drawn : set of int
        The rows on the map.
    must_link, cannot_link : list of [int, int]
    violated : iterable of (str, int)
        ``("must_link" | "cannot_link", position in its list)`` of the constraints the labels violate.
    contradictory : iterable of (str, [int, int])
        ``(kind, pair)`` of the constraints that contradict others (a cannot-link inside a must-link
        chain; an answer refused as contradicting earlier ones).

    Returns
    -------
    dict
        ``lines`` (``[i, j, kind, flag]``, flag "violated", "contradictory" or ""), ``n_total``
        (pairwise constraints given), ``n_drawn`` and ``capped`` (lines left out beyond
        :data:`MAX_LINES`, or with a row not drawn).
    """
    bad = set((k, int(p)) for k, p in violated)
    contra = {(k, tuple(sorted(map(int, p)))) for k, p in contradictory}
    lines, total = [], 0
    for kind, pairs in (("must_link", must_link or []), ("cannot_link", cannot_link or [])):
        for pos, (i, j) in enumerate(pairs):
            total += 1
            if i in drawn and j in drawn and len(lines) < MAX_LINES:
                flag = ("contradictory" if (kind, tuple(sorted((int(i), int(j))))) in contra
                        else "violated" if (kind, pos) in bad else "")
                lines.append([int(i), int(j), kind, flag])
    # the marked ones first: they are what a reader looks for, and must not be cut by the cap
    lines.sort(key=lambda ln: ln[3] == "")
    return {"lines": lines, "n_total": total, "n_drawn": len(lines), "capped": len(lines) < total}


def cluster_samples(labels, n_clusters, item_ids, content, seed):
    """A few rows of each cluster (seeded), for the page's per-cluster lists.

    Parameters
    ----------
    labels : list of int
    n_clusters : int
    item_ids : list of str or None
    content : callable
        rows -> row content (:func:`item_content` bound to the dataset).
    seed : int

    Returns
    -------
    list of dict
        Per cluster: ``cluster``, ``size`` and ``samples`` (``row``, ``item_id``, ``text``).
    """
    labels = np.asarray(labels, dtype=np.int64)
    rng = np.random.default_rng(seed)
    picks = []
    for c in range(max(int(n_clusters), int(labels.max(initial=-1)) + 1)):
        members = np.flatnonzero(labels == c)
        chosen = np.sort(rng.choice(members, size=min(SAMPLES_PER_CLUSTER, len(members)), replace=False))
        picks.append((c, len(members), [int(r) for r in chosen]))
    texts = content([r for _, _, rs in picks for r in rs])
    return [{"cluster": c, "size": size,
             "samples": [{"row": r, "item_id": item_ids[r] if item_ids else None,
                          "text": (texts.get(r) or {}).get("text")} for r in rs]} for c, size, rs in picks]


def row_detail(X, row, labels, item_ids, projection, content):
    """One row for the page's side panel: features (with their column's range), content, neighbours.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The dataset as uploaded.
    row : int
        A valid row index.
    labels : list of int
    item_ids : list of str or None
    projection : dict or None
        The map (:func:`workers.projection.project`), whose ``neighbours`` are listed for drawn rows.
    content : dict
        Row -> content (:func:`item_content`).

    Returns
    -------
    dict
    """
    lo, hi = X.min(axis=0), X.max(axis=0)
    features = [{"name": f"x{j}", "value": float(X[row, j]), "min": float(lo[j]), "max": float(hi[j])}
                for j in range(X.shape[1])]
    near = []
    if projection is not None:
        where = {r: k for k, r in enumerate(projection["rows"])}
        if row in where:
            near = projection["neighbours"][where[row]]
    return {"row": row, "item_id": item_ids[row] if item_ids else None, "cluster": int(labels[row]),
            "features": features, "content": content.get(row),
            "neighbours": [{"row": int(r), "item_id": item_ids[r] if item_ids else None,
                            "cluster": int(labels[r])} for r in near]}
