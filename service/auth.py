"""API keys and tenants: ``Authorization: Bearer <key>`` on every route but the probes and the docs.

Off unless keys are configured (one tenant, every record visible: a deployment behind a
gateway that authenticates); said so in the log at start. Keys come from

- ``SHOAL_API_KEYS`` (comma-separated) and ``SHOAL_API_KEYS_FILE`` (one per line, ``#``
  comments; the way a container secret is mounted): scopes ``read`` and ``write``;
- ``SHOAL_ADMIN_KEYS`` (comma-separated): scopes ``read``, ``write`` and ``admin``;
- keys made through ``/v1/admin/keys`` (:mod:`service.keys`), stored as SHA-256 digests in Redis.

An entry ``tenant:key`` names the key's tenant; a bare key is a tenant of its own
(``key-`` and 12 hex digits of its digest). Every dataset, job and session is owned by the
tenant of the key that made it, and another tenant's key gets 404 for it in every route
(:func:`require_owned`; existence is not told). A missing or unknown key is a 401 problem with
``WWW-Authenticate: Bearer``; a key without the scope a route needs is a 403
``insufficient_scope``. Keys are compared as SHA-256 digests, the configured ones in constant time.
"""

import hashlib
import hmac
import logging
import re
from dataclasses import dataclass

from flask import current_app, g, request

from workers.tenancy import TENANT_NAME, KeyStore, digest

from .errors import ApiError

log = logging.getLogger(__name__)

#: Routes open without a key: the probes an orchestrator calls, the API's description, and the static files
#: of /docs and of the result pages (the pages themselves, /ui/jobs/... and /ui/sessions/..., need a key).
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.yaml", "/openapi.json"})
OPEN_PREFIXES = ("/docs", "/ui/static/", "/annotate/", "/v1/integrations/")  # /ui/static/: the pages' public
# scripts and styles; /annotate/<token>: the token is the credential (service.annotate); /v1/integrations/:
# platforms' webhooks, with their own secret (service.integrations)
#: Shorter keys are refused at start-up: they could be guessed.
MIN_KEY_LENGTH = 16
ADMIN_PREFIX = "/v1/admin/"

#: OpenAPI security scheme name (see :func:`document`).
SCHEME = "apiKey"


@dataclass(frozen=True)
class Principal:
    """Who is asking: the key's tenant, scopes, an id for per-key state and a prefix for logs."""

    tenant: str
    scopes: frozenset
    key_id: str
    prefix: str


def _entries(keys, keys_file, name="SHOAL_API_KEYS"):
    found = [k.strip() for k in (keys or "").split(",") if k.strip()]
    if keys and not found:
        raise ValueError(f"{name} is set ({keys!r}) but holds no API key")
    if keys_file:
        try:
            with open(keys_file, encoding="utf-8") as fh:
                in_file = [ln.strip() for ln in fh if ln.strip() and not ln.strip().startswith("#")]
        except OSError as exc:
            raise ValueError(f"SHOAL_API_KEYS_FILE {keys_file!r} cannot be read: {exc}") from None
        if not in_file:
            raise ValueError(f"SHOAL_API_KEYS_FILE {keys_file!r} holds no API key")
        found += in_file
    return found


def split_entry(entry):
    """``(tenant, key)`` of a configured entry: ``tenant:key``, or a bare key (its own tenant).

    The part before the first ``:`` names the tenant when it is a valid tenant name
    (:data:`workers.tenancy.TENANT_NAME`) and the rest is a key of at least
    :data:`MIN_KEY_LENGTH` characters; otherwise the whole entry is the key.
    """
    tenant, sep, key = entry.partition(":")
    if sep and TENANT_NAME.fullmatch(tenant) and len(key) >= MIN_KEY_LENGTH:
        return tenant, key
    return "key-" + digest(entry)[:12], entry


