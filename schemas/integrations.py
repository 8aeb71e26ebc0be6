"""Connectors from a session to an annotation platform (Label Studio)."""

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from .fields import StrictInteger, one_of


class IntegrationCreateSchema(Schema):
    """``POST /v1/sessions/{id}/integrations`` body."""

    class Meta:
        unknown = RAISE

    platform = one_of("label_studio", ["label_studio"], "the platform (Label Studio, self-hosted or cloud)")
    url = fields.Url(required=True, require_tld=False, schemes={"http", "https"},
                     metadata={"description": "the platform's base URL, e.g. http://label-studio.internal:8080"})
    token = fields.String(load_default=None, allow_none=True, load_only=True,
                          validate=validate.Length(min=6, max=4096),
                          metadata={"description": "the platform's API token (Label Studio: a legacy token or a "
                                                   "personal access token); stored encrypted with "
                                                   "SHOAL_INTEGRATION_KEY and never shown"})
    token_env = fields.String(load_default=None, allow_none=True,
                              validate=validate.Regexp(r"^SHOAL_INTEGRATION_TOKEN_[A-Z0-9_]{1,64}$"),
                              metadata={"description": "instead of token: the environment variable "
                                                       "(SHOAL_INTEGRATION_TOKEN_*) of the service and workers "
                                                       "that holds it"})
    webhook_base_url = fields.Url(load_default=None, allow_none=True, require_tld=False, schemes={"http", "https"},
                                  metadata={"description": "Shoal's base URL as the platform reaches it (default: "
                                                           "the one this request came to)"})
    batch_size = StrictInteger(load_default=20, validate=validate.Range(min=1, max=500),
                               metadata={"description": "most of the session's questions open on the platform at once (new tasks "
                                                   "are sent as they close)"})
    content_kind = one_of("text", ["text", "image"], "how items show: text (the row's text, else its features) "
                                                     "or image (the row's image_url)")

    @validates_schema
    def _one_token(self, data, **kwargs):
        if bool(data.get("token")) == bool(data.get("token_env")):
            raise ValidationError("give exactly one of token and token_env", "token")


class IntegrationSchema(Schema):
    id = fields.String()
    session_id = fields.String()
    platform = fields.String()
    url = fields.String()
    project_id = fields.Integer(allow_none=True, metadata={"description": "the platform's project"})
    batch_size = fields.Integer()
    token_source = fields.String(validate=validate.OneOf(["encrypted", "environment"]),
                                 metadata={"description": "where the token is kept (it is never shown)"})
    webhook_url = fields.String(metadata={"description": "where the platform sends annotation events (its "
                                                         "secret travels in a header and is never shown)"})
    created_at = fields.String()
    tasks_sent = fields.Integer(metadata={"description": "questions sent to the platform as tasks"})
    changed_answers = fields.List(fields.Dict(), metadata={
        "description": "annotations edited on the platform after their answer was recorded (question_id, "
                       "worker_id, assignment_id, recorded, now, at): the recorded answer stands"})


class IntegrationListSchema(Schema):
    integrations = fields.List(fields.Nested(IntegrationSchema))


class WebhookResultSchema(Schema):
    outcome = fields.String(validate=validate.OneOf(["accepted", "duplicate", "late", "rejected", "skipped",
                                                     "ignored"]))
    reason = fields.String(allow_none=True)
    question_id = fields.String(allow_none=True)
    assignment_id = fields.String(allow_none=True)
    changed = fields.Boolean(metadata={"description": "an edited annotation whose answer differs from the one "
                                                      "recorded (listed in the integration's changed_answers)"})
