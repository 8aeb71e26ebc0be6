"""Binary dataset bodies (.npy, Parquet, Arrow stream) and resumable uploads: the same checks as JSON."""

import hashlib
import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

PROBLEM = "application/problem+json"
NPY, PARQUET, ARROW = "application/x-npy", "application/vnd.apache.parquet", "application/vnd.apache.arrow.stream"


def npy_bytes(X):
    buf = io.BytesIO()
    np.save(buf, X, allow_pickle=False)
    return buf.getvalue()


def parquet_bytes(table):
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=7)
    return buf.getvalue()


def arrow_bytes(table):
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        for batch in table.to_batches(max_chunksize=5):
            w.write_batch(batch)
    return sink.getvalue()


def embeddings_table(X, **extra):
    flat = pa.array(X.ravel())
    return pa.table({"embedding": pa.FixedSizeListArray.from_arrays(flat, X.shape[1]), **extra})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_npy_body_is_stored_as_sent_then_labelled(client, store, dtype):
    X = np.random.default_rng(0).normal(size=(30, 4)).astype(dtype)
    r = client.post("/v1/datasets?name=vectors", data=npy_bytes(X), content_type=NPY)
    assert r.status_code == 201, r.json
    meta = r.json
    assert (meta["n_samples"], meta["n_features"], meta["dtype"], meta["name"]) == (30, 4, np.dtype(dtype).name, "vectors")
    Y, labels, ids = store.load_dataset(meta["id"])
    assert Y.dtype == dtype and labels is None
    np.testing.assert_array_equal(Y, X)  # bit for bit
    assert meta["checksum"] == hashlib.sha256(X.tobytes()).hexdigest()
    body = {"labels": [i % 3 for i in range(30)], "item_ids": [f"it-{i}" for i in range(30)]}
    r = client.patch(f"/v1/datasets/{meta['id']}", json=body)
    assert r.status_code == 200 and r.json["has_labels"] and r.json["n_classes"] == 3 and r.json["has_item_ids"]
    assert store.load_dataset(meta["id"])[1:] == (body["labels"], body["item_ids"])
    again = client.patch(f"/v1/datasets/{meta['id']}", json=body)
    assert again.status_code == 409 and again.mimetype == PROBLEM


def test_labels_of_the_wrong_length_are_422(client):
    did = client.post("/v1/datasets", data=npy_bytes(np.ones((5, 2))), content_type=NPY).json["id"]
    r = client.patch(f"/v1/datasets/{did}", json={"labels": [1, 2]})
    assert r.status_code == 422 and "/labels" in r.json["errors"]
    r = client.patch(f"/v1/datasets/{did}", json={"labels": [1, 2, 3, 4, 4.5]})
    assert r.status_code == 422 and "labels[4]" in r.json["errors"]["/labels"][0]


@pytest.mark.parametrize("payload, fragment", [
    (npy_bytes(np.ones((4, 3), dtype=np.int64)), "dtype <i8"),
    (npy_bytes(np.ones((4, 3), dtype=">f8")), "dtype >f8"),
    (npy_bytes(np.asfortranarray(np.ones((4, 3)))), "Fortran"),
    (npy_bytes(np.ones(4)), "2-D"),
    (npy_bytes(np.ones((1, 3))), "at least 2 rows"),
    (npy_bytes(np.array([[1.0, 2.0], [np.nan, 4.0]])), "data[1][0]"),
    (npy_bytes(np.array([[1.0, 2.0], [3.0, np.inf]], dtype=np.float32)), "data[1][1]"),
    (npy_bytes(np.array([[1.0, 2e100], [3.0, 4.0]])), "beyond"),
    (npy_bytes(np.ones((4, 3)))[:-8], "holds 88 bytes"),
    (b"not a numpy file at all", "not a .npy file"),
    (npy_bytes(np.ones((4, 3))).replace(b"{'descr'", b"('descr'", 1), "not a .npy file"),  # the tokenizer's error
])
def test_bad_npy_bodies_are_422_at_data(client, store, payload, fragment):
    before = set(store.matrix_files.keys())
    r = client.post("/v1/datasets", data=payload, content_type=NPY)
    assert r.status_code == 422, r.json
    assert r.mimetype == PROBLEM and r.json["code"] == "invalid_input"
    assert any(fragment in m for m in r.json["errors"]["/data"]), r.json
    assert set(store.matrix_files.keys()) == before  # nothing stored
    assert not store.matrix_files.stale_temp_files(-1)  # and nothing left behind


