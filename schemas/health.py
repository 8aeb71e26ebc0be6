"""Liveness and readiness probe bodies."""

from marshmallow import Schema, fields, validate


class HealthSchema(Schema):
    """``GET /healthz``: the web process answers."""

    status = fields.String(validate=validate.OneOf(["ok"]))


class ReadySchema(Schema):
    """``GET /readyz`` when ready (else a 503 problem)."""

    status = fields.String(validate=validate.OneOf(["ready"]))
    redis = fields.String(validate=validate.OneOf(["ok"]))
    workers = fields.Integer(metadata={"description": "workers with a live heartbeat (at least 1)"})
