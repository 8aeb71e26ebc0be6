"""Fixtures: a real redis-server on loopback, real Celery workers and gunicorn.

Started once per session with the same :class:`scripts.stack.Stack` that
``./run.sh`` uses. The worker-loss test starts its own stack with a short
visibility timeout so redelivery is observable within seconds.
"""

import os

import pytest

from scripts.stack import Stack, wait_ready

# Settings for every process of the test stack (and this one). Limits leave room
# for numba's first compilation on a loaded 2-core machine.
TEST_ENV = {
    "SHOAL_SOFT_TIME_LIMIT": "120",
    "SHOAL_HARD_TIME_LIMIT": "150",
    "SHOAL_VISIBILITY_TIMEOUT": "180",
    "SHOAL_UNACKED_RESTORE_INTERVAL": "1",
    "SHOAL_MAX_ATTEMPTS": "3",
    "SHOAL_PROGRESS_INTERVAL": "0.2",
    "SHOAL_WEBHOOK_SECRET": "whsec_c2hvYWwtdGVzdC13ZWJob29rLWtleS0zMi1ieXRlcyE=",  # Standard Webhooks form
    "SHOAL_INTEGRATION_KEY": "Tz6DeHOM0wfym0zHGR47yVqEzBdNf7F-qEyQcFtCi9c=",  # platform tokens (Fernet)
    "SHOAL_MAX_ROWS": "5000",
    "SHOAL_CALLBACK_ALLOW_PRIVATE": "1",  # the webhook test listens on 127.0.0.1
    # rate limits far above what a test sends (tests/service/test_tenants.py tries the defaults on an app of its own)
    "SHOAL_RATE_LIMITS": "on",
    "SHOAL_RATE_PER_KEY": "2000", "SHOAL_RATE_BURST": "4000", "SHOAL_RATE_PER_IP": "2000", "SHOAL_RATE_IP_BURST": "4000",
}
# Apps the tests make in this process (service.config reads it at import) have no rate limit unless they ask
# for one (tests/service/test_limits.py): their requests all come from one address, many in a second.
os.environ.setdefault("SHOAL_RATE_LIMITS", "off")


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """Redis only; workers and the web server start on demand."""
    TEST_ENV["SHOAL_DATA_DIR"] = str(tmp_path_factory.mktemp("data"))  # matrices of every process
    st = Stack(env=TEST_ENV, log_dir=tmp_path_factory.mktemp("stack"))
    st.start_redis()
    os.environ.update(TEST_ENV)
    os.environ["REDIS_URL"] = st.redis_url
    yield st
    st.stop()


@pytest.fixture(scope="session")
def live(stack):
    """A worker and gunicorn on top of the session's Redis; yields the base URL."""
    stack.start_worker(concurrency=1)
    base = stack.start_web(workers=2)
    wait_ready(base, timeout=90)
    return base


@pytest.fixture(scope="session")
def store(stack):
    """A store on Redis database 1: no worker consumes its queue, so jobs the
    service tests submit stay QUEUED however the test modules are ordered."""
    from dataclasses import replace

    from workers.config import Settings
    from workers.store import Store

    settings = Settings.from_env()
    return Store.from_settings(replace(settings, redis_url=settings.redis_url.rsplit("/", 1)[0] + "/1"))


@pytest.fixture()
def app(store):
    from service import create_app

    return create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_MAX_ROWS": 5000, "SHOAL_RATE_LIMITS": False})


@pytest.fixture()
def client(app):
    return app.test_client()


@pytest.fixture()
def blobs_dataset(client):
    """A 60 x 2 dataset of three separated blobs with labels and item ids."""
    import numpy as np
    from sklearn.datasets import make_blobs

    X, y = make_blobs(60, centers=[[0, 0], [8, 8], [-8, 8]], cluster_std=0.6, random_state=1)
    body = {"name": "blobs", "data": X.tolist(), "labels": y.tolist(),
            "item_ids": [f"item-{i}" for i in range(len(y))]}
    r = client.post("/v1/datasets", json=body)
    assert r.status_code == 201, r.json
    return r.json["id"], X, np.asarray(y)


@pytest.fixture()
def dcrc_job(client, store, blobs_dataset):
    """A SUCCEEDED DCRC job with its stored model, on the 60 x 2 blobs: (job id, the fitted DCRC)."""
    import numpy as np

    from workers import registry

    did, X, y = blobs_dataset
    rng = np.random.default_rng(0)
    trip = []
    while len(trip) < 60:
        a, b, c = map(int, rng.choice(len(y), 3, replace=False))
        if y[a] == y[b] != y[c]:
            trip.append([a, b, c, "yes"])
    est = registry.build("dcrc", n_clusters=3, params={}, random_state=0)
    est.fit(X, **registry.fit_kwargs("dcrc", {"triplets": trip}))
    jid = store.create_job(dataset_id=did, method="dcrc", n_clusters=3, params={}, constraints={},
                           random_state=0)["id"]
    store.start_job(jid)
    store.save_result(jid, {"job_id": jid, "labels": est.labels_.tolist()})
    store.save_model_state(jid, registry.model_state("dcrc", est))
    store.finish_job(jid, "SUCCEEDED")
    return jid, est
