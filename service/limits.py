"""Rate limits (Flask-Limiter on Redis) and quotas per tenant.

Requests per second, per API key and per client IP: a moving window of ``burst`` requests in
``burst / rate`` seconds, so a key may send ``burst`` requests at once and ``rate`` a second on
average (``SHOAL_RATE_PER_KEY`` 50 with ``SHOAL_RATE_BURST`` 100; per IP ``SHOAL_RATE_PER_IP`` /
``SHOAL_RATE_IP_BURST``). Without API keys the per-key limit counts per IP. Quotas, per
tenant (API keys on): jobs QUEUED or RUNNING (``SHOAL_MAX_ACTIVE_JOBS``), sessions open
(``SHOAL_MAX_OPEN_SESSIONS``), bytes of stored dataset matrices (``SHOAL_MAX_STORED_BYTES``). A
tenant's own values (``PUT /v1/admin/tenants/{tenant}/limits``) replace the defaults.

Over a limit: 429 ``rate_limited`` or ``quota_exceeded`` problem+json with ``Retry-After``;
every limited answer carries ``RateLimit-Policy`` and ``RateLimit`` (IETF
draft-ietf-httpapi-ratelimit-headers: ``"key";q=100;w=2`` and ``"key";r=63;t=1``).
"""

import math
import time

from flask import current_app, g, request
from flask_limiter import ApplicationLimit, Limiter
from flask_limiter.errors import RateLimitExceeded

from workers.session_store import OPEN_STATES
from workers.store import ACTIVE
from workers.tenancy import KeyStore, hold_quota, quota_used, release_quota

from . import auth, get_store
from .errors import ApiError, problem_response

#: Seconds a tenant's limits read from Redis are kept in this process.
_CACHE_SECONDS = 5.0
_cache = {}

#: Quota name -> (config default, what counts, ``Retry-After`` seconds).
QUOTAS = {"max_active_jobs": ("SHOAL_MAX_ACTIVE_JOBS", "jobs", 5),
          "max_open_sessions": ("SHOAL_MAX_OPEN_SESSIONS", "sessions", 30),
          "max_stored_bytes": ("SHOAL_MAX_STORED_BYTES", "bytes", 60)}


def tenant_limits(tenant):
    """The limits in force for ``tenant``: its own where set, else the deployment's defaults.

    Returns
    -------
    dict
        ``requests_per_second``, ``burst`` and the :data:`QUOTAS`.
    """
    cfg = current_app.config
    out = {"requests_per_second": cfg["SHOAL_RATE_PER_KEY"], "burst": cfg["SHOAL_RATE_BURST"],
           **{q: cfg[name] for q, (name, _, _) in QUOTAS.items()}}
    if tenant is None:
        return out
    now = time.monotonic()
    hit = _cache.get(tenant)
    if hit is None or hit[0] < now:
        hit = (now + _CACHE_SECONDS, KeyStore(get_store().r).limits(tenant))
        _cache[tenant] = hit
    out.update({k: v for k, v in hit[1].items() if k in out and v is not None})
    return out


def forget_cached(tenant):
    """Drop this process's copy of ``tenant``'s limits (after a change through the API)."""
    _cache.pop(tenant, None)


def _window(rate, burst):
    """A Flask-Limiter limit string: ``burst`` requests per ``burst / rate`` seconds (at least 1 s)."""
    seconds = max(1, round(burst / rate))
    return f"{burst} per {seconds} second"


def _client_ip():
    return request.remote_addr or "unknown"


def _key_identity():
    p = auth.resolve()
    return f"key:{p.key_id}" if p is not None else f"ip:{_client_ip()}"


def _key_limit():
    p = auth.resolve()
    lim = tenant_limits(p.tenant if p is not None else None)
    return _window(lim["requests_per_second"], lim["burst"])


def _ip_limit():
    cfg = current_app.config
    return _window(cfg["SHOAL_RATE_PER_IP"], cfg["SHOAL_RATE_IP_BURST"])


def _exempt():
    return request.path in auth.OPEN_PATHS or request.path.startswith(auth.OPEN_PREFIXES)


def register(app):
    """Rate-limit every route but the probes and the docs; register right after the request id.

    Parameters
    ----------
    app : flask.Flask
        ``SHOAL_RATE_LIMITS`` false: no rate limit (the quotas still hold).
    """
    app.teardown_request(settle_quota)  # quotas hold with or without rate limits
    if not app.config.get("SHOAL_RATE_LIMITS", True):
        return
    settings = getattr(app.config.get("SHOAL_STORE"), "settings", None)
    if settings is not None:
        url = settings.redis_url
    else:
        from workers.config import Settings

        url = Settings.from_env().redis_url
    limiter = Limiter(
        key_func=_client_ip, storage_uri=url, strategy="moving-window", headers_enabled=False,
        swallow_errors=True,  # Redis away: the request goes on (and meets the store's own 503)
        storage_options={"socket_connect_timeout": 2, "socket_timeout": 2},
        application_limits=[ApplicationLimit(_key_limit, key_function=_key_identity, scope="key"),
                            ApplicationLimit(_ip_limit, key_function=lambda: f"ip:{_client_ip()}", scope="ip")],
        application_limits_exempt_when=_exempt,
    )
    limiter.init_app(app)
    app.extensions["shoal_limiter"] = limiter
    app.after_request(_rate_headers)
    app.register_error_handler(RateLimitExceeded, _too_many)


