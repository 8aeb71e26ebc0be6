"""Worker liveness: heartbeats, the work each worker runs, and recovery when a worker is lost.

A Celery worker killed as a whole (SIGKILL, OOM killer on the container,
node loss) leaves its task unacknowledged in Redis, and kombu hands it out
again only after the broker's ``visibility_timeout`` (2 h by default, since
it must exceed the hard time limit). A job or a session pass would stall
that long. So each worker advertises itself (``workers`` zset: name ->
heartbeat expiry, Redis server time) and records what it runs::

    worker:{name}:running  hash   "job:{id}" | "session:{id}" -> Celery task id

Every live worker's heartbeat (one whose own heartbeat had not run out: see
:func:`beat`) looks for workers whose heartbeat ran out more than
``worker_lost_after`` seconds ago. The one that claims such a worker
(``worker:{name}:recovery``, ``SET NX``) re-dispatches its work under new
task ids, and takes it off the zset once nothing of it is left:

- a job still RUNNING on the lost worker goes back to QUEUED (CANCELLED if
  its cancellation was asked for meanwhile) with the new task id as its
  ``dispatch`` (:meth:`workers.store.Store.start_job` counts the attempt
  when a worker picks it up, and runs only the task the record names, so
  the lost worker's own message, restored by the broker after the
  visibility timeout, is dropped);
- a session whose slot the lost task still holds hands the slot to a new
  pass (:meth:`workers.session_store.SessionStore.hand_over_update`), which
  re-tells the questions the lost pass had taken; unless a live worker
  already runs that task again (a cold shutdown gives its message back at
  once), so that no two passes of a session run side by side.

A worker whose heartbeat only stalled (its host alone cut off from Redis, or
paused, for longer than ``worker_heartbeat_ttl + worker_lost_after``) may see
its job run a second time; the first run to finish ends the job with its
result, and the other writes nothing (:meth:`workers.store.Store.save_result`).
Its session pass, should it still come to its end, commits nothing: it no
longer holds the slot (:class:`workers.session_store.PassSuperseded`).
"""

import logging
import time
import uuid

from . import fair, stats
from .config import PREFIX, Settings
from .session_store import UNSENT_PASSES, SessionStore, unsent_pass
from .store import UNSENT
from .submit import send_job, send_pass
from .tenancy import prune_indexes
from .tracking import (  # noqa: F401 - the tracking records, part of this module's interface
    WORKER_NAME_ENV,
    WORKERS,
    current_worker_name,
    new_worker_name,
    recovery_key,
    running_key,
    server_time,
    track,
    untrack,
)

log = logging.getLogger(__name__)

#: Seconds after its creation a job whose first task was not sent (or a session pass whose slot a request took)
#: counts as abandoned by its request (:func:`dispatch_unsent`), by default: longer than gunicorn lets a request run
#: (``service.gunicorn_conf``, 120 s). ``SHOAL_UNSENT_GRACE`` sets it (``Settings.unsent_grace``).
UNSENT_GRACE = Settings.unsent_grace


def beat(store, name):
    """Renew worker ``name``'s heartbeat and recover the work of lost workers.

    Parameters
    ----------
    store : workers.store.Store
    name : str
        This worker's name (:func:`new_worker_name`).

    Returns
    -------
    list of str
        The units re-dispatched by this call (empty almost always).

    Notes
    -----
    Only a worker whose own heartbeat still held when it beat judges others:
    after Redis was unreachable for longer than ``worker_heartbeat_ttl +
    worker_lost_after`` every heartbeat ran out at once, and the first worker
    back would take its peers, as alive as itself, for lost (each running job
    would run twice, each session pass beside another). Such a beat, and a
    new worker's first, only renews the heartbeat; the next one, a third of
    ``worker_heartbeat_ttl`` later, recovers the workers still out.

    One live worker at a time recovers a lost worker (a claim that expires
    after ``worker_lost_after``, at least ``worker_heartbeat_ttl``, should
    that worker die or lose Redis meanwhile). The lost worker leaves the heartbeat set only once all its
    work was re-dispatched: work that could not be (a Redis error meanwhile)
    is tried again by the next beat of a live worker, instead of being left
    to the broker's visibility timeout.
    """
    s = store.settings
    now = server_time(store.r)
    pipe = store.r.pipeline()
    pipe.zscore(WORKERS, name)
    pipe.zadd(WORKERS, {name: now + s.worker_heartbeat_ttl})
    held, _ = pipe.execute()
    if held is None or held <= now:
        return []
    recovered = []
    cutoff, claim_ms = now - s.worker_lost_after, int(1000 * max(s.worker_lost_after, s.worker_heartbeat_ttl, 1))
    for lost in store.r.zrangebyscore(WORKERS, "-inf", cutoff):
        lost = lost.decode()
        if not store.r.set(recovery_key(lost), name, nx=True, px=claim_ms):
            continue  # another live worker is recovering it
        recovered += recover_worker(store, lost)
        store.r.eval(_FORGET_LUA, 3, WORKERS, running_key(lost), recovery_key(lost), lost, repr(cutoff))
    try:
        fair.release(store)  # held jobs whose release a start missed (a worker lost before it released)
        prune_indexes(store.r)  # expired ids leave the listing indexes without waiting for a listing
    except Exception:  # noqa: BLE001 - Redis or the broker away: the next beat tries again
        log.warning("held jobs not released or indexes not pruned", exc_info=True)
    sweep_matrices(store)
    return recovered + dispatch_unsent(store)


