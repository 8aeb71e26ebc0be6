"""Dataset upload: validation errors are problem+json 4xx naming the field; nothing is altered."""

import json

import numpy as np
import pytest

PROBLEM = "application/problem+json"


def test_upload_and_read_back_metadata(client, store):
    X = [[1.5, 2.0], [3.25, -4.0], [0.0, 1e-300]]
    r = client.post("/v1/datasets", json={"name": "tiny", "data": X, "labels": ["a", "b", "a"]})
    assert r.status_code == 201
    assert r.headers["Location"].endswith(r.json["id"])
    assert (r.json["n_samples"], r.json["n_features"], r.json["n_classes"]) == (3, 2, 2)
    got = client.get(f"/v1/datasets/{r.json['id']}")
    assert got.status_code == 200 and got.json["checksum"] == r.json["checksum"]
    stored, labels, ids = store.load_dataset(r.json["id"])
    np.testing.assert_array_equal(stored, np.asarray(X))  # bit-exact: nothing silently changed
    assert labels == ["a", "b", "a"] and ids is None


@pytest.mark.parametrize(
    "raw, pointer, fragment",
    [
        ('{"data": [[1, 2], [3]]}', "/data", "same length"),
        ('{"data": [[1, "2"], [3, 4]]}', "/data", "[0][1]"),
        ('{"data": [[1, true], [3, 4]]}', "/data", "[0][1]"),
        ('{"data": [[1, null], [3, 4]]}', "/data", "[0][1]"),
        ('{"data": [[1, NaN], [3, 4]]}', "/data", "finite"),
        ('{"data": [[1, 2], [Infinity, 4]]}', "/data", "[1][0]"),
        ('{"data": []}', "/data", "at least one row"),
        ('{"data": [[]]}', "/data", "at least one row"),
        ('{"data": 5}', "/data", "list of rows"),
        ('{"data": [[1, 2], [3, 4]], "labels": [0]}', "/labels", "1 values for 2 rows"),
        ('{"data": [[1, 2], [3, 4]], "item_ids": ["a", "a"]}', "/item_ids", "more than once"),
        ('{"data": [[1, 2], [3, 4]], "extra": 1}', "/extra", "Unknown"),
        ("{}", "/data", "required"),
    ],
)
def test_invalid_uploads_name_the_field(client, raw, pointer, fragment):
    r = client.post("/v1/datasets", data=raw, content_type="application/json")
    assert r.status_code == 422, r.data
    assert r.mimetype == PROBLEM
    body = r.json
    assert body["status"] == 422 and body["code"] == "invalid_input"
    assert pointer in body["errors"], body
    assert any(fragment in m for m in body["errors"][pointer]), body["errors"]


def test_unparseable_json_is_400(client):
    r = client.post("/v1/datasets", data='{"data": [[1, 2]', content_type="application/json")
    assert r.status_code == 400 and r.mimetype == PROBLEM


def test_wrong_content_type_is_415(client):
    r = client.post("/v1/datasets", data="a,b\n1,2", content_type="text/csv")
    assert r.status_code == 415 and r.mimetype == PROBLEM


def test_too_many_rows_is_413(client):
    X = np.zeros((5001, 1)).tolist()
    r = client.post("/v1/datasets", json={"data": X})
    assert r.status_code == 413 and r.json["code"] == "too_large"


def test_too_many_bytes_is_413(app):
    app.config["MAX_CONTENT_LENGTH"] = 1000
    r = app.test_client().post("/v1/datasets", data=json.dumps({"data": [[1.0] * 200] * 2}),
                               content_type="application/json")
    assert r.status_code == 413 and r.mimetype == PROBLEM


def test_unknown_and_deleted_dataset_404(client):
    r = client.post("/v1/datasets", json={"data": [[1, 2], [3, 4]]})
    did = r.json["id"]
    assert client.delete(f"/v1/datasets/{did}").status_code == 204
    for resp in (client.get(f"/v1/datasets/{did}"), client.delete(f"/v1/datasets/{did}")):
        assert resp.status_code == 404 and resp.mimetype == PROBLEM


def test_redis_down_is_503_not_500():
    from service import create_app
    from workers.config import Settings
    from workers.store import Store

    dead = Store.from_settings(Settings(redis_url="redis://127.0.0.1:1/0"))
    app = create_app({"TESTING": True, "SHOAL_STORE": dead})
    r = app.test_client().post("/v1/datasets", json={"data": [[1, 2], [3, 4]]})
    assert r.status_code == 503 and r.mimetype == PROBLEM
    assert app.test_client().get("/readyz").status_code == 503
    assert app.test_client().get("/healthz").status_code == 200