def _limits_of_request():
    limiter = current_app.extensions.get("shoal_limiter")
    return limiter.current_limits if limiter is not None else []


def _rate_headers(response):
    limits = _limits_of_request()
    if not limits or "RateLimit-Policy" in response.headers:
        return response
    policies, now, tight = [], time.time(), None
    for rl in limits:
        name = "ip" if "ip:" in rl.key else "key"
        window = rl.limit.get_expiry()
        policies.append(f'"{name}";q={rl.limit.amount};w={window}')
        if tight is None or rl.remaining < tight[1]:
            tight = (name, rl.remaining, max(0, math.ceil(rl.reset_at - now)))
    response.headers["RateLimit-Policy"] = ", ".join(policies)
    response.headers["RateLimit"] = f'"{tight[0]}";r={max(tight[1], 0)};t={tight[2]}'
    return response


def _too_many(exc):
    """The 429 of a rate limit: problem+json with ``Retry-After`` (the headers come in :func:`_rate_headers`)."""
    rl = next((r for r in _limits_of_request() if r.breached), None)
    wait = max(1, math.ceil(rl.reset_at - time.time())) if rl is not None else 1
    scope = "this API key" if rl is None or "ip:" not in rl.key else "this client address"
    from .concurrency import delay_refusal

    delay_refusal()  # a client that retries at once waits (a greenlet), instead of spinning the CPU
    return problem_response(429, "rate_limited", f"too many requests from {scope}: at most {exc.limit.limit} "
                            f"(send again in {wait} s)", title="Too many requests",
                            headers={"Retry-After": str(wait)})


# --------------------------------------------------------------------- quotas
def _still_active_jobs(r):
    def check(ids):
        pipe = r.pipeline()
        for jid in ids:
            pipe.hget(f"shoal:job:{jid}", "state")
        return [s is not None and s.decode().strip('"') in ACTIVE for s in pipe.execute()]
    return check


def _still_open_sessions(r):
    def check(ids):
        pipe = r.pipeline()
        for sid in ids:
            pipe.hget(f"shoal:session:{sid}", "state")
        return [s is not None and s.decode().strip('"') in OPEN_STATES for s in pipe.execute()]
    return check


def _still_stored(r):
    def check(ids):
        pipe = r.pipeline()
        for did in ids:
            pipe.exists(f"shoal:dataset:{did}")
        return [bool(e) for e in pipe.execute()]
    return check


_COUNTERS = {"jobs": _still_active_jobs, "sessions": _still_open_sessions, "bytes": _still_stored}


def usage(tenant, kind):
    """What ``tenant`` uses of quota ``kind`` ("jobs", "sessions", "bytes") now."""
    r = get_store().r
    return quota_used(r, tenant, kind, _COUNTERS[kind](r))


def check_quota(quota, adding=1):
    """429 ``quota_exceeded`` when the tenant asking would go past ``quota`` by ``adding`` more.

    Otherwise the room is held (:func:`workers.tenancy.hold_quota`) until the request ends, so
    requests in flight at once, in any process, never take a tenant past its quota together.

    Parameters
    ----------
    quota : {"max_active_jobs", "max_open_sessions", "max_stored_bytes"}
    adding : int
        What the request adds (1 job or session; the bytes of a matrix).

    Raises
    ------
    ApiError
        429 with ``Retry-After`` and the ``RateLimit`` headers naming the quota. Nothing
        without API keys (one tenant: no quota).
    """
    tenant = auth.tenant()
    if tenant is None:
        return
    limit = tenant_limits(tenant)[quota]
    _, kind, wait = QUOTAS[quota]
    r = get_store().r
    member, used = hold_quota(r, tenant, kind, adding, limit, _COUNTERS[kind](r))
    if member is not None:  # room held until the request ends; its record counts by then
        g.setdefault("shoal_quota_holds", []).append((tenant, kind, member))
        return
    what = {"jobs": "jobs queued or running", "sessions": "open sessions", "bytes": "bytes of stored datasets"}[kind]
    raise ApiError(429, "quota_exceeded", f"tenant {tenant!r} has {int(used)} {what}; this request adds "
                   f"{int(adding)} and the quota ({quota}) is {limit}", title="Too many requests",
                   headers={"Retry-After": str(wait), "RateLimit-Policy": f'"{quota}";q={limit}',
                            "RateLimit": f'"{quota}";r={max(int(limit - used), 0)};t={wait}'},
                   quota=quota, limit=limit, used=int(used))


def settle_quota(_exc=None):
    """Let go of the quota holds the request took, once its records count (and at teardown_request).

    Called right after a record is made, so that the hold and the record do not both count
    while the rest of the request runs (a request beside it would be refused for nothing).
    """
    holds = g.pop("shoal_quota_holds", ())
    if holds:
        r = get_store().r
        for tenant, kind, member in holds:
            release_quota(r, tenant, kind, member)


def limits_view(tenant):
    """A tenant's limits in force and its usage (``GET /v1/admin/tenants/{tenant}/limits``)."""
    forget_cached(tenant)
    view = {"tenant": tenant, **tenant_limits(tenant)}
    view.update(active_jobs=int(usage(tenant, "jobs")), open_sessions=int(usage(tenant, "sessions")),
                stored_bytes=int(usage(tenant, "bytes")))
    return view