def load_keys(keys="", keys_file=""):
    """The configured keys (``tenant:`` parts removed).

    Parameters
    ----------
    keys : str
        Comma-separated entries (``SHOAL_API_KEYS``); blanks around each are dropped.
    keys_file : str
        Path of a file with one entry per line (``SHOAL_API_KEYS_FILE``);
        empty lines and lines starting with ``#`` are skipped. Empty: none.

    Returns
    -------
    list of str
        Empty when authentication is off.

    Raises
    ------
    ValueError
        If the file cannot be read, or a key is shorter than
        :data:`MIN_KEY_LENGTH` or holds whitespace (the process does not
        start with a weak or mangled key), or if keys are asked for but none
        is given: a file that names none (a secret mounted but not filled
        in) or ``keys`` holding only separators would otherwise start the
        service with every route open.
    """
    return [key for _, key in load_entries(keys, keys_file)]


def load_entries(keys="", keys_file="", name="SHOAL_API_KEYS"):
    """``(tenant, key)`` of every configured entry (see :func:`load_keys`, :func:`split_entry`)."""
    out = [split_entry(e) for e in _entries(keys, keys_file, name)]
    for i, (_, k) in enumerate(out):
        if len(k) < MIN_KEY_LENGTH or any(c.isspace() for c in k):
            raise ValueError(f"API key {i + 1} must be at least {MIN_KEY_LENGTH} characters without "
                             "whitespace")
    return out


def _config_principals(cfg):
    """digest bytes -> Principal of every configured key."""
    out = {}
    plain = load_entries(cfg.get("SHOAL_API_KEYS", ""), cfg.get("SHOAL_API_KEYS_FILE", ""))
    admin = load_entries(cfg.get("SHOAL_ADMIN_KEYS", ""), "", "SHOAL_ADMIN_KEYS")
    for entries, scopes in ((plain, {"read", "write"}), (admin, {"read", "write", "admin"})):
        for tenant, key in entries:
            d = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
            out[d] = Principal(tenant, frozenset(scopes), d.hex()[:16], "cfg:" + d.hex()[:8])
    return out


def enabled():
    """Whether this deployment has API keys (then every record is owned by a tenant)."""
    return bool(current_app.config.get("SHOAL_TENANCY"))


def tenant():
    """The tenant asking (None without API keys): the ``owner`` of what the request makes."""
    p = g.get("principal")
    return p.tenant if p is not None else None


def require_owned(rec, what, rid, pointer=None):
    """``rec``, or a 404 when it is None or owned by another tenant than the one asking.

    The one check every route runs on a record it names (datasets, jobs, sessions, and
    whatever is added later: give the record an ``owner``, the tenant from :func:`tenant`,
    when it is made). Another tenant's record is answered exactly as an unknown id, so
    a key cannot tell that it exists.

    Parameters
    ----------
    rec : dict or None
        The record as read (None: unknown or expired).
    what : str
        What the record is ("dataset", "job", "session"), for the problem's detail.
    rid : str
        The id the client gave.
    pointer : str, optional
        JSON pointer of the id in the request body, for ``errors``.

    Returns
    -------
    dict
        ``rec``.

    Raises
    ------
    ApiError
        404 ``not_found``.
    """
    if rec is None or (enabled() and rec.get("owner") != tenant()):
        raise ApiError(404, "not_found", f"{what} {rid!r} does not exist or has expired",
                       errors={pointer: [f"unknown {what}"]} if pointer else None)
    return rec


def listing_scope():
    """``{"owner", "enforce"}``: the keyword arguments the store's listings take (:mod:`workers.tenancy`)."""
    return {"owner": tenant(), "enforce": enabled()}


_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _needed_scope():
    if request.path.startswith(ADMIN_PREFIX):
        return "admin"
    return "read" if request.method in _READ_METHODS else "write"