def test_a_body_over_the_upload_cap_is_413(app, client):
    app.config["SHOAL_MAX_UPLOAD_BYTES"] = 1000
    r = client.post("/v1/datasets", data=npy_bytes(np.ones((20, 10))), content_type=NPY)
    assert r.status_code == 413 and r.json["code"] == "too_large"


@pytest.mark.parametrize("encode", [parquet_bytes, arrow_bytes])
def test_tables_of_embeddings_with_labels_and_item_ids(client, store, encode):
    X = np.random.default_rng(1).normal(size=(23, 6)).astype(np.float32)
    table = embeddings_table(X, label=pa.array([f"c{i % 2}" for i in range(23)]),
                             item_id=pa.array([f"row-{i}" for i in range(23)]), text=pa.array(["t"] * 23))
    kind = PARQUET if encode is parquet_bytes else ARROW
    r = client.post("/v1/datasets", data=encode(table), content_type=kind)
    assert r.status_code == 201, r.json
    assert (r.json["n_samples"], r.json["n_features"], r.json["dtype"], r.json["n_classes"]) == (23, 6, "float32", 2)
    Y, labels, ids = store.load_dataset(r.json["id"])
    np.testing.assert_array_equal(Y, X)
    assert labels[:3] == ["c0", "c1", "c0"] and ids[-1] == "row-22"


def test_a_table_of_numeric_columns(client, store):
    table = pa.table({"a": pa.array([1, 2, 3], pa.int32()), "b": pa.array([0.5, 1.5, 2.5]), "label": [0, 1, 0]})
    r = client.post("/v1/datasets", data=parquet_bytes(table), content_type=PARQUET)
    assert r.status_code == 201 and r.json["dtype"] == "float64"
    np.testing.assert_array_equal(store.load_dataset(r.json["id"])[0], [[1, 0.5], [2, 1.5], [3, 2.5]])


@pytest.mark.parametrize("table, pointer, fragment", [
    (pa.table({"a": [1.0, None, 3.0], "b": [1.0, 2.0, 3.0]}), "/data", "data[1][0] (column 'a') is not finite"),
    (pa.table({"a": ["x", "y"], "b": [1.0, 2.0]}), "/data", "column 'a' is string"),
    (pa.table({"label": [1, 2]}), "/data", "no feature column"),
    (pa.table({"a": [1.0, 2.0], "label": [0.5, 1.0]}), "/labels", "labels[0]"),
    (pa.table({"a": [1.0, 2.0], "item_id": ["x", "x"]}), "/item_ids", "more than once"),
    (pa.table({"a": [1.0]}), "/data", "at least 2 rows"),
])
def test_bad_tables_name_the_field(client, table, pointer, fragment):
    for data, kind in ((parquet_bytes(table), PARQUET), (arrow_bytes(table), ARROW)):
        r = client.post("/v1/datasets", data=data, content_type=kind)
        assert r.status_code == 422, r.json
        assert any(fragment in m for m in r.json["errors"][pointer]), r.json


def test_garbage_claiming_to_be_parquet_is_422(client):
    r = client.post("/v1/datasets", data=b"PAR1 nothing", content_type=PARQUET)
    assert r.status_code == 422 and "not a readable Parquet file" in r.json["errors"]["/data"][0]


def test_resumable_upload_with_a_wrong_offset_and_labels_in_the_final_request(client, store):
    X = np.random.default_rng(2).normal(size=(50, 8))
    raw = npy_bytes(X)
    r = client.post("/v1/uploads", json={"content_type": NPY, "length": len(raw)})
    assert r.status_code == 201 and r.json["offset"] == 0
    uid = r.json["id"]
    chunk = "application/offset+octet-stream"
    r = client.patch(f"/v1/uploads/{uid}", data=raw[:1000], content_type=chunk, headers={"Upload-Offset": "0"})
    assert r.status_code == 204 and r.headers["Upload-Offset"] == "1000"
    r = client.patch(f"/v1/uploads/{uid}", data=raw[500:], content_type=chunk, headers={"Upload-Offset": "500"})
    assert r.status_code == 409 and r.headers["Upload-Offset"] == "1000"
    early = client.post("/v1/datasets", json={"upload_id": uid})
    assert early.status_code == 409 and early.json["code"] == "upload_incomplete"
    head = client.head(f"/v1/uploads/{uid}")
    assert head.status_code == 200 and head.headers["Upload-Offset"] == "1000"
    r = client.patch(f"/v1/uploads/{uid}", data=raw[1000:], content_type=chunk, headers={"Upload-Offset": "1000"})
    assert r.status_code == 204 and r.headers["Upload-Offset"] == str(len(raw))
    r = client.post("/v1/datasets", json={"upload_id": uid, "name": "resumed", "labels": [0, 1] * 25})
    assert r.status_code == 201, r.json
    assert r.json["n_classes"] == 2 and r.json["name"] == "resumed"
    np.testing.assert_array_equal(store.load_dataset(r.json["id"])[0], X)
    assert client.get(f"/v1/uploads/{uid}").status_code == 404  # used up


