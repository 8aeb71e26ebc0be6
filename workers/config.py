"""Worker and store settings from the environment (``SHOAL_*``), never at import time."""

import os
import tempfile
from dataclasses import dataclass, field

#: Prefix of every Redis key Shoal writes (Celery's own keys excepted).
PREFIX = "shoal:"


def _env_int(name, default):
    return int(os.environ.get(name, default))


def _env_float(name, default):
    return float(os.environ.get(name, default))


@dataclass(frozen=True)
class Settings:
    """All tunables in one place; ``Settings.from_env()`` reads them.

    Time limits are in seconds. ``visibility_timeout`` must exceed
    ``hard_time_limit``, otherwise Redis redelivers long tasks while they run.
    ``unacked_mutex_expire`` bounds how long the lock of kombu's unacked-restore
    sweep outlives a worker killed while sweeping (kombu's default, 300 s,
    would hold back every redelivery that long); a sweep restores at most ten
    messages, milliseconds of work. ``worker_heartbeat_ttl`` is how long a
    worker's heartbeat holds (it beats three times in that span);
    ``worker_lost_after`` how long after it ran out the worker counts as lost
    and a live worker re-dispatches its jobs and session passes
    (:mod:`workers.liveness`), instead of the broker redelivering them only
    after ``visibility_timeout``. ``unsent_grace`` is how long after a request
    wrote a job or took a session's re-clustering slot a live worker sends the
    task that request never sent (:func:`workers.liveness.dispatch_unsent`):
    keep it longer than gunicorn lets a request run (120 s), or a slow request's
    task may be sent twice (the second one runs nothing, at a cost).
    ``fair_inflight`` is how many jobs of one tenant may wait in the broker's
    queue (:mod:`workers.fair`); 0 sends every job at once.
    ``data_dir`` is the directory of the dataset matrices (:mod:`workers.matrix_files`), the
    same directory for the API and every worker (each may reach it by its own path);
    ``matrix_sweep_interval`` how often one live worker removes the files of expired
    datasets (:meth:`workers.dataset_store.DatasetStoreMixin.collect_matrices`) and of
    resumable uploads not finished within ``upload_ttl`` seconds (:mod:`workers.upload_store`).
    """

    redis_url: str = "redis://127.0.0.1:6379/0"
    soft_time_limit: int = 3300
    hard_time_limit: int = 3600
    visibility_timeout: int = 7200
    unacked_restore_interval: int = 5
    unacked_mutex_expire: int = 30
    max_attempts: int = 3
    worker_heartbeat_ttl: float = 15.0
    worker_lost_after: float = 30.0
    unsent_grace: float = 180.0
    job_ttl: int = 7 * 24 * 3600
    dataset_ttl: int = 30 * 24 * 3600
    progress_interval: float = 1.0
    data_dir: str = os.path.join(tempfile.gettempdir(), "shoal-data")
    matrix_sweep_interval: float = 60.0
    upload_ttl: int = 24 * 3600
    webhook_secret: str = ""
    integration_key: str = ""  # Fernet key of stored platform tokens (workers.integrations)
    webhook_max_retries: int = 5
    callback_allow_private: bool = False
    fair_inflight: int = 2
    queues: dict = field(default_factory=lambda: {"long": "shoal.long", "short": "shoal.short"})

    @classmethod
    def from_env(cls):
        s = cls(
            redis_url=os.environ.get("REDIS_URL", cls.redis_url),
            soft_time_limit=_env_int("SHOAL_SOFT_TIME_LIMIT", cls.soft_time_limit),
            hard_time_limit=_env_int("SHOAL_HARD_TIME_LIMIT", cls.hard_time_limit),
            visibility_timeout=_env_int("SHOAL_VISIBILITY_TIMEOUT", cls.visibility_timeout),
            unacked_restore_interval=_env_int("SHOAL_UNACKED_RESTORE_INTERVAL", cls.unacked_restore_interval),
            unacked_mutex_expire=_env_int("SHOAL_UNACKED_MUTEX_EXPIRE", cls.unacked_mutex_expire),
            max_attempts=_env_int("SHOAL_MAX_ATTEMPTS", cls.max_attempts),
            worker_heartbeat_ttl=_env_float("SHOAL_WORKER_HEARTBEAT_TTL", cls.worker_heartbeat_ttl),
            worker_lost_after=_env_float("SHOAL_WORKER_LOST_AFTER", cls.worker_lost_after),
            unsent_grace=_env_float("SHOAL_UNSENT_GRACE", cls.unsent_grace),
            job_ttl=_env_int("SHOAL_JOB_TTL", cls.job_ttl),
            dataset_ttl=_env_int("SHOAL_DATASET_TTL", cls.dataset_ttl),
            progress_interval=_env_float("SHOAL_PROGRESS_INTERVAL", cls.progress_interval),
            fair_inflight=_env_int("SHOAL_FAIR_INFLIGHT", cls.fair_inflight),
            data_dir=os.environ.get("SHOAL_DATA_DIR") or cls.data_dir,
            upload_ttl=_env_int("SHOAL_UPLOAD_TTL", cls.upload_ttl),
            matrix_sweep_interval=_env_float("SHOAL_MATRIX_SWEEP_INTERVAL", cls.matrix_sweep_interval),
            webhook_secret=os.environ.get("SHOAL_WEBHOOK_SECRET", ""),
            integration_key=os.environ.get("SHOAL_INTEGRATION_KEY", ""),
            callback_allow_private=os.environ.get("SHOAL_CALLBACK_ALLOW_PRIVATE", "").strip().lower()
            in ("1", "true", "yes"),
        )
        if not s.soft_time_limit < s.hard_time_limit < s.visibility_timeout:
            raise ValueError(
                "need SHOAL_SOFT_TIME_LIMIT < SHOAL_HARD_TIME_LIMIT < SHOAL_VISIBILITY_TIMEOUT, got "
                f"{s.soft_time_limit}, {s.hard_time_limit}, {s.visibility_timeout}"
            )
        if s.worker_heartbeat_ttl <= 0 or s.worker_lost_after < 0:
            raise ValueError("need SHOAL_WORKER_HEARTBEAT_TTL > 0 and SHOAL_WORKER_LOST_AFTER >= 0, got "
                             f"{s.worker_heartbeat_ttl}, {s.worker_lost_after}")
        if s.webhook_secret:
            from .webhook_signing import signing_key

            signing_key(s.webhook_secret)  # a malformed whsec_ secret stops the start, not every delivery
        if s.integration_key:
            from .fernet_keys import check_integration_key

            check_integration_key(s.integration_key)
        if s.unsent_grace <= 0:
            raise ValueError(f"need SHOAL_UNSENT_GRACE > 0, got {s.unsent_grace}")
        if s.unacked_mutex_expire < 1:
            raise ValueError(f"need SHOAL_UNACKED_MUTEX_EXPIRE >= 1, got {s.unacked_mutex_expire}")
        return s
