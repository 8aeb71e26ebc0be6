"""Fair dispatch of jobs across tenants: one tenant's backlog does not hold back another's job.

Celery's queue is first in, first out: 500 jobs of one tenant ahead of another's single job
made that job wait for all 500. So each tenant has at most ``fair_inflight`` jobs
(``SHOAL_FAIR_INFLIGHT``, 2) sent to the broker and not yet started; its further jobs wait in
its own list in Redis, and whenever a job starts (and at every worker heartbeat) the lists are
served round-robin, one job per tenant per round, while a tenant has room. A job another
tenant submits meets at most ``fair_inflight`` jobs of each other tenant in the queue. Jobs
without owner (a deployment without API keys: one tenant) are sent at once, as before.
``SHOAL_FAIR_INFLIGHT=0``: no holding back (every job's task is sent at once).

Layout (prefixed ``shoal:``)::

    fair:tenants          set    tenants with held jobs
    fair:{t}:inflight     zset   job id -> when its task was sent (until it starts)
    fair:{t}:held         list   job ids waiting for room, oldest first
    fair:cursor           str    round-robin counter (where the next release starts)

A held job is off ``jobs:unsent`` (:func:`workers.liveness.dispatch_unsent` would send it at
once): the list in Redis keeps it. An entry of ``inflight`` older than ``visibility_timeout``
(a task lost without starting) no longer holds its tenant back.
"""

import logging
import time

from .broker import send_job
from .config import PREFIX

log = logging.getLogger(__name__)

TENANTS = f"{PREFIX}fair:tenants"
CURSOR = f"{PREFIX}fair:cursor"
#: The tenant name of records without owner (a deployment without API keys).
NO_TENANT = "-"

_ADMIT_LUA = """
if redis.call('LLEN', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  return 1
end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[4])
return 0
"""

_RELEASE_LUA = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return false end
local jid = redis.call('LPOP', KEYS[2])
if not jid then
  redis.call('SREM', KEYS[3], ARGV[4])
  return false
end
redis.call('ZADD', KEYS[1], ARGV[1], jid)
return jid
"""


def _keys(tenant):
    return f"{PREFIX}fair:{tenant}:inflight", f"{PREFIX}fair:{tenant}:held"


def admit(store, rec):
    """Whether job ``rec``'s task may be sent now (True: it counts as in flight), else it is held.

    Parameters
    ----------
    store : workers.store.Store
    rec : dict
        The job record just created (``id``, ``owner``).

    Returns
    -------
    bool
    """
    k = store.settings.fair_inflight
    tenant = rec.get("owner")
    if k <= 0 or tenant is None:  # one tenant (no API keys): the queue's own order is fair
        return True
    inflight, held = _keys(tenant)
    return bool(store.r.eval(_ADMIT_LUA, 3, inflight, held, TENANTS, rec["id"], time.time(), k, tenant))


def taken(store, job_id):
    """A worker took job ``job_id``'s task: its tenant has room again; release held jobs.

    Never raises (logged): the job runs whatever becomes of the fairness bookkeeping.
    """
    if store.settings.fair_inflight <= 0:
        return
    try:
        raw = store.r.hget(f"{PREFIX}job:{job_id}", "owner")
        tenant = (raw.decode().strip('"') if raw and raw != b"null" else None) or NO_TENANT
        store.r.zrem(_keys(tenant)[0], job_id)
        release(store)
    except Exception:  # noqa: BLE001
        log.warning("job %s: fair dispatch bookkeeping failed", job_id, exc_info=True)


def release(store, send=None):
    """Send held jobs round-robin across tenants while each has room; returns the job ids sent.

    Parameters
    ----------
    store : workers.store.Store
    send : callable, optional
        ``send(settings, job_id, task_id)``; default :func:`workers.broker.send_job`.
    """
    s = store.settings
    if s.fair_inflight <= 0:
        return []
    send = send_job if send is None else send
    tenants = sorted(m.decode() for m in store.r.smembers(TENANTS))
    if not tenants:
        return []
    start = store.r.incr(CURSOR) % len(tenants)
    order = tenants[start:] + tenants[:start]
    sent, active = [], list(order)
    while active:
        still = []
        for tenant in active:
            inflight, held = _keys(tenant)
            now = time.time()
            jid = store.r.eval(_RELEASE_LUA, 3, inflight, held, TENANTS, now, s.fair_inflight,
                               now - s.visibility_timeout, tenant)
            if jid is None:
                continue
            jid = jid.decode()
            state, dispatch = store.r.hmget(f"{PREFIX}job:{jid}", ["state", "dispatch"])
            if state is None or state.decode().strip('"') != "QUEUED":  # cancelled or deleted while held
                store.r.zrem(inflight, jid)
                still.append(tenant)
                continue
            try:
                send(s, jid, dispatch.decode().strip('"'))
            except Exception:  # noqa: BLE001 - broker away: back to the head of the list, tried next time
                store.r.zrem(inflight, jid)
                store.r.lpush(held, jid)
                store.r.sadd(TENANTS, tenant)
                log.warning("job %s: held task not sent", jid, exc_info=True)
                return sent
            sent.append(jid)
            still.append(tenant)
        active = still
    return sent
