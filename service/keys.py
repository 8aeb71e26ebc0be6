"""``/v1/admin``: make, list, rotate and revoke API keys, and set a tenant's limits (an admin key's scope).

A key's text is shown once, in the answer that makes or rotates it; Redis keeps its SHA-256
digest (:class:`workers.tenancy.KeyStore`). Keys set by configuration (``SHOAL_API_KEYS``,
``SHOAL_ADMIN_KEYS``) are not listed here: they change with the configuration.
"""

from flask_smorest import Blueprint

from schemas.keys import (
    KeyCreateSchema,
    KeyListArgsSchema,
    KeyListSchema,
    KeySchema,
    KeyWithSecretSchema,
    RotateSchema,
    TenantLimitsSchema,
    TenantLimitsViewSchema,
)
from workers.records import is_record_id
from workers.tenancy import TENANT_NAME, KeyStore

from . import doc_headers, get_store
from .auth import enabled
from .errors import ApiError, problem_docs
from .limits import forget_cached, limits_view

blp = Blueprint("admin", __name__, url_prefix="/v1/admin", description="API keys and tenant limits (admin scope)")


def _keys():
    if not enabled():
        raise ApiError(403, "admin_disabled", "this deployment has no API keys: set SHOAL_ADMIN_KEYS to manage "
                       "keys through the API")
    return KeyStore(get_store().r)


def _key_or_404(ks, key_id):
    rec = ks.get(key_id) if is_record_id(key_id, "key") else None
    if rec is None:
        raise ApiError(404, "not_found", f"API key {key_id!r} does not exist or was revoked")
    return rec


def _view(rec, text=None):
    view = {k: rec[k] for k in ("id", "tenant", "scopes", "name", "prefix", "created_at", "rotated_at")}
    if text is not None:
        view["key"] = text
    return view


@blp.route("/keys", methods=["POST"])
@blp.arguments(KeyCreateSchema)
@blp.response(201, KeyWithSecretSchema, headers=doc_headers("Location"))
@problem_docs(blp, (403, "Not an admin key, or no keys configured"))
def create_key(body):
    """Make a key for a tenant; its text is in this answer only."""
    rec, text = _keys().create(body["tenant"], set(body["scopes"]), body.get("name"))
    return _view(rec, text), 201, {"Location": f"/v1/admin/keys/{rec['id']}"}


@blp.route("/keys", methods=["GET"])
@blp.arguments(KeyListArgsSchema, location="query")
@blp.response(200, KeyListSchema)
@problem_docs(blp, (403, "Not an admin key, or no keys configured"))
def list_keys(args):
    """Every key made through the API (prefix only), of one ``tenant`` when given."""
    return {"keys": [_view(r) for r in _keys().list(args.get("tenant"))]}


@blp.route("/keys/<string:key_id>", methods=["GET"])
@blp.response(200, KeySchema)
@problem_docs(blp, (403, "Not an admin key, or no keys configured"), (404, "Unknown or revoked key"))
def get_key(key_id):
    """One key (prefix only)."""
    ks = _keys()
    return _view(_key_or_404(ks, key_id))


@blp.route("/keys/<string:key_id>/rotate", methods=["POST"])
@blp.arguments(RotateSchema)
@blp.response(200, KeyWithSecretSchema)
@problem_docs(blp, (403, "Not an admin key, or no keys configured"), (404, "Unknown or revoked key"))
def rotate_key(body, key_id):
    """A new text for the key (same id, tenant, scopes); the old one works ``grace_seconds`` longer."""
    ks = _keys()
    _key_or_404(ks, key_id)
    out = ks.rotate(key_id, body["grace_seconds"])
    if out is None:
        raise ApiError(404, "not_found", f"API key {key_id!r} does not exist or was revoked")
    return _view(*out)


@blp.route("/keys/<string:key_id>", methods=["DELETE"])
@blp.response(204)
@problem_docs(blp, (403, "Not an admin key, or no keys configured"), (404, "Unknown or revoked key"))
def revoke_key(key_id):
    """Revoke a key: its text stops working at once."""
    ks = _keys()
    _key_or_404(ks, key_id)
    ks.revoke(key_id)
    return ""


def _tenant_or_404(name):
    if not TENANT_NAME.fullmatch(name):
        raise ApiError(404, "not_found", f"{name!r} is not a tenant name")
    return name


@blp.route("/tenants/<string:tenant>/limits", methods=["GET"])
@blp.response(200, TenantLimitsViewSchema)
@problem_docs(blp, (403, "Not an admin key, or no keys configured"), (404, "Not a tenant name"))
def get_limits(tenant):
    """The tenant's limits in force (its own, else the defaults) and what it uses now."""
    _keys()
    return limits_view(_tenant_or_404(tenant))


@blp.route("/tenants/<string:tenant>/limits", methods=["PUT"])
@blp.arguments(TenantLimitsSchema)
@blp.response(200, TenantLimitsViewSchema)
@problem_docs(blp, (403, "Not an admin key, or no keys configured"), (404, "Not a tenant name"))
def put_limits(body, tenant):
    """Set the tenant's limits; a null field takes the deployment's default."""
    ks = _keys()
    ks.set_limits(_tenant_or_404(tenant), body)
    forget_cached(tenant)
    return limits_view(tenant)
