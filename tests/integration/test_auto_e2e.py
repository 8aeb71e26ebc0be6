"""One ``auto`` job over the real stack (Redis, Celery worker, gunicorn): K chosen, the auto block served."""

import numpy as np
import pytest
import requests
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from .helpers import submit, upload, wait_done

pytestmark = pytest.mark.integration


def test_an_auto_job_chooses_k_and_a_setting_and_says_why(live):
    X, y = make_blobs(90, centers=[[0, 0], [7, 7], [-7, 7]], cluster_std=0.8, random_state=2)
    X = X * np.array([1.0, 50.0])  # unequal column scales: scale left unset, auto decides
    did = upload(live, X, y)
    rng = np.random.default_rng(0)
    pairs = rng.integers(0, 90, (70, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    r = submit(live, dataset_id=did, method="auto", n_clusters=None, random_state=1,
               params={"candidates": ["ccskl-1", "sc-rbf", "ckm", "e2cp-0.6"]},
               constraints={"must_link": pairs[same].tolist(), "cannot_link": pairs[~same].tolist()})
    assert r.json()["scale"] == "auto" and r.json()["n_clusters"] is None
    job = wait_done(live, r.json()["id"], timeout=300)
    assert job["state"] == "SUCCEEDED", job.get("error")
    res = requests.get(live + job["result_url"], timeout=30).json()
    auto = res["auto"]
    assert res["method"] == "auto"
    assert auto["chosen"]["id"] in {"ccskl-1", "sc-rbf", "ckm", "e2cp-0.6"}
    assert auto["chosen"]["n_clusters"] == res["n_clusters"] == 3 and auto["chosen"]["k_selected"] is True
    assert auto["k"]["range"][0] >= 2 and auto["chosen"]["scale"] in ("none", "zscore")
    assert {c["id"] for c in auto["candidates"]} == {"ccskl-1", "sc-rbf", "ckm", "e2cp-0.6"}
    assert auto["timing"]["budget_s"] >= 1 and auto["timing"]["t_default_s"] > 0 and auto["folds"]["units"] > 10
    assert len(res["labels"]) == 90 and adjusted_rand_score(y, res["labels"]) > 0.8
