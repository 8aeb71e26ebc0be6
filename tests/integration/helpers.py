"""HTTP helpers for the end-to-end tests (real gunicorn, Redis and Celery worker)."""

import time

import requests


def upload(base, X, y=None, item_ids=None, name="test"):
    body = {"name": name, "data": [list(map(float, r)) for r in X]}
    if y is not None:
        body["labels"] = [int(v) for v in y]
    if item_ids is not None:
        body["item_ids"] = item_ids
    r = requests.post(f"{base}/v1/datasets", json=body, timeout=30)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def submit(base, **body):
    r = requests.post(f"{base}/v1/jobs", json=body, timeout=30)
    assert r.status_code == 202, r.text
    return r


def wait_done(base, job_id, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = requests.get(f"{base}/v1/jobs/{job_id}", timeout=30).json()
        if job["done"]:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} not done after {timeout} s: {job}")
