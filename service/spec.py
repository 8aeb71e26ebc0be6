"""The OpenAPI document as served and committed: apispec's, with examples and plain-text prose.

flask-smorest builds the document from the views' docstrings and the marshmallow schemas. Two
things are added here, on every rendering (``/openapi.json``, ``/openapi.yaml``,
``scripts/openapi.py``), so that the three stay one document:

* each operation's request body and 2xx responses get the ``example`` recorded from a real stack
  (:data:`schemas.examples.EXAMPLES`, written by ``scripts/examples.py``);
* summaries and descriptions, written as reStructuredText in the docstrings, read as plain text
  with Markdown code spans (what Swagger UI renders): ````x```` becomes ```x```.
"""

import copy
import re

from apispec.yaml_utils import dict_to_yaml

from schemas.uploads import BINARY_TYPES

_RST_LITERAL = re.compile(r"``(.+?)``", re.S)
_PROSE = ("summary", "description")
#: Media types whose bodies are bytes: no example (a ``.npz`` file).
BINARY = frozenset({"application/octet-stream", "application/offset+octet-stream", *BINARY_TYPES})


def plain_text(node):
    """``node`` with every summary and description's ````literal```` written as ```literal```."""
    if isinstance(node, list):
        return [plain_text(v) for v in node]
    if not isinstance(node, dict):
        return node
    return {k: _RST_LITERAL.sub(r"`\1`", v) if k in _PROSE and isinstance(v, str) else plain_text(v)
            for k, v in node.items()}


def with_examples(spec, examples):
    """A copy of ``spec`` whose operations carry ``examples[f"{METHOD} {path}"]``.

    Parameters
    ----------
    spec : dict
        The OpenAPI document.
    examples : dict
        ``"POST /v1/jobs"`` -> ``{"request": body, "responses": {"202": body}}``.
    """
    spec = copy.deepcopy(spec)
    for path, operations in spec.get("paths", {}).items():
        for method, op in operations.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            recorded = examples.get(f"{method.upper()} {path}", {})
            if "request" in recorded:
                for media_type, content in op.get("requestBody", {}).get("content", {}).items():
                    if media_type not in BINARY:
                        content["example"] = recorded["request"]
            for status, body in recorded.get("responses", {}).items():
                for media_type, content in (op["responses"].get(status, {}).get("content") or {}).items():
                    if media_type not in BINARY:
                        content["example"] = body
    return spec


def document(api):
    """The finished document of ``api`` (a :class:`flask_smorest.Api`) as a dict."""
    from schemas.examples import EXAMPLES

    return plain_text(with_examples(api.spec.to_dict(), EXAMPLES))


def to_yaml(api):
    """:func:`document` as YAML, laid out as apispec writes it."""
    return dict_to_yaml(document(api))
