"""Resumable uploads (``/v1/uploads``) and the labels of a binary dataset."""

from marshmallow import Schema, fields, validate

from .fields import no_repeats

#: Content types of binary dataset bodies.
BINARY_TYPES = ("application/x-npy", "application/vnd.apache.parquet", "application/vnd.apache.arrow.stream")


class UploadCreateSchema(Schema):
    """``POST /v1/uploads`` body."""

    content_type = fields.String(required=True, validate=validate.OneOf(BINARY_TYPES),
                                 metadata={"description": "what the bytes will be: .npy, Parquet or an Arrow stream"})
    length = fields.Integer(load_default=None, validate=validate.Range(min=1), metadata={
        "description": "total bytes, when known: the upload is complete at this offset, and a byte past it is a 413"})


class UploadSchema(Schema):
    """An upload: how many bytes arrived (``offset``, also the ``Upload-Offset`` header)."""

    id = fields.String()
    content_type = fields.String()
    length = fields.Integer(allow_none=True)
    offset = fields.Integer(metadata={"description": "bytes received so far: where the next PATCH starts"})
    created_at = fields.String()
    expires_at = fields.String(metadata={"description": "unfinished uploads are deleted then (SHOAL_UPLOAD_TTL)"})


class DatasetLabelsSchema(Schema):
    """``PATCH /v1/datasets/{id}`` body: the labels and item ids of a dataset uploaded as a binary body."""

    labels = fields.List(fields.Raw(), load_default=None,
                         metadata={"description": "ground-truth labels (ints or strings), one per row"})
    item_ids = fields.List(fields.String(validate=validate.Length(min=1, max=200)), load_default=None,
                           validate=no_repeats("item id"),
                           metadata={"description": "client item ids, unique, one per row"})