def sweep_matrices(store):
    """Remove the matrix files of expired datasets and the files of expired uploads, at most once per
    ``matrix_sweep_interval`` across all workers (claim ``matrices:swept``); returns the keys removed
    (None when another swept lately).

    A sweep that fails (a file system or Redis error) is logged and tried again after the interval.
    """
    interval_ms = int(1000 * max(store.settings.matrix_sweep_interval, 0.001))
    if not store.r.set(f"{PREFIX}matrices:swept", "1", nx=True, px=interval_ms):
        return None
    try:
        return store.collect_matrices() + store.collect_uploads()
    except Exception:  # noqa: BLE001 - the heartbeat must go on
        log.exception("matrix sweep failed")
        return None


def dispatch_unsent(store, grace=None):
    """Send the tasks that the requests which made them died before sending: jobs' and session passes'.

    ``POST /v1/jobs`` writes the job (:meth:`workers.store.Store.create_job`)
    and then sends its task: a gunicorn worker killed in between (a new
    worker's first send also opens the broker connection) left the job QUEUED
    with no task, never to run, never to expire, holding its dataset. So did
    ``POST /v1/sessions`` with a session (INITIALIZING, no first pass), and
    ``POST .../answers`` that took a session's re-clustering slot for a pass
    (:meth:`workers.session_store.SessionStore.record_answers`) with the
    slot, until it expired, and the questions that pass was for. Each is
    listed as unsent in the step that creates it (jobs in
    :data:`workers.store.UNSENT`, passes in
    :data:`workers.session_store.UNSENT_PASSES`) until its task is sent. One
    still listed ``grace`` seconds later is dispatched to a new task, by one
    live worker (claimed in the step that dispatches it:
    :meth:`workers.store.Store.dispatch_unsent`,
    :meth:`workers.session_store.SessionStore.dispatch_unsent`, which hands
    the slot to the new task only if the unsent one never started, so no
    session runs two passes at once). It stays listed until that task is
    sent: a task the broker refused is tried again at the next beat, and one
    whose sweep lost Redis or died before the send is dispatched again
    ``grace`` seconds later.

    Parameters
    ----------
    store : workers.store.Store
    grace : float, seconds, optional
        Default ``store.settings.unsent_grace`` (``SHOAL_UNSENT_GRACE``,
        :data:`UNSENT_GRACE`): longer than gunicorn lets a request run.

    Returns
    -------
    list of str
        ``"job:{id}"`` and ``"session:{id}"`` of the work sent.
    """

    cutoff = time.time() - (store.settings.unsent_grace if grace is None else grace)
    sessions = SessionStore(store)

    def dispatch_job(jid, new):
        return (jid, jid) if store.dispatch_unsent(jid, new, cutoff) else None

    def dispatch_pass(member, new):
        sid = sessions.dispatch_unsent(member, new, cutoff)
        return None if sid is None else (sid, unsent_pass(sid, new))

    return (_send_unsent(store, UNSENT, "job", dispatch_job, send_job, cutoff)
            + _send_unsent(store, UNSENT_PASSES, "session", dispatch_pass, send_pass, cutoff))


