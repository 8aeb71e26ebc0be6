"""Celery tasks of the connectors: send the next batch after each re-clustering pass."""

import logging

from ..celery_app import app
from . import IntegrationError, IntegrationStore

log = logging.getLogger(__name__)

PUSH_TASK = "shoal.integration_push"


@app.task(name=PUSH_TASK, bind=True, max_retries=5, acks_late=True)
def integration_push(self, sid):
    """Send session ``sid``'s open questions not sent yet to each of its integrations.

    A platform that refuses or cannot be reached is retried (5 s doubling, 5
    times); the questions are sent again after the next pass anyway.
    """
    from ..tasks import get_store
    from .label_studio import push_batch

    store = get_store()
    failed = None
    for integ in IntegrationStore(store).of_session(sid):
        try:
            n = push_batch(store, sid, integ)
            log.info("session %s: %d task(s) sent to integration %s", sid, n, integ["id"])
        except IntegrationError as exc:
            log.warning("session %s: integration %s: %s", sid, integ["id"], exc)
            failed = exc
    if failed is not None:
        raise self.retry(exc=failed, countdown=min(2 ** self.request.retries * 5, 120))


def after_pass(ss, sid):
    """Queue :func:`integration_push` for a session that has integrations (never raises)."""
    try:
        if ss.r.hlen(f"{ss._key(sid)}:integrations"):
            integration_push.delay(sid)
    except Exception:  # noqa: BLE001 - a lost push is redone after the next pass
        log.exception("session %s: integration push not queued", sid)
