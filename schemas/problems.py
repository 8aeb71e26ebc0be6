"""RFC 9457 problem details (documentation schema; the service builds the bodies)."""

from marshmallow import Schema, fields


class ProblemSchema(Schema):
    """``application/problem+json`` body used for every error."""

    type = fields.String(metadata={"description": "URI reference identifying the problem type"})
    title = fields.String(metadata={"description": "Short summary of the problem type"})
    status = fields.Integer(metadata={"description": "HTTP status code"})
    detail = fields.String(metadata={"description": "Explanation specific to this occurrence"})
    code = fields.String(metadata={"description": "Stable machine-readable error code"})
    instance = fields.String()
    request_id = fields.String(metadata={"description": "this request's X-Request-ID (the client's, or one made "
                                                        "for it): quote it when reporting a problem"})
    errors = fields.Dict(
        keys=fields.String(),
        values=fields.List(fields.String()),
        metadata={"description": "JSON pointer of each invalid field -> messages"},
    )
    conflicts = fields.List(
        fields.Dict(),
        metadata={"description": "Contradictory constraints (cannot-link pair and must-link chain)"},
    )
    jobs = fields.List(fields.String(), metadata={"description": "dataset_in_use: ids of its unfinished jobs"})
    sessions = fields.List(fields.String(), metadata={"description": "dataset_in_use: ids of its open sessions"})
