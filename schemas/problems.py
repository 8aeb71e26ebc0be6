"""RFC 9457 problem details (documentation schema; the service builds the bodies)."""

from marshmallow import Schema, fields


class ProblemSchema(Schema):
    """``application/problem+json`` body used for every error."""

    type = fields.String(metadata={"description": "URI reference identifying the problem type"})
    title = fields.String(metadata={"description": "Short summary of the problem type"})
    status = fields.Integer(metadata={"description": "HTTP status code"})
    detail = fields.String(metadata={"description": "Explanation specific to this occurrence"})
    code = fields.String(metadata={"description": "Stable machine-readable error code"})
    instance = fields.String()
    request_id = fields.String(metadata={"description": "this request's X-Request-ID (the client's, or one made "
                                                        "for it): quote it when reporting a problem"})
    errors = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={"description": "JSON pointer of each invalid field -> messages"},
    )
    conflicts = fields.List(
        fields.Dict(),
        metadata={"description": "Contradictory constraints (cannot-link pair and must-link chain)"},
    )
    jobs = fields.List(fields.String(), metadata={"description": "dataset_in_use: ids of its unfinished jobs"})
    sessions = fields.List(fields.String(), metadata={"description": "dataset_in_use: ids of its open sessions"})
    n_conflicts = fields.Integer(metadata={"description": "contradictory_constraints (pairwise): how many "
                                                          "cannot-links contradict must-link chains"})
    relative = fields.Dict(metadata={"description": "contradictory_constraints (relative): {feasible, "
                                                    "n_relative, minimal, conflicting: [{field, index, items, "
                                                    "answer, item_ids}]}, a conflicting subset by its position "
                                                    "in the request's triplets / relative lists (field hierarchy, "
                                                    "index null: an ab|c constraint the hierarchy stands "
                                                    "for, named by its items); minimal: "
                                                    "whether it is proven minimal (the search is bounded: a "
                                                    "long conflict in a large noisy set may come back larger)"})
    state = fields.String(metadata={"description": "result_not_available, model_not_ready, session_failed: the "
                                                   "job's or session's state"})
    job_error = fields.Dict(metadata={"description": "result_not_available: the job's error, when it FAILED"})
    error = fields.Dict(metadata={"description": "session_failed: the session's error"})
    method = fields.String(metadata={"description": "dataset_too_large_for_method, "
                                                    "constraints_too_large_for_method, "
                                                    "constraints_too_large_for_option: the job's method"})
    n_samples = fields.Integer(metadata={"description": "dataset_too_large_for_method, "
                                                        "constraints_too_large_for_method: the dataset's rows"})
    max_samples = fields.Integer(metadata={"description": "dataset_too_large_for_method: the method's row limit "
                                                          "(max_samples in GET /v1/methods)"})
    max_propagation = fields.Integer(metadata={"description": "constraints_too_large_for_method: the most rows "
                                                              "x constrained rows (max_propagation in GET "
                                                              "/v1/methods)"})
    n_constrained_samples = fields.Integer(metadata={"description": "constraints_too_large_for_method: distinct "
                                                                    "rows named in must_link and cannot_link"})
    max_closure_pairs = fields.Integer(metadata={"description": "constraints_too_large_for_option: the most "
                                                                "pairs closure=true may overwrite "
                                                                "(max_closure_pairs in GET /v1/methods)"})
    n_closure_pairs = fields.Integer(metadata={"description": "constraints_too_large_for_option: the pairs these "
                                                              "constraints' closure would overwrite"})
