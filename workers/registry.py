"""Method id -> how the worker runs it (from its card, ``clustering.cards``), and how stored
constraints map onto ``fit``.

The card names the estimator, its constraint inputs, matrix attributes and result extras; this
module turns them into a :class:`MethodSpec` each and holds the extractors an extra may name
(:data:`EXTRACTORS`). A test asserts that every wire parameter is an ``__init__`` parameter of the
estimator.
"""

from dataclasses import dataclass, field
from importlib import import_module

import numpy as np

from clustering.cards import CARDS
from clustering.feasibility import hierarchy_constraints


@dataclass(frozen=True)
class MethodSpec:
    """How the worker runs one method.

    Attributes
    ----------
    estimator : str
        ``"module:Class"`` inside :mod:`clustering`.
    inputs : tuple of str
        Constraint kinds passed to fit: ``"pairwise"``, ``"triplets"``.
    matrix_attr : str or None
        Fitted attribute holding the learned affinity / kernel.
    extras : dict
        Result key -> fitted attribute name, or a callable
        ``f(estimator, constraints) -> JSON-able`` for ``result["extras"]``.
    model_attrs : tuple of str
        Fitted attributes saved with the result so that ``predict`` jobs can
        rebuild the model for new rows (only for inductive methods).
    conflict_params : dict
        ``on_conflict`` value -> estimator parameters it implies (e.g. ReCon
        repairs inconsistent triplets when the client keeps conflicts).
    factor_attr : str or None
        Attribute ``E`` (n, m) with ``matrix = E E^T``, used when the
        ``matrix_attr`` was not materialised (CCSKL above 5000 rows).
    triplet_row_diagnostics : tuple of str
        Keys of ``diagnostics_`` holding rows of the fitted triplet array,
        reported as the client's constraints (:func:`triplet_positions`).
    """

    estimator: str
    inputs: tuple = ()
    matrix_attr: str = None
    extras: dict = field(default_factory=dict)
    model_attrs: tuple = ()
    conflict_params: dict = field(default_factory=dict)
    factor_attr: str = None
    triplet_row_diagnostics: tuple = ()

    def load_class(self):
        mod, cls = self.estimator.split(":")
        return getattr(import_module(mod), cls)


def _n_must_link(constraints):
    """Number of must-links: they come first in :func:`pairwise_arrays` order."""
    return len((constraints or {}).get("must_link") or [])


def _split_by_kind(attr):
    """Per-constraint scores back in the client's order: must_link then cannot_link lists."""

    def extract(estimator, constraints):
        values = getattr(estimator, attr, None)
        if values is None:
            return None
        values = np.asarray(values, dtype=float)
        n_ml = _n_must_link(constraints)
        return {"must_link": values[:n_ml].tolist(), "cannot_link": values[n_ml:].tolist()}

    return extract


def positions_by_kind(mask, constraints):
    """Positions of the True entries of ``mask`` in the client's lists.

    Parameters
    ----------
    mask : ndarray of shape (n_must_link + n_cannot_link,), bool
        One flag per constraint in :func:`pairwise_arrays` order (must-links
        first).
    constraints : dict or None
        The job's constraints (``must_link`` / ``cannot_link`` lists).

    Returns
    -------
    dict
        ``{"must_link": [i, ...], "cannot_link": [j, ...]}``: indices into
        the client's ``must_link`` and ``cannot_link`` lists.
    """
    n_ml = _n_must_link(constraints)
    idx = np.flatnonzero(mask)
    return {"must_link": idx[idx < n_ml].tolist(), "cannot_link": (idx[idx >= n_ml] - n_ml).tolist()}


def _hierarchy_triplets(constraints):
    """The ab|c rows a job's ``hierarchy`` gives, (m, 3) int64 (none without one)."""
    if (constraints or {}).get("hierarchy") is None:
        return np.empty((0, 3), dtype=np.int64)
    return hierarchy_constraints(constraints["hierarchy"])