def register(app):
    """Require a key on protected routes when keys are configured (``SHOAL_API_KEYS``,
    ``SHOAL_API_KEYS_FILE``, ``SHOAL_ADMIN_KEYS``).

    Register right after the request id, before anything reads the body. A request with a valid key
    carries ``g.principal`` (:class:`Principal`) and ``g.api_client`` (an id of the key, for
    per-client scopes: :mod:`service.idempotency`, the rate limits).

    Sets ``app.config["SHOAL_TENANCY"]``: whether any key is configured (else every route is open).

    Raises
    ------
    ValueError
        A weak, mangled or unreadable key configuration (:func:`load_entries`): the app does not start.
    """
    principals = _config_principals(app.config)
    app.config["SHOAL_TENANCY"] = bool(principals)
    if not principals:
        log.warning("no API keys configured (SHOAL_API_KEYS, SHOAL_API_KEYS_FILE, SHOAL_ADMIN_KEYS): every "
                    "route is open and all records belong to one tenant")
        return
    log.info("API keys on: %d configured key(s) of %d tenant(s)", len(principals),
             len({p.tenant for p in principals.values()}))
    app.extensions["shoal_keys"] = list(principals.items())

    def check():
        if request.path in OPEN_PATHS or request.path.startswith(OPEN_PREFIXES):
            return
        principal = resolve()
        if principal is not None:
            needed = _needed_scope()
            if needed not in principal.scopes:
                raise ApiError(403, "insufficient_scope", f"this route needs the {needed!r} scope; "
                               f"the key has {', '.join(sorted(principal.scopes))}",
                               headers={"WWW-Authenticate": f'Bearer realm="shoal", error="insufficient_scope", '
                                                            f'scope="{needed}"'})
            g.principal = principal
            g.api_client = principal.key_id  # who is asking, for per-client scopes (service.idempotency)
            return
        detail = ("the API key is not valid" if _bearer() else
                  "this route needs an API key: send Authorization: Bearer <key>")
        raise ApiError(401, "unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="shoal"'})

    app.before_request(check)


def _bearer():
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def resolve():
    """The :class:`Principal` of the request's bearer key, or None (no keys configured, no key, unknown key).

    Looked up once per request (the rate limits ask before the check does).
    """
    if "shoal_principal" in g:
        return g.shoal_principal
    configured = current_app.extensions.get("shoal_keys")
    token = _bearer() if configured else None
    found = None
    if token is not None:
        given = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        for d, p in configured:  # every configured key compared: no early exit
            if hmac.compare_digest(given, d):
                found = p
        if found is None and _looks_made(token):
            from . import get_store

            made = KeyStore(get_store().r).lookup(given.hex())
            if made is not None:
                found = Principal(made["tenant"], frozenset(made["scopes"]), made["id"], made["prefix"])
    g.shoal_principal = found
    return found


_MADE = re.compile(r"shoal_[A-Za-z0-9_-]{20,100}")


def _looks_made(token):
    """Whether ``token`` has the form of a key :class:`workers.tenancy.KeyStore` makes (else no Redis look-up)."""
    return _MADE.fullmatch(token) is not None


def document(api, required):
    """Describe the scheme in the OpenAPI document, and require it where the deployment configures keys.

    Parameters
    ----------
    api : flask_smorest.Api
    required : bool
        Whether this app has keys (:func:`register`): then every operation but the probes needs the
        bearer key (a lock in Swagger UI); without keys the scheme stays described and nothing needs it.
    """
    api.spec.components.security_scheme(SCHEME, {
        "type": "http", "scheme": "bearer",
        "description": "An API key, when the deployment sets SHOAL_API_KEYS, SHOAL_API_KEYS_FILE or "
                       "SHOAL_ADMIN_KEYS (otherwise no key is needed). Each key belongs to a tenant and sees "
                       "only that tenant's datasets, jobs and sessions. /healthz, /readyz, /openapi.yaml, "
                       "/openapi.json and /docs are always open."})
    if required:
        api.spec.options["security"] = [{SCHEME: []}]
