"""One parameter schema per method; field names equal the estimator's ``__init__`` names.

``METHODS`` is the catalogue served by ``GET /v1/methods`` and used to
validate ``POST /v1/jobs``: which constraint kinds a method reads, whether
it treats them as hard, and what it returns. ``presets`` (optional) name
parameter sets we measured and recommend; a job names one in ``preset``
(its ``params`` override the preset's).
"""

from marshmallow import RAISE, Schema, fields, validate

from .fields import FiniteFloat, NumberOrChoice, PositiveOrChoice, StrictInteger, one_of


class _Params(Schema):
    class Meta:
        unknown = RAISE


def _int(lo, hi=None, default=None, **kw):
    return StrictInteger(load_default=default, validate=validate.Range(min=lo, max=hi), **kw)


def _float(lo, hi=None, default=None, lo_inclusive=True, hi_inclusive=True, **kw):
    return FiniteFloat(
        load_default=default,
        validate=validate.Range(min=lo, max=hi, min_inclusive=lo_inclusive, max_inclusive=hi_inclusive),
        **kw,
    )


_SIGMA_DOC = {"description": "Gaussian bandwidth in z-units of the data; null = mean distance to the k-th neighbour"}


class SpectralParams(_Params):
    n_neighbors = _int(1, 1000, 20, metadata={"description": "k for the bandwidth rule / kNN graph"})
    sigma = _float(0, None, None, lo_inclusive=False, allow_none=True, metadata=_SIGMA_DOC)
    affinity = one_of("rbf", ["rbf", "knn"])
    n_init = _int(1, 100, 10)


class SpectralLearningParams(_Params):
    normalization = one_of("sym", ["additive", "rw", "sym"],
            "sym: NJW on the overwritten affinity; additive: Kamvar's normalisation; rw: generalized (URASC)")
    affinity = one_of("rbf", ["rbf", "knn"])
    n_neighbors = _int(1, 1000, 20)
    sigma = _float(0, None, None, lo_inclusive=False, allow_none=True, metadata=_SIGMA_DOC)
    closure = fields.Boolean(load_default=False, metadata={
        "description": "overwrite every pair inside a must-link group and between two groups a cannot-link joins; "
                       "at most the method's max_closure_pairs such pairs (about 110 bytes each), more is a 422 "
                       "constraints_too_large_for_option"})
    row_normalize = fields.Boolean(load_default=False)
    n_init = _int(1, 100, 10)


class E2CPParams(_Params):
    alpha = _float(0, 0.95, 0.6, metadata={"description": "propagation strength, [0, 0.95]"})
    n_neighbors = _int(1, 1000, 15)
    sigma = _float(0, None, None, lo_inclusive=False, allow_none=True, metadata=_SIGMA_DOC)
    n_init = _int(1, 100, 10)


class COPKMeansParams(_Params):
    init = one_of("k-means++", ["k-means++", "random"])
    order = one_of("dataset", ["dataset", "random"])
    n_init = _int(1, 100, 10)
    max_iter = _int(1, 10000, 300)
    tol = _float(0, 1, 1e-4)