def triplet_positions(rows, constraints):
    """Rows of :func:`fit_kwargs`' ``triplets`` as the client's constraints.

    ``fit`` gets the ``triplets`` list, then ``relative``, then the ab|c rows
    the ``hierarchy`` implies, as one array; an estimator reports rows of it.

    Parameters
    ----------
    rows : array-like of int
        Row indices into that array.
    constraints : dict or None
        The job's constraints.

    Returns
    -------
    dict
        ``{"triplets": [i, ...], "relative": [j, ...], "hierarchy": [[a, b, c], ...]}``:
        indices into the client's ``triplets`` and ``relative`` lists, and the
        ab|c constraints of the hierarchy (which has no list to index), each
        in the order of ``rows``.
    """
    c = constraints or {}
    n_t, n_r = len(c.get("triplets") or []), len(c.get("relative") or [])
    rows = np.asarray(rows, dtype=np.int64).ravel()
    derived = _hierarchy_triplets(c) if (rows >= n_t + n_r).any() else None
    return {"triplets": rows[rows < n_t].tolist(),
            "relative": (rows[(rows >= n_t) & (rows < n_t + n_r)] - n_t).tolist(),
            "hierarchy": [] if derived is None else derived[rows[rows >= n_t + n_r] - n_t - n_r].tolist()}


def _triplet_rows(attr):
    """A ReCon attribute holding rows of the fitted triplets, as :func:`triplet_positions` (None stays None)."""

    def extract(estimator, constraints):
        rows = getattr(estimator, attr, None)
        return None if rows is None else triplet_positions(rows, constraints)

    return extract


def _dropped_constraints(estimator, constraints):
    """COP-RF with ``drop_violated``: the constraints its first fit violated
    and its second fit left out (None without the option)."""
    if not getattr(estimator, "drop_violated", False):
        return None
    return positions_by_kind(estimator.constraint_violated_, constraints)


def _rca_features(estimator, constraints):
    """COP-RF with ``rca_components``: the learned features, so a client can
    recompute them as ``(X - mean) @ components^T`` (None without the option,
    without must-links, or above 250000 numbers)."""
    comps = getattr(estimator, "rca_components_", None)
    if comps is None or comps.size > 250_000:
        return None
    return {"components": comps.tolist(), "mean": estimator.rca_mean_.tolist()}


def _probabilities(estimator, constraints):
    proba = getattr(estimator, "proba_", None)
    if proba is None or proba.size > 2_000_000:
        return None
    return np.round(proba, 6).tolist()


def _newick(estimator, constraints):
    return estimator.to_newick() if hasattr(estimator, "children_") else None


#: Extractor name -> ``factory(*args) -> extract(estimator, constraints)`` for card extras given as
#: ``(name, *args)``.
EXTRACTORS = {
    "split_by_kind": _split_by_kind,
    "triplet_rows": _triplet_rows,
    "dropped_constraints": lambda: _dropped_constraints,
    "rca_features": lambda: _rca_features,
    "probabilities": lambda: _probabilities,
    "newick": lambda: _newick,
}


def _extra(how):
    return how if isinstance(how, str) else EXTRACTORS[how[0]](*how[1:])


def spec_of(card):
    """The :class:`MethodSpec` of a method card."""
    return MethodSpec(card.estimator, card.inputs, card.matrix_attr,
                      {key: _extra(how) for key, how in card.extras.items()},
                      model_attrs=card.model_attrs, conflict_params=card.conflict_params,
                      factor_attr=card.factor_attr, triplet_row_diagnostics=card.triplet_row_diagnostics)


METHODS = {name: spec_of(card) for name, card in CARDS.items()}


def chosen(method, estimator):
    """``(method, estimator)`` whose outputs a result reports: a selecting method's refitted choice
    (``best_method_``, ``best_estimator_``: ``auto``), else the pair itself."""
    if getattr(estimator, "best_estimator_", None) is not None:
        return estimator.best_method_, estimator.best_estimator_
    return method, estimator


def build(method, *, n_clusters, params, random_state, callback=None, on_conflict="keep"):
    """Instantiate the estimator for ``method`` with validated params."""
    spec = METHODS[method]
    cls = spec.load_class()
    names = cls().get_params(deep=False)
    kwargs = {**spec.conflict_params.get(on_conflict, {}), **params}
    if "n_clusters" in names:
        kwargs["n_clusters"] = n_clusters
    if "random_state" in names:
        kwargs["random_state"] = random_state
    if "callback" in names:
        kwargs["callback"] = callback
    return cls(**kwargs)


ANSWER = {"yes": 1, "no": -1, "dont_know": 0}


def pairwise_arrays(constraints):
    """``(pairs (m, 2) int64, kind (m,) int8, weight (m,) float64)``: must-links first."""
    c = constraints or {}
    ml = np.asarray(c.get("must_link") or [], dtype=np.int64).reshape(-1, 2)
    cl = np.asarray(c.get("cannot_link") or [], dtype=np.int64).reshape(-1, 2)
    mlw = c.get("must_link_weights") or [1.0] * len(ml)
    clw = c.get("cannot_link_weights") or [1.0] * len(cl)
    pairs = np.concatenate([ml, cl])
    kind = np.concatenate([np.ones(len(ml)), -np.ones(len(cl))]).astype(np.int8)
    return pairs, kind, np.asarray(list(mlw) + list(clw), dtype=np.float64)


