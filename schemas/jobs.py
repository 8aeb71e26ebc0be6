"""Jobs: submission, state, listing."""

from marshmallow import RAISE, Schema, fields, validate

from .constraints import ConstraintsSchema
from .fields import Matrix, StrictInteger, no_repeats
from .paging import PageArgsSchema

STATES = ("QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")


class JobCreateSchema(Schema):
    """``POST /v1/jobs`` body."""

    class Meta:
        unknown = RAISE

    dataset_id = fields.String(required=True, validate=validate.Length(min=1, max=100))
    method = fields.String(required=True, metadata={"description": "a method id from GET /v1/methods"})
    n_clusters = StrictInteger(required=True, allow_none=True,
                               metadata={"description": "K, 2 <= K <= n_samples; null only with method auto "
                                                        "(K chosen from the constraints)"})
    params = fields.Dict(keys=fields.String(), load_default=dict,
                         metadata={"description": "method parameters, validated against the method's schema"})
    preset = fields.String(load_default=None, allow_none=True,
                           metadata={"description": "a preset name from the method's entry in GET /v1/methods: "
                                                    "its params, under any given in params"})
    constraints = fields.Nested(ConstraintsSchema, load_default=None)
    on_conflict = fields.String(load_default="keep", validate=validate.OneOf(["keep", "reject"]),
                                metadata={"description": "contradictory constraints: keep and report, or 422"})
    scale = fields.String(load_default=None, validate=validate.OneOf(["none", "zscore"]),
                          metadata={"description": "feature scaling applied by the worker before fitting; "
                                                   "the stored dataset is never changed. Unset: none, except "
                                                   "with method auto, which then also chooses between raw and "
                                                   "z-scored features (the job shows scale auto)"})
    random_state = StrictInteger(load_default=0, validate=validate.Range(min=0, max=2**32 - 1))
    callback_url = fields.Url(load_default=None, require_tld=False, schemes={"http", "https"},
                              metadata={"description": "POSTed a signed event when the job ends; public hosts "
                                                       "only (loopback, private and link-local hosts get a 422 "
                                                       "unless SHOAL_CALLBACK_ALLOW_PRIVATE is set); a port in "
                                                       "1-65535, no user:password@, IPv4 hosts as a.b.c.d. Signed per Standard "
                                                       "Webhooks (webhook-id, webhook-timestamp, webhook-signature "
                                                       "v1,...) with SHOAL_WEBHOOK_SECRET as whsec_<base64>; a "
                                                       "secret in any other form is deprecated (keyed with its "
                                                       "UTF-8 bytes, accepted until 0.2)"})


class ProgressSchema(Schema):
    fraction = fields.Float()
    stage = fields.String()
    message = fields.String(allow_none=True)


class JobSchema(Schema):
    """A job as clients see it."""

    id = fields.String()
    kind = fields.String(validate=validate.OneOf(["fit", "predict"]))
    parent_job_id = fields.String(allow_none=True, metadata={"description": "the fitted job a predict job uses"})
    session_id = fields.String(allow_none=True, metadata={
        "description": "the session whose answers this job clusters (POST /v1/sessions/{id}/refit), else null"})
    state = fields.String(validate=validate.OneOf(STATES))
    done = fields.Boolean()
    dataset_id = fields.String()
    method = fields.String()
    n_clusters = fields.Integer(allow_none=True, metadata={"description": "null: method auto chooses K"})
    params = fields.Dict(metadata={"description": "the parameters the job runs with: the method's defaults, "
                                                 "then the preset's, then those given"})
    preset = fields.String(allow_none=True,
                           metadata={"description": "the preset named at submission, or null"})
    random_state = fields.Integer()
    scale = fields.String()
    on_conflict = fields.String()
    n_constraints = fields.Dict(keys=fields.String(), values=fields.Integer())
    n_conflicts = fields.Integer()
    progress = fields.Nested(ProgressSchema)
    attempts = fields.Integer()
    created_at = fields.String()
    started_at = fields.String(allow_none=True)
    finished_at = fields.String(allow_none=True)
    error = fields.Dict(allow_none=True, metadata={"description": "problem object when FAILED"})
    result_url = fields.String(allow_none=True)
    affinity_url = fields.String(allow_none=True)
    callback_url = fields.String(allow_none=True)


class JobListArgsSchema(PageArgsSchema):
    state = fields.String(load_default=None, validate=validate.OneOf(STATES))
    dataset_id = fields.String(load_default=None, validate=validate.Length(min=1, max=100),
                               metadata={"description": "only the jobs on this dataset (also after the dataset "
                                                        "was deleted, while they exist)"})


class JobListSchema(Schema):
    jobs = fields.List(fields.Nested(JobSchema))
    next_page_token = fields.String(allow_none=True)


class AffinityArgsSchema(Schema):
    format = fields.String(load_default="json", validate=validate.OneOf(["json", "npz"]))
    top_k = fields.Integer(strict=False, load_default=10, validate=validate.Range(min=1, max=100))


class AffinitySchema(Schema):
    """``GET /v1/jobs/{id}/affinity`` as JSON: each row's ``top_k`` largest entries off the diagonal."""

    job_id = fields.String()
    n_samples = fields.Integer()
    top_k = fields.Integer()
    format = fields.String(validate=validate.OneOf(["top_k_rows"]))
    indices = fields.List(fields.List(fields.Integer()), metadata={
        "description": "per row, the columns of its largest entries, largest first (ties: lower column first)"})
    values = fields.List(fields.List(fields.Float()), metadata={"description": "the entries, as indices"})


class PredictRequestSchema(Schema):
    """``POST /v1/jobs/{id}/predict``: new rows for an inductive model (DCRC)."""

    class Meta:
        unknown = RAISE

    data = Matrix(required=True, metadata={"type": "array", "items": {"type": "array", "items": {"type": "number"}},
                                           "description": "m x d matrix, same d as the fitted dataset"})
    item_ids = fields.List(fields.String(validate=validate.Length(min=1, max=200)), load_default=None,
                           validate=no_repeats("item id"),
                           metadata={"description": "optional ids of the rows, unique; the result lists them"})
