"""Input checks shared by every estimator and by the HTTP layer.

The service calls the same functions with the stored ``n_samples`` so that a
request and a direct ``fit`` reject the same input for the same reason.
Only numpy and scipy are imported here: the web process pays nothing else.

Conventions
-----------
* Pairs are ``(m, 2)`` int64 row indices, ``0 <= i < n_samples``, ``i != j``.
* Kinds are ``+1`` (must-link) and ``-1`` (cannot-link).
* Triplets ``(a, b, c)`` ask "is ``a`` closer to ``b`` than to ``c``?";
  answers are ``+1`` yes, ``-1`` no, ``0`` don't know.
"""

import numbers
from collections import deque

import numpy as np
from scipy import sparse
from scipy.cluster.hierarchy import DisjointSet
from scipy.sparse.csgraph import connected_components

from .exceptions import InfeasibleConstraintsError, InvalidInputError

__all__ = [
    "ACTIVE_MIN_SAMPLES",
    "CCSKL_SELECT_MAX_SAMPLES",
    "COP_RF_AUTO_MAX_SAMPLES",
    "COP_RF_MAX_TREE_ROWS",
    "DENSE_AFFINITY_LIMIT",
    "E2CP_MAX_PROPAGATION",
    "E2CP_MAX_SAMPLES",
    "MAX_ABS_VALUE",
    "MAX_HIERARCHY_DEPTH",
    "MIN_PEAK_VALUE",
    "SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS",
    "check_affinity",
    "check_data",
    "check_hierarchy",
    "check_magnitude",
    "check_n_clusters",
    "check_pairs",
    "check_sparse_values",
    "check_triplets",
    "check_urasc_n_clusters",
    "check_values",
    "check_weights",
    "closure_size",
    "must_link_components",
    "count_hierarchy_constraints",
    "find_pairwise_conflicts",
]

