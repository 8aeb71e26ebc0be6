"""Property-based API fuzzing: schemathesis against the committed openapi.yaml.

Bounded examples per operation; every response must be a non-5xx that
matches the documented status codes, content types and schemas. The suite
runs 25 derandomized examples per operation; a longer random hunt outside the
suite: ``SHOAL_FUZZ_EXAMPLES=500 ./test.sh tests/integration/test_schemathesis.py``.
"""

import os
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.integration

_EXAMPLES = os.environ.get("SHOAL_FUZZ_EXAMPLES")  # set: a longer, random (not derandomized) hunt

# binary dataset bodies (.npy, Parquet, Arrow stream) and upload pieces are sent as the raw bytes schemathesis makes
for _media_type in ("application/x-npy", "application/vnd.apache.parquet", "application/vnd.apache.arrow.stream",
                    "application/offset+octet-stream"):
    schemathesis.serializer.alias(_media_type, "application/octet-stream")

schema = schemathesis.openapi.from_path(Path(__file__).resolve().parents[2] / "openapi.yaml")


@schema.parametrize()
@settings(max_examples=int(_EXAMPLES or 25), deadline=None, database=None, derandomize=_EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_spec(case, live):
    case.call_and_validate(
        base_url=live,
        checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                response_schema_conformance],
    )


FUZZ_KEY = "fuzz-admin:" + "f" * 32  # an admin key: every route, the key management ones too, is tried


@pytest.fixture(scope="module")
def live_keyed(stack, live, tmp_path_factory):
    """A second gunicorn on the session's Redis, with API keys on (tenants, scopes, rate limits, quotas)."""
    from scripts.stack import Stack

    web = Stack(env={"SHOAL_ADMIN_KEYS": FUZZ_KEY, "SHOAL_API_KEYS": "fuzz-other:" + "o" * 32},
                log_dir=tmp_path_factory.mktemp("keyed"))
    base = web.start_web(workers=1)
    yield base
    web.stop()


@schema.parametrize()
@settings(max_examples=int(_EXAMPLES or 10), deadline=None, database=None, derandomize=_EXAMPLES is None,
          suppress_health_check=list(HealthCheck))
def test_api_with_keys_on_conforms_to_its_spec(case, live_keyed):
    case.call_and_validate(
        base_url=live_keyed, headers={"Authorization": f"Bearer {FUZZ_KEY.split(':', 1)[1]}"},
        checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                response_schema_conformance],
    )
