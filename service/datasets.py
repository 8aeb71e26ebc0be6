"""Datasets: upload (validated, stored as float64), metadata, delete."""

from flask import current_app, url_for
from flask_smorest import Blueprint

from schemas.datasets import DatasetCreateSchema, DatasetSchema

from . import get_store
from .errors import ApiError, problem_docs

blp = Blueprint("datasets", __name__, url_prefix="/v1/datasets", description="Upload and manage datasets")


def check_size(X, min_rows=2):
    cfg = current_app.config
    n, d = X.shape
    if n > cfg["SHOAL_MAX_ROWS"]:
        raise ApiError(413, "too_large", f"data has {n} rows, at most {cfg['SHOAL_MAX_ROWS']} are allowed",
                       errors={"/data": [f"at most {cfg['SHOAL_MAX_ROWS']} rows"]})
    if d > cfg["SHOAL_MAX_FEATURES"]:
        raise ApiError(413, "too_large", f"data has {d} columns, at most {cfg['SHOAL_MAX_FEATURES']} are allowed",
                       errors={"/data": [f"at most {cfg['SHOAL_MAX_FEATURES']} columns"]})
    if n * d > cfg["SHOAL_MAX_CELLS"]:
        raise ApiError(413, "too_large", f"data has {n * d} cells, at most {cfg['SHOAL_MAX_CELLS']} are allowed",
                       errors={"/data": [f"at most {cfg['SHOAL_MAX_CELLS']} cells"]})
    if n < min_rows:
        raise ApiError(422, "invalid_input", f"data needs at least {min_rows} rows",
                       errors={"/data": [f"at least {min_rows} rows"]})


def dataset_or_404(store, dataset_id, pointer=None):
    meta = store.get_dataset_meta(dataset_id)
    if meta is None:
        raise ApiError(404, "not_found", f"dataset {dataset_id!r} does not exist or has expired",
                       errors={pointer: ["unknown dataset"]} if pointer else None)
    return meta


@blp.route("", methods=["POST"])
@blp.arguments(DatasetCreateSchema)
@blp.response(201, DatasetSchema)
@problem_docs(blp, (413, "Too many rows, columns or bytes"), (422, "NaN, ragged rows, non-numeric cells ..."))
def create_dataset(body):
    """Upload an (n, d) numeric matrix, optional ground-truth labels and item ids."""
    X = body["data"]
    check_size(X)
    meta = get_store().put_dataset(X, name=body.get("name"), labels=body.get("labels"),
                                   item_ids=body.get("item_ids"))
    return meta, 201, {"Location": url_for("datasets.get_dataset", dataset_id=meta["id"])}


@blp.route("/<string:dataset_id>")
@blp.response(200, DatasetSchema)
@problem_docs(blp, (404, "Unknown or expired dataset"))
def get_dataset(dataset_id):
    """Dataset metadata (shape, checksum, timestamps)."""
    return dataset_or_404(get_store(), dataset_id)


@blp.route("/<string:dataset_id>", methods=["DELETE"])
@blp.response(204)
@problem_docs(blp, (404, "Unknown or expired dataset"))
def delete_dataset(dataset_id):
    """Delete a dataset (jobs already finished keep their results)."""
    if not get_store().delete_dataset(dataset_id):
        raise ApiError(404, "not_found", f"dataset {dataset_id!r} does not exist or has expired")
    return ""