def test_upload_requests_that_are_wrong(client):
    assert client.post("/v1/uploads", json={"content_type": "text/csv"}).status_code == 422
    uid = client.post("/v1/uploads", json={"content_type": NPY, "length": 10}).json["id"]
    r = client.patch(f"/v1/uploads/{uid}", data=b"x" * 4, content_type="application/offset+octet-stream")
    assert r.status_code == 400 and "header:Upload-Offset" in r.json["errors"]
    r = client.patch(f"/v1/uploads/{uid}", data=b"x" * 11, content_type="application/offset+octet-stream",
                     headers={"Upload-Offset": "0"})
    assert r.status_code == 413
    r = client.patch(f"/v1/uploads/{uid}", data=b"x" * 4, content_type="text/plain", headers={"Upload-Offset": "0"})
    assert r.status_code == 415
    r = client.post("/v1/datasets", json={"upload_id": "up_" + "0" * 32})
    assert r.status_code == 404 and "/upload_id" in r.json["errors"]
    assert client.post("/v1/datasets", json={"upload_id": uid, "data": [[1]]}).status_code == 422
    assert client.delete(f"/v1/uploads/{uid}").status_code == 204
    assert client.head(f"/v1/uploads/{uid}").status_code == 404
    assert client.get("/v1/uploads/up_..").status_code == 404


def _cells_table(n, d):
    return embeddings_table(np.ones((n, d), dtype=np.float32))


@pytest.mark.parametrize("encode, kind", [(npy_bytes, NPY), (parquet_bytes, PARQUET), (arrow_bytes, ARROW)])
def test_binary_bodies_have_the_json_size_limits(app, client, store, encode, kind):
    """SHOAL_MAX_ROWS (5000 here), SHOAL_MAX_CELLS and SHOAL_MAX_FEATURES bound every encoding as JSON."""
    def post(n, d):
        X = np.ones((n, d), dtype=np.float32)
        return client.post("/v1/datasets", data=encode(X) if kind == NPY else encode(_cells_table(n, d)),
                           content_type=kind)

    r = post(5001, 2)
    assert r.status_code == 413 and r.mimetype == PROBLEM and r.json["code"] == "too_large", r.json
    assert r.json["errors"] == {"/data": ["at most 5000 rows"]}
    json_twin = client.post("/v1/datasets", json={"data": [[1.0, 1.0]] * 5001})
    assert (json_twin.status_code, json_twin.json["errors"]) == (413, r.json["errors"])  # the same problem
    app.config["SHOAL_MAX_CELLS"] = 100
    r = post(30, 4)
    assert r.status_code == 413 and r.json["errors"] == {"/data": ["at most 100 cells"]}, r.json
    app.config["SHOAL_MAX_FEATURES"] = 3
    r = post(10, 4)
    assert r.status_code == 413 and r.json["errors"] == {"/data": ["at most 3 columns"]}, r.json
    assert post(20, 3).status_code == 201  # at the limits
    assert not store.matrix_files.stale_temp_files(-1)


def test_a_npy_header_past_the_limits_is_413_before_its_rows(client):
    """The header says 10**9 rows and no row follows: the answer is the size, not the missing bytes."""

    raw = np.lib.format.header_data_from_array_1_0(np.ones((2, 8)))
    raw["shape"] = (10**9, 8)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, raw)
    r = client.post("/v1/datasets", data=buf.getvalue() + b"\0" * 64, content_type=NPY)
    assert r.status_code == 413 and "at most 5000 rows" in r.json["errors"]["/data"][0], r.json