# Largest n for which an estimator option builds a dense n x n forest affinity
# (COP-RF's affinity_samples="in_bag" and n_neighbors="select"; 3000^2 float64 = 72 MB).
DENSE_AFFINITY_LIMIT = 3000
# Largest n on which a method's configuration fits one worker process: 4 GiB peak resident memory
# and the default 3300 s soft time limit (bench/scale_limits.py, bench/results/scale_limits.json;
# make_blobs, d = 10, K = 10, 300 pairs, one BLAS thread; docs/scale.md). The other methods
# and both session kinds stay below 1.3 GiB and 20 minutes up to the 100000 rows SHOAL_MAX_ROWS allows.
# E2CP above 5000 rows takes its sparse_adjust path: one sparse LU of I - alpha L-bar and the propagated
# constraints on the kept pattern, a block at a time: 0.5 GiB at 7000 rows, 0.9 GiB at 20000, 2.0 GiB
# (171 s) at 40000, 5.4 GiB (737 s) at 70000 (the LU's fill-in). 5.0 GiB at 7000 before the blocks.
E2CP_MAX_SAMPLES = 40000
# E2CP also holds Q and G, n x c float64 each (c: the samples that appear in a constraint), and Z_c, c x c:
# samples x constrained points at most this: at 40000 samples and c = 3100 (n x c = 1.24e8) the fit
# peaked at 4.25 GiB (604 s), over the 4 GiB budget; 8e7 allows c <= 2000 there (1.3 GB for Q and G).
# Below 5000 samples (c <= n) it never binds.
E2CP_MAX_PROPAGATION = 80_000_000
# COP-RF's default kNN graph on the forest affinity has k = n / 10 neighbours per row
# (n_neighbors="auto", the paper's rule), n^2 / 10 entries: 1.2 GiB peak at 10000 rows, 3.4 GiB
# at 20000 (300 s with 1000 trees), 5.0 GiB at 25000; an integer n_neighbors has no such limit.
COP_RF_AUTO_MAX_SAMPLES = 20000
# COP-RF also holds every tree's leaf of every sample (the trees' outputs, the leaf matrix and its
# non-degenerate rows while its kNN graph is built), about 45 bytes per sample and tree beside that
# graph: 5000 trees on 5000 samples peaked at 1.5 GiB (337 s; 1000 trees: 0.6 GiB, 51 s). At 20000
# samples 1000 trees peaked at 3.4 GiB, so 5000 trees (the most the wire allows) would need about
# 6.9 GiB there; that probe had reached 1.5 GiB three quarters into growing the forest (1046 s) and
# timed out at 1200 s. Samples x trees at most this: 5000 trees up to 5000 samples, 1250 at 20000.
COP_RF_MAX_TREE_ROWS = 25_000_000
# CCSKL's sigma="select" builds the graph and eigenvectors for 9 widths and fits 5 folds on each
# (k-means with n_init restarts every time): 12 s / 0.6 GiB at 5000 rows, 52 s / 0.5 GiB at 10000,
# 156 s / 0.75 GiB at 20000 (one fit at sigma = r: 2.3 s and 12.8 s). Its narrowest width, 0.1 r,
# nearly cuts the graph (the 20 smallest Laplacian eigenvalues below 1.1e-8); shift-invert at
# -1e-3 restarted without end there (not finished in 900 s at 10000 rows before the shift ladder of
# clustering._ccskl._qp). Above 20000 rows that ladder's sparse LU (0.7 GiB at 20000, about 4x per
# doubling) is not tried and the narrow widths would get LOBPCG's approximate eigenvectors: not
# measured, so the limit stays at the largest size measured; sigma="auto" or a number has no limit.
CCSKL_SELECT_MAX_SAMPLES = 20000
# SpectralLearning's closure=True lists every pair inside a must-link component and between two
# components a cannot-link joins, and overwrites each in the affinity: about 110 bytes a pair at the
# peak, whatever the rows (must-link groups plus 300 pairs: 1.6e7 pairs 2.0 GiB / 25 s at 20000 rows,
# 2.1e7 pairs 2.4 GiB / 52 s at 100000, 3.8e7 pairs 4.1 GiB at 20000; 50 groups of 2000 rows at
# 100000, about 1e9 pairs, ran out of an 8 GB address space). 2.5e7 peaks near 3 GiB.
SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS = 25_000_000
# Fewest rows an active-clustering session runs on: URASC (pairwise questions) and
# ActiveDCRC (triplets) refuse fewer in fit; the service refuses such a session at creation.
ACTIVE_MIN_SAMPLES = 3
# Relevant components (clustering._cop_rf._rca) solve a dense (d, d) generalised eigenproblem:
# 9 s and a 660 MiB peak at d = 2000, n = 3000 (2 busy cores).
RCA_MAX_FEATURES = 2000
# Largest magnitude of a data value. Finite values near float64's limit (1.8e308) overflow as soon
# as an estimator squares them: distances become inf and the neighbour search, the forest's
# feature ranges and the z-scoring break (reshape errors, "Range exceeds valid bounds", a column
# of zeros). Within 1e100 a squared difference is at most 4e200, so squared distances, and sums
# of them over every pair and feature of any dataset the service accepts (fewer than 1e20 terms),
# stay below 1e221, far from float64's 1.8e308; real measurements are nowhere near 1e100.
MAX_ABS_VALUE = 1e100
# Smallest largest magnitude of a data matrix that is not all zeros, for the estimators that measure
# distances. Squared differences below 2.2e-308 are subnormal or 0: on data whose values all lie
# within 1e-170 every squared distance is 0, every row looks like every other, and the methods
# returned labels no better than chance without a word (ARI 0 where the same data times 1e160
# gives 1). At 1e-100 the smallest difference a float64 resolves between such values (about
# 1e-116) still squares to a normal number (1e-232).
MIN_PEAK_VALUE = 1e-100
# Deepest nesting of a hierarchy given as nested lists (a caterpillar tree of n
# leaves nests n - 1 levels). Python's JSON decoder and encoder recurse once per
# level against the interpreter's recursion limit (1000), and the hierarchy is
# decoded again wherever the job record is read (service, store, and the worker,
# whose Celery stack is deeper than a request's): at 500 levels each of them has
# room to spare (ReCon fitted a 500-deep caterpillar with 470 frames already on
# the stack).
MAX_HIERARCHY_DEPTH = 500


