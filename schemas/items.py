"""Item content: what a person sees of a dataset row (text, an image, a few fields).

Uploaded with ``POST /v1/datasets`` (``items``) or later with ``PUT /v1/datasets/{id}/items``;
shown on the annotator page (:mod:`service.annotate`) and carried by leased questions.
Nothing here is HTML: the page shows every string as text.
"""

import re

from marshmallow import Schema, ValidationError, fields, validate, validates

#: Longest ``text`` of one item, in characters.
MAX_TEXT = 5000
#: Longest ``image_url``: an http(s) URL, or a ``data:`` URI of a raster image (its base64 text).
MAX_URL = 2048
MAX_DATA_URI = 512 * 1024
#: At most this many ``fields`` per item; names and values this long at most.
MAX_FIELDS = 12
MAX_FIELD_NAME = 40
MAX_FIELD_VALUE = 300
#: Raster types a ``data:`` URI may carry. SVG is refused: it is a document that can hold script.
DATA_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}\Z")
HTTP_URL = re.compile(r"https?://[^\s\"'<>\\]+\Z", re.IGNORECASE)


def check_image_url(value):
    """Raise ``ValidationError`` unless ``value`` is an http(s) URL or a base64 raster ``data:`` URI.

    Parameters
    ----------
    value : str

    Raises
    ------
    marshmallow.ValidationError
        ``javascript:``, ``data:image/svg+xml``, other schemes, whitespace or quotes, too long.

    Examples
    --------
    >>> check_image_url("https://example.org/a.png")
    >>> check_image_url("javascript:alert(1)")
    Traceback (most recent call last):
    ...
    marshmallow.exceptions.ValidationError: must be an http(s) URL or a data:image/(png|jpeg|gif|webp);base64 URI
    """
    if value.startswith("data:"):
        if len(value) > MAX_DATA_URI:
            raise ValidationError(f"a data: URI may have at most {MAX_DATA_URI} characters, not {len(value)}")
        if DATA_IMAGE.match(value):
            return
    elif len(value) > MAX_URL:
        raise ValidationError(f"a URL may have at most {MAX_URL} characters, not {len(value)}")
    elif HTTP_URL.match(value):
        return
    raise ValidationError("must be an http(s) URL or a data:image/(png|jpeg|gif|webp);base64 URI")


class ItemSchema(Schema):
    """One row's content; every key optional, ``null`` for a row with none."""

    text = fields.String(load_default=None, allow_none=True, validate=validate.Length(max=MAX_TEXT),
                         metadata={"description": f"shown as text (never HTML), at most {MAX_TEXT} characters"})
    image_url = fields.String(load_default=None, allow_none=True, validate=check_image_url, metadata={
        "description": "http(s) URL, or data:image/(png|jpeg|gif|webp);base64 URI (no SVG), at most "
                       f"{MAX_DATA_URI} characters"})
    fields_ = fields.Dict(data_key="fields", attribute="fields", load_default=None, allow_none=True,
                          keys=fields.String(validate=validate.Length(min=1, max=MAX_FIELD_NAME)),
                          values=fields.Raw(), metadata={
                              "description": f"up to {MAX_FIELDS} short name -> value pairs (string, number, "
                                             f"boolean; values up to {MAX_FIELD_VALUE} characters)"})

    @validates("fields_")
    def _fields(self, value, **kwargs):
        if value is None:
            return
        if len(value) > MAX_FIELDS:
            raise ValidationError(f"at most {MAX_FIELDS} fields, not {len(value)}")
        for name, v in value.items():
            if not isinstance(v, (str, int, float, bool)) or (isinstance(v, float) and v != v):
                raise ValidationError(f"field {name!r} must be a string, number or boolean")
            if len(str(v)) > MAX_FIELD_VALUE:
                raise ValidationError(f"field {name!r} has more than {MAX_FIELD_VALUE} characters")


def item_list_field(**kwargs):
    """The ``items`` field of a dataset upload or ``PUT .../items``: one object (or null) per row."""
    return fields.List(fields.Nested(ItemSchema, allow_none=True), **kwargs)


class ItemsRequestSchema(Schema):
    """``PUT /v1/datasets/{id}/items`` body: the content of every row (replaces what was there)."""

    items = item_list_field(required=True, metadata={"description": "one object (or null) per dataset row"})


class ItemsInfoSchema(Schema):
    dataset_id = fields.String()
    n_items = fields.Integer(metadata={"description": "rows with content"})


def clean_item(item):
    """The stored form of a loaded item: None-valued keys dropped; None when nothing is left."""
    if not item:
        return None
    out = {k: v for k, v in item.items() if v not in (None, {})}
    return out or None
