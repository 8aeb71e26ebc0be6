"""Cursor pagination of list endpoints (``GET /v1/jobs``, ``/v1/sessions``, ``/v1/datasets``,
``/v1/sessions/{id}/questions``)."""

from marshmallow import Schema, fields, validate


class PageArgsSchema(Schema):
    """The query of a list endpoint: ``page_size`` and the ``page_token`` of the previous page.

    A list endpoint subclasses it with its own filter (``state``, ``status``) if it has one.
    """

    page_size = fields.Integer(strict=False, load_default=20, validate=validate.Range(min=1, max=100))
    page_token = fields.String(load_default=None, metadata={"description": "next_page_token of the "
                                                                           "previous page"})
