"""The broker side of the Celery app, below the records: its configuration (:func:`make_celery`) and a
producer-only app that sends tasks by name, so that what enqueues work (the service, the stores'
job events, :mod:`workers.submit`) never imports the tasks or the worker's signal handlers
(:mod:`workers.celery_app`).

Reliability settings (``shared/api.md``, Workers): JSON only, late acks with
re-queue on worker loss (the job record counts attempts), prefetch 1, soft
and hard time limits below the broker's visibility timeout, and a short
unacked-restore sweep whose lock expires soon, so a killed worker's task comes
back soon even when the worker died holding that lock.
"""

import logging
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from celery import Celery  # noqa: E402
from kombu.exceptions import OperationalError  # noqa: E402

from .config import Settings  # noqa: E402

#: Broker failures (Redis down while enqueueing), for the service's 503 handler.
QueueError = OperationalError

log = logging.getLogger(__name__)

_producer = None


def make_celery(settings=None):
    """Build a configured Celery app (no tasks imported; see ``include``)."""
    s = settings or Settings.from_env()
    app = Celery("shoal", broker=s.redis_url, include=["workers.tasks", "workers.session_tasks",
                                                      "workers.integrations.tasks"])
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        result_backend=None,
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_soft_time_limit=s.soft_time_limit,
        task_time_limit=s.hard_time_limit,
        task_default_queue=s.queues["long"],
        task_routes={
            "shoal.run_job": {"queue": s.queues["long"]},
            "shoal.deliver_webhook": {"queue": s.queues["short"]},
            "shoal.deliver_session_webhook": {"queue": s.queues["short"]},
            "shoal.session_update": {"queue": s.queues["short"]},
            "shoal.integration_push": {"queue": s.queues["short"]},
        },
        broker_transport_options={
            "visibility_timeout": s.visibility_timeout,
            "unacked_restore_interval": s.unacked_restore_interval,
            "unacked_restore_throttle": 1,
            "unacked_mutex_expire": s.unacked_mutex_expire,
        },
        broker_connection_retry_on_startup=True,
        worker_send_task_events=False,
        worker_hijack_root_logger=False,
    )
    app.shoal_settings = s
    return app


def tolerate_closed_broker_transport():
    """Make kombu's Redis channels treat a transport already closed as a lost connection.

    On a connection loss Celery's consumer collects the broker connection
    (closing its transport: the transport's ``client`` becomes None) and then
    closes it; a channel closed only then gives back its unacknowledged
    messages, rebuilding a connection pool from the transport's client, and
    raised ``AttributeError: 'NoneType' object has no attribute 'hostname'``.
    That is no connection error, so instead of reconnecting the worker
    stopped ("Unrecoverable error"): with two pool processes (the image's
    ``--concurrency 2``) every Redis restart while a task ran left the
    deployment without that worker. Raised as ``redis.ConnectionError``, it is
    what kombu ignores on such a close: the messages stay unacknowledged in
    Redis (their task finishes; the broker's sweep gives back those it did
    not, after ``visibility_timeout``) and the consumer reconnects. Seen with
    kombu 5.7 (``Channel._connparams``); other versions are left alone if
    they lack it. Idempotent.
    """
    import redis
    from kombu.transport import redis as kombu_redis

    original = getattr(kombu_redis.Channel, "_connparams", None)
    if original is None or getattr(original, "shoal_tolerant", False):
        return

    def _connparams(self, *args, **kwargs):
        if getattr(self.connection, "client", None) is None:
            raise redis.exceptions.ConnectionError("the broker connection was closed")
        return original(self, *args, **kwargs)

    _connparams.shoal_tolerant = True
    kombu_redis.Channel._connparams = _connparams


tolerate_closed_broker_transport()


def producer(settings):
    """The producer-only Celery app for ``settings`` (built once per settings)."""
    global _producer
    if _producer is None or _producer.shoal_settings != settings:
        _producer = make_celery(settings)
    return _producer


def enqueue_job_event(settings, job_id, callback_url, event):
    """Queue ``shoal.deliver_webhook`` (by name) for a job's ``callback_url``.

    Used by :meth:`Store.announce_end` for jobs that end without a worker.

    Parameters
    ----------
    settings : workers.config.Settings
        Where the broker is.
    job_id : str
    callback_url : str
        The job's checked ``callback_url``.
    event : dict
        The event to send (:func:`workers.records.job_event`).

    Raises
    ------
    Nothing: a broker failure is logged, not raised; the job's end stands,
    only its event is lost (polling stays the contract).
    """
    try:
        producer(settings).send_task("shoal.deliver_webhook", args=[job_id, callback_url, event])
    except Exception:  # noqa: BLE001 - see above
        log.warning("job %s: ended, but its event could not be enqueued", job_id, exc_info=True)


def send_job(settings, job_id, task_id):
    """Enqueue ``shoal.run_job`` for job ``job_id`` as Celery task ``task_id`` (the record's ``dispatch``).

    Parameters
    ----------
    settings : workers.config.Settings
        Where the broker is.
    job_id, task_id : str

    Raises
    ------
    QueueError
        The broker is unreachable (the caller decides what the record becomes).
    """
    producer(settings).send_task("shoal.run_job", args=[job_id], task_id=task_id)


def send_pass(settings, session_id, task_id):
    """Enqueue ``shoal.session_update`` for session ``session_id`` as task ``task_id``, which holds its slot.

    Parameters
    ----------
    settings : workers.config.Settings
        Where the broker is.
    session_id, task_id : str

    Raises
    ------
    QueueError
        The broker is unreachable (the caller decides what becomes of the slot).
    """
    producer(settings).send_task("shoal.session_update", args=[session_id], task_id=task_id)


def send_integration_push(settings, session_id):
    """Enqueue ``shoal.integration_push`` for session ``session_id``: its platform connectors get the
    next batch of questions (:mod:`workers.integrations.tasks`).

    Raises
    ------
    QueueError
        The broker is unreachable.
    """
    producer(settings).send_task("shoal.integration_push", args=[session_id])