class COPRFParams(_Params):
    n_estimators = _int(1, 5000, 1000, metadata={
        "description": "number of trees T; rows x T at most 25000000 (every tree's leaf of every row is kept, "
                       "about 45 bytes each), more is a 422 dataset_too_large_for_option: at most 1250 trees "
                       "on 20000 rows, 5000 on 5000"})
    cannot_link_policy = one_of("relaxed", ["relaxed", "literal", "strict", "separate"],
            "relaxed (default, the spec's rule), literal/strict (the paper's Algorithm 1), or separate (relaxed, "
            "and pure real-only nodes holding cannot-links are cut too; better on ionosphere, wdbc, segment)")
    pseudo_samples = one_of("uniform", ["uniform", "marginal"],
            "uniform on each feature's range (paper) or the product of the empirical marginals (Shi & Horvath's "
            "Addcl1)")
    affinity_samples = one_of("all", ["all", "in_bag"],
            "all: every tree votes on every pair (spec CR-8); in_bag: a tree votes only on pairs its bag holds "
            "(dense n x n, n <= 3000)")
    n_neighbors = one_of("auto", ["auto", "select"],
            "auto: kNN graph with k = n/10 (paper); select: also cluster the whole forest affinity and keep the "
            "labels that satisfy more of the constraints (n <= 3000; much better on ionosphere)")
    drop_violated = fields.Boolean(load_default=False, metadata={
        "description": "fit twice, the second time without the constraints the first clustering violates (listed "
                       "in the result's extras.dropped_constraints); helps against wrong constraints when the first "
                       "clustering is good (iris 15% wrong: AUC 3.43 against 3.32), hurts when it is not (wdbc, "
                       "segment); twice the time"})
    # high: RCA takes at most 2000 columns (clustering.validation.RCA_MAX_FEATURES, which a test
    # compares), and never makes more components than columns, so a larger count could mean nothing.
    rca_components = NumberOrChoice(["all"], low=1.0, low_inclusive=True, high=2000, integer=True,
                                    load_default=None, allow_none=True, metadata={
        "description": "grow the trees on the data plus up to this many relevant-component features learned from "
                       "the must-links (at most one per column of the data: a larger count gives as many as "
                       "there are columns, like all; null = the paper's forest on the data alone); lets "
                       "axis-aligned splits cut along the directions where the constraints say the clusters part "
                       "(AUC of the ARI curve with cannot_link_policy=separate and n_neighbors=select: iris 3.65 "
                       "against 3.49, ionosphere 2.34 against 1.78)"})
    filter_constraints = fields.Boolean(load_default=True,
                                        metadata={"description": "noisy-constraint filter at each tree's root"})
    filter_fraction = _float(0, 1, 0.5, lo_inclusive=False, hi_inclusive=False,
                             metadata={"description": "alpha: fraction of constraints kept per root"})
    filter_repeats = _int(1, 5000, 500, metadata={"description": "f: random subsets scored at each root"})
    min_samples_split = _int(2, 10000, 2)
    max_depth = _int(1, 1000, None, allow_none=True)
    n_init = _int(1, 100, 10)


class CCSKLParams(_Params):
    n_components = _int(2, 500, 20, metadata={"description": "m, number of smoothest Laplacian eigenvectors"})
    n_neighbors = _int(1, 1000, 20, metadata={"description": "k of the kNN graph"})
    pair_convention = one_of("ordered", ["ordered", "unordered"], "ordered = paper Eq. 8, unordered = Eq. 7")
    closure = fields.Boolean(load_default=False, metadata={
        "description": "add the transitive closure of must-links (skipped, with a warning in the result, above "
                       "2000000 derived pairs: 2.8 GiB and 224 s at that cap on 100000 rows)"})
    sigma = PositiveOrChoice(["auto", "select"], load_default="auto",
                             metadata={"description": "Gaussian width in z-units; auto = mean distance to the k-th "
                                                      "neighbour; select = the paper's 9 widths chosen by held-out "
                                                      "constraints (about 10x slower; best on ionosphere; at "
                                                      "most 20000 rows, more is a 422 "
                                                      "dataset_too_large_for_option: 156 s and 0.75 GiB "
                                                      "there, 52 s at 10000)"})
    weighting = one_of("balanced", ["balanced", "none"],
            "balanced: constraint rows together weigh `balance` x the n diagonal targets; none: the paper's "
            "literal loss")
    balance = _float(0, 1000, 10.0, lo_inclusive=False)
    n_init = _int(1, 100, 10)
    restart_selection = one_of("constraints", ["constraints", "inertia"],
            "which k-means restart is kept: the one that satisfies the most constraints (default), or the lowest "
            "inertia (the paper)")


class DCRCParams(_Params):
    epsilon = _float(0, 2 / 3, 0.05, metadata={"description": "answer noise; 2/3 = constraints ignored"})
    l2_penalty = _float(0, 10, 0.01, lo_inclusive=False, metadata={"description": "weight decay; > 0 keeps "
                                                                                 "the logistic weights bounded"})
    entropy_weight = _float(0, 100, 1.0, metadata={"description": "conditional-entropy term weight"})
    balance = fields.Boolean(load_default=True, metadata={"description": "cluster-balance term"})
    standardize = fields.Boolean(load_default=True)
    max_iter = _int(1, 500, 100)
    n_init = _int(1, 10, 4, metadata={"description": "EM starts (k-means + random), best lower bound kept"})


