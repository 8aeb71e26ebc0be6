"""Tenants in Redis: who owns a record, the per-tenant listing indexes, API keys, limits and quotas.

Every dataset, job and session record carries ``owner``: the tenant of the API key that made
it, or None in a deployment without keys (one tenant, as before). Each record is listed in
its owner's index only (:func:`index_key`), so a listing reads no other tenant's ids.

Layout (all keys prefixed ``shoal:``)::

    tenants                        set    every tenant that has stored a record (the sweep prunes their indexes)
    tenant:{t}:{kind}              zset   the tenant's record ids by creation time (kind: datasets, jobs, sessions)
    tenant:{t}:limits              hash   per-tenant overrides of the default limits (JSON values)
    tenant:{t}:active:{kind}       zset   ids counted against a quota (active jobs, open sessions, dataset bytes)
    apikey:{id}                    hash   an API key made through the API: tenant, scopes, prefix, digest, ...
    apikey_digest:{sha256 hex}     str    JSON {id, tenant, scopes, prefix} of the key with that digest
    apikeys                        zset   key ids by creation time

A key is stored as the SHA-256 digest of its text: the text itself is shown once, when made.
"""

import hashlib
import json
import re
import secrets
import time

from .config import PREFIX
from .records import decode_record, new_id, utcnow_iso

#: What a tenant's name may be: it names Redis keys and log fields.
TENANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
SCOPES = ("read", "write", "admin")
TENANTS = f"{PREFIX}tenants"
#: Record kinds with a listing index (the global one, ``shoal:{kind}``, holds the records without owner).
KINDS = ("datasets", "jobs", "sessions")
#: Characters of a made key shown in listings and logs (``shoal_`` and 6 random ones).
PREFIX_CHARS = 12


def index_key(kind, owner):
    """The sorted set listing the records of ``kind`` owned by ``owner``.

    Parameters
    ----------
    kind : {"datasets", "jobs", "sessions"}
    owner : str or None
        None: the records of a deployment without keys (``shoal:{kind}``, as before tenants).

    Returns
    -------
    str
    """
    return f"{PREFIX}{kind}" if owner is None else f"{PREFIX}tenant:{owner}:{kind}"


def index_record(pipe, kind, owner, rid, ts):
    """Queue on ``pipe`` the listing of record ``rid`` (created at Unix time ``ts``) in its owner's index."""
    pipe.zadd(index_key(kind, owner), {rid: ts})
    if owner is not None:
        pipe.sadd(TENANTS, owner)


def all_index_keys(r):
    """Every listing index: the global ones and those of each tenant that stored a record."""
    tenants = sorted(m.decode() for m in r.smembers(TENANTS))
    return [index_key(k, o) for o in [None, *tenants] for k in KINDS]


def owned_by(load, owner, enforce):
    """``load`` restricted to the records of ``owner``: another owner's record reads as None (unknown).

    Parameters
    ----------
    load : callable
        ``load(id)`` -> record dict or None.
    owner : str or None
    enforce : bool
        False (a deployment without keys): ``load`` as it is.
    """
    if not enforce:
        return load

    def load_owned(rid):
        rec = load(rid)
        return rec if rec is not None and rec.get("owner") == owner else None
    return load_owned


