"""The Celery application: ``celery -A workers.celery_app worker -Q shoal.long,shoal.short``.

Reliability settings (``shared/api.md``, Workers): JSON only, late acks with
re-queue on worker loss (the job record counts attempts), prefetch 1, soft
and hard time limits below the broker's visibility timeout, and a short
unacked-restore sweep whose lock expires soon, so a killed worker's task comes
back soon even when the worker died holding that lock.
"""

import logging
import os
import threading

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from celery import Celery, signals  # noqa: E402

from .config import Settings  # noqa: E402

log = logging.getLogger(__name__)


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
app = make_celery()


@signals.worker_init.connect
def _name_worker(sender=None, **kwargs):
    """Name this worker before its pool processes fork, so that they inherit the name
    (:func:`workers.liveness.current_worker_name`) and record their work under it."""
    from .liveness import new_worker_name

    new_worker_name()


@signals.worker_ready.connect
def _start_heartbeat(sender=None, **kwargs):
    """Advertise this worker in Redis (``/readyz``) and recover the work of lost workers.

    Beats every third of ``worker_heartbeat_ttl`` (:func:`workers.liveness.beat`).
    """
    from .liveness import beat, current_worker_name, new_worker_name
    from .store import Store

    store = Store.from_settings(app.shoal_settings)
    name = current_worker_name() or new_worker_name()
    stop = threading.Event()
    interval = max(app.shoal_settings.worker_heartbeat_ttl / 3, 0.2)

    def run():
        while not stop.is_set():
            try:
                beat(store, name)
            except Exception:  # noqa: BLE001 - Redis briefly down: try again next beat
                log.warning("worker heartbeat failed", exc_info=True)
            stop.wait(interval)

    threading.Thread(target=run, name="shoal-heartbeat", daemon=True).start()
    app._shoal_heartbeat_stop = stop


@signals.worker_shutdown.connect
def _stop_heartbeat(sender=None, **kwargs):
    stop = getattr(app, "_shoal_heartbeat_stop", None)
    if stop is not None:
        stop.set()