def check_data(X, *, name="X", min_samples=2, max_samples=None, max_features=None):
    """Validate a data matrix and return it as float64, C-contiguous.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numeric data. Lists of lists must not be ragged.
    name : str, default="X"
        Field name used in error messages.
    min_samples : int, default=2
        Minimum number of rows.
    max_samples, max_features : int or None
        Optional upper limits (the service configures them).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype float64
        A new array when a conversion was needed; the input is never
        modified in place.

    Raises
    ------
    InvalidInputError
        A scipy sparse matrix or array (estimators that take a sparse
        precomputed affinity accept it before calling this), complex
        values, ragged rows, non-numeric cells, wrong number of dimensions, NaN,
        infinity or a value beyond ``±MAX_ABS_VALUE`` (the first offending
        cell is named, see :func:`check_values`), too few or too many rows.
    """
    if sparse.issparse(X):
        # np.asarray would wrap it in a 0-d object array ("sparse array length is ambiguous")
        raise InvalidInputError(
            f"{name} is a sparse matrix ({type(X).__name__}); sparse data is not supported, "
            f"pass a dense array ({name}.toarray())",
            field=name,
        )
    if isinstance(X, np.ndarray) and X.dtype.kind in "fiub":
        arr = X
    else:
        try:
            arr = np.asarray(X)
        except ValueError as exc:  # ragged nested sequences
            raise InvalidInputError(f"{name} has rows of different lengths", field=name) from exc
        if arr.dtype == object:
            lengths = {len(r) if hasattr(r, "__len__") else -1 for r in X}
            if len(lengths) > 1:
                raise InvalidInputError(f"{name} has rows of different lengths", field=name)
            if arr.ndim == 2 and all(isinstance(v, numbers.Real) for v in arr.flat):
                # an object array of real numbers (e.g. X.astype(object)) is numeric data
                try:
                    arr = arr.astype(np.float64)
                except OverflowError:  # a Python int (JSON's have no size limit) beyond float64's range
                    _raise_beyond_float(arr, name)
        if arr.dtype.kind == "c":
            raise InvalidInputError(
                f"Complex data not supported: {name} has complex values, only real numbers are", field=name
            )
        if arr.dtype.kind not in "fiub":
            raise InvalidInputError(f"{name} must contain only numbers", field=name)
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name} must be a 2-D matrix (n_samples, n_features), got {arr.ndim} dimension(s)",
            field=name,
        )
    n, d = arr.shape
    if d < 1:
        raise InvalidInputError(f"{name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.",
                                field=name)
    if n < min_samples:
        raise InvalidInputError(f"{name} has {n} sample(s) (rows), at least {min_samples} are required",
                                field=name)
    if max_samples is not None and n > max_samples:
        raise InvalidInputError(f"{name} has {n} rows, at most {max_samples} are allowed", field=name)
    if max_features is not None and d > max_features:
        raise InvalidInputError(f"{name} has {d} columns, at most {max_features} are allowed", field=name)
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    check_values(arr, name=name)
    return arr


def check_values(X, *, name="X"):
    """Check that every value is finite and at most :data:`MAX_ABS_VALUE` in magnitude.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    name : str, default="X"
        Field name used in error messages.

    Raises
    ------
    InvalidInputError
        Naming the first offending cell in row-major order as ``name[r][c]``
        (``index=(r, c)``): NaN, infinity, or a finite value beyond
        ``±MAX_ABS_VALUE``, which would overflow once squared and summed.
    """
    if np.abs(X).max(initial=0.0) <= MAX_ABS_VALUE:  # also False with a NaN
        return
    r, c = map(int, np.argwhere(~(np.abs(X) <= MAX_ABS_VALUE))[0])
    v = float(X[r, c])
    if not np.isfinite(v):
        raise InvalidInputError(f"{name}[{r}][{c}] is {v}; values must be finite numbers (no NaN or inf)", field=name, index=(r, c))
    _raise_too_large(name, r, c, f"{v:g}")


def check_sparse_values(S, *, name="X"):
    """:func:`check_values` for a scipy sparse matrix: its stored entries, named by row and column.

    Parameters
    ----------
    S : scipy sparse matrix or array of shape (n_rows, n_columns), float64
        CSR, or any format ``tocsr`` converts.
    name : str, default="X"
        Field name used in error messages.

    Raises
    ------
    InvalidInputError
        Naming the first offending stored entry in row-major order as ``name[r][c]``
        (``index=(r, c)``): NaN, infinity, or a finite value beyond ``±MAX_ABS_VALUE``
        (the same limit a dense matrix has).
    """
    S = sparse.csr_matrix(S)
    if np.abs(S.data).max(initial=0.0) <= MAX_ABS_VALUE:
        return
    S.sort_indices()
    k = int(np.flatnonzero(~(np.abs(S.data) <= MAX_ABS_VALUE))[0])
    r, c = int(np.searchsorted(S.indptr, k, side="right") - 1), int(S.indices[k])
    v = float(S.data[k])
    if not np.isfinite(v):
        raise InvalidInputError(f"{name}[{r}][{c}] is {v}; values must be finite numbers (no NaN or inf)", field=name, index=(r, c))
    _raise_too_large(name, r, c, f"{v:g}")