def digest(key):
    """SHA-256 hex digest of an API key's text (what is stored and compared)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class KeyStore:
    """API keys made, listed, rotated and revoked through ``/v1/admin/keys``, and per-tenant limits.

    Parameters
    ----------
    r : redis.Redis
    """

    def __init__(self, r):
        self.r = r

    def create(self, tenant, scopes, name=None):
        """Make a key for ``tenant`` with ``scopes``; returns ``(record, key text)`` (the text is not kept)."""
        kid = new_id("key")
        text = "shoal_" + secrets.token_urlsafe(32)
        now = time.time()
        rec = {"id": kid, "tenant": tenant, "scopes": sorted(scopes, key=SCOPES.index), "name": name,
               "prefix": text[:PREFIX_CHARS], "digest": digest(text), "created_at": utcnow_iso(now),
               "created_ts": now, "rotated_at": None}
        pipe = self.r.pipeline()
        pipe.hset(self._key(kid), mapping={k: json.dumps(v) for k, v in rec.items()})
        pipe.set(self._digest_key(rec["digest"]), self._principal(rec))
        pipe.zadd(f"{PREFIX}apikeys", {kid: now})
        pipe.execute()
        return rec, text

    def get(self, kid):
        """The key's record (no text), or None."""
        return decode_record(self.r.hgetall(self._key(kid)))

    def list(self, tenant=None):
        """Every made key, oldest first (of ``tenant`` when given)."""
        ids = [m.decode() for m in self.r.zrange(f"{PREFIX}apikeys", 0, -1)]
        recs = [r for r in (self.get(i) for i in ids) if r is not None]
        return [r for r in recs if tenant is None or r["tenant"] == tenant]

    def lookup(self, key_digest):
        """``{"id", "tenant", "scopes", "prefix"}`` of the key with this digest, or None (unknown or revoked)."""
        raw = self.r.get(self._digest_key(key_digest))
        return json.loads(raw) if raw else None

    def rotate(self, kid, grace_seconds=0):
        """A new text for key ``kid`` (same id, tenant and scopes); the old text works ``grace_seconds`` more.

        Returns
        -------
        (dict, str) or None
            The updated record and the new text; None for an unknown key.
        """
        rec = self.get(kid)
        if rec is None:
            return None
        text = "shoal_" + secrets.token_urlsafe(32)
        old = rec["digest"]
        rec.update(prefix=text[:PREFIX_CHARS], digest=digest(text), rotated_at=utcnow_iso())
        pipe = self.r.pipeline()
        pipe.hset(self._key(kid), mapping={k: json.dumps(v) for k, v in rec.items()})
        pipe.set(self._digest_key(rec["digest"]), self._principal(rec))
        if grace_seconds > 0:
            pipe.expire(self._digest_key(old), int(grace_seconds))
        else:
            pipe.delete(self._digest_key(old))
        pipe.execute()
        return rec, text

    def revoke(self, kid):
        """Delete key ``kid``: its text stops working at once. False if unknown."""
        rec = self.get(kid)
        if rec is None:
            return False
        pipe = self.r.pipeline()
        pipe.delete(self._key(kid), self._digest_key(rec["digest"]))
        pipe.zrem(f"{PREFIX}apikeys", kid)
        pipe.execute()
        return True

    # ---------------------------------------------------------------- limits
    def limits(self, tenant):
        """The tenant's overrides of the default limits (field -> value; empty: the defaults)."""
        return decode_record(self.r.hgetall(f"{PREFIX}tenant:{tenant}:limits")) or {}

    def set_limits(self, tenant, limits):
        """Replace the tenant's overrides by ``limits`` (a None value: the default)."""
        key = f"{PREFIX}tenant:{tenant}:limits"
        pipe = self.r.pipeline()
        pipe.delete(key)
        given = {k: json.dumps(v) for k, v in limits.items() if v is not None}
        if given:
            pipe.hset(key, mapping=given)
        pipe.execute()

    @staticmethod
    def _principal(rec):
        return json.dumps({"id": rec["id"], "tenant": rec["tenant"], "scopes": rec["scopes"],
                           "prefix": rec["prefix"]})

    @staticmethod
    def _key(kid):
        return f"{PREFIX}apikey:{kid}"

    @staticmethod
    def _digest_key(d):
        return f"{PREFIX}apikey_digest:{d}"


def quota_key(tenant, kind):
    """The sorted set of what counts against ``tenant``'s quota ``kind`` (jobs, sessions, bytes)."""
    return f"{PREFIX}tenant:{tenant}:active:{kind}"


def count_against(pipe, tenant, kind, member, weight=1):
    """Queue on ``pipe``: ``member`` counts ``weight`` against ``tenant``'s quota ``kind`` (no tenant: nothing)."""
    if tenant is not None:
        pipe.zadd(quota_key(tenant, kind), {member: weight})


#: Members of a quota set that hold room for a record being made (:func:`hold_quota`).
HOLD = "hold:"
#: Seconds a hold lasts when the request that took it never lets go (its process died).
HOLD_SECONDS = 600


def _hold_key(member):
    return f"{PREFIX}quota-{member}"


def _exists(r, keys):
    pipe = r.pipeline()
    for k in keys:
        pipe.exists(k)
    return pipe.execute()


