"""Settings read from the environment: defaults, overrides and refusals."""

import pytest

from workers.celery_app import make_celery
from workers.config import Settings


def test_restore_lock_expiry_reaches_the_broker_options(monkeypatch):
    monkeypatch.setenv("SHOAL_UNACKED_MUTEX_EXPIRE", "7")
    app = make_celery(Settings.from_env())
    assert app.conf.broker_transport_options["unacked_mutex_expire"] == 7
    assert Settings().unacked_mutex_expire < 300  # kombu's default held redelivery back five minutes


@pytest.mark.parametrize("env, field", [
    ({"SHOAL_UNACKED_MUTEX_EXPIRE": "0"}, "SHOAL_UNACKED_MUTEX_EXPIRE"),
    ({"SHOAL_HARD_TIME_LIMIT": "8000"}, "SHOAL_HARD_TIME_LIMIT"),
    ({"SHOAL_WORKER_HEARTBEAT_TTL": "0"}, "SHOAL_WORKER_HEARTBEAT_TTL"),
    ({"SHOAL_WORKER_LOST_AFTER": "-1"}, "SHOAL_WORKER_LOST_AFTER"),
    ({"SHOAL_UNSENT_GRACE": "0"}, "SHOAL_UNSENT_GRACE"),
])
def test_inconsistent_settings_are_refused_by_name(monkeypatch, env, field):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError, match=field):
        Settings.from_env()


def test_worker_liveness_settings_are_read(monkeypatch):
    monkeypatch.setenv("SHOAL_WORKER_HEARTBEAT_TTL", "2.5")
    monkeypatch.setenv("SHOAL_WORKER_LOST_AFTER", "4")
    monkeypatch.setenv("SHOAL_UNSENT_GRACE", "6")
    s = Settings.from_env()
    assert (s.worker_heartbeat_ttl, s.worker_lost_after, s.unsent_grace) == (2.5, 4.0, 6.0)
    from service import gunicorn_conf

    assert Settings().unsent_grace > gunicorn_conf.timeout  # the longest a request runs
    assert Settings().worker_heartbeat_ttl + Settings().worker_lost_after < Settings().visibility_timeout / 10
