"""Cursor pagination of list endpoints (``GET /v1/jobs``, ``GET /v1/sessions``)."""

from marshmallow import Schema, fields, validate


def list_args_schema(states, name):
    """The query schema of a list endpoint: ``state`` (one of ``states``), ``page_size``, ``page_token``.

    Parameters
    ----------
    states : sequence of str
        The states a client may filter on.
    name : str
        Class name (shown in the OpenAPI document).
    """
    return type(name, (Schema,), {
        "state": fields.String(load_default=None, validate=validate.OneOf(states)),
        "page_size": fields.Integer(strict=False, load_default=20, validate=validate.Range(min=1, max=100)),
        "page_token": fields.String(load_default=None, metadata={"description": "next_page_token of the "
                                                                                "previous page"}),
    })