def _send_unsent(store, listing, kind, dispatch, send, cutoff):
    """The sweep of :func:`dispatch_unsent` over one list of unsent work (``listing``).

    ``dispatch(member, new_task_id)`` claims a member listed since before
    ``cutoff`` for a new task and returns ``(id, member listed for the new
    task)``, or None: nothing to send.
    ``send(settings, id, new_task_id)`` sends it. Returns the units sent
    (``"{kind}:{id}"``).
    """
    out = []
    for member in store.unsent_since(cutoff, listing=listing):
        new = uuid.uuid4().hex
        claimed = dispatch(member, new)
        if claimed is None:
            continue  # started, ended or gone meanwhile, or another live worker took it
        uid, listed = claimed
        try:
            send(store.settings, uid, new)
        except Exception:  # noqa: BLE001 - the next beat tries again
            store.retry_unsent(listed, listing)
            log.warning("%s %s: unsent task not sent", kind, uid, exc_info=True)
            continue
        store.mark_sent(listed, listing)
        log.warning("%s %s: its request never sent its task; sent as %s", kind, uid, new)
        out.append(f"{kind}:{uid}")
    return out


#: A lost worker (ARGV[1]) leaves the heartbeat set (KEYS[1]) once its running hash (KEYS[2]) is empty
#: and its heartbeat is still out (ARGV[2]: the cutoff); the recovery claim (KEYS[3]) is released.
_FORGET_LUA = """
if redis.call('EXISTS', KEYS[2]) == 0 then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if score and tonumber(score) <= tonumber(ARGV[2]) then redis.call('ZREM', KEYS[1], ARGV[1]) end
end
redis.call('DEL', KEYS[3])
return 1
"""


def recover_worker(store, name):
    """Re-dispatch the jobs and session passes lost worker ``name`` was running.

    Parameters
    ----------
    store : workers.store.Store
    name : str
        The lost worker (its entry in the ``workers`` heartbeat set).

    Returns
    -------
    list of str
        The units re-dispatched (``"job:{id}"``, ``"session:{id}"``; a job whose
        cancellation was asked for is CANCELLED instead).

    Raises
    ------
    redis.RedisError
        If its running hash cannot be read; a unit whose re-dispatch fails is
        logged and left in the hash for the next recovery instead.
    """
    key = running_key(name)
    out = []
    running = {unit.decode(): token.decode() for unit, token in store.r.hgetall(key).items()}
    # the live workers' running hashes, read once: a session pass whose task runs there again is left alone
    live = [running_key(w) for w in store.live_workers()] if any(u.startswith("session:") for u in running) else []
    for unit, token in running.items():
        kind, _, uid = unit.partition(":")
        try:
            done = (_requeue_job(store, uid, name, token) if kind == "job"
                    else _resume_session(store, uid, token, name, live) if kind == "session" else False)
        except Exception:  # noqa: BLE001 - one unit's failure must not keep the others lost
            log.exception("worker %s lost: %s not re-dispatched", name, unit)
            continue
        store.r.hdel(key, unit)
        if done:
            log.warning("worker %s lost: %s taken over", name, unit)
            out.append(unit)
    return out


def _requeue_job(store, jid, name, token):
    rec = store.get_job(jid)
    if rec is None:
        return False
    running_here = rec["state"] == "RUNNING" and rec.get("worker") == name
    unsent = rec["state"] == "QUEUED" and rec.get("worker") is None and rec.get("dispatch") == token
    if not (running_here or unsent):  # unsent: re-dispatched to ``token``, whose sending failed
        return False
    if store.cancel_requested(jid):  # cancelled while its worker was gone: nobody would see the flag
        store.announce_end(store.finish_job(jid, "CANCELLED"))
        return True
    new = uuid.uuid4().hex
    if not store.requeue_lost_job(jid, name, token, new):
        return False

    # If this raises, the lost worker's running hash names ``new`` for the job, and the next
    # recovery of that worker dispatches it again (Store.requeue_lost_job).
    send_job(store.settings, jid, new)
    return True


def _resume_session(store, sid, token, name, live):

    ss = SessionStore(store)
    unit = f"session:{sid}"
    pipe = store.r.pipeline(transaction=False)
    for key in live:
        pipe.hget(key, unit)
    if token.encode() in pipe.execute():
        return False  # the lost task's message came back (a cold shutdown restores it) and runs elsewhere
    new = uuid.uuid4().hex
    # the lost worker's running hash names ``new`` from now on: if the task cannot be sent, the next
    # recovery of that worker finds the slot still ``new``'s and hands it over again
    if not ss.hand_over_update(sid, token, new, record=(running_key(name), unit)):
        return False  # the slot moved on (expired, released, or another pass has it)
    send_pass(store.settings, sid, new)
    stats.session_pass_redispatched(store.r)
    return True