def hold_quota(r, tenant, kind, adding, limit, still_counts):
    """Check ``tenant``'s quota ``kind`` and hold ``adding`` of it, in one step for all processes.

    Without it two requests could both find room for one more and both make their record. The
    check and the hold run under a Redis lock per tenant and kind (held for milliseconds); the
    hold counts in :func:`quota_used` until :func:`release_quota` (the request's record counts
    by then) or :data:`HOLD_SECONDS` pass.

    Parameters
    ----------
    r : redis.Redis
    tenant, kind : str
    adding : float
        What the request adds (1 job or session; the bytes of a matrix).
    limit : float
        The tenant's quota.
    still_counts : callable
        As for :func:`quota_used`.

    Returns
    -------
    (str or None, float)
        The hold's member (None: no room) and what counted before it.
    """
    with r.lock(f"{PREFIX}tenant:{tenant}:quota-lock:{kind}", timeout=10, blocking_timeout=10):
        used = quota_used(r, tenant, kind, still_counts)
        if used + adding > limit:
            return None, used
        member = HOLD + secrets.token_hex(16)
        pipe = r.pipeline()
        pipe.set(_hold_key(member), 1, ex=HOLD_SECONDS)
        pipe.zadd(quota_key(tenant, kind), {member: adding})
        pipe.execute()
    return member, used


def release_quota(r, tenant, kind, member):
    """Let go of a hold taken by :func:`hold_quota`."""
    pipe = r.pipeline()
    pipe.zrem(quota_key(tenant, kind), member)
    pipe.delete(_hold_key(member))
    pipe.execute()


def quota_used(r, tenant, kind, still_counts):
    """What counts against ``tenant``'s quota ``kind`` now: the sum of the weights of members still counting.

    Members are added when a record is made (:func:`count_against`) and dropped here once
    ``still_counts(member)`` says they no longer count (the job ended, the session closed, the dataset
    expired or was deleted), so no code path that ends a record needs to know about quotas. Holds
    (:func:`hold_quota`) count until they are let go or expire.

    Parameters
    ----------
    r : redis.Redis
    tenant : str
    kind : str
    still_counts : callable
        ``still_counts(list of member ids) -> list of bool`` (one pipeline for all).

    Returns
    -------
    float
    """
    key = quota_key(tenant, kind)
    members = [(m.decode(), w) for m, w in r.zrange(key, 0, -1, withscores=True)]
    if not members:
        return 0.0
    held = [m for m, _ in members if m.startswith(HOLD)]
    recorded = [m for m, _ in members if not m.startswith(HOLD)]
    counts = dict(zip(held, map(bool, _exists(r, [_hold_key(m) for m in held]))))
    counts.update(zip(recorded, still_counts(recorded) if recorded else []))
    keep = [counts[m] for m, _ in members]
    gone = [m for (m, _), k in zip(members, keep) if not k]
    if gone:
        r.zrem(key, *gone)
    return float(sum(w for (_, w), k in zip(members, keep) if k))


#: Record key of each listing kind (what must still exist for an id to stay listed).
_RECORD_KEY = {"datasets": f"{PREFIX}dataset:{{}}", "jobs": f"{PREFIX}job:{{}}", "sessions": f"{PREFIX}session:{{}}"}
PRUNE_LOCK = f"{PREFIX}prune:lock"


def prune_indexes(r, batch=200, every=30):
    """Drop expired ids from the listing indexes: the oldest ``batch`` of each index, at most once per ``every`` s.

    Records expire by TTL, and only a listing dropped their ids from the index: the index sets
    grew with every record ever made until someone listed. A worker's heartbeat calls this
    (:func:`workers.liveness.beat`); one worker at a time does the work (a lock that expires
    after ``every`` seconds). The oldest ids are the ones that expire first.

    Returns
    -------
    int
        Ids dropped (0 when another worker pruned less than ``every`` seconds ago).
    """
    if not r.set(PRUNE_LOCK, b"1", nx=True, ex=every):
        return 0
    dropped = 0
    for key in all_index_keys(r):
        kind = key.rsplit(":", 1)[-1]
        ids = [m.decode() for m in r.zrange(key, 0, batch - 1)]
        if not ids:
            continue
        pipe = r.pipeline()
        for rid in ids:
            pipe.exists(_RECORD_KEY[kind].format(rid))
        gone = [rid for rid, there in zip(ids, pipe.execute()) if not there]
        if gone:
            dropped += r.zrem(key, *gone)
    return dropped
