"""Optional API keys: ``Authorization: Bearer <key>`` on every route but the probes and the docs.

Off unless keys are configured, for a deployment behind a gateway that
authenticates; set ``SHOAL_API_KEYS`` (comma-separated) and / or
``SHOAL_API_KEYS_FILE`` (one key per line, ``#`` comments; the way a
container secret is mounted). Any configured key opens every protected
route, ``/metrics`` included (Prometheus sends it with its
``authorization`` setting). A missing or unknown key is a 401 problem with
``WWW-Authenticate: Bearer``; keys are compared as SHA-256 digests in
constant time, so the answer's timing tells nothing about a key.
"""

import hashlib
import hmac

from flask import g, request

from .errors import ApiError

#: Routes open without a key: the probes an orchestrator calls, and the API's description.
OPEN_PATHS = frozenset({"/healthz", "/readyz", "/openapi.yaml", "/openapi.json"})
OPEN_PREFIXES = ("/docs", "/v1/integrations/")  # platforms' webhooks: their own secret (service.integrations)
#: Shorter keys are refused at start-up: they could be guessed.
MIN_KEY_LENGTH = 16

#: OpenAPI security scheme name (see :func:`document`).
SCHEME = "apiKey"


def load_keys(keys="", keys_file=""):
    """The configured keys.

    Parameters
    ----------
    keys : str
        Comma-separated keys (``SHOAL_API_KEYS``); blanks around each are dropped.
    keys_file : str
        Path of a file with one key per line (``SHOAL_API_KEYS_FILE``);
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
    found = [k.strip() for k in (keys or "").split(",") if k.strip()]
    if keys and not found:
        raise ValueError(f"SHOAL_API_KEYS is set ({keys!r}) but holds no API key")
    if keys_file:
        try:
            with open(keys_file, encoding="utf-8") as fh:
                in_file = [ln.strip() for ln in fh if ln.strip() and not ln.strip().startswith("#")]
        except OSError as exc:
            raise ValueError(f"SHOAL_API_KEYS_FILE {keys_file!r} cannot be read: {exc}") from None
        if not in_file:
            raise ValueError(f"SHOAL_API_KEYS_FILE {keys_file!r} holds no API key")
        found += in_file
    for i, k in enumerate(found):
        if len(k) < MIN_KEY_LENGTH or any(c.isspace() for c in k):
            raise ValueError(f"API key {i + 1} must be at least {MIN_KEY_LENGTH} characters without "
                             "whitespace")
    return found


def _digest(key):
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def register(app):
    """Require a key on protected routes when ``SHOAL_API_KEYS`` / ``SHOAL_API_KEYS_FILE`` name any.

    Register right after the request id, before anything reads the body. A request with a valid key
    carries ``g.api_client`` (16 hex digits of the key's digest) for per-client scopes
    (:mod:`service.idempotency`).

    Parameters
    ----------
    app : flask.Flask
        Its config's ``SHOAL_API_KEYS`` and ``SHOAL_API_KEYS_FILE`` are read (:func:`load_keys`).

    Raises
    ------
    ValueError
        A weak, mangled or unreadable key configuration (:func:`load_keys`): the app does not start.
    """
    keys = load_keys(app.config.get("SHOAL_API_KEYS", ""), app.config.get("SHOAL_API_KEYS_FILE", ""))
    if not keys:
        return
    digests = [_digest(k) for k in keys]

    def check():
        if request.path in OPEN_PATHS or request.path.startswith(OPEN_PREFIXES):
            return
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            given = _digest(token)
            if sum(hmac.compare_digest(given, d) for d in digests):  # every key compared: no early exit
                g.api_client = given.hex()[:16]  # who is asking, for per-client scopes (service.idempotency)
                return
            detail = "the API key is not valid"
        else:
            detail = "this route needs an API key: send Authorization: Bearer <key>"
        raise ApiError(401, "unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="shoal"'})

    app.before_request(check)


def document(api):
    """Describe the scheme in the OpenAPI document: every operation accepts a bearer key, and needs
    one when the deployment configures keys (the probes and docs never do)."""
    api.spec.components.security_scheme(SCHEME, {
        "type": "http", "scheme": "bearer",
        "description": "An API key, when the deployment sets SHOAL_API_KEYS or SHOAL_API_KEYS_FILE "
                       "(otherwise no key is needed). /healthz, /readyz, /openapi.yaml, /openapi.json and "
                       "/docs are always open."})
    api.spec.options["security"] = [{SCHEME: []}, {}]
