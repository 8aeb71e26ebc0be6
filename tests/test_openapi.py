"""The committed openapi.yaml is what the code generates."""

from pathlib import Path

from scripts.openapi import generate

ROOT = Path(__file__).resolve().parent.parent


def test_committed_spec_matches_code():
    committed = (ROOT / "openapi.yaml").read_text()
    assert generate() == committed, "openapi.yaml is stale: run `.venv/bin/python -m scripts.openapi > openapi.yaml`"


def test_spec_documents_every_route():
    spec = generate()
    for path in ("/v1/datasets", "/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/result",
                 "/v1/jobs/{job_id}/affinity", "/v1/jobs/{job_id}/cancel", "/v1/methods",
                 "/v1/constraints/check", "/healthz", "/readyz"):
        assert f"{path}:" in spec, path


def test_spec_documents_session_params_as_validated():
    import yaml

    from schemas.sessions import TripletParamsSchema, URASCParamsSchema

    schemas = yaml.safe_load(generate())["components"]["schemas"]
    for name, schema in (("URASCParams", URASCParamsSchema), ("TripletParams", TripletParamsSchema)):
        assert set(schemas[name]["properties"]) == set(schema().fields), name
        assert schemas[name]["additionalProperties"] is False


def test_spec_documents_location_and_retry_after_where_they_are_sent():
    """A client generated from the spec learns where to poll and how long to wait (api.md: 202 + Location +
    Retry-After); before 1.3.0 only ETag was declared."""
    import yaml

    paths = yaml.safe_load(generate())["paths"]
    expected = {("/v1/datasets", "post", "201"): {"Location"},
                ("/v1/jobs", "post", "202"): {"Location", "Retry-After"},
                ("/v1/jobs/{job_id}/predict", "post", "202"): {"Location", "Retry-After"},
                ("/v1/jobs/{job_id}", "get", "200"): {"Retry-After", "ETag"},
                ("/v1/sessions", "post", "201"): {"Location", "Retry-After"},
                ("/v1/sessions/{session_id}", "get", "200"): {"Retry-After", "ETag"},
                ("/v1/sessions/{session_id}/questions", "post", "200"): {"Retry-After"}}
    for (path, method, status), headers in expected.items():
        assert set(paths[path][method]["responses"][status].get("headers", {})) == headers, (path, method)
