"""API keys: the client sends ``Authorization: Bearer``; without it a typed 401. A gunicorn of its
own with ``SHOAL_API_KEYS`` on the session's Redis (whose worker it shares)."""

import pytest

from scripts.stack import Stack, wait_ready
from shoal_client import AuthenticationError, Shoal
from tests.conftest import TEST_ENV

pytestmark = pytest.mark.integration

KEY = "client-suite-key-0123456789"


def test_the_api_key_opens_the_routes_and_its_absence_is_a_typed_401(stack, live, iris, tmp_path):
    X, y = iris
    keyed = Stack(env={**TEST_ENV, "REDIS_URL": stack.redis_url, "SHOAL_API_KEYS": KEY}, log_dir=tmp_path)
    try:
        base = keyed.start_web(workers=1)
        wait_ready(base, timeout=90)
        with Shoal(base) as anonymous, pytest.raises(AuthenticationError) as err:
            anonymous.datasets.create(X[:10])
        assert (err.value.status, err.value.code) == (401, "unauthorized") and "Bearer" in err.value.detail
        with Shoal(base, api_key=KEY) as client:
            ds = client.datasets.create(X[:10])
            assert client.datasets.get(ds.id).n_samples == 10
            client.datasets.delete(ds)
    finally:
        keyed.stop()
