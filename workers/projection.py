"""A 2-D map of a clustering's rows for the result pages (``/ui/jobs/{id}``, ``/ui/sessions/{id}``).

Computed on the worker (scikit-learn's PCA) and stored with the result, so the web process never
fits anything: a job's map when it finishes (:func:`workers.tasks.run_job`), a session's when its
first pass commits (:func:`workers.session_tasks.update_once`; the data does not change after).
"""

import numpy as np
from sklearn.decomposition import PCA
from sklearn.neighbors import NearestNeighbors

#: At most this many rows are drawn: a seeded sample of larger datasets (the page says so).
MAX_POINTS = 20_000
#: Neighbours listed for each drawn row (nearest drawn rows).
N_NEIGHBOURS = 5
#: Neighbours are searched in at most this many principal components of the mapped space.
NEIGHBOUR_COMPONENTS = 20


def project(X, *, embedding=None, max_points=MAX_POINTS, random_state=0):
    """The rows' 2-D map (PCA) and each drawn row's nearest drawn neighbours.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
        The rows as the method saw them (after any z-scoring).
    embedding : ndarray of shape (n_samples, n_components) or None
        A learned embedding of the rows (a kernel's factor ``E`` with ``K = E E^T``); when given, the
        map is the PCA of the embedding instead of the data.
    max_points : int
        Rows drawn at most; above it a sample of this many rows, drawn with ``random_state``.
    random_state : int
        Seed of the sample and of PCA's randomized solver.

    Returns
    -------
    dict
        ``source`` ("data" or "embedding"), ``n_samples`` (all rows), ``rows`` (the drawn row
        indices, increasing), ``xy`` (one ``[x, y]`` per drawn row, rounded to 4 decimals),
        ``explained_variance_ratio`` (the two components' shares, of the sample),
        ``neighbours`` (per drawn row, the row indices of its :data:`N_NEIGHBOURS` nearest drawn rows,
        nearest first, Euclidean in the first :data:`NEIGHBOUR_COMPONENTS` principal components) and
        ``sampled`` (whether fewer rows than ``n_samples`` are drawn).

    Raises
    ------
    ValueError
        Components that are not finite (never seen: the rows are scaled by their largest magnitude first).

    Notes
    -----
    The rows are divided by their largest magnitude before PCA (the map's units are arbitrary).
    PCA: scikit-learn's :class:`~sklearn.decomposition.PCA` (randomized solver on wide data). A
    single-column input is drawn on a line (y = 0).
    """
    Z = np.asarray(X if embedding is None else embedding, dtype=np.float64)
    if Z.ndim == 1:
        Z = Z[:, None]
    n = Z.shape[0]
    rows = np.arange(n)
    if n > max_points:
        rows = np.sort(np.random.default_rng(random_state).choice(n, size=max_points, replace=False))
    Z = Z[rows]
    peak = np.abs(Z).max(initial=0.0)
    if peak > 0:  # the map's units are arbitrary: values near float64's limit must not overflow in PCA
        Z = Z / peak
    m = len(rows)
    k = max(1, min(NEIGHBOUR_COMPONENTS, Z.shape[1], m))
    if m >= 2 and np.ptp(Z, axis=0).max() > 0:
        pca = PCA(n_components=k, random_state=random_state)
        P = pca.fit_transform(Z)
        ratio = pca.explained_variance_ratio_
    else:
        P, ratio = np.zeros((m, k)), np.zeros(k)
    if not np.isfinite(P).all():
        raise ValueError("the principal components of these rows are not finite")
    xy = np.zeros((m, 2))
    xy[:, :min(2, P.shape[1])] = P[:, :2]
    ratio = [float(r) for r in list(ratio[:2]) + [0.0] * (2 - len(ratio[:2]))]
    neighbours = [[] for _ in range(m)]
    if m >= 2:
        nn = NearestNeighbors(n_neighbors=min(N_NEIGHBOURS + 1, m)).fit(P)
        _, idx = nn.kneighbors(P)
        neighbours = [[int(rows[j]) for j in r if j != i][:N_NEIGHBOURS] for i, r in enumerate(idx)]
    return {"source": "data" if embedding is None else "embedding", "n_samples": int(n),
            "rows": rows.tolist(), "xy": np.round(xy, 4).tolist(), "explained_variance_ratio": ratio,
            "neighbours": neighbours, "sampled": bool(m < n)}
