"""Which worker runs what, in Redis: worker names, the ``workers`` heartbeat zset's key and the
``worker:{name}:running`` hashes (:mod:`workers.liveness` reads them to recover a lost worker's work).

The records layer: the stores write these in the same transaction as the job or session record,
so nothing here imports upward.
"""

import os
import socket
import uuid

from .config import PREFIX

#: Environment variable naming the worker process that owns this process's
#: tasks (set in the worker's main process, inherited by its pool processes).
WORKER_NAME_ENV = "SHOAL_WORKER_NAME"

WORKERS = f"{PREFIX}workers"

def running_key(name):
    """The hash of the work worker ``name`` runs (unit -> task id)."""
    return f"{PREFIX}worker:{name}:running"


def recovery_key(name):
    """The claim of the live worker recovering lost worker ``name`` (one at a time)."""
    return f"{PREFIX}worker:{name}:recovery"


def new_worker_name():
    """A name for this worker process, ``host:pid:random``, exported to its pool processes.

    The random part makes each start a new worker: a container restarted
    after its worker was killed keeps its host name, and its worker is pid 1
    again, so ``host:pid`` alone would renew the lost worker's heartbeat and
    its work would never be recovered.
    """
    name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    os.environ[WORKER_NAME_ENV] = name
    return name


def current_worker_name():
    """The name of the worker running this task, or None outside a worker (nothing is tracked then)."""
    return os.environ.get(WORKER_NAME_ENV) or None


def server_time(client):
    """Redis server time in seconds: one clock for every host's heartbeat."""
    sec, usec = client.time()
    return sec + usec / 1e6


def track(pipe, name, unit, token):
    """Record (or queue the write recording) that worker ``name`` runs ``unit`` as task ``token``.

    Parameters
    ----------
    pipe : redis.Redis or redis.client.Pipeline
        A pipeline when the transaction that starts the work should carry
        the write, so the record and the tracking change together.
    name : str or None
        :func:`current_worker_name`; None tracks nothing.
    unit : str
        ``"job:{id}"`` or ``"session:{id}"``.
    token : str
        The Celery task id running it.
    """
    if name:
        pipe.hset(running_key(name), unit, token)


#: HDEL KEYS[1] ARGV[1] if its value is ARGV[2].
_UNTRACK_LUA = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""


def untrack(pipe, name, unit, token=None):
    """Forget (or queue forgetting) that worker ``name`` runs ``unit``.

    ``pipe`` as for :func:`track`; ``name`` None: nothing. With ``token``,
    only if the unit is still recorded as that task's: a session's next pass
    may already run on another process of the same worker.
    """
    if not name:
        return
    if token is None:
        pipe.hdel(running_key(name), unit)
    else:
        pipe.eval(_UNTRACK_LUA, 1, running_key(name), unit, token)