def check_affinity(A, *, name="X", rtol=1e-8):
    """Validate a precomputed affinity: square, finite (within ``±MAX_ABS_VALUE``), >= 0, symmetric.

    Parameters
    ----------
    A : array-like or scipy sparse matrix of shape (n_samples, n_samples)
        The affinity; the input is never modified.
    name : str, default="X"
        Field name used in error messages.
    rtol : float, default=1e-8
        Largest asymmetry ``|A[i, j] - A[j, i]|`` accepted, relative to ``max(1, max |A|)``.

    Returns
    -------
    A : ndarray of shape (n_samples, n_samples) or scipy.sparse.csr_matrix, float64
        A copy, dense or CSR as given, with a zero diagonal (and no stored zeros when sparse).

    Raises
    ------
    InvalidInputError
        What :func:`check_data` (dense) or :func:`check_sparse_values` (sparse) refuses, a matrix that
        is not square, a negative entry or one that differs from its mirror by more than the
        tolerance; a dense matrix's entry is named ``name[r][c]`` (``index=(r, c)``).

    Examples
    --------
    >>> import numpy as np
    >>> check_affinity(np.array([[1.0, 0.5], [0.5, 1.0]]))
    array([[0. , 0.5],
           [0.5, 0. ]])
    """
    if sparse.issparse(A):
        A = sparse.csr_matrix(A, dtype=np.float64, copy=True)
        if A.shape[0] != A.shape[1]:
            raise InvalidInputError(f"{name} must be a square affinity matrix, got shape {A.shape}", field=name)
        if not np.isfinite(A.data).all():
            raise InvalidInputError(f"{name} has non-finite entries", field=name)
        check_sparse_values(A, name=name)  # the limit check_data puts on a dense affinity
        if (A.data < 0).any():
            raise InvalidInputError(f"{name} has negative entries; affinities must be >= 0", field=name)
        asym = abs(A - A.T)
        if asym.nnz and asym.max() > rtol * max(1.0, abs(A).max()):
            raise InvalidInputError(f"{name} is not symmetric", field=name)
        A.setdiag(0.0)
        A.eliminate_zeros()
        return A
    A = check_data(A, name=name).copy()
    if A.shape[0] != A.shape[1]:
        raise InvalidInputError(f"{name} must be a square affinity matrix, got shape {A.shape}", field=name)
    neg = A < 0
    if neg.any():
        r, c = map(int, np.argwhere(neg)[0])
        raise InvalidInputError(f"{name}[{r}][{c}] = {A[r, c]}; affinities must be >= 0", field=name, index=(r, c))
    tol = rtol * max(1.0, float(np.abs(A).max()))
    asym = np.abs(A - A.T) > tol
    if asym.any():
        r, c = map(int, np.argwhere(asym)[0])
        raise InvalidInputError(
            f"{name}[{r}][{c}] = {A[r, c]} but {name}[{c}][{r}] = {A[c, r]}; the affinity must be symmetric",
            field=name,
            index=(r, c),
        )
    np.fill_diagonal(A, 0.0)
    return A


def check_magnitude(X, *, name="X"):
    """Check that data which is not all zeros has a value of magnitude at least :data:`MIN_PEAK_VALUE`.

    For the estimators that compute distances between rows (COP-RF's trees
    compare values and need no such check).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
        Checked data (:func:`check_data`).
    name : str, default="X"
        Field name used in the message and in ``InvalidInputError.field``.

    Raises
    ------
    InvalidInputError
        Every value of ``X`` lies within ``±MIN_PEAK_VALUE`` and one is not 0:
        squared distances between such values underflow 64-bit floats.
    """
    peak = float(np.abs(X).max(initial=0.0))
    if 0.0 < peak < MIN_PEAK_VALUE:
        raise InvalidInputError(
            f"every value of {name} lies within ±{peak:.3g}: squared distances between values smaller "
            f"than {MIN_PEAK_VALUE:g} underflow 64-bit floats and every row would look alike; rescale the "
            "data (or z-score it)",
            field=name,
        )


