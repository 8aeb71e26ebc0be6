"""API keys and tenant limits (``/v1/admin``): what an admin key sends and gets back."""

from marshmallow import Schema, fields, validate

TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"  # workers.tenancy.TENANT_NAME
SCOPES = ("read", "write", "admin")


class KeyCreateSchema(Schema):
    """``POST /v1/admin/keys`` body."""

    tenant = fields.String(required=True, validate=validate.Regexp(TENANT_PATTERN),
                           metadata={"description": "The tenant the key acts for: it sees only this tenant's "
                                                    "datasets, jobs and sessions"})
    scopes = fields.List(fields.String(validate=validate.OneOf(SCOPES)), load_default=lambda: ["read", "write"],
                         validate=validate.Length(min=1, max=3),
                         metadata={"description": "read: GET routes; write: POST and DELETE; admin: /v1/admin"})
    name = fields.String(load_default=None, validate=validate.Length(max=200),
                         metadata={"description": "A label for people (who holds the key)"})


class KeySchema(Schema):
    """A key as listed: never its text, only the prefix that tells keys apart."""

    id = fields.String(required=True)
    tenant = fields.String(required=True)
    scopes = fields.List(fields.String(), required=True)
    name = fields.String(allow_none=True)
    prefix = fields.String(required=True, metadata={"description": "The key's first 12 characters"})
    created_at = fields.String(required=True)
    rotated_at = fields.String(allow_none=True)


class KeyWithSecretSchema(KeySchema):
    """A key just made or rotated, with its text: shown once, stored only as its SHA-256 digest."""

    key = fields.String(required=True, metadata={"description": "Send as Authorization: Bearer <key>"})


class KeyListSchema(Schema):
    keys = fields.List(fields.Nested(KeySchema), required=True)


class KeyListArgsSchema(Schema):
    tenant = fields.String(load_default=None, validate=validate.Regexp(TENANT_PATTERN))


class RotateSchema(Schema):
    """``POST /v1/admin/keys/{key_id}/rotate`` body."""

    grace_seconds = fields.Integer(load_default=0, validate=validate.Range(min=0, max=7 * 24 * 3600),
                                   metadata={"description": "How long the old text keeps working (0: not at all)"})


class TenantLimitsSchema(Schema):
    """A tenant's limits: a null (or absent) field takes the deployment's default."""

    requests_per_second = fields.Integer(allow_none=True, load_default=None,
                                         validate=validate.Range(min=1, max=100_000))
    burst = fields.Integer(allow_none=True, load_default=None, validate=validate.Range(min=1, max=1_000_000),
                           metadata={"description": "Requests a key may send at once before the rate applies"})
    max_active_jobs = fields.Integer(allow_none=True, load_default=None, validate=validate.Range(min=1, max=10**6),
                                     metadata={"description": "Jobs QUEUED or RUNNING at once"})
    max_open_sessions = fields.Integer(allow_none=True, load_default=None,
                                       validate=validate.Range(min=1, max=10**6),
                                       metadata={"description": "Sessions INITIALIZING or ACTIVE at once"})
    max_stored_bytes = fields.Integer(allow_none=True, load_default=None,
                                      validate=validate.Range(min=1, max=2**50),
                                      metadata={"description": "Bytes of dataset matrices stored at once"})


class TenantLimitsViewSchema(TenantLimitsSchema):
    """A tenant's limits in force (defaults filled in) and what it uses now."""

    tenant = fields.String(required=True)
    active_jobs = fields.Integer(required=True)
    open_sessions = fields.Integer(required=True)
    stored_bytes = fields.Integer(required=True)
