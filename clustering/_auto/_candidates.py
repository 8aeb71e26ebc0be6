"""The pairwise candidates of ``auto`` (``specs/auto.md`` §2.1-2.2): catalogue settings only.

A :class:`Candidate` builds its estimator by factory, so the search never
imports anything outside :mod:`clustering`; ``method`` and ``params`` are
the catalogue's names (what a client would send to run it alone).
"""

from dataclasses import dataclass, field
from functools import partial
from importlib import import_module

import numpy as np

from ..validation import COP_RF_AUTO_MAX_SAMPLES, COP_RF_MAX_TREE_ROWS, DENSE_AFFINITY_LIMIT

__all__ = ["Candidate", "default_candidates", "DEFAULT_ID", "DEFAULT_PRIOR", "LARGE_PRIOR", "SEARCH_TREES"]

#: Trees of a COP-RF candidate's fold fits: an affinity entry's Monte-Carlo error <= 0.5 / sqrt(T) = 0.05;
#: fold fits rank settings, only the refit uses the setting's own ``n_estimators`` (1000 by default).
SEARCH_TREES = 100
#: The catalogue's default job (``cop_rf`` with its defaults): the budget is a multiple of its fit.
DEFAULT_ID = "rf-def"
#: Rows above which CCSKL at the width r leads the prior (dense COP-RF options are out there).
LARGE_N = 3000
E2CP_MAX_SAMPLES = 40000
E2CP_MAX_PROPAGATION = 80_000_000
CCSKL_NARROW_MAX_SAMPLES = 20000
#: CCSKL's own grid of width multipliers (ccskl.md C1): linspace(.1, 1, 5) with linspace(1, 10, 5).
CCSKL_WIDTHS = (0.1, 0.325, 0.55, 0.775, 1.0, 3.25, 5.5, 7.75, 10.0)


@dataclass
class Candidate:
    """One setting the search may choose.

    Attributes
    ----------
    id : str
        Short id (``rf-rca``, ``ccskl-1``, ...).
    family : str
        Method family (``cop_rf``, ``ccskl``, ``e2cp``, ``sl``, ``sc``, ``ckm``).
    method : str
        The catalogue's method id.
    params : dict
        Catalogue parameters (``sigma_factor`` is CCSKL's width as a multiple
        of r, resolved into ``sigma`` by :meth:`resolved_params`).
    factory : callable
        ``factory(n_clusters, random_state, params) -> estimator``.
    cost : tuple of float
        ``(seconds at 1000 rows, exponent)``: predicted full fit time
        ``a * (n / 1000) ** p`` (README "Scale limits" power laws).
    search_ratio : float
        Fold fit time / full fit time (COP-RF grows ``SEARCH_TREES`` trees
        in the search).
    uses_constraints : bool
        False: one fit per K is scored on every fold.
    preset : str or None
    """

    id: str
    family: str
    method: str
    params: dict
    factory: object
    cost: tuple = (0.1, 1.0)
    search_ratio: float = 1.0
    uses_constraints: bool = True
    preset: str = None
    search_params: dict = field(default_factory=dict)

    def resolved_params(self, context):
        """Parameters with CCSKL's width multiple turned into ``sigma`` (z-units)."""
        p = dict(self.params)
        if "sigma_factor" in p:
            p["sigma"] = float(p.pop("sigma_factor") * context["r"])
        return p

    def build(self, n_clusters, random_state, context, *, search):
        """The estimator: fold fit (``search=True``) or full fit."""
        p = self.resolved_params(context)
        if search:
            p.update(self.search_params)
        return self.factory(n_clusters, random_state, p)

    def predicted_seconds(self, n):
        a, p = self.cost
        return max(0.02, a * (n / 1000.0) ** p)

    def ineligible(self, n, *, n_constrained=0, contradictions=0):
        """Why this setting cannot run on the data (None: it can)."""
        if self.family == "cop_rf":
            trees = self.params.get("n_estimators", 1000)
            if n > COP_RF_AUTO_MAX_SAMPLES:
                return f"cop_rf runs on at most {COP_RF_AUTO_MAX_SAMPLES} rows"
            if n * trees > COP_RF_MAX_TREE_ROWS:
                return f"rows x trees above {COP_RF_MAX_TREE_ROWS}"
            if self.id in ("rf-rca", "rf-rcaf") and n > DENSE_AFFINITY_LIMIT:
                return f"dense affinity options run on at most {DENSE_AFFINITY_LIMIT} rows"
        if self.family == "ccskl" and self.params.get("sigma_factor", 1.0) < 1 and n > CCSKL_NARROW_MAX_SAMPLES:
            return f"narrow widths run on at most {CCSKL_NARROW_MAX_SAMPLES} rows"
        if self.family == "e2cp":
            if n > E2CP_MAX_SAMPLES:
                return f"e2cp runs on at most {E2CP_MAX_SAMPLES} rows"
            if n * n_constrained > E2CP_MAX_PROPAGATION:
                return f"rows x constrained rows above {E2CP_MAX_PROPAGATION}"
        if self.family == "ckm" and contradictions:
            return "contradictory constraints: COP-KMeans has no feasible assignment"
        return None


