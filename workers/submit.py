"""What the service calls to enqueue work: create the job record, send the task by name.

The service never imports ``workers.tasks`` (or any estimator): tasks are
sent by name through a producer-only Celery app.
"""

import logging

from . import fair
from .broker import (QueueError, enqueue_job_event, send_integration_push, send_job,  # noqa: F401 - this module's
                     send_pass)  # interface
from .records import problem

log = logging.getLogger(__name__)


def submit_job(store, **job):
    """Create a QUEUED job and enqueue ``shoal.run_job``; returns the record.

    If the broker cannot be reached the job is marked FAILED and the Redis
    error propagates (the service answers 503). A tenant with ``fair_inflight``
    jobs in the queue already has this one held (:mod:`workers.fair`): its task
    is sent when one of them starts. Should the caller die
    between the two steps, a live worker sends the task later
    (:func:`workers.liveness.dispatch_unsent`).
    """
    rec = store.create_job(**job)
    try:
        if not fair.admit(store, rec):  # its tenant has jobs enough in the queue: held (workers.fair)
            store.mark_sent(rec["id"])
            return rec
        # the first dispatch's task id is the job id (the record's ``dispatch``, workers.liveness)
        send_job(store.settings, rec["id"], rec["dispatch"])
    except Exception:
        store.finish_job(rec["id"], "FAILED", error=problem(
            "queue_unavailable", "Queue unavailable", 503, "the job could not be enqueued"))
        raise
    try:
        store.mark_sent(rec["id"])
    except Exception:  # noqa: BLE001 - queued all the same: the sweep re-dispatches it, its first task is dropped
        log.warning("job %s: sent, but not marked sent", rec["id"], exc_info=True)
    return rec


def start_session(session_store, session_id):
    """Enqueue a new session's first re-clustering pass: task ``session_id``, which holds the slot.

    :meth:`workers.session_store.SessionStore.create` took the slot for it and
    listed it as unsent: should the caller die before the task is sent, a
    live worker sends it (:func:`workers.liveness.dispatch_unsent`).
    If the broker cannot be reached the session is marked FAILED with a
    ``queue_unavailable`` error, as :func:`submit_job` does for a job, and the
    error propagates (the service answers 503): left INITIALIZING, a session
    whose creation the client saw fail held its dataset (``DELETE`` answered
    409) until it expired.

    Parameters
    ----------
    session_store : workers.session_store.SessionStore
    session_id : str
        A session just created (its first pass's task not sent yet).

    Raises
    ------
    QueueError
        The broker is unreachable.
    """
    try:
        send_session_update(session_store, session_id, session_id)
    except Exception:
        session_store.update(session_id, state="FAILED", error=problem(
            "queue_unavailable", "Queue unavailable", 503, "the session's first pass could not be enqueued"))
        raise


def send_session_update(session_store, session_id, token):
    """Enqueue the re-clustering task ``token``, which holds the session's slot, and note it sent.

    Parameters
    ----------
    session_store : workers.session_store.SessionStore
    session_id : str
    token : str
        The task id the slot holds (``create`` or ``record_answers`` took it
        and listed the pass as unsent: it leaves that list once sent).

    Raises
    ------
    QueueError
        The broker is unreachable: the slot is freed first (the next answers
        that find questions waiting queue their pass) and the error propagates.
    """
    try:
        send_pass(session_store.settings, session_id, token)
    except Exception:
        session_store.finish_update(session_id, token)
        raise
    try:
        session_store.mark_sent(session_id, token)
    except Exception:  # noqa: BLE001 - queued all the same: the sweep hands the slot on only if it never started
        log.warning("session %s: pass %s sent, but not marked sent", session_id, token, exc_info=True)
