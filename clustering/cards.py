"""Method cards: the one place where a clustering method of the service is declared.

A card names the estimator (as ``"module:Class"``, imported only by the worker), the wire
parameters as ``_params`` constraints (``Interval`` / ``Options`` / ``bool`` / ``None``, the
vocabulary the estimators validate with, as scikit-learn's ``_parameter_constraints``), the
constraint kinds it reads, its outputs and result extras, its presets, and its size limits with the
measurements behind them. ``GET /v1/methods``, the job request's validation and 422 limit problems
(``service``) and the worker's run spec (``workers.registry``) are all built from :data:`CARDS`.

This module is data: it imports no estimator (only ``_params``, ``validation`` and
``exceptions``), so the web process reads it without loading numba or scikit-learn code.

Adding a method is one estimator module and one :class:`Card` in :data:`CARDS`; the wire schema,
the catalogue entry and the worker's run spec follow from it.
"""

import numbers
from dataclasses import dataclass, field

from ._params import Interval, ListOf, Options
from .validation import (
    CCSKL_SELECT_MAX_SAMPLES,
    COP_RF_AUTO_MAX_SAMPLES,
    COP_RF_MAX_TREE_ROWS,
    DENSE_AFFINITY_LIMIT,
    E2CP_MAX_PROPAGATION,
    E2CP_MAX_SAMPLES,
    RCA_MAX_FEATURES,
    SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS,
    closure_size,
)

#: ``auto``'s candidate settings (``clustering._auto``: spec auto.md §2.1 and the relative ones); a test
#: keeps this list equal to the estimator's.
AUTO_CANDIDATES = ("rf-def", "rf-sep", "rf-rca", "rf-rcaf", "ccskl-0.1", "ccskl-0.325", "ccskl-0.55", "ccskl-0.775",
                   "ccskl-1", "ccskl-3.25", "ccskl-5.5", "ccskl-7.75", "ccskl-10", "e2cp-0.6", "e2cp-0.9", "sl-rbf",
                   "sl-knn", "sc-rbf", "sc-knn", "ckm", "dcrc-0.05", "dcrc-0.2", "recon-constraint_guided",
                   "recon-height")

__all__ = ["CARDS", "Card", "ConstraintLimit", "OptionLimit", "Param", "option_limits"]

Int, Real = numbers.Integral, numbers.Real


@dataclass(frozen=True)
class Param:
    """One wire parameter: the values it takes, its default and its description.

    Attributes
    ----------
    rules : tuple
        ``_params`` constraints, any of which accepts a value: ``Interval``, ``Options`` (strings),
        ``bool``, or ``None`` (null allowed). The wire takes exactly these values; the estimator's own
        constraints may be wider (a test checks that they accept every value the wire takes).
    default : object
        The estimator's ``__init__`` default (a test checks they agree).
    description : str or None
        For ``GET /v1/methods`` and the OpenAPI document.
    """

    rules: tuple
    default: object = None
    description: str = None


def param(default, *rules, doc=None):
    """A :class:`Param` (``param(20, Interval(Int, 1, 1000), doc="k")``)."""
    return Param(tuple(rules), default, doc)


@dataclass
class OptionLimit:
    """A size limit of one parameter value: a job choosing it on a larger dataset is a 422
    ``dataset_too_large_for_option`` at ``/params/<param>``.

    Attributes
    ----------
    param : str
    axis : {"rows", "columns"}
        What of the dataset is limited.
    value : int
        The most rows (columns) with the option; with ``per_value``, the most rows x the parameter.
    what : str
        What the option builds, for the problem's detail ("builds a dense n x n matrix").
    reason : str
        The measurement behind ``value``.
    when : tuple or None
        The parameter values the limit holds for; None: every value but null.
    per_value : bool
        The limit is ``value // params[param]`` (rows x trees).
    """

    param: str
    axis: str
    value: int
    what: str
    reason: str
    when: tuple = None
    per_value: bool = False

    def applies(self, params):
        v = params.get(self.param)
        return v is not None if self.when is None else v in self.when

    def limit(self, params):
        return self.value // params[self.param] if self.per_value else self.value