def _raise_too_large(name, r, c, shown):
    raise InvalidInputError(
        f"{name}[{r}][{c}] = {shown} is too large: values must lie within ±{MAX_ABS_VALUE:g} (squared "
        "distances between larger values overflow 64-bit floats); rescale the data",
        field=name,
        index=(r, c),
    )


def _raise_beyond_float(arr, name):
    """Name the first cell of an object array of real numbers that no float64 holds (a Python int or
    fraction beyond 1.8e308), in scientific notation from its integer part."""
    for (r, c), v in np.ndenumerate(arr):
        try:
            float(v)
        except OverflowError:
            _raise_too_large(name, r, c, scientific(int(v)))


def scientific(i):
    """An integer too large for float64, in scientific notation from its digits (``-1.00000e+400``).

    Parameters
    ----------
    i : int
        At least six digits (as every integer beyond float64's 1.8e308 has).

    Returns
    -------
    str
    """
    digits = str(abs(i))
    return f"{'-' if i < 0 else ''}{digits[0]}.{digits[1:6]}e+{len(digits) - 1}"


def check_n_clusters(n_clusters, n_samples, *, name="n_clusters", allow_none=False):
    """Check ``2 <= n_clusters <= n_samples``.

    Parameters
    ----------
    n_clusters : int or None
        The number of clusters K asked for.
    n_samples : int
        Rows of the data.
    name : str, default="n_clusters"
        Field name used in the message and in ``InvalidInputError.field``.
    allow_none : bool, default=False
        Let None (K unknown) through.

    Returns
    -------
    int, or None when ``n_clusters`` is None and ``allow_none``

    Raises
    ------
    InvalidInputError
        Not an integer (bools refused), or out of range.
    """
    if n_clusters is None and allow_none:
        return None
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral):
        raise InvalidInputError(f"{name} must be an integer, got {n_clusters!r}", field=name)
    if not 2 <= n_clusters <= n_samples:
        raise InvalidInputError(
            f"{name} == {n_clusters}, must be >= 2 and <= n_samples ({n_samples})", field=name
        )
    return int(n_clusters)


def check_urasc_n_clusters(n_clusters, n_samples, *, name="n_clusters"):
    """Check URASC's ``n_clusters`` against the data: None (unknown) or ``< n_samples``.

    URASC keeps at least one sample outside the K certain sets it seeds, so K
    must be below the number of rows (:func:`check_n_clusters` allows
    ``n_clusters == n_samples`` for the other methods). ``URASC`` calls this
    when it starts a session and the service when a pairwise session is
    created, so both refuse the same K for the same reason.

    Parameters
    ----------
    n_clusters : int or None
        An integer >= 2 (checked by the caller) or None.
    n_samples : int
        Rows of the data.
    name : str, default="n_clusters"
        Field name used in the message and in ``InvalidInputError.field``.

    Returns
    -------
    n_clusters : int or None

    Raises
    ------
    InvalidInputError
        ``n_clusters >= n_samples``.
    """
    if n_clusters is not None and n_clusters >= n_samples:
        raise InvalidInputError(f"{name} == {n_clusters}, must be < n_samples = {n_samples}", field=name)
    return None if n_clusters is None else int(n_clusters)


def _as_index_array(values, width, name, n_samples):
    if values is None:
        return np.empty((0, width), dtype=np.int64)
    if isinstance(values, np.ndarray) and values.size == 0:
        return np.empty((0, width), dtype=np.int64)
    if not isinstance(values, np.ndarray) and len(values) == 0:
        return np.empty((0, width), dtype=np.int64)
    try:
        arr = np.asarray(values)
    except ValueError as exc:
        raise InvalidInputError(f"every entry of {name} must have {width} indices", field=name) from exc
    if arr.ndim != 2 or arr.shape[1] != width:
        raise InvalidInputError(
            f"{name} must have shape (n, {width}), got {arr.shape}", field=name
        )
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            r, c = map(int, np.argwhere(bad)[0])
            raise InvalidInputError(
                f"{name}[{r}][{c}] = {float(arr[r, c])!r} is not an integer index", field=name, index=(r, c)
            )
    elif arr.dtype.kind not in "iu" or arr.dtype == bool:
        raise InvalidInputError(f"{name} must contain integer indices", field=name)
    # the range is checked in the input's own dtype: a float beyond int64 (1e20) or a uint64 above
    # 2**63 - 1 would wrap in the cast and be named as a different (negative) number
    bad = (arr < 0) | (arr >= n_samples)
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        v = arr[r, c]
        shown = int(v) if arr.dtype.kind in "iu" or abs(v) < 2.0**53 else repr(float(v))
        raise InvalidInputError(
            f"{name}[{r}][{c}] = {shown} is out of range [0, {n_samples - 1}]",
            field=name,
            index=(r, c),
        )
    return np.ascontiguousarray(arr.astype(np.int64))