class ReConParams(_Params):
    cut = one_of("constraint_guided", ["constraint_guided", "height", "merge_order"])
    # Infeasible triplets follow the job's on_conflict: "keep" repairs (drops a
    # minimal conflicting set, reported in the result), "reject" answers 422.


#: ``auto``'s candidate ids (clustering._auto: default_candidates and relative_candidates; a test compares them).
AUTO_CANDIDATES = ("rf-def", "rf-sep", "rf-rca", "rf-rcaf", "ccskl-0.1", "ccskl-0.325", "ccskl-0.55", "ccskl-0.775",
                   "ccskl-1", "ccskl-3.25", "ccskl-5.5", "ccskl-7.75", "ccskl-10", "e2cp-0.6", "e2cp-0.9", "sl-rbf",
                   "sl-knn", "sc-rbf", "sc-knn", "ckm", "dcrc-0.05", "dcrc-0.2", "recon-constraint_guided",
                   "recon-height")


class AutoParams(_Params):
    budget_factor = _float(1, 20, 5.0, metadata={
        "description": "search budget in CPU seconds = max(10, budget_factor x the predicted time of the slowest "
                       "candidate's full fit); the refit comes on top of the search within it"})
    n_folds = _int(2, 10, 5, metadata={"description": "folds over constraint units"})
    max_repeats = _int(1, 3, 2, metadata={"description": "fold assignments; the last rung scores the finalists on "
                                                         "the second"})
    k_min = _int(2, 50, None, allow_none=True, metadata={"description": "with n_clusters null: smallest K tried"})
    k_max = _int(2, 50, None, allow_none=True, metadata={"description": "with n_clusters null: largest K tried"})
    candidates = fields.List(fields.String(validate=validate.OneOf(AUTO_CANDIDATES)), load_default=None,
                             allow_none=True, validate=validate.Length(min=1), metadata={
        "description": "settings to choose from (null = all): " + ", ".join(AUTO_CANDIDATES)})
    tie_break = one_of("prior", ["prior", "consensus"],
            "within one paired SE of the best: the first in the fixed prior order, or the setting whose fold "
            "partitions agree most with the other families' best (needs 3 families near the best)")