@dataclass(frozen=True)
class ConstraintLimit:
    """A limit on how large the constraints of one job may be (a 422 before it is queued).

    Attributes
    ----------
    name : str
        Its field in ``GET /v1/methods`` and in the problem ("max_propagation").
    value : int
    reason : str
        The measurement behind ``value``.
    code, pointer : str
        The problem's ``code`` and the JSON pointer its ``errors`` name.
    measure : callable
        ``measure(constraints, n_samples, limit) -> dict``: ``"size"`` (held to the limit) and the
        numbers the messages and the problem quote; None when the limit does not apply.
    detail, message : str
        ``str.format`` templates over ``method``, ``limit`` and the measured numbers.
    reported : tuple of str
        Measured numbers the problem carries besides ``method`` and ``name``.
    param : str or None
        A boolean parameter the limit is for (None: every job of the method).
    """

    name: str
    value: int
    reason: str
    code: str
    pointer: str
    measure: object
    detail: str
    message: str
    reported: tuple = ()
    param: str = None


@dataclass(frozen=True)
class Card:
    """Everything the service knows about one method.

    Attributes
    ----------
    id, title, reference : str
    estimator : str
        ``"module:Class"``; imported by the worker only.
    params : dict of str -> Param
        The wire parameters, in catalogue order; names are ``__init__`` parameters.
    constraints : tuple of str
        Constraint kinds a job may give: "pairwise", "triplets", "relative", "hierarchy".
    hard_constraints : bool
    outputs : tuple of str
        What a result offers: "labels", "affinity", "predict", ...
    presets : tuple of dict
        ``{"name", "description", "params"}``: measured parameter sets a job names in ``preset``.
    max_samples : int or None
        Most rows a job may have (a 422 ``dataset_too_large_for_method`` above).
    max_samples_reason : str or None
        Why, with the measurements, and what to use instead.
    option_limits : tuple of OptionLimit
    constraint_limits : tuple of ConstraintLimit
    matrix_attr, factor_attr : str or None
        Fitted attribute holding the learned affinity / kernel, or its factor ``E`` (``E E^T``).
    extras : dict
        ``result["extras"]`` key -> fitted attribute name, or ``(extractor, *args)`` naming one of
        ``workers.registry.EXTRACTORS``.
    model_attrs : tuple of str
        Fitted attributes a ``predict`` job rebuilds the model from (inductive methods).
    conflict_params : dict
        ``on_conflict`` value -> the estimator parameters it implies.
    triplet_row_diagnostics : tuple of str
        Keys of ``diagnostics_`` holding rows of the fitted triplets.
    fit_inputs : tuple of str or None
        Constraint arrays ``fit`` takes, where the kinds alone do not say (a method that takes
        pairwise or relative constraints); None: derived from ``constraints`` (:attr:`inputs`).
    chooses_n_clusters : bool
        ``n_clusters`` may be null: the method chooses K.
    exclusive_constraints : tuple of tuple of str
        Groups of constraint kinds a job may not mix (a 422 ``<id>_mixed_constraints``).
    default_scale : {"none", "zscore", "auto"}
        The job's ``scale`` when the request leaves it unset ("auto": the method chooses).
    """

    id: str
    title: str
    estimator: str
    params: dict
    constraints: tuple
    hard_constraints: bool
    outputs: tuple
    reference: str
    presets: tuple = ()
    max_samples: int = None
    max_samples_reason: str = None
    option_limits: tuple = ()
    constraint_limits: tuple = ()
    matrix_attr: str = None
    factor_attr: str = None
    extras: dict = field(default_factory=dict)
    model_attrs: tuple = ()
    conflict_params: dict = field(default_factory=dict)
    triplet_row_diagnostics: tuple = ()
    fit_inputs: tuple = None
    chooses_n_clusters: bool = False
    exclusive_constraints: tuple = ()
    default_scale: str = "none"

    @property
    def inputs(self):
        """Constraint arrays ``fit`` takes: ("pairwise",), ("triplets",), both or ()."""
        if self.fit_inputs is not None:
            return self.fit_inputs
        if "pairwise" in self.constraints:
            return ("pairwise",)
        return ("triplets",) if self.constraints else ()