def check_pairs(pairs, n_samples, *, name="pairs"):
    """Validate an array of index pairs.

    Parameters
    ----------
    pairs : array-like of shape (n_pairs, 2) or None
        Integer row indices. Floats equal to integers are accepted.
    n_samples : int
        Number of rows of the dataset the indices refer to.
    name : str
        Field name used in error messages.

    Returns
    -------
    pairs : ndarray of shape (n_pairs, 2), dtype int64
        Same order and orientation as the input (nothing is dropped).

    Raises
    ------
    InvalidInputError
        Wrong shape, non-integer entries, index out of range, or a self-pair
        ``(i, i)``; the message names the first offending entry.
    """
    arr = _as_index_array(pairs, 2, name, n_samples)
    self_pair = arr[:, 0] == arr[:, 1]
    if self_pair.any():
        r = int(np.flatnonzero(self_pair)[0])
        raise InvalidInputError(
            f"{name}[{r}] = [{arr[r, 0]}, {arr[r, 1]}] pairs an item with itself",
            field=name,
            index=(r,),
        )
    return arr


def check_weights(weights, n_pairs, *, name="weights"):
    """Validate per-constraint confidence weights.

    Parameters
    ----------
    weights : array-like of shape (n_pairs,) or None
        Values in (0, 1]. None means all ones.
    n_pairs : int
        Expected length.

    Returns
    -------
    weights : ndarray of shape (n_pairs,), dtype float64

    Raises
    ------
    InvalidInputError
        Wrong length, non-finite values or values outside (0, 1].
    """
    if weights is None:
        return np.ones(n_pairs, dtype=np.float64)
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numbers", field=name) from exc
    if w.ndim != 1 or w.shape[0] != n_pairs:
        raise InvalidInputError(
            f"{name} has {w.size} values for {n_pairs} constraints; lengths must match", field=name
        )
    bad = ~np.isfinite(w) | (w <= 0) | (w > 1)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(
            f"{name}[{r}] = {float(w[r])!r}, must be in (0, 1]", field=name, index=(r,)
        )
    return w


ANSWER_CODES = {"yes": 1, "no": -1, "dont_know": 0}


def check_triplets(triplets, n_samples, answers=None, *, name="triplets"):
    """Validate relative constraints "is ``a`` closer to ``b`` than to ``c``?".

    Parameters
    ----------
    triplets : array-like of shape (n_triplets, 3)
        Integer row indices ``(a, b, c)``, pairwise distinct.
    n_samples : int
        Number of rows of the dataset.
    answers : array-like of shape (n_triplets,) or None
        ``+1`` yes, ``-1`` no, ``0`` don't know (or the strings ``"yes"``,
        ``"no"``, ``"dont_know"``). None means every answer is yes.

    Returns
    -------
    triplets : ndarray of shape (n_triplets, 3), dtype int64
    answers : ndarray of shape (n_triplets,), dtype int8

    Raises
    ------
    InvalidInputError
        Wrong shape, non-integer or out-of-range index, repeated index inside
        a triplet, unknown answer or length mismatch.
    """
    arr = _as_index_array(triplets, 3, name, n_samples)
    rep = (arr[:, 0] == arr[:, 1]) | (arr[:, 0] == arr[:, 2]) | (arr[:, 1] == arr[:, 2])
    if rep.any():
        r = int(np.flatnonzero(rep)[0])
        raise InvalidInputError(
            f"{name}[{r}] = {arr[r].tolist()} repeats an item; a, b and c must differ",
            field=name,
            index=(r,),
        )
    if answers is None:
        return arr, np.ones(arr.shape[0], dtype=np.int8)
    ans = list(answers) if not isinstance(answers, np.ndarray) else answers.tolist()
    if len(ans) != arr.shape[0]:
        raise InvalidInputError(
            f"{len(ans)} answers for {arr.shape[0]} triplets; lengths must match", field="answers"
        )
    out = np.empty(len(ans), dtype=np.int8)
    for r, a in enumerate(ans):
        if isinstance(a, str) and a in ANSWER_CODES:
            out[r] = ANSWER_CODES[a]
        elif not isinstance(a, (bool, str)) and a in (-1, 0, 1):
            out[r] = int(a)
        else:
            raise InvalidInputError(
                f"answers[{r}] = {a!r}, must be yes/no/dont_know or +1/-1/0",
                field="answers",
                index=(r,),
            )
    return arr, out