METHODS = {
    "spectral": {
        "title": "Spectral clustering (Ng, Jordan, Weiss 2001), unconstrained reference",
        "estimator": "SpectralClustering",
        "params": SpectralParams,
        "constraints": [],
        "hard_constraints": False,
        "outputs": ["labels", "affinity"],
        "reference": "Ng, Jordan, Weiss. On spectral clustering: analysis and an algorithm. NIPS 2001.",
    },
    "spectral_learning": {
        "title": "Spectral Learning (Kamvar, Klein, Manning 2003)",
        "estimator": "SpectralLearning",
        "params": SpectralLearningParams,
        "constraints": ["pairwise"],
        "hard_constraints": False,
        "outputs": ["labels", "affinity"],
        "reference": "Kamvar, Klein, Manning. Spectral learning. IJCAI 2003.",
        # clustering.validation.SPECTRAL_LEARNING_MAX_CLOSURE_PAIRS (a test compares them)
        "max_closure_pairs": 25_000_000,
    },
    "e2cp": {
        "title": "Exhaustive and efficient constraint propagation (Lu, Ip 2010)",
        "estimator": "E2CP",
        "params": E2CPParams,
        "constraints": ["pairwise"],
        "hard_constraints": False,
        "outputs": ["labels", "affinity"],
        "reference": "Lu, Ip. Constrained spectral clustering via exhaustive and efficient constraint propagation. ECCV 2010.",
        # clustering.validation.E2CP_MAX_SAMPLES (a test compares them)
        "max_samples": 40000,
        # clustering.validation.E2CP_MAX_PROPAGATION (a test compares them)
        "max_propagation": 80_000_000,
        "max_samples_reason": "above 40000 rows the sparse LU of its propagation needs more than the 4 GiB a "
                              "worker has (measured 2.0 GiB and 171 s at 40000 rows with 300 pairs, 5.4 GiB and "
                              "737 s at 70000: "
                              "bench/results/scale_limits.json); use spectral_learning or ccskl (pairwise, soft), "
                              "which run on 100000 rows in under 3 GiB, or a sample of at most 40000 rows",
    },
    "cop_kmeans": {
        "title": "COP-KMeans (Wagstaff, Cardie, Rogers, Schroedl 2001): hard constraints",
        "estimator": "COPKMeans",
        "params": COPKMeansParams,
        "constraints": ["pairwise"],
        "hard_constraints": True,
        "outputs": ["labels"],
        "reference": "Wagstaff et al. Constrained k-means clustering with background knowledge. ICML 2001.",
    },
    "cop_rf": {
        "title": "COP-RF: constraint-propagation random forest with noisy-constraint filtering",
        "estimator": "COPRF",
        "params": COPRFParams,
        "constraints": ["pairwise"],
        "hard_constraints": False,
        "outputs": ["labels", "affinity", "constraint_scores"],
        "reference": "Zhu, Loy, Gong. Constrained clustering: effective constraint propagation with imperfect "
                     "oracles. ICDM 2013.",
        "presets": [{
            "name": "rca_filtered",
            "description": "The setting that meets the paper's numbers (bench/README.md, 10 trials, area under "
                           "the ARI curve for 20-100 pairs, clean / 15% wrong: iris 3.68 / 3.52, ionosphere "
                           "2.26 / 1.68; the defaults, the spec's forest, give 3.50 / 3.33 and .39 / .20). "
                           "Fits twice: 2-5x the default's time (1000 trees, 100 pairs: ionosphere 6.4 s, "
                           "segment 33 s). At most 3000 rows: it builds a dense n x n affinity.",
            "params": {"cannot_link_policy": "separate", "affinity_samples": "in_bag", "n_neighbors": "select",
                       "drop_violated": True, "rca_components": "all"},
        }],
        # clustering.validation.COP_RF_AUTO_MAX_SAMPLES (a test compares them)
        "max_samples": 20000,
        "max_samples_reason": "its kNN graph on the forest affinity has n/10 neighbours per row (the paper's k = "
                              "N/10), n^2/10 entries: 3.4 GiB peak at 20000 rows (300 s with 1000 trees), "
                              "5.0 GiB at 25000, more than the 4 GiB a worker has (bench/results/scale_limits.json); "
                              "use ccskl or spectral_learning (pairwise, soft), which run on 100000 rows in under 3 "
                              "GiB, or a sample of at most 20000 rows",
    },
    "ccskl": {
        "title": "CCSKL: constrained clustering by spectral kernel learning (QP on the Laplacian spectrum)",
        "estimator": "CCSKL",
        "params": CCSKLParams,
        "constraints": ["pairwise"],
        "hard_constraints": False,
        "outputs": ["labels", "affinity", "kernel", "beta"],
        "reference": "Li, Liu. Constrained clustering by spectral kernel learning. ICCV 2009.",
    },
    "auto": {
        "title": "auto: the method, its settings and K chosen by held-out constraints, refitted on all",
        "estimator": "AutoClustering",
        "params": AutoParams,
        "constraints": ["pairwise", "triplets", "relative"],
        "hard_constraints": False,
        "outputs": ["labels", "affinity", "auto"],
        "reference": "Pourrajabi et al. Model selection for semi-supervised clustering. EDBT 2014; Van "
                     "Craenendonck, Blockeel. Constraint-based clustering selection. Machine Learning 106, 2017.",
    },
    "dcrc": {
        "title": "DCRC: discriminative clustering with relative constraints (yes / no / don't know)",
        "estimator": "DCRC",
        "params": DCRCParams,
        "constraints": ["triplets", "relative"],
        "hard_constraints": False,
        "outputs": ["labels", "probabilities", "predict"],
        "reference": "Pei, Fern, Rosales, Tjahja. Discriminative clustering with relative constraints.",
    },
    "recon": {
        "title": "ReCon: hierarchical clustering satisfying relative constraints",
        "estimator": "ReCon",
        "params": ReConParams,
        "constraints": ["triplets", "relative", "hierarchy"],
        "hard_constraints": True,
        "outputs": ["labels", "hierarchy"],
        "reference": "Liu, Zhang, Wang. Clustering with relative constraints. KDD 2011.",
    },
}


