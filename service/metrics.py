"""``GET /metrics``: Prometheus text exposition of the service-wide counters.

Read from Redis at every scrape (:mod:`workers.stats`), so any gunicorn
process answers for the whole deployment, web and workers together, and a
restart loses nothing. The text format comes from ``prometheus_client``.
"""

from collections import defaultdict

from flask import Response
from flask_smorest import Blueprint
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, SummaryMetricFamily

from workers import stats
from workers.store import StoreError

from . import get_store

blp = Blueprint("metrics", __name__, description="Prometheus metrics")

_TEXT = {"text/plain": {"schema": {"type": "string"}}}


class _RedisCollector:
    """One scrape: the counters of :mod:`workers.stats` as metric families."""

    def __init__(self, store):
        self.store = store

    def collect(self):
        up = GaugeMetricFamily("shoal_redis_up", "1 when Redis answered this scrape, else 0")
        try:
            data = stats.read(self.store.r, self.store.settings.queues)
            workers = len(self.store.live_workers())
        except StoreError:
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _job_families(data["jobs"])
        yield from _session_families(data["sessions"])
        queued = GaugeMetricFamily("shoal_queue_messages", "Celery messages waiting in a queue", labels=["queue"])
        for role, n in sorted(data["queued"].items()):
            queued.add_metric([self.store.settings.queues[role]], n)
        yield queued
        unacked = GaugeMetricFamily("shoal_tasks_unacked",
                                    "Celery messages delivered to a worker and not acknowledged (tasks running)")
        unacked.add_metric([], data["unacked"])
        yield unacked
        live = GaugeMetricFamily("shoal_workers", "Workers with a live heartbeat")
        live.add_metric([], workers)
        yield live


def _fields(counts, kind):
    """``{rest: value}`` for the hash fields ``kind:rest``."""
    return {f.split(":", 1)[1]: v for f, v in counts.items() if f.split(":", 1)[0] == kind}


def _job_families(jobs):
    submitted = CounterMetricFamily("shoal_jobs_submitted", "Jobs created", labels=["method"])
    finished = CounterMetricFamily("shoal_jobs_finished", "Jobs that reached a terminal state",
                                   labels=["method", "state"])
    unfinished = GaugeMetricFamily("shoal_jobs_unfinished", "Jobs QUEUED or RUNNING", labels=["method"])
    run = SummaryMetricFamily("shoal_job_run_seconds", "Run time of finished jobs that started, seconds",
                              labels=["method"])
    done = defaultdict(float)
    for key, v in sorted(_fields(jobs, "finished").items()):
        method, state = key.split(":", 1)
        finished.add_metric([method, state], v)
        done[method] += v
    for method, v in sorted(_fields(jobs, "submitted").items()):
        submitted.add_metric([method], v)
        unfinished.add_metric([method], max(0.0, v - done[method]))
    redispatched = CounterMetricFamily("shoal_jobs_redispatched", "Jobs queued again because their worker was lost",
                                       labels=["method"])
    for method, v in sorted(_fields(jobs, "redispatched").items()):
        redispatched.add_metric([method], v)
    sums = _fields(jobs, "run_seconds_sum")
    for method, n in sorted(_fields(jobs, "run_seconds_count").items()):
        run.add_metric([method], count_value=n, sum_value=sums.get(method, 0.0))
    return submitted, finished, unfinished, run, redispatched


def _session_families(sessions):
    created = CounterMetricFamily("shoal_sessions_created", "Active-clustering sessions opened",
                                  labels=["question_type"])
    for kind, v in sorted(_fields(sessions, "created").items()):
        created.add_metric([kind], v)
    answers = CounterMetricFamily("shoal_session_answers", "Answers posted to sessions, by outcome",
                                  labels=["outcome"])
    for outcome, v in sorted(_fields(sessions, "answers").items()):
        answers.add_metric([outcome], v)
    passes = CounterMetricFamily("shoal_session_passes", "Session re-clustering passes, by the state they left",
                                 labels=["state"])
    for state, v in sorted(_fields(sessions, "passes").items()):
        passes.add_metric([state], v)
    seconds = SummaryMetricFamily("shoal_session_pass_seconds", "Duration of session re-clustering passes, seconds")
    seconds.add_metric([], count_value=sessions.get("pass_seconds_count", 0.0),
                       sum_value=sessions.get("pass_seconds_sum", 0.0))
    lost = CounterMetricFamily("shoal_session_passes_redispatched",
                               "Session passes handed to a new task because their worker was lost")
    lost.add_metric([], sessions.get("passes_redispatched", 0.0))
    return created, answers, passes, seconds, lost


@blp.route("/metrics")
@blp.doc(responses={"200": {"description": "Prometheus text exposition format", "content": _TEXT}})
def metrics():
    """Service-wide counters for Prometheus.

    Jobs by method and state, job run time, sessions, answers by outcome,
    session passes and their duration, jobs and passes queued again after
    their worker was lost, queue depth, running tasks, live workers (metric
    names in docs/operations.md, "Metrics"). Counts survive process
    restarts (they live in Redis) and cover every web and worker process.
    When Redis does not answer, only ``shoal_redis_up 0`` is returned (still
    200, so the scrape records the outage).
    """
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_RedisCollector(get_store()))
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
