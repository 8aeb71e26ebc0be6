"""The Celery application of the worker: ``celery -A workers.celery_app worker -Q shoal.long,shoal.short``.

Its configuration is :func:`workers.broker.make_celery`'s; this module adds what a worker process
does around its tasks (name itself, beat, recover lost workers: :mod:`workers.liveness`). The
tasks import :data:`app` from here; nothing below them does.
"""

import logging
import os
import threading

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from celery import signals  # noqa: E402

from .broker import make_celery, tolerate_closed_broker_transport  # noqa: E402,F401 - this module's interface
from .liveness import beat, current_worker_name, new_worker_name  # noqa: E402
from .store import Store  # noqa: E402

log = logging.getLogger(__name__)


app = make_celery()


@signals.worker_init.connect
def _name_worker(sender=None, **kwargs):
    """Name this worker before its pool processes fork, so that they inherit the name
    (:func:`workers.liveness.current_worker_name`) and record their work under it."""
    new_worker_name()


@signals.worker_ready.connect
def _start_heartbeat(sender=None, **kwargs):
    """Advertise this worker in Redis (``/readyz``) and recover the work of lost workers.

    Beats every third of ``worker_heartbeat_ttl`` (:func:`workers.liveness.beat`).
    """
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