def method_names():
    """Sorted list of method ids."""
    return sorted(METHODS)


# ---------------------------------------------------------------- the catalogue as served


class ParamDocSchema(Schema):
    """One parameter of a method or session strategy, as ``GET /v1/methods`` lists it."""

    name = fields.String()
    type = fields.String(metadata={"description": "integer, number, boolean, string, 'integer or string', ..."})
    default = fields.Raw(allow_none=True)
    nullable = fields.Boolean()
    choices = fields.List(fields.Raw(), metadata={"description": "the accepted strings"})
    minimum = fields.Raw(allow_none=True, metadata={"description": "lower bound, accepted itself unless "
                                                                   "exclusiveMinimum is true"})
    maximum = fields.Raw(allow_none=True, metadata={"description": "upper bound, accepted itself unless "
                                                                   "exclusiveMaximum is true"})
    exclusiveMinimum = fields.Boolean(metadata={"description": "true: values must be greater than minimum "
                                                               "(OpenAPI 3.0); absent: minimum is allowed"})
    exclusiveMaximum = fields.Boolean(metadata={"description": "true: values must be less than maximum "
                                                               "(OpenAPI 3.0); absent: maximum is allowed"})
    minimum_exclusive = fields.Raw(allow_none=True, metadata={
        "description": "deprecated: the same bound as minimum with exclusiveMinimum, on number-or-string "
                       "parameters only"})
    description = fields.String()


class PresetSchema(Schema):
    """A measured parameter set that a job (or a session) names in ``preset``."""

    name = fields.String()
    description = fields.String(metadata={"description": "what it is for, with its measured numbers"})
    params = fields.Dict(keys=fields.String())
    question_type = fields.String(metadata={"description": "session presets only: the sessions it is for"})


class MethodDocSchema(Schema):
    id = fields.String()
    max_samples = fields.Integer(allow_none=True, metadata={
        "description": "most rows a job of this method may have (more is a 422 dataset_too_large_for_method at "
                       "/dataset_id): the largest dataset it fits in one worker's 4 GiB and 3300 s; null: any "
                       "dataset the service accepts (SHOAL_MAX_ROWS). Some options have lower limits, quoted in "
                       "their description"})
    max_propagation = fields.Integer(allow_none=True, metadata={
        "description": "most rows x distinct rows named in must_link / cannot_link (e2cp: its two n x c "
                       "propagation factors; more is a 422 constraints_too_large_for_method at /constraints); "
                       "null: no such limit"})
    max_closure_pairs = fields.Integer(allow_none=True, metadata={
        "description": "with closure=true: most pairs the transitive closure may overwrite (every pair inside a "
                       "must-link group, s (s - 1) / 2 for a group of s rows, plus s_a x s_b for every two "
                       "groups a cannot-link joins); more is a 422 constraints_too_large_for_option at "
                       "/params/closure; null: no such limit"})
    max_samples_reason = fields.String(allow_none=True, metadata={
        "description": "why, with the measurements, and what to use instead on more rows"})
    title = fields.String()
    constraints = fields.List(fields.String(), metadata={"description": "constraint kinds the method reads"})
    hard_constraints = fields.Boolean()
    outputs = fields.List(fields.String())
    reference = fields.String()
    presets = fields.List(fields.Nested(PresetSchema))
    params = fields.List(fields.Nested(ParamDocSchema))


class SessionStrategiesSchema(Schema):
    """The strategies and ``params`` of the sessions of one ``question_type``."""

    question_type = fields.String()
    strategies = fields.List(fields.String(), metadata={"description": "the first is the default"})
    params = fields.List(fields.Nested(ParamDocSchema))


class CatalogueSchema(Schema):
    """``GET /v1/methods``."""

    methods = fields.List(fields.Nested(MethodDocSchema))
    session_strategies = fields.List(fields.Nested(SessionStrategiesSchema))
    session_presets = fields.List(fields.Nested(PresetSchema))
