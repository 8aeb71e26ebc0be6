"""The OpenAPI document teaches by example: every request body and 2xx response has an example that
its own schema accepts, prose is plain text, and the lock shows only where keys are needed."""

import pytest
import yaml

from scripts.openapi import generate
from service.spec import BINARY
from tests.openapi_schemas import errors

SPEC = yaml.safe_load(generate())


def _media():
    """(operation, part, media type, content) of every request body and 2xx response."""
    for path, operations in SPEC["paths"].items():
        for method, op in operations.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            name = f"{method.upper()} {path}"
            for media_type, content in op.get("requestBody", {}).get("content", {}).items():
                yield name, "request", media_type, content
            for status, response in op["responses"].items():
                if status.startswith("2"):
                    for media_type, content in (response.get("content") or {}).items():
                        yield name, status, media_type, content


MEDIA = [m for m in _media() if m[2] not in BINARY]


def test_the_document_has_request_bodies_and_responses_to_check():
    parts = {part for _, part, _, _ in MEDIA}
    assert "request" in parts and {"200", "201", "202"} <= parts
    assert len({name for name, *_ in MEDIA}) >= 20


@pytest.mark.parametrize("name, part, media_type, content", MEDIA, ids=lambda v: v if isinstance(v, str) else "")
def test_every_body_has_an_example_its_schema_accepts(name, part, media_type, content):
    assert "example" in content, f"{name} {part} {media_type} has no example"
    if media_type == "application/json":
        assert not errors(SPEC, content["schema"], content["example"]), errors(SPEC, content["schema"],
                                                                              content["example"])
    else:
        assert isinstance(content["example"], str) and content["example"].strip()


def test_an_example_that_breaks_its_schema_is_caught():
    """The check above can fail: a job body with a string for n_clusters and an unknown member."""
    schema = {"$ref": "#/components/schemas/JobCreate"}
    bad = {"dataset_id": "ds_x", "method": "e2cp", "n_clusters": "three", "colour": "red"}
    assert len(errors(SPEC, schema, bad)) == 2


def _prose(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("summary", "description") and isinstance(v, str):
                yield v
            else:
                yield from _prose(v)
    elif isinstance(node, list):
        for v in node:
            yield from _prose(v)


def test_summaries_and_descriptions_are_plain_text():
    rst = [text for text in _prose(SPEC) if "``" in text or ":func:`" in text or ":class:`" in text]
    assert not rst, rst[:3]
    assert any("`page_token`" in text for text in _prose(SPEC))  # code spans stay, in Markdown


def test_the_committed_document_requires_no_key(client):
    """Generated without keys: the scheme is described, nothing requires it (no lock in Swagger UI)."""
    assert "security" not in SPEC
    assert SPEC["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    served = client.get("/openapi.json").json
    assert "security" not in served
    assert served["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]["example"]


def test_a_deployment_with_keys_requires_the_bearer_key(store):
    from service import create_app

    app = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_API_KEYS": "k" * 24})
    served = app.test_client().get("/openapi.json").json
    assert served["security"] == [{"apiKey": []}]
    assert served["paths"]["/healthz"]["get"]["security"] == []
    assert yaml.safe_load(app.test_client().get("/openapi.yaml").data)["security"] == [{"apiKey": []}]
