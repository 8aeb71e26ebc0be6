"""Dataset upload and metadata."""

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from .fields import Matrix, no_repeats
from .items import item_list_field
from .paging import PageArgsSchema


class DatasetCreateSchema(Schema):
    """``POST /v1/datasets`` body."""

    name = fields.String(load_default=None, validate=validate.Length(max=200))
    data = Matrix(
        load_default=None,
        metadata={
            "type": "array",
            "items": {"type": "array", "items": {"type": "number"}},
            "description": "n x d matrix of finite numbers, each at most 1e100 in magnitude, one row per item "
                           "(or upload_id)",
        },
    )
    upload_id = fields.String(load_default=None, metadata={
        "description": "a complete resumable upload (POST /v1/uploads) to take the matrix from, instead of data"})
    labels = fields.List(
        fields.Raw(),
        load_default=None,
        metadata={"description": "Optional ground-truth labels (ints or strings), enables metrics"},
    )
    item_ids = fields.List(
        fields.String(validate=validate.Length(min=1, max=200)),
        load_default=None,
        validate=no_repeats("item id"),
        metadata={"description": "Optional client item ids, unique; results and errors use them"},
    )

    items = item_list_field(load_default=None, metadata={
        "description": "Optional content per row for people (text, image_url, fields; null for none); "
                       "shown on annotator pages and carried by questions"})

    @validates_schema
    def _lengths(self, data, **kwargs):
        X = data.get("data")
        n = None if X is None else X.shape[0]
        errors = {}
        if (X is None) == (data.get("upload_id") is None):
            if X is None:
                raise ValidationError({"data": ["Missing data for required field (or give upload_id)."]})
            raise ValidationError({"upload_id": ["give data or upload_id, not both"]})
        labels = data.get("labels")
        if labels is not None and n is not None:
            if len(labels) != n:
                errors["labels"] = [f"has {len(labels)} values for {n} rows"]
            else:
                bad = [i for i, v in enumerate(labels) if isinstance(v, bool) or not isinstance(v, (int, str))]
                if bad:
                    errors["labels"] = [f"labels[{bad[0]}] must be an integer or a string"]
        ids = data.get("item_ids")
        if ids is not None and n is not None:
            if len(ids) != n:
                errors["item_ids"] = [f"has {len(ids)} values for {n} rows"]
        items = data.get("items")
        if items is not None and n is not None and len(items) != n:
            errors["items"] = [f"has {len(items)} values for {n} rows"]
        if errors:
            raise ValidationError(errors)


class DatasetSchema(Schema):
    """Dataset metadata (the matrix itself is never echoed back)."""

    id = fields.String()
    name = fields.String(allow_none=True)
    n_samples = fields.Integer()
    n_features = fields.Integer()
    has_labels = fields.Boolean()
    n_classes = fields.Integer(allow_none=True)
    has_item_ids = fields.Boolean()
    has_items = fields.Boolean(metadata={"description": "rows carry content for people (items)"})
    checksum = fields.String(metadata={"description": "sha256 of the matrix bytes as stored (C order, dtype)"})
    dtype = fields.String(metadata={"description": "float64, or float32 for a binary upload of float32"})
    created_at = fields.String()
    expires_at = fields.String(allow_none=True)


class DatasetListArgsSchema(PageArgsSchema):
    """``GET /v1/datasets`` query: newest first, cursor pagination as for jobs."""


class DatasetListSchema(Schema):
    datasets = fields.List(fields.Nested(DatasetSchema))
    next_page_token = fields.String(allow_none=True)
