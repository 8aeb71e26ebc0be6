"""What the service calls to enqueue work: create the job record, send the task by name.

The service never imports ``workers.tasks`` (or any estimator): tasks are
sent by name through a producer-only Celery app.
"""

import logging

from kombu.exceptions import OperationalError

from .celery_app import make_celery

#: Broker failures (Redis down while enqueueing), for the service's 503 handler.
QueueError = OperationalError

log = logging.getLogger(__name__)

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


def cancel_job(store, job_id):
    """Cancel a job (:meth:`Store.request_cancel`); returns its record or None.

    A job cancelled while QUEUED never starts, so no worker sends its
    ``job.cancelled`` event: it is enqueued here (``shoal.deliver_webhook``,
    by name) when the job has a ``callback_url``. The job is cancelled even if
    the broker cannot take the event (logged).
    """
    rec, ended = store.request_cancel(job_id)
    if ended and rec.get("callback_url"):
        try:
            _app(store.settings).send_task("shoal.deliver_webhook", args=[job_id, rec["callback_url"]])
        except Exception:  # noqa: BLE001 - the cancellation stands; only the event is lost
            log.warning("job %s: cancelled, but its job.cancelled event could not be enqueued", job_id,
                        exc_info=True)
    return rec


def submit_session_update(session_store, session_id):
    """Enqueue a re-clustering of a session unless one is running (then it
    is marked pending and the running task does one more pass)."""
    if session_store.request_update(session_id):
        try:
            _app(session_store.settings).send_task("shoal.session_update", args=[session_id])
        except Exception:
            session_store.finish_update(session_id)
            raise
