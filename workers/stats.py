"""Service-wide counters in Redis, for ``GET /metrics`` (Prometheus).

Every web and worker process adds to two Redis hashes in the same
transaction that writes the record being counted (answers: in the script
that records them, ``workers.session_scripts.ANSWERS_LUA``), so the counts
are exact across gunicorn and Celery processes and survive their restarts:

    shoal:stats:jobs       submitted:{method}, finished:{method}:{state},
                           run_seconds_sum:{method}, run_seconds_count:{method},
                           redispatched:{method}
    shoal:stats:sessions   created:{question_type}, answers:{outcome},
                           passes:{state}, pass_seconds_sum, pass_seconds_count,
                           passes_redispatched

Field parts never contain ":" (method names, states, outcomes and question
types are fixed words). The queue gauges are read from Celery's Redis
transport at scrape time.
"""

from .config import PREFIX

JOBS = f"{PREFIX}stats:jobs"
SESSIONS = f"{PREFIX}stats:sessions"
#: Celery's Redis transport keeps priority levels 3, 6 and 9 of queue q in lists "q\x06\x16{p}".
_PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")


def job_submitted(pipe, method):
    pipe.hincrby(JOBS, f"submitted:{method}", 1)


def job_finished(pipe, record, state, now):
    """Count a job reaching terminal ``state``, and its run time when it had started.

    Parameters
    ----------
    pipe : redis pipeline
        The transaction of the terminal transition.
    record : dict
        The job before the transition: ``method`` and, once started, ``started_ts`` (Unix s).
    state : {"SUCCEEDED", "FAILED", "CANCELLED"}
    now : float
        Unix seconds of the transition; run time = ``now - started_ts``.
    """
    method = record["method"]
    pipe.hincrby(JOBS, f"finished:{method}:{state}", 1)
    if record.get("started_ts"):
        pipe.hincrbyfloat(JOBS, f"run_seconds_sum:{method}", max(0.0, now - float(record["started_ts"])))
        pipe.hincrby(JOBS, f"run_seconds_count:{method}", 1)


def job_redispatched(pipe, method):
    """Count a job queued again because its worker was lost (:mod:`workers.liveness`)."""
    pipe.hincrby(JOBS, f"redispatched:{method}", 1)


def session_pass_redispatched(pipe):
    """Count a session pass handed to a new task because its worker was lost."""
    pipe.hincrby(SESSIONS, "passes_redispatched", 1)


def session_created(pipe, question_type):
    pipe.hincrby(SESSIONS, f"created:{question_type}", 1)


def session_pass(pipe, state, seconds):
    """Count one re-clustering pass that left the session in ``state`` and took ``seconds`` (wall time, s)."""
    pipe.hincrby(SESSIONS, f"passes:{state}", 1)
    pipe.hincrbyfloat(SESSIONS, "pass_seconds_sum", float(seconds))
    pipe.hincrby(SESSIONS, "pass_seconds_count", 1)


def read(r, queues):
    """Everything ``GET /metrics`` shows, in one round trip.

    Parameters
    ----------
    r : redis.Redis
    queues : dict of str to str
        Role -> Celery queue name (``Settings.queues``).

    Returns
    -------
    dict
        ``jobs`` and ``sessions``: field -> number (the hashes above);
        ``queued``: role -> messages waiting; ``unacked``: messages
        delivered to a worker and not yet acknowledged (tasks running).
    """
    pipe = r.pipeline(transaction=False)
    pipe.hgetall(JOBS)
    pipe.hgetall(SESSIONS)
    roles = sorted(queues)
    for role in roles:
        for suffix in _PRIORITY_SUFFIXES:
            pipe.llen(queues[role] + suffix)
    pipe.hlen("unacked")
    out = pipe.execute()
    jobs, sessions, lengths, unacked = out[0], out[1], out[2:-1], out[-1]
    k = len(_PRIORITY_SUFFIXES)
    return {
        "jobs": {f.decode(): float(v) for f, v in jobs.items()},
        "sessions": {f.decode(): float(v) for f, v in sessions.items()},
        "queued": {role: int(sum(lengths[i * k:(i + 1) * k])) for i, role in enumerate(roles)},
        "unacked": int(unacked),
    }
