"""A resumable upload cut off mid-request over a real socket (gunicorn) goes on from its offset."""

import hashlib
import io
import socket
import time
from urllib.parse import urlparse

import numpy as np
import pytest
import requests

pytestmark = pytest.mark.integration

CHUNK = "application/offset+octet-stream"


def test_an_upload_cut_off_mid_body_resumes_where_it_stopped(live):
    X = np.random.default_rng(5).normal(size=(3000, 64)).astype(np.float32)
    buf = io.BytesIO()
    np.save(buf, X)
    raw = buf.getvalue()
    uid = requests.post(f"{live}/v1/uploads", json={"content_type": "application/x-npy", "length": len(raw)},
                        timeout=30).json()["id"]
    url = urlparse(live)
    sent = 300_000
    head = (f"PATCH /v1/uploads/{uid} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: {CHUNK}\r\n"
            f"Upload-Offset: 0\r\nContent-Length: {len(raw)}\r\n\r\n").encode()
    with socket.create_connection((url.hostname, url.port)) as s:
        s.sendall(head + raw[:sent])
        s.shutdown(socket.SHUT_RDWR)  # the client goes away mid-body
    for _ in range(200):
        r = requests.patch(f"{live}/v1/uploads/{uid}", data=b"", timeout=30,
                           headers={"Content-Type": CHUNK, "Upload-Offset": str(sent)})
        if r.status_code == 204:
            break
        assert r.status_code == 409, r.text  # still receiving, or not all of it written yet
        time.sleep(0.05)
    head = requests.head(f"{live}/v1/uploads/{uid}", timeout=30)
    assert head.headers["Upload-Offset"] == str(sent)  # every byte that arrived was kept
    r = requests.patch(f"{live}/v1/uploads/{uid}", data=raw[sent:], timeout=30,
                       headers={"Content-Type": CHUNK, "Upload-Offset": str(sent)})
    assert r.status_code == 204 and r.headers["Upload-Offset"] == str(len(raw))
    r = requests.post(f"{live}/v1/datasets", json={"upload_id": uid}, timeout=60)
    assert r.status_code == 201, r.text
    assert r.json()["checksum"] == hashlib.sha256(X.tobytes()).hexdigest()
    assert (r.json()["n_samples"], r.json()["n_features"], r.json()["dtype"]) == (3000, 64, "float32")


def test_a_job_runs_on_a_float32_npy_dataset_labelled_afterwards(live):
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=240, n_features=8, centers=3, random_state=3)
    buf = io.BytesIO()
    np.save(buf, X.astype(np.float32))
    r = requests.post(f"{live}/v1/datasets?name=f32", data=buf.getvalue(),
                      headers={"Content-Type": "application/x-npy"}, timeout=30)
    assert r.status_code == 201 and r.json()["dtype"] == "float32", r.text
    did = r.json()["id"]
    r = requests.patch(f"{live}/v1/datasets/{did}", json={"labels": [int(v) for v in y]}, timeout=30)
    assert r.status_code == 200 and r.json()["n_classes"] == 3
    same = [[i, j] for i, j in zip(range(0, 60, 2), range(1, 60, 2)) if y[i] == y[j]]
    job = requests.post(f"{live}/v1/jobs", json={"dataset_id": did, "method": "spectral_learning", "n_clusters": 3,
                                                 "constraints": {"must_link": same}}, timeout=30).json()
    for _ in range(600):
        rec = requests.get(f"{live}/v1/jobs/{job['id']}", timeout=30).json()
        if rec["done"]:
            break
        time.sleep(0.1)
    assert rec["state"] == "SUCCEEDED", rec
    result = requests.get(f"{live}/v1/jobs/{job['id']}/result", timeout=30).json()
    assert result["metrics"]["ari"] > 0.9, result["metrics"]


def test_a_npy_header_past_max_rows_is_refused_before_its_rows_are_sent(live):
    """gunicorn: the header of a 10**6-row file (64 MB announced) and 4 KiB of it arrive (gunicorn reads
    1 KiB at least), no more; the 413 comes anyway."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 8)})
    head = header.getvalue()
    url = urlparse(live)
    req = (f"POST /v1/datasets HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/x-npy\r\n"
           f"Content-Length: {len(head) + 10**6 * 64}\r\nConnection: close\r\n\r\n").encode()
    reply = b""
    with socket.create_connection((url.hostname, url.port), timeout=20) as s:
        s.sendall(req + head + b"\0" * 4096)
        try:
            while not reply.rstrip().endswith(b"}"):
                piece = s.recv(65536)
                if not piece:
                    break
                reply += piece
        except TimeoutError:
            pass
    status, _, rest = reply.partition(b"\r\n")
    assert b" 413 " in status, reply[:500]
    assert b"application/problem+json" in rest and b"at most 5000 rows" in rest, reply[:800]


def test_a_parquet_table_with_text_labels_and_ids_over_http(live):
    import pyarrow as pa
    import pyarrow.parquet as pq

    X = np.random.default_rng(6).normal(size=(300, 16)).astype(np.float32)
    table = pa.table({"embedding": pa.FixedSizeListArray.from_arrays(pa.array(X.ravel()), 16),
                      "text": [f"sentence {i}" for i in range(300)], "label": [i % 4 for i in range(300)],
                      "item_id": [f"doc-{i}" for i in range(300)]})
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=64)
    r = requests.post(f"{live}/v1/datasets?name=docs", data=buf.getvalue(),
                      headers={"Content-Type": "application/vnd.apache.parquet"}, timeout=60)
    assert r.status_code == 201, r.text
    meta = r.json()
    assert (meta["n_samples"], meta["n_features"], meta["n_classes"]) == (300, 16, 4)
    assert meta["has_items"] and meta["has_labels"] and meta["has_item_ids"]
    assert requests.get(f"{live}/v1/datasets/{meta['id']}", timeout=30).json()["has_items"]
    big = pa.table({"embedding": pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(5001 * 2)), 2)})
    buf = io.BytesIO()
    pq.write_table(big, buf)
    r = requests.post(f"{live}/v1/datasets", data=buf.getvalue(),
                      headers={"Content-Type": "application/vnd.apache.parquet"}, timeout=60)
    assert r.status_code == 413 and r.json()["errors"] == {"/data": ["at most 5000 rows"]}, r.text