def _build(name, k, rs, p):
    """``clustering.<name>(n_clusters=k, random_state=rs, **p)``: the estimator class imported when first built."""
    return getattr(import_module("..", __package__), name)(n_clusters=k, random_state=rs, **p)


_cop_rf, _ccskl, _e2cp = partial(_build, "COPRF"), partial(_build, "CCSKL"), partial(_build, "E2CP")
_sl, _sc, _ckm = partial(_build, "SpectralLearning"), partial(_build, "SpectralClustering"), partial(_build, "COPKMeans")


def _width_id(c):
    return f"ccskl-{c:g}"


RCA_FILTERED = {"cannot_link_policy": "separate", "affinity_samples": "in_bag", "n_neighbors": "select",
                "drop_violated": True, "rca_components": "all"}


def default_candidates():
    """The 19 pairwise settings of spec §2.1, in id order.

    Returns
    -------
    list of Candidate
    """
    rf_search = {"n_estimators": SEARCH_TREES}
    rf_ratio = SEARCH_TREES / 1000.0
    out = [
        Candidate("rf-def", "cop_rf", "cop_rf", {}, _cop_rf, (3.5, 1.0), rf_ratio, search_params=rf_search),
        Candidate("rf-sep", "cop_rf", "cop_rf", {"cannot_link_policy": "separate"}, _cop_rf, (3.5, 1.0), rf_ratio,
                  search_params=rf_search),
        Candidate("rf-rca", "cop_rf", "cop_rf", {"cannot_link_policy": "separate", "n_neighbors": "select",
                                                 "rca_components": "all"}, _cop_rf, (5.0, 1.0), rf_ratio,
                  search_params=rf_search),
        Candidate("rf-rcaf", "cop_rf", "cop_rf", dict(RCA_FILTERED), _cop_rf, (14.0, 0.9), rf_ratio,
                  preset="rca_filtered", search_params=rf_search),
    ]
    out += [Candidate(_width_id(c), "ccskl", "ccskl", {"sigma_factor": c}, _ccskl, (0.05, 1.5)) for c in CCSKL_WIDTHS]
    out += [Candidate(f"e2cp-{a:g}", "e2cp", "e2cp", {"alpha": a}, _e2cp, (0.45, 2.5)) for a in (0.6, 0.9)]
    out += [Candidate(f"sl-{a}", "sl", "spectral_learning", {"affinity": a}, _sl, (0.15, 2.0)) for a in ("rbf", "knn")]
    out += [Candidate(f"sc-{a}", "sc", "spectral", {"affinity": a}, _sc, (0.15, 2.0), uses_constraints=False)
            for a in ("rbf", "knn")]
    out.append(Candidate("ckm", "ckm", "cop_kmeans", {}, _ckm, (0.15, 1.0)))
    return out


#: Mean P1 AUC over the 10 (dataset x noise) cells of bench/results, the cheaper first within 0.02;
#: settings without a committed row follow in catalogue order (spec §2.2).
DEFAULT_PRIOR = ("rf-rca", "rf-rcaf", "ccskl-1", "rf-sep", "rf-def", "e2cp-0.6", "ckm", "sl-rbf", "sc-rbf",
                 "e2cp-0.9", "sl-knn", "sc-knn") + tuple(_width_id(c) for c in CCSKL_WIDTHS if c != 1.0)
#: Above LARGE_N rows CCSKL at r leads.
LARGE_PRIOR = ("ccskl-1",) + tuple(i for i in DEFAULT_PRIOR if i != "ccskl-1")


def prior_rank(prior, ids):
    """Position of every id in ``prior`` (ids missing from it last, in id order)."""
    pos = {c: i for i, c in enumerate(prior)}
    tail = sorted(i for i in ids if i not in pos)
    return {**{i: pos[i] for i in ids if i in pos}, **{i: len(pos) + j for j, i in enumerate(tail)}}


def ccskl_r(X, n_neighbors=20):
    """CCSKL's default width r: the mean distance to the 20th neighbour (ccskl.md C1)."""
    from .._graph import kth_neighbor_sigma

    return float(kth_neighbor_sigma(X, int(min(n_neighbors, X.shape[0] - 1))))


def eigengaps(X, k_hi, n_neighbors=20):
    """Smallest ``k_hi + 1`` eigenvalues of the normalised Laplacian of CCSKL's 20-NN graph.

    Returns
    -------
    lam : ndarray of shape (k_hi + 1,)
        Ascending; ``gap[K] = lam[K] - lam[K - 1]`` is the eigengap after the K-th.
    """
    import scipy.sparse as sp
    from scipy.sparse.linalg import eigsh

    from .._graph import knn_gaussian_graph, normalized_adjacency

    n = X.shape[0]
    W, _ = knn_gaussian_graph(X, int(min(n_neighbors, n - 1)))
    A, _ = normalized_adjacency(W)
    k = int(min(k_hi + 1, n - 1))
    if n <= 2000:
        mu = np.linalg.eigvalsh(A.toarray() if sp.issparse(A) else A)[::-1][:k]
    else:
        mu = np.sort(eigsh(A, k=k, which="LA", return_eigenvectors=False, v0=np.ones(n)))[::-1]
    return np.clip(1.0 - mu, 0.0, 2.0)
