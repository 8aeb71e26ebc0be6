"""Method id -> estimator class, and how stored constraints map onto ``fit``.

The wire-level catalogue (parameter schemas, docs) lives in
``schemas.methods``; a test asserts both name the same methods and that
every wire parameter is an ``__init__`` parameter of the estimator.
"""

from dataclasses import dataclass, field
from importlib import import_module

import numpy as np


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
        Result key -> fitted attribute copied into ``result["extras"]``.
    """

    estimator: str
    inputs: tuple = ()
    matrix_attr: str = None
    extras: dict = field(default_factory=dict)

    def load_class(self):
        mod, cls = self.estimator.split(":")
        return getattr(import_module(mod), cls)


METHODS = {
    "spectral": MethodSpec("clustering.baselines:SpectralClustering", (), "affinity_matrix_"),
    "spectral_learning": MethodSpec("clustering.baselines:SpectralLearning", ("pairwise",), "affinity_matrix_"),
    "e2cp": MethodSpec("clustering.baselines:E2CP", ("pairwise",), "affinity_matrix_"),
    "cop_kmeans": MethodSpec("clustering.baselines:COPKMeans", ("pairwise",), None),
}


def build(method, *, n_clusters, params, random_state, callback=None):
    """Instantiate the estimator for ``method`` with validated params."""
    spec = METHODS[method]
    cls = spec.load_class()
    names = cls().get_params(deep=False)
    kwargs = dict(params)
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
        ans = [ANSWER[t[3]] for t in c.get("triplets") or []] + [1] * len(c.get("relative") or [])
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


def extras(method, estimator):
    """Method-specific fitted outputs for ``result["extras"]``."""
    spec = METHODS[method]
    return {key: _jsonable(getattr(estimator, attr, None)) for key, attr in spec.extras.items()}


def learned_matrix(method, estimator):
    """The learned affinity / kernel (dense or sparse) or None."""
    spec = METHODS[method]
    return None if spec.matrix_attr is None else getattr(estimator, spec.matrix_attr, None)