def fit_kwargs(method, constraints):
    """Keyword arguments for ``fit`` from the stored constraint lists.

    Parameters
    ----------
    constraints : dict
        As stored at submission: ``must_link``, ``cannot_link`` (index
        lists), ``must_link_weights``, ``cannot_link_weights``, ``triplets``
        ([a, b, c, answer]), ``relative`` ([a, b, c] = ab|c).
    """
    spec = METHODS[method]
    c = constraints or {}
    kw = {}
    if "pairwise" in spec.inputs:
        kw["pairs"], kw["pair_kind"], kw["pair_weight"] = pairwise_arrays(c)
    if "triplets" in spec.inputs:
        trip = [t[:3] for t in c.get("triplets") or []] + [list(t) for t in c.get("relative") or []]
        trip += _hierarchy_triplets(c).tolist()
        ans = [ANSWER[t[3]] for t in c.get("triplets") or []] + [1] * (len(trip) - len(c.get("triplets") or []))
        kw["triplets"] = np.asarray(trip, dtype=np.int64).reshape(-1, 3)
        kw["triplet_answer"] = np.asarray(ans, dtype=np.int8)
    return kw


def _jsonable(value):
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.generic,)):
        return value.item()
    return value


def extras(method, estimator, constraints=None):
    """Method-specific fitted outputs for ``result["extras"]``."""
    method, estimator = chosen(method, estimator)
    out = {}
    for key, how in METHODS[method].extras.items():
        value = how(estimator, constraints) if callable(how) else getattr(estimator, how, None)
        out[key] = _jsonable(value)
    return out


def diagnostics(method, estimator, constraints=None):
    """The estimator's ``diagnostics_`` for ``result["diagnostics"]``.

    Parameters
    ----------
    method : str
        Key of :data:`METHODS`.
    estimator : fitted estimator
    constraints : dict or None
        The job's constraints, to name rows of the fitted triplets.

    Returns
    -------
    dict
        ``diagnostics_`` without ``conflicts`` (the result lists them
        apart); the keys in the method's ``triplet_row_diagnostics`` hold
        :func:`triplet_positions` instead of rows of the fitted array.
    """
    method, estimator = chosen(method, estimator)
    out = {k: v for k, v in (getattr(estimator, "diagnostics_", None) or {}).items() if k != "conflicts"}
    for key in METHODS[method].triplet_row_diagnostics:
        if out.get(key) is not None:
            out[key] = triplet_positions(out[key], constraints)
    return out


def model_state(method, estimator):
    """JSON-able fitted attributes needed by ``predict`` (None if not inductive)."""
    attrs = METHODS[method].model_attrs
    if not attrs:
        return None
    return {a: _jsonable(getattr(estimator, a)) for a in attrs}


def restore(method, params, state):
    """An estimator ready for ``predict_proba`` from :func:`model_state` output."""
    cls = METHODS[method].load_class()
    est = cls(**{k: v for k, v in params.items() if k in cls().get_params(deep=False)})
    for a, v in state.items():
        setattr(est, a, np.asarray(v) if isinstance(v, list) else v)
    return est


def learned_matrix(method, estimator):
    """The learned affinity / kernel (dense or sparse), or its factor.

    Returns
    -------
    matrix : ndarray, sparse matrix or None
    factor : ndarray of shape (n, m) or None
        Set instead of ``matrix`` when only ``E`` with ``matrix = E E^T`` exists.
    """
    method, estimator = chosen(method, estimator)
    spec = METHODS[method]
    matrix = None if spec.matrix_attr is None else getattr(estimator, spec.matrix_attr, None)
    if matrix is None and spec.factor_attr is not None:
        return None, getattr(estimator, spec.factor_attr, None)
    return matrix, None


def learned_embedding(method, estimator):
    """The rows' learned embedding ``E`` (the kernel is ``E E^T``), or None when the method learns none.

    Returns
    -------
    ndarray of shape (n_samples, n_components) or None
        E.g. CCSKL's ``embedding_``; what the result page maps instead of the data
        (:func:`workers.projection.project`).
    """
    attr = METHODS[method].factor_attr
    return None if attr is None else getattr(estimator, attr, None)
