"""Annotator links, gold questions and per-worker tallies of a session (``/v1/sessions/{id}/...``)."""

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from .fields import StrictInteger
from .items import HTTP_URL

#: Longest life of a link (s), and the default.
MAX_LINK_SECONDS = 90 * 24 * 3600
DEFAULT_LINK_SECONDS = 7 * 24 * 3600
WORKER_ID = validate.Regexp(r"^[A-Za-z0-9_.@:-]{1,200}(?![\s\S])",  # the end of the string, in ECMA regex too
                            error="1-200 characters: letters, digits and _ . @ : -")


def _http_url(value):
    if len(value) > 2048 or not HTTP_URL.match(value):
        raise ValidationError("must be an http(s) URL of at most 2048 characters")


class LinkCreateSchema(Schema):
    """``POST /v1/sessions/{id}/annotators`` body."""

    class Meta:
        unknown = RAISE

    worker_id = fields.String(load_default=None, allow_none=True, validate=WORKER_ID, metadata={
        "description": "the worker this link answers as; null: a link for many workers, each named by the "
                       "URL parameter PROLIFIC_PID (or worker_id) when they open it"})
    expires_in = fields.Integer(load_default=DEFAULT_LINK_SECONDS,
                                validate=validate.Range(min=1, max=MAX_LINK_SECONDS),
                                metadata={"description": "seconds the link works"})
    quota = fields.Integer(load_default=None, allow_none=True, validate=validate.Range(min=1, max=100_000),
                           metadata={"description": "answers per worker, then the done page; null: until the "
                                                    "budget is used"})
    completion_url = fields.String(load_default=None, allow_none=True, validate=_http_url, metadata={
        "description": "shown as a link on the done page, e.g. https://app.prolific.com/submissions/complete?cc=CODE"})
    instructions = fields.String(load_default=None, allow_none=True, validate=validate.Length(max=2000),
                                 metadata={"description": "shown on the page (as text) above the default rule"})


class LinkSchema(Schema):
    id = fields.String()
    session_id = fields.String()
    worker_id = fields.String(allow_none=True)
    url = fields.String(metadata={"description": "the capability URL: anyone holding it answers as the worker"})
    created_at = fields.String()
    expires_at = fields.String()
    quota = fields.Integer(allow_none=True)
    completion_url = fields.String(allow_none=True)
    instructions = fields.String(allow_none=True)
    revoked_at = fields.String(allow_none=True)


class LinkListSchema(Schema):
    links = fields.List(fields.Nested(LinkSchema))


class GoldQuestionSchema(Schema):
    items = fields.List(fields.Integer(validate=validate.Range(min=0)), required=True,
                        validate=validate.Length(min=2, max=3),
                        metadata={"description": "[i, j] (pairwise) or [a, b, c] (triplet: is a closer to b than c?)"})
    answer = fields.String(required=True, validate=validate.OneOf(["must_link", "cannot_link", "yes", "no"]))


class GoldRequestSchema(Schema):
    """``POST /v1/sessions/{id}/gold`` body: replaces the session's gold questions."""

    class Meta:
        unknown = RAISE

    questions = fields.List(fields.Nested(GoldQuestionSchema), required=True,
                            validate=validate.Length(max=1000))
    every = fields.Integer(load_default=5, validate=validate.Range(min=2, max=1000),
                           metadata={"description": "one question in this many on the annotator page is gold "
                                                    "(after the first ones)"})
    first = StrictInteger(load_default=0, validate=validate.Range(min=0, max=1000), metadata={
        "description": "a worker's first this many questions on the annotator page are gold (a qualification, "
                       "as Toloka's training or MTurk's qualification test), then one in every; at most the "
                       "number of gold questions; 0: gold from the start only one in every"})

    @validates_schema
    def _distinct(self, data, **kwargs):
        for i, q in enumerate(data.get("questions") or []):
            if len(set(q["items"])) != len(q["items"]):
                raise ValidationError({"questions": {i: {"items": ["items must differ"]}}})

    @validates_schema
    def _first_within(self, data, **kwargs):
        n = len(data.get("questions") or [])
        if data.get("first", 0) > n:
            raise ValidationError({"first": [f"must be at most the number of gold questions ({n})"]})


class GoldSchema(Schema):
    questions = fields.List(fields.Nested(GoldQuestionSchema))
    every = fields.Integer()
    first = fields.Integer()


class WorkerStatsSchema(Schema):
    worker_id = fields.String()
    answers = fields.Integer(metadata={"description": "answers given on annotator pages, gold included"})
    seconds_per_answer = fields.Float(allow_none=True, metadata={"description": "mean time from showing to answer"})
    gold_answered = fields.Integer()
    gold_correct = fields.Integer()
    gold_accuracy = fields.Float(allow_none=True)
    agreement = fields.Float(allow_none=True, metadata={
        "description": "share of the worker's informative answers on closed questions that match the "
                       "aggregated answer (questions with at least two answers)"})
    agreement_n = fields.Integer(metadata={"description": "answers the agreement is over"})


class WorkerListSchema(Schema):
    workers = fields.List(fields.Nested(WorkerStatsSchema))