def test_resumable_uploads_have_the_size_limits(client, store):
    chunk = "application/offset+octet-stream"
    raw = npy_bytes(np.ones((6000, 2)))
    uid = client.post("/v1/uploads", json={"content_type": NPY, "length": len(raw)}).json["id"]
    r = client.patch(f"/v1/uploads/{uid}", data=raw, content_type=chunk, headers={"Upload-Offset": "0"})
    assert r.status_code == 413 and r.json["errors"] == {"/data": ["at most 5000 rows"]}, r.json
    assert client.head(f"/v1/uploads/{uid}").headers["Upload-Offset"] == "0"  # nothing kept
    raw = parquet_bytes(_cells_table(6000, 2))  # a table's rows are known at its footer: checked on POST
    uid = client.post("/v1/uploads", json={"content_type": PARQUET, "length": len(raw)}).json["id"]
    r = client.patch(f"/v1/uploads/{uid}", data=raw, content_type=chunk, headers={"Upload-Offset": "0"})
    assert r.status_code == 204
    r = client.post("/v1/datasets", json={"upload_id": uid})
    assert r.status_code == 413 and r.json["errors"] == {"/data": ["at most 5000 rows"]}, r.json
    assert not store.matrix_files.stale_temp_files(-1)


@pytest.mark.parametrize("encode", [parquet_bytes, arrow_bytes])
def test_a_text_column_becomes_the_rows_items_as_put_items_stores_them(client, store, encode):
    n = 12
    X = np.random.default_rng(3).normal(size=(n, 5)).astype(np.float32)
    texts = [None if i % 4 == 3 else f"sentence {i} <b>not html</b>" for i in range(n)]
    table = embeddings_table(X, text=pa.array(texts, pa.string()), label=pa.array([i % 3 for i in range(n)]),
                             item_id=pa.array([f"doc-{i}" for i in range(n)]))
    kind = PARQUET if encode is parquet_bytes else ARROW
    r = client.post("/v1/datasets", data=encode(table), content_type=kind)
    assert r.status_code == 201, r.json
    assert r.json["has_items"] and r.json["has_labels"] and r.json["has_item_ids"] and r.json["n_classes"] == 3
    did = r.json["id"]
    got = store.get_items(did, range(n))
    assert got[0] == {"text": "sentence 0 <b>not html</b>"} and got[3] is None
    assert store.load_dataset(did)[1:] == ([i % 3 for i in range(n)], [f"doc-{i}" for i in range(n)])
    twin = client.post("/v1/datasets", json={"data": X.astype(float).tolist()}).json["id"]
    r = client.put(f"/v1/datasets/{twin}/items", json={"items": [{"text": t} for t in texts]})
    assert r.status_code == 200 and r.json["n_items"] == n - n // 4
    assert store.get_items(twin, range(n)) == got  # the same stored form as PUT .../items
    assert client.get(f"/v1/datasets/{did}").json["has_items"]


def test_a_resumable_table_upload_keeps_its_text_labels_and_ids(client, store):
    X = np.random.default_rng(4).normal(size=(40, 3))
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "text": [f"t{i}" for i in range(40)],
                      "label": [f"k{i % 2}" for i in range(40)], "item_id": [f"i{i}" for i in range(40)]})
    raw = parquet_bytes(table)
    uid = client.post("/v1/uploads", json={"content_type": PARQUET, "length": len(raw)}).json["id"]
    r = client.patch(f"/v1/uploads/{uid}", data=raw, content_type="application/offset+octet-stream",
                     headers={"Upload-Offset": "0"})
    assert r.status_code == 204
    r = client.post("/v1/datasets", json={"upload_id": uid, "name": "docs"})
    assert r.status_code == 201 and r.json["has_items"] and r.json["n_classes"] == 2, r.json
    Y, labels, ids = store.load_dataset(r.json["id"])
    np.testing.assert_array_equal(Y, X)
    assert labels[:2] == ["k0", "k1"] and ids[-1] == "i39"
    assert store.get_items(r.json["id"], [0, 39]) == [{"text": "t0"}, {"text": "t39"}]


@pytest.mark.parametrize("text, fragment", [
    (pa.array(["x" * 5001, "y"]), "items[0].text has 5001 characters"),
    (pa.array([1, 2]), "column 'text' is int64"),
])
def test_bad_text_columns_are_422_at_items(client, store, text, fragment):
    table = pa.table({"a": [1.0, 2.0], "text": text})
    before = set(store.matrix_files.keys())
    for data, kind in ((parquet_bytes(table), PARQUET), (arrow_bytes(table), ARROW)):
        r = client.post("/v1/datasets", data=data, content_type=kind)
        assert r.status_code == 422, r.json
        assert any(fragment in m for m in r.json["errors"]["/items"]), r.json
    assert set(store.matrix_files.keys()) == before
