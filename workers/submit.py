"""What the service calls to enqueue work: create the job record, send the task by name.

The service never imports ``workers.tasks`` (or any estimator): tasks are
sent by name through a producer-only Celery app.
"""

import uuid

from kombu.exceptions import OperationalError

from .celery_app import make_celery

#: Broker failures (Redis down while enqueueing), for the service's 503 handler.
QueueError = OperationalError

_producer = None


def _app(settings):
    global _producer
    if _producer is None or _producer.shoal_settings != settings:
        _producer = make_celery(settings)
    return _producer


def submit_job(store, **job):
    """Create a QUEUED job and enqueue ``shoal.run_job``; returns the record.

    If the broker cannot be reached the job is marked FAILED and the Redis
    error propagates (the service answers 503).
    """
    rec = store.create_job(**job)
    try:
        _app(store.settings).send_task("shoal.run_job", args=[rec["id"]])
    except Exception:
        from .records import problem

        store.finish_job(rec["id"], "FAILED", error=problem(
            "queue_unavailable", "Queue unavailable", 503, "the job could not be enqueued"))
        raise
    return rec


def submit_session_update(session_store, session_id):
    """Enqueue a re-clustering of a session unless one is running or queued
    (then it is marked pending and the task holding the slot enqueues one
    more pass). The task's id is the slot's token
    (:meth:`workers.session_store.SessionStore.request_update`)."""
    token = uuid.uuid4().hex
    if session_store.request_update(session_id, token):
        try:
            _app(session_store.settings).send_task("shoal.session_update", args=[session_id], task_id=token)
        except Exception:
            session_store.finish_update(session_id, token)
            raise
