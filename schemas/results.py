"""Job results."""

from marshmallow import Schema, fields


class ConflictSchema(Schema):
    cannot_link = fields.List(fields.Integer())
    cannot_link_index = fields.Integer()
    must_link_chain = fields.List(fields.Integer())
    cannot_link_item_ids = fields.List(fields.String())
    must_link_chain_item_ids = fields.List(fields.String())


class ConstraintPositionsSchema(Schema):
    must_link = fields.List(fields.Integer(), metadata={"description": "indices into the job's must_link list"})
    cannot_link = fields.List(fields.Integer(), metadata={"description": "indices into the job's cannot_link list"})


class MetricsSchema(Schema):
    ari = fields.Float()
    nmi = fields.Float()
    f_measure = fields.Float()
    v_measure = fields.Float()
    jaccard = fields.Float()


class ResultSchema(Schema):
    """``GET /v1/jobs/{id}/result``."""

    job_id = fields.String()
    method = fields.String()
    labels = fields.List(fields.Integer(), metadata={"description": "cluster of each row, in row order"})
    item_ids = fields.List(fields.String(), allow_none=True)
    n_clusters = fields.Integer()
    cluster_sizes = fields.List(fields.Integer(), metadata={
        "description": "rows in each cluster 0 .. n_clusters - 1, 0 for a cluster no row went to"})
    constraint_satisfaction = fields.Float(allow_none=True,
                                           metadata={"description": "fraction of given pairwise constraints honoured"})
    violated_constraints = fields.Nested(
        ConstraintPositionsSchema, allow_none=True,
        metadata={"description": "the given pairwise constraints the labels violate (a must-link across two "
                                 "clusters, a cannot-link inside one); null without pairwise constraints"})
    conflicts = fields.List(fields.Nested(ConflictSchema))
    n_conflicts = fields.Integer()
    metrics = fields.Nested(MetricsSchema, allow_none=True)
    timings = fields.Dict(keys=fields.String(), values=fields.Float())
    diagnostics = fields.Dict()
    auto = fields.Dict(allow_none=True, metadata={
        "description": "method auto: chosen {id, method, preset, params, n_clusters, k_selected, scale}, rule, "
                       "candidates (score, spread, status of every setting), k, folds, timing, noise, warnings "
                       "(docs/auto.md); absent for other methods"})
    extras = fields.Dict(metadata={"description": "method-specific outputs (e.g. constraint_scores, beta, "
                                             "dropped_constraints, rca_features; ReCon's conflict, dropped_triplets "
                                             "and cut_violations as {triplets: [i], relative: [j], hierarchy: "
                                             "[[a, b, c]]}, indices into the request's lists)"})