def _must_link_chain(adjacency, start, goal):
    """Shortest must-link path from ``start`` to ``goal`` (BFS), as a list."""
    parent = {start: None}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        if u == goal:
            break
        for v in adjacency.get(u, ()):
            if v not in parent:
                parent[v] = u
                queue.append(v)
    chain = [goal]
    while parent[chain[-1]] is not None:
        chain.append(parent[chain[-1]])
    return chain[::-1]


def must_link_components(must_link, n_samples):
    """Connected components of the must-link graph (its transitive closure).

    Parameters
    ----------
    must_link : array-like of shape (m, 2), int
        Valid row indices.
    n_samples : int

    Returns
    -------
    n_components : int
    component : ndarray of shape (n_samples,), int64
        Component id of every sample; unconstrained samples are singletons.
    """
    ml = np.asarray(must_link if must_link is not None else [], dtype=np.int64).reshape(-1, 2)
    graph = sparse.coo_matrix((np.ones(len(ml)), (ml[:, 0], ml[:, 1])), shape=(n_samples, n_samples))
    n_comp, comp = connected_components(graph, directed=False)
    return int(n_comp), comp.astype(np.int64)


def closure_size(must_link, cannot_link, n_samples):
    """How many pairs ``clustering._constraints.transitive_closure`` returns, from the component sizes alone.

    Counted without listing them, so the service can refuse a closure too large to build.

    Parameters
    ----------
    must_link, cannot_link : array-like of shape (m, 2), int
    n_samples : int

    Returns
    -------
    n_must_link : int
        ``sum s (s - 1) / 2`` over the must-link components of size s.
    n_cannot_link : int
        ``s_a s_b`` summed over the distinct pairs of different components a cannot-link joins.
    """
    _, comp = must_link_components(must_link, n_samples)
    sizes = np.bincount(comp).astype(np.int64)
    n_ml = int(np.sum(sizes * (sizes - 1) // 2))
    cl = np.asarray(cannot_link if cannot_link is not None else [], dtype=np.int64).reshape(-1, 2)
    a, b = comp[cl[:, 0]], comp[cl[:, 1]]
    apart = a != b
    key = np.unique(np.minimum(a, b)[apart] * len(sizes) + np.maximum(a, b)[apart])
    n_cl = int(np.sum(sizes[key // len(sizes)] * sizes[key % len(sizes)]))
    return n_ml, n_cl


def find_pairwise_conflicts(must_link, cannot_link, n_samples, *, max_conflicts=100):
    """Find cannot-links that contradict the transitive closure of must-links.

    A cannot-link ``(a, b)`` contradicts the must-links when ``a`` and ``b``
    are joined by a chain of must-links (the same pair listed as both kinds
    is the chain of length one).

    Parameters
    ----------
    must_link, cannot_link : ndarray of shape (m, 2), dtype int64
        Validated pairs (see :func:`check_pairs`).
    n_samples : int
    max_conflicts : int, default=100
        Stop after this many conflicts (the count is still exact).

    Returns
    -------
    conflicts : list of dict
        ``{"cannot_link": [a, b], "cannot_link_index": k,
        "must_link_chain": [a, ..., b]}`` for each contradicting cannot-link,
        in input order, at most ``max_conflicts`` entries.
    n_conflicts : int
        Total number of contradicting cannot-links.

    Notes
    -----
    Union-find (``scipy.cluster.hierarchy.DisjointSet``) over the must-link
    graph, O((|ML| + |CL|) alpha(n)); chains by BFS only for reported
    conflicts.
    """
    must_link = np.asarray(must_link, dtype=np.int64).reshape(-1, 2)
    cannot_link = np.asarray(cannot_link, dtype=np.int64).reshape(-1, 2)
    if must_link.shape[0] == 0 or cannot_link.shape[0] == 0:
        return [], 0
    ds = DisjointSet()
    adjacency = {}
    for a, b in must_link.tolist():
        ds.add(a)
        ds.add(b)
        ds.merge(a, b)
        adjacency.setdefault(a, []).append(b)
        adjacency.setdefault(b, []).append(a)
    conflicts = []
    count = 0
    for k, (a, b) in enumerate(cannot_link.tolist()):
        if a in ds and b in ds and ds.connected(a, b):
            count += 1
            if len(conflicts) < max_conflicts:
                conflicts.append(
                    {
                        "cannot_link": [a, b],
                        "cannot_link_index": k,
                        "must_link_chain": _must_link_chain(adjacency, a, b),
                    }
                )
    return conflicts, count


def raise_on_conflicts(must_link, cannot_link, n_samples):
    """Raise :class:`InfeasibleConstraintsError` if the constraints contradict.

    Raises
    ------
    InfeasibleConstraintsError
        With ``conflicts`` as returned by :func:`find_pairwise_conflicts`.
    """
    conflicts, count = find_pairwise_conflicts(must_link, cannot_link, n_samples)
    if count:
        first = conflicts[0]
        raise InfeasibleConstraintsError(
            f"{count} cannot-link constraint(s) contradict the must-links, e.g. cannot_link "
            f"{first['cannot_link']} against the must-link chain {first['must_link_chain']}",
            conflicts=conflicts,
        )


def check_hierarchy(tree, n_samples, *, name="hierarchy", max_depth=MAX_HIERARCHY_DEPTH):
    """Validate a rooted tree given as nested lists of leaf indices.

    Parameters
    ----------
    tree : list or tuple (nested)
        The root node. Leaves are ints in ``[0, n_samples)``; internal nodes
        are lists with at least two children. Every leaf appears at most
        once. A bare leaf is not a hierarchy (it says nothing).
    n_samples : int
    name : str, default="hierarchy"
        Field name used in error messages.
    max_depth : int, default=MAX_HIERARCHY_DEPTH
        Most levels of nested lists, the root counting as one (a caterpillar
        tree of n leaves has n - 1).

    Returns
    -------
    leaves : ndarray of shape (n_leaves,), dtype int64
        The leaves in depth-first order.

    Raises
    ------
    InvalidInputError
        The root is not a list, unknown node type, index out of range,
        repeated leaf, an internal node with fewer than two children, or
        lists nested deeper than ``max_depth``.
    """
    if isinstance(tree, bool) or not isinstance(tree, (list, tuple)):
        raise InvalidInputError(
            f"{name} must be a list (the root node, with at least two children), got {tree!r:.40}",
            field=name,
        )
    leaves = []
    stack = [(tree, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, bool):
            raise InvalidInputError(f"{name}{path} is a boolean, not an item index", field=name)
        if isinstance(node, numbers.Integral):
            if not 0 <= node < n_samples:
                raise InvalidInputError(
                    f"{name}{path} = {node} is out of range [0, {n_samples - 1}]", field=name
                )
            leaves.append(int(node))
        elif isinstance(node, (list, tuple)):
            if depth > max_depth:
                raise InvalidInputError(
                    f"{name} nests lists more than {max_depth} levels deep (a caterpillar tree of n "
                    f"leaves nests n - 1 levels); at most {max_depth} levels are allowed",
                    field=name,
                )
            if len(node) < 2:
                raise InvalidInputError(
                    f"{name}{path} has {len(node)} child(ren); internal nodes need at least 2",
                    field=name,
                )
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], f"{path}[{i}]", depth + 1))
        else:
            raise InvalidInputError(f"{name}{path} = {node!r:.40} is neither an index nor a list", field=name)
    arr = np.asarray(leaves, dtype=np.int64)
    uniq, counts = np.unique(arr, return_counts=True)
    if (counts > 1).any():
        raise InvalidInputError(
            f"{name} lists item {int(uniq[counts > 1][0])} more than once", field=name
        )
    return arr


def count_hierarchy_constraints(tree):
    """How many ab|c rows :func:`hierarchy_constraints` gives for ``tree``, without building them.

    Every internal child v of an internal node u gives ``(len(v) - 1) *
    (len(u) - 1)`` rows (consecutive representatives of v's children against
    each of u's other children): n - 2 for a binary tree on n leaves,
    (k - 1)(n - k) for a two-level hierarchy of k groups.

    Parameters
    ----------
    tree : nested list
        A tree :func:`check_hierarchy` accepted.

    Returns
    -------
    int
    """
    total, stack = 0, [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (list, tuple)):
            for child in node:
                if isinstance(child, (list, tuple)):
                    total += (len(child) - 1) * (len(node) - 1)
                    stack.append(child)
    return total
