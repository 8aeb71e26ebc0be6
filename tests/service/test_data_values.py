"""Data values at upload and predict: finite, within the magnitude limit, with unique item ids."""

import json

import numpy as np
import pytest

from clustering.validation import MAX_ABS_VALUE

PROBLEM = "application/problem+json"


def _raw(rows):
    return json.dumps({"data": rows})


@pytest.mark.parametrize("cell, value", [((3, 1), 1e308), ((0, 0), -1e308), ((29, 1), -MAX_ABS_VALUE * 1.0001),
                                         ((5, 0), 10**120)])
def test_a_value_beyond_the_magnitude_limit_is_a_422_naming_the_cell(client, cell, value):
    rows = np.ones((30, 2)).tolist()
    rows[cell[0]][cell[1]] = value
    if cell != (0, 0):
        rows[7][0] = -1e308  # a later offender: the first in row-major order is named
    r = client.post("/v1/datasets", data=_raw(rows), content_type="application/json")
    assert r.status_code == 422 and r.mimetype == PROBLEM, r.json
    (msg,) = r.json["errors"]["/data"]
    first = min(cell, (7, 0)) if cell != (0, 0) else cell
    assert f"data[{first[0]}][{first[1]}]" in msg and f"{MAX_ABS_VALUE:g}" in msg, msg


def test_values_at_the_magnitude_limit_are_stored_unchanged(client):
    rows = [[MAX_ABS_VALUE, -MAX_ABS_VALUE], [1 / MAX_ABS_VALUE, 0.0], [1.0, 2.0]]
    r = client.post("/v1/datasets", data=_raw(rows), content_type="application/json")
    assert r.status_code == 201, r.json


@pytest.mark.parametrize("body, pointer, words", [
    ({"data": [[-1e308, -1e308]]}, "/data", "data[0][0]"),
    ({"data": [[0.0, 1.0], [2.0, 1e101]]}, "/data", "data[1][1]"),
    ({"data": [[0.0, 1.0], [2.0, 3.0]], "item_ids": ["a", "a"]}, "/item_ids", "'a' appears more than once"),
    ({"data": [[0.0, 1.0], [2.0, 3.0]], "item_ids": ["a", "b", "a"]}, "/item_ids", "more than once"),
])
def test_predict_refuses_what_a_dataset_upload_refuses(client, dcrc_job, body, pointer, words):
    before = client.get("/v1/jobs?page_size=100").json["jobs"]
    r = client.post(f"/v1/jobs/{dcrc_job[0]}/predict", json=body)
    assert r.status_code == 422 and r.mimetype == PROBLEM, r.json
    assert any(words in m for m in r.json["errors"][pointer]), r.json
    assert client.get("/v1/jobs?page_size=100").json["jobs"] == before  # no predict job was created
    upload = client.post("/v1/datasets", json=body)
    assert upload.status_code == 422 and pointer in upload.json["errors"]


def test_predict_scores_rows_at_the_magnitude_limit(client, store, dcrc_job):
    from workers.tasks import run_predict

    r = client.post(f"/v1/jobs/{dcrc_job[0]}/predict", json={"data": [[-MAX_ABS_VALUE, -MAX_ABS_VALUE], [0.0, 0.0]]})
    assert r.status_code == 202, r.json
    job = run_predict(store, store.start_job(r.json["id"]))
    assert job["state"] == "SUCCEEDED", job["error"]
    proba = np.asarray(store.get_result(job["id"])["extras"]["probabilities"], dtype=float)
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0, atol=1e-5)
