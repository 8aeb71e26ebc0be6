"""Service configuration: defaults, ``SHOAL_*`` environment overrides, testing config."""

import os


def _int(name, default):
    return int(os.environ.get(name, default))


def _flag(name):
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


class Config:
    """Flask + flask-smorest settings and Shoal's request limits."""

    API_TITLE = "Shoal constrained clustering API"
    API_VERSION = "1.3.1"  # CHANGELOG.md
    OPENAPI_VERSION = "3.0.3"
    OPENAPI_URL_PREFIX = "/"
    OPENAPI_JSON_PATH = "openapi.json"
    OPENAPI_SWAGGER_UI_PATH = "/docs"
    # service.docs.ASSETS_URL, relative to the page (/docs): right also behind a proxy that adds a path prefix
    OPENAPI_SWAGGER_UI_URL = "docs/assets/"
    API_SPEC_OPTIONS = {
        "info": {
            "description": (
                "Constrained clustering as a service: upload a dataset, submit a job with must-link / "
                "cannot-link pairs or relative triplets, poll it (202 + Location + Retry-After), fetch "
                "labels, metrics and learned affinities. Errors are RFC 9457 problem+json."
            )
        }
    }
    MAX_CONTENT_LENGTH = _int("SHOAL_MAX_BYTES", 64 * 1024 * 1024)
    # Bytes of one binary dataset body or resumable upload (service.uploads), apart from the JSON cap above.
    SHOAL_MAX_UPLOAD_BYTES = _int("SHOAL_MAX_UPLOAD_BYTES", 4 * 1024 ** 3)
    SHOAL_MAX_ROWS = _int("SHOAL_MAX_ROWS", 100_000)
    SHOAL_MAX_FEATURES = _int("SHOAL_MAX_FEATURES", 10_000)
    SHOAL_MAX_CELLS = _int("SHOAL_MAX_CELLS", 10_000_000)
    SHOAL_MAX_CONSTRAINTS = _int("SHOAL_MAX_CONSTRAINTS", 200_000)
    # Bytes one constraint may take in a job or check body (service.strict_json): longer bodies are a 413 unread.
    SHOAL_BYTES_PER_CONSTRAINT = _int("SHOAL_BYTES_PER_CONSTRAINT", 64)
    SHOAL_RETRY_AFTER = _int("SHOAL_RETRY_AFTER", 1)
    # Seconds an Idempotency-Key keeps the response of the creating POST it was sent with.
    SHOAL_IDEMPOTENCY_TTL = _int("SHOAL_IDEMPOTENCY_TTL", 24 * 3600)
    # callback_url may name a loopback / private / link-local host (tests, or a
    # deployment whose clients share its network); off: refused with a 422.
    SHOAL_CALLBACK_ALLOW_PRIVATE = _flag("SHOAL_CALLBACK_ALLOW_PRIVATE")
    # API keys (service.auth): comma-separated, and / or a file with one per line; none: no key needed.
    SHOAL_API_KEYS = os.environ.get("SHOAL_API_KEYS", "")
    SHOAL_API_KEYS_FILE = os.environ.get("SHOAL_API_KEYS_FILE", "")
    # Signs annotator links (service.annotate); empty: a random secret kept in Redis, shared by every process.
    SHOAL_ANNOTATOR_SECRET = os.environ.get("SHOAL_ANNOTATOR_SECRET", "")
    # Seconds the annotator page holds the last answer before sending it, so that it can be undone.
    SHOAL_ANNOTATE_UNDO_SECONDS = _int("SHOAL_ANNOTATE_UNDO_SECONDS", 5)
    # Admin keys (scopes read, write, admin; service.keys): comma-separated, ``tenant:key`` or a bare key.
    SHOAL_ADMIN_KEYS = os.environ.get("SHOAL_ADMIN_KEYS", "")
    # Rate limits (service.limits): requests/s and burst per API key (per address without keys) and per address.
    SHOAL_RATE_LIMITS = os.environ.get("SHOAL_RATE_LIMITS", "on").strip().lower() not in ("0", "off", "false", "no")
    SHOAL_RATE_PER_KEY = _int("SHOAL_RATE_PER_KEY", 50)
    SHOAL_RATE_BURST = _int("SHOAL_RATE_BURST", 100)
    SHOAL_RATE_PER_IP = _int("SHOAL_RATE_PER_IP", 200)
    SHOAL_RATE_IP_BURST = _int("SHOAL_RATE_IP_BURST", 400)
    # Quotas per tenant (API keys on; PUT /v1/admin/tenants/{tenant}/limits overrides them).
    SHOAL_MAX_ACTIVE_JOBS = _int("SHOAL_MAX_ACTIVE_JOBS", 100)
    SHOAL_MAX_OPEN_SESSIONS = _int("SHOAL_MAX_OPEN_SESSIONS", 20)
    SHOAL_MAX_STORED_BYTES = _int("SHOAL_MAX_STORED_BYTES", 2 * 1024 ** 3)
    TESTING = False


class TestingConfig(Config):
    TESTING = True
