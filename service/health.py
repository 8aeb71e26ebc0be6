"""Liveness and readiness."""

from flask_smorest import Blueprint

from schemas.health import HealthSchema, ReadySchema

from . import get_store
from .errors import problem_docs, problem_response

blp = Blueprint("health", __name__, description="Liveness and readiness probes")


@blp.route("/healthz")
@blp.doc(security=[])  # open even when the deployment sets API keys (service.auth)
@blp.response(200, HealthSchema)
def healthz():
    """Liveness: the web process answers."""
    return {"status": "ok"}


@blp.route("/readyz")
@blp.doc(security=[])
@blp.response(200, ReadySchema)
@problem_docs(blp, (503, "Redis or every worker unreachable"))
def readyz():
    """Readiness: Redis answers and at least one worker has a live heartbeat."""
    store = get_store()
    if not store.ping():
        return problem_response(503, "unavailable", "Redis is not reachable", headers={"Retry-After": "5"})
    workers = store.live_workers()
    if not workers:
        return problem_response(503, "unavailable", "no worker is running", headers={"Retry-After": "5"})
    return {"status": "ready", "redis": "ok", "workers": len(workers)}