def option_limits(card, params):
    """``(param, what it builds, axis, limit)`` for every chosen option of ``params`` with a size limit.

    Parameters
    ----------
    card : Card
    params : dict
        The job's loaded parameters (defaults filled in).

    Returns
    -------
    list of tuple
        In the card's order.
    """
    return [(o.param, o.what, o.axis, o.limit(params)) for o in card.option_limits if o.applies(params)]


# ------------------------------------------------------------------ constraint measures


def _propagation(constraints, n, limit):
    """Rows x distinct rows named in a must-link or cannot-link (E2CP's n x c factors)."""
    pairs = [p for f in ("must_link", "cannot_link") for p in constraints.get(f) or []]
    c = len({int(i) for p in pairs for i in p})
    return {"size": n * c, "n_samples": n, "n_constrained_samples": c, "most": limit // n}


def _closure_pairs(constraints, n, limit):
    """Pairs a transitive closure overwrites (``validation.closure_size``); None without must-links."""
    if not constraints.get("must_link"):
        return None
    n_ml, n_cl = closure_size(constraints["must_link"], constraints.get("cannot_link") or [], n)
    return {"size": n_ml + n_cl, "n_closure_pairs": n_ml + n_cl, "n_inside": n_ml, "n_between": n_cl}


# ------------------------------------------------------------------ shared wording

_SIGMA_DOC = "Gaussian bandwidth in z-units of the data; null = mean distance to the k-th neighbour"
_DENSE_REASON = (f"a dense n x n forest affinity: {DENSE_AFFINITY_LIMIT}^2 float64 = 72 MB, and the "
                 "rca_filtered preset took 0.8 GiB and 97 s at 3000 rows (bench/results/scale_limits.json)")


def _sigma():
    return param(None, Interval(Real, 0, None, closed="neither"), None, doc=_SIGMA_DOC)


def _n_init(high=100, default=10, doc=None):
    return param(default, Interval(Int, 1, high), doc=doc)


CARDS = {c.id: c for c in [
    Card(
        id="spectral",
        title="Spectral clustering (Ng, Jordan, Weiss 2001), unconstrained reference",
        estimator="clustering:SpectralClustering",
        params={
            "n_neighbors": param(20, Interval(Int, 1, 1000), doc="k for the bandwidth rule / kNN graph"),
            "sigma": _sigma(),
            "affinity": param("rbf", Options("rbf", "knn")),
            "n_init": _n_init(),
        },
        constraints=(),
        hard_constraints=False,
        outputs=("labels", "affinity"),
        reference="Ng, Jordan, Weiss. On spectral clustering: analysis and an algorithm. NIPS 2001.",
        matrix_attr="affinity_matrix_",
    ),
    Card(
        id="spectral_learning",
        title="Spectral Learning (Kamvar, Klein, Manning 2003)",
        estimator="clustering:SpectralLearning",
        params={
            "normalization": param("sym", Options("additive", "rw", "sym"), doc=(
                "sym: NJW on the overwritten affinity; additive: Kamvar's normalisation; rw: generalized (URASC)")),
            "affinity": param("rbf", Options("rbf", "knn")),
            "n_neighbors": param(20, Interval(Int, 1, 1000)),
            "sigma": _sigma(),
            "closure": param(False, bool, doc=(
                "overwrite every pair inside a must-link group and between two groups a cannot-link joins; "
                "at most the method's max_closure_pairs such pairs (about 110 bytes each), more is a 422 "
                "constraints_too_large_for_option")),
            "row_normalize": param(False, bool),
            "n_init": _n_init(),
        },
        constraints=("pairwise",),
        hard_constraints=False,
        outputs=("labels", "affinity"),
        reference="Kamvar, Klein, Manning. Spectral learning. IJCAI 2003.",
        constraint_limits=(ConstraintLimit(
            name="max_closure_pairs",
            value=SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS,
            reason="about 110 bytes a pair at the peak whatever the rows: 1.6e7 pairs 2.0 GiB / 25 s at 20000 "
                   "rows, 2.1e7 pairs 2.4 GiB / 52 s at 100000, 3.8e7 pairs 4.1 GiB at 20000, over a "
                   "worker's 4 GiB (bench/results/scale_limits.json)",
            code="constraints_too_large_for_option",
            pointer="/params/closure",
            measure=_closure_pairs,
            detail="closure=true on method {method!r} overwrites every pair inside a must-link group and "
                   "between two groups a cannot-link joins: {n_closure_pairs} pairs ({n_inside} inside, "
                   "{n_between} between) is more than {limit}; give closure=false (the constraints are used "
                   "as given) or smaller groups",
            message="at most {limit} closure pairs with method {method!r} (these constraints make "
                    "{n_closure_pairs})",
            reported=("n_closure_pairs",),
            param="closure",
        ),),
        matrix_attr="affinity_matrix_",
    ),
    Card(
        id="e2cp",
        title="Exhaustive and efficient constraint propagation (Lu, Ip 2010)",
        estimator="clustering:E2CP",
        params={
            "alpha": param(0.6, Interval(Real, 0, 0.95), doc="propagation strength, [0, 0.95]"),
            "n_neighbors": param(15, Interval(Int, 1, 1000)),
            "sigma": _sigma(),
            "n_init": _n_init(),
        },
        constraints=("pairwise",),
        hard_constraints=False,
        outputs=("labels", "affinity"),
        reference="Lu, Ip. Constrained spectral clustering via exhaustive and efficient constraint propagation. "
                  "ECCV 2010.",
        max_samples=E2CP_MAX_SAMPLES,
        max_samples_reason=f"above {E2CP_MAX_SAMPLES} rows the sparse LU of its propagation needs more than the "
                           "4 GiB a worker has (measured 2.0 GiB and 171 s at 40000 rows with 300 pairs, 5.4 GiB "
                           "and 737 s at 70000: bench/results/scale_limits.json); use spectral_learning or ccskl "
                           "(pairwise, soft), which run on 100000 rows in under 3 GiB, or a sample of at most "
                           f"{E2CP_MAX_SAMPLES} rows",
        constraint_limits=(ConstraintLimit(
            name="max_propagation",
            value=E2CP_MAX_PROPAGATION,
            reason="its propagation factors Q and G are n x c each (c: rows named in a constraint): at 40000 rows "
                   "2000 constrained rows took 3.25 GiB and 396 s, 3100 took 4.25 GiB and 604 s, over a "
                   "worker's 4 GiB (bench/results/scale_limits.json)",
            code="constraints_too_large_for_method",
            pointer="/constraints",
            measure=_propagation,
            detail="method {method!r} propagates each constraint to every row: {n_samples} rows x "
                   "{n_constrained_samples} rows in a constraint is more than {limit}; constrain at most {most} "
                   "distinct rows on this dataset, or use spectral_learning or ccskl",
            message="at most {most} distinct rows in must_link and cannot_link with method {method!r} on "
                    "{n_samples} rows (they name {n_constrained_samples})",
            reported=("n_samples", "n_constrained_samples"),
        ),),
        matrix_attr="affinity_matrix_",
    ),
    Card(
        id="cop_kmeans",
        title="COP-KMeans (Wagstaff, Cardie, Rogers, Schroedl 2001): hard constraints",
        estimator="clustering:COPKMeans",
        params={
            "init": param("k-means++", Options("k-means++", "random")),
            "order": param("dataset", Options("dataset", "random")),
            "n_init": _n_init(),
            "max_iter": param(300, Interval(Int, 1, 10000)),
            "tol": param(1e-4, Interval(Real, 0, 1)),
        },
        constraints=("pairwise",),
        hard_constraints=True,
        outputs=("labels",),
        reference="Wagstaff et al. Constrained k-means clustering with background knowledge. ICML 2001.",
    ),
    Card(
        id="cop_rf",
        title="COP-RF: constraint-propagation random forest with noisy-constraint filtering",
        estimator="clustering:COPRF",
        params={
            "n_estimators": param(1000, Interval(Int, 1, 5000), doc=(
                f"number of trees T; rows x T at most {COP_RF_MAX_TREE_ROWS} (every tree's leaf of every row is "
                "kept, about 45 bytes each), more is a 422 dataset_too_large_for_option: at most "
                f"{COP_RF_MAX_TREE_ROWS // COP_RF_AUTO_MAX_SAMPLES} trees on {COP_RF_AUTO_MAX_SAMPLES} rows, "
                f"{COP_RF_MAX_TREE_ROWS // 5000} on 5000")),
            "cannot_link_policy": param("relaxed", Options("relaxed", "literal", "strict", "separate"), doc=(
                "relaxed (default, the spec's rule), literal/strict (the paper's Algorithm 1), or separate "
                "(relaxed, and pure real-only nodes holding cannot-links are cut too; better on ionosphere, "
                "wdbc, segment)")),
            "pseudo_samples": param("uniform", Options("uniform", "marginal"), doc=(
                "uniform on each feature's range (paper) or the product of the empirical marginals (Shi & "
                "Horvath's Addcl1)")),
            "affinity_samples": param("all", Options("all", "in_bag"), doc=(
                "all: every tree votes on every pair (spec CR-8); in_bag: a tree votes only on pairs its bag "
                f"holds (dense n x n, n <= {DENSE_AFFINITY_LIMIT})")),
            "n_neighbors": param("auto", Options("auto", "select"), doc=(
                "auto: kNN graph with k = n/10 (paper); select: also cluster the whole forest affinity and "
                f"keep the labels that satisfy more of the constraints (n <= {DENSE_AFFINITY_LIMIT}; much "
                "better on ionosphere)")),
            "drop_violated": param(False, bool, doc=(
                "fit twice, the second time without the constraints the first clustering violates (listed in "
                "the result's extras.dropped_constraints); helps against wrong constraints when the first "
                "clustering is good (iris 15% wrong: AUC 3.43 against 3.32), hurts when it is not (wdbc, "
                "segment); twice the time")),
            # high: RCA takes at most RCA_MAX_FEATURES columns and never makes more components than
            # columns, so a larger count could mean nothing.
            "rca_components": param(None, Interval(Int, 1, RCA_MAX_FEATURES), Options("all"), None, doc=(
                "grow the trees on the data plus up to this many relevant-component features learned from the "
                "must-links (at most one per column of the data: a larger count gives as many as there are "
                "columns, like all; null = the paper's forest on the data alone); lets axis-aligned splits cut "
                "along the directions where the constraints say the clusters part (AUC of the ARI curve with "
                "cannot_link_policy=separate and n_neighbors=select: iris 3.65 against 3.49, ionosphere 2.34 "
                "against 1.78)")),
            "filter_constraints": param(True, bool, doc="noisy-constraint filter at each tree's root"),
            "filter_fraction": param(0.5, Interval(Real, 0, 1, closed="neither"),
                                     doc="alpha: fraction of constraints kept per root"),
            "filter_repeats": param(500, Interval(Int, 1, 5000), doc="f: random subsets scored at each root"),
            "min_samples_split": param(2, Interval(Int, 2, 10000)),
            "max_depth": param(None, Interval(Int, 1, 1000), None),
            "n_init": _n_init(),
        },
        constraints=("pairwise",),
        hard_constraints=False,
        outputs=("labels", "affinity", "constraint_scores"),
        reference="Zhu, Loy, Gong. Constrained clustering: effective constraint propagation with imperfect "
                  "oracles. ICDM 2013.",
        presets=({
            "name": "rca_filtered",
            "description": "The setting that meets the paper's numbers (bench/README.md, 10 trials, area under "
                           "the ARI curve for 20-100 pairs, clean / 15% wrong: iris 3.68 / 3.52, ionosphere "
                           "2.26 / 1.68; the defaults, the spec's forest, give 3.50 / 3.33 and .39 / .20). "
                           "Fits twice: 2-5x the default's time (1000 trees, 100 pairs: ionosphere 6.4 s, "
                           "segment 33 s). At most 3000 rows: it builds a dense n x n affinity.",
            "params": {"cannot_link_policy": "separate", "affinity_samples": "in_bag", "n_neighbors": "select",
                       "drop_violated": True, "rca_components": "all"},
        },),
        max_samples=COP_RF_AUTO_MAX_SAMPLES,
        max_samples_reason="its kNN graph on the forest affinity has n/10 neighbours per row (the paper's k = "
                           "N/10), n^2/10 entries: 3.4 GiB peak at 20000 rows (300 s with 1000 trees), 5.0 GiB at "
                           "25000, more than the 4 GiB a worker has (bench/results/scale_limits.json); use ccskl "
                           "or spectral_learning (pairwise, soft), which run on 100000 rows in under 3 GiB, or a "
                           f"sample of at most {COP_RF_AUTO_MAX_SAMPLES} rows",
        option_limits=(
            OptionLimit("affinity_samples", "rows", DENSE_AFFINITY_LIMIT, "builds a dense n x n matrix",
                        _DENSE_REASON, when=("in_bag",)),
            OptionLimit("n_neighbors", "rows", DENSE_AFFINITY_LIMIT, "builds a dense n x n matrix",
                        _DENSE_REASON, when=("select",)),
            OptionLimit("rca_components", "columns", RCA_MAX_FEATURES, "solves a dense d x d eigenproblem",
                        "relevant components solve a dense d x d generalised eigenproblem: 9 s and a 660 MiB "
                        "peak at d = 2000, n = 3000"),
            OptionLimit("n_estimators", "rows", COP_RF_MAX_TREE_ROWS,
                        f"keeps every tree's leaf of every row (rows x trees at most {COP_RF_MAX_TREE_ROWS})",
                        "about 45 bytes per row and tree beside the kNN graph: 5000 trees on 5000 rows 1.5 GiB / "
                        "337 s, 1250 trees on 20000 rows 3.5 GiB / 404 s; 5000 trees on 20000 rows would need "
                        "about 6.9 GiB (bench/results/scale_limits.json)", per_value=True),
        ),
        matrix_attr="affinity_matrix_",
        extras={
            "constraint_scores": ("split_by_kind", "constraint_scores_"),
            "constraint_selection_rate": ("split_by_kind", "constraint_selection_rate_"),
            "constraint_coverage": ("split_by_kind", "constraint_coverage_"),
            "dropped_constraints": ("dropped_constraints",),
            "rca_features": ("rca_features",),
        },
    ),
    Card(
        id="ccskl",
        title="CCSKL: constrained clustering by spectral kernel learning (QP on the Laplacian spectrum)",
        estimator="clustering:CCSKL",
        params={
            "n_components": param(20, Interval(Int, 2, 500), doc="m, number of smoothest Laplacian eigenvectors"),
            "n_neighbors": param(20, Interval(Int, 1, 1000), doc="k of the kNN graph"),
            "pair_convention": param("ordered", Options("ordered", "unordered"),
                                     doc="ordered = paper Eq. 8, unordered = Eq. 7"),
            "closure": param(False, bool, doc=(
                "add the transitive closure of must-links (skipped, with a warning in the result, above "
                "2000000 derived pairs: 2.8 GiB and 224 s at that cap on 100000 rows)")),
            "sigma": param("auto", Interval(Real, 0, None, closed="neither"), Options("auto", "select"), doc=(
                "Gaussian width in z-units; auto = mean distance to the k-th neighbour; select = the paper's 9 "
                "widths chosen by held-out constraints (about 10x slower; best on ionosphere; at most "
                f"{CCSKL_SELECT_MAX_SAMPLES} rows, more is a 422 dataset_too_large_for_option: 156 s and 0.75 "
                "GiB there, 52 s at 10000)")),
            "weighting": param("balanced", Options("balanced", "none"), doc=(
                "balanced: constraint rows together weigh `balance` x the n diagonal targets; none: the paper's "
                "literal loss")),
            "balance": param(10.0, Interval(Real, 0, 1000, closed="right")),
            "n_init": _n_init(),
            "restart_selection": param("constraints", Options("constraints", "inertia"), doc=(
                "which k-means restart is kept: the one that satisfies the most constraints (default), or the "
                "lowest inertia (the paper)")),
        },
        constraints=("pairwise",),
        hard_constraints=False,
        outputs=("labels", "affinity", "kernel", "beta"),
        reference="Li, Liu. Constrained clustering by spectral kernel learning. ICCV 2009.",
        option_limits=(
            OptionLimit("sigma", "rows", CCSKL_SELECT_MAX_SAMPLES,
                        "fits 9 widths x 5 folds (slower than a job may run on more rows)",
                        "12 s / 0.6 GiB at 5000 rows, 52 s / 0.5 GiB at 10000, 156 s / 0.75 GiB at 20000; larger "
                        "sizes were not measured (bench/results/scale_limits.json)", when=("select",)),
        ),
        matrix_attr="kernel_matrix_",
        factor_attr="embedding_",
        extras={"beta": "beta_", "eigenvalues": "eigenvalues_", "objective": "objective_"},
    ),
    Card(
        id="dcrc",
        title="DCRC: discriminative clustering with relative constraints (yes / no / don't know)",
        estimator="clustering:DCRC",
        params={
            "epsilon": param(0.05, Interval(Real, 0, 2 / 3), doc="answer noise; 2/3 = constraints ignored"),
            "l2_penalty": param(0.01, Interval(Real, 0, 10, closed="right"),
                                doc="weight decay; > 0 keeps the logistic weights bounded"),
            "entropy_weight": param(1.0, Interval(Real, 0, 100), doc="conditional-entropy term weight"),
            "balance": param(True, bool, doc="cluster-balance term"),
            "standardize": param(True, bool),
            "max_iter": param(100, Interval(Int, 1, 500)),
            "n_init": _n_init(10, 4, doc="EM starts (k-means + random), best lower bound kept"),
        },
        constraints=("triplets", "relative"),
        hard_constraints=False,
        outputs=("labels", "probabilities", "predict"),
        reference="Pei, Fern, Rosales, Tjahja. Discriminative clustering with relative constraints.",
        extras={"probabilities": ("probabilities",), "n_iter": "n_iter_", "converged": "converged_",
                "lower_bound": "lower_bound_"},
        model_attrs=("coef_", "intercept_", "mean_", "scale_", "n_clusters_"),
    ),
    Card(
        id="recon",
        title="ReCon: hierarchical clustering satisfying relative constraints",
        estimator="clustering:ReCon",
        # Infeasible triplets follow the job's on_conflict: "keep" repairs (drops a minimal
        # conflicting set, reported in the result), "reject" answers 422.
        params={"cut": param("constraint_guided", Options("constraint_guided", "height", "merge_order"))},
        constraints=("triplets", "relative", "hierarchy"),
        hard_constraints=True,
        outputs=("labels", "hierarchy"),
        reference="Liu, Zhang, Wang. Clustering with relative constraints. KDD 2011.",
        extras={"children": "children_", "distances": "distances_", "linkage_matrix": "linkage_",
                "newick": ("newick",), "outliers": "outliers_", "feasible": "feasible_",
                "conflict": ("triplet_rows", "conflict_"), "dropped_triplets": ("triplet_rows", "dropped_"),
                "cut_violations": ("triplet_rows", "cut_violations_")},
        conflict_params={"keep": {"on_inconsistent": "repair"}},
        triplet_row_diagnostics=("conflicting_triplets", "dropped_triplets", "cut_violations"),
    ),
    Card(
        id="auto",
        title="auto: the method, its settings and K chosen by held-out constraints, refitted on all",
        estimator="clustering._auto:AutoClustering",
        params={
            "budget_factor": param(5.0, Interval(Real, 1, 20), doc=(
                "budget in CPU seconds, search and refit together = budget_factor x the fit time of the default "
                "cop_rf job on the same data (predicted, then measured; at least 1 s); relative constraints: "
                "max(10, budget_factor x the slowest candidate's predicted fit)")),
            "n_folds": param(5, Interval(Int, 2, 10), doc=(
                "folds over constraint units; at most 3 with fewer than 60 distinct constraints")),
            "max_repeats": param(2, Interval(Int, 1, 3), doc=(
                "fold assignments; the last rung scores the finalists on the second")),
            "k_min": param(None, Interval(Int, 2, 50), None, doc="with n_clusters null: smallest K tried"),
            "k_max": param(None, Interval(Int, 2, 50), None, doc="with n_clusters null: largest K tried"),
            "candidates": param(None, ListOf(Options(*AUTO_CANDIDATES)), None, doc=(
                "settings to choose from (null = all): " + ", ".join(AUTO_CANDIDATES))),
            "tie_break": param("prior", Options("prior", "consensus"), doc=(
                "within one paired SE of the best: the first in the fixed prior order, or the setting whose "
                "fold partitions agree most with the other families' best (needs 3 families near the best)")),
        },
        constraints=("pairwise", "triplets", "relative"),
        hard_constraints=False,
        outputs=("labels", "affinity", "auto"),
        reference="Pourrajabi et al. Model selection for semi-supervised clustering. EDBT 2014; Van "
                  "Craenendonck, Blockeel. Constraint-based clustering selection. Machine Learning 106, 2017.",
        fit_inputs=("pairwise", "triplets"),
        chooses_n_clusters=True,
        exclusive_constraints=(("pairwise",), ("triplets", "relative", "hierarchy")),
        default_scale="auto",
    ),
    Card(
        id="kmeans",
        title="k-means (Lloyd 1982, k-means++ seeding), unconstrained reference",
        estimator="clustering.baselines._kmeans:KMeans",
        params={
            "init": param("k-means++", Options("k-means++", "random")),
            "n_init": _n_init(doc="restarts; the lowest inertia is kept"),
            "max_iter": param(300, Interval(Int, 1, 10000)),
            "tol": param(1e-4, Interval(Real, 0, 1)),
        },
        constraints=(),
        hard_constraints=False,
        outputs=("labels",),
        reference="Lloyd. Least squares quantization in PCM. IEEE Trans. Inf. Theory 1982; Arthur, Vassilvitskii. "
                  "k-means++: the advantages of careful seeding. SODA 2007.",
        # No size limit: 100000 rows x 10 columns, K = 10, took 7.8 s and a 198 MiB peak (one BLAS thread).
        extras={"inertia": "inertia_", "n_iter": "n_iter_", "cluster_centers": "cluster_centers_"},
    ),
]}
