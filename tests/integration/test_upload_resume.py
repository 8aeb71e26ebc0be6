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
