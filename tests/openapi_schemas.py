"""Validate JSON against the schemas of Shoal's OpenAPI 3.0 document (tests only).

OpenAPI 3.0 schemas are JSON Schema draft 4 plus ``nullable``; :func:`validator` rewrites
``nullable`` into draft 4 and resolves ``#/components/...`` references against the document.
"""

import copy

import jsonschema_rs


def _draft4(node):
    """A copy of schema ``node`` with OpenAPI's ``nullable: true`` written as draft 4 allows null."""
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("nullable", "example", "examples"):
            continue
        if key in ("properties", "patternProperties"):
            out[key] = {name: _draft4(v) for name, v in value.items()}
        elif key in ("items", "additionalProperties", "not"):
            out[key] = _draft4(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [_draft4(v) for v in value]
        else:
            out[key] = value
    if node.get("nullable"):
        if "type" in out and "enum" not in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = types + ["null"]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def validator(spec, schema):
    """A draft 4 validator of ``schema`` (a schema or ``{"$ref": ...}``) within ``spec``.

    Parameters
    ----------
    spec : dict
        The whole OpenAPI document (its ``components`` resolve the references).
    schema : dict

    Returns
    -------
    jsonschema_rs.Draft4Validator
    """
    root = _draft4(copy.deepcopy(schema))
    components = spec.get("components", {})
    root["components"] = {**components, "schemas": {k: _draft4(v) for k, v in components.get("schemas", {}).items()}}
    return jsonschema_rs.Draft4Validator(root)


def errors(spec, schema, instance):
    """Messages of every way ``instance`` fails ``schema`` (empty: valid)."""
    return [f"{'/'.join(map(str, e.instance_path))}: {e.message}"
            for e in validator(spec, schema).iter_errors(instance)]
