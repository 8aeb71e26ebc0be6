"""Helpers of the result-page tests: a finished job and a session with a few passes, on the real stack."""

import json
import re

import numpy as np
import requests

from bench.datasets import load
from scripts.stack import wait_up_to_date

from .helpers import submit, upload, wait_done

#: A crowd: worker -> probability of a random answer.
CROWD = {"ann": 0.0, "bob": 0.0, "sloppy": 0.5}


def page_data(html):
    """The JSON block a result page embeds."""
    m = re.search(r'<script type="application/json" id="shoal-data">(.*?)</script>', html, re.S)
    assert m, html[:500]
    return json.loads(m.group(1))


def iris_job(base, method="spectral_learning", name="iris", item_ids=None):
    """A finished job on iris with must-link / cannot-link pairs from the ground truth, one of them wrong,
    and one cannot-link inside a must-link chain: (job id, y). Item ids ``iris-{row}`` unless given."""
    X, y = load("iris", zscore=False)
    did = upload(base, X, y, item_ids or [f"iris-{i}" for i in range(len(y))], name=name)
    rng = np.random.default_rng(0)
    ml, cl = [], []
    while len(ml) + len(cl) < 30:
        i, j = (int(v) for v in rng.choice(len(y), 2, replace=False))
        (ml if y[i] == y[j] else cl).append([i, j])
    a, b, c = (int(v) for v in np.flatnonzero(y == 0)[:3])
    ml += [[a, b], [b, c], [0, 100]]  # the last is wrong: rows 0 and 100 are of different species
    cl += [[a, c]]  # contradicts the chain a - b - c
    job = wait_done(base, submit(base, dataset_id=did, method=method, n_clusters=3, scale="zscore",
                                 constraints={"must_link": ml, "cannot_link": cl}).json()["id"])
    assert job["state"] == "SUCCEEDED", job
    return job["id"], y


def iris_session(base, rounds=4):
    """A pairwise session on iris answered by :data:`CROWD` for ``rounds`` passes, then one more lease
    left open (questions in flight): (session id, y)."""
    X, y = load("iris", zscore=False)
    did = upload(base, X, y, [f"iris-{i}" for i in range(len(y))], name="iris")
    r = requests.post(f"{base}/v1/sessions", json={"dataset_id": did, "n_clusters": 3, "budget": 60,
                                                    "answers_per_question": 3, "pool_size": 10}, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    wait_up_to_date(base, sid)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        batch = []
        for w, p in CROWD.items():
            qs = requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": w},
                               timeout=30).json()["questions"]
            for q in qs:
                i, j = q["items"]
                ans = (str(rng.choice(["must_link", "cannot_link"])) if rng.random() < p
                       else "must_link" if y[i] == y[j] else "cannot_link")
                batch.append({"question_id": q["question_id"], "answer": ans, "worker_id": w,
                              "assignment_id": f"{w}-{q['question_id']}"})
        if not batch:
            break
        requests.post(f"{base}/v1/sessions/{sid}/answers", json={"answers": batch}, timeout=30).raise_for_status()
        wait_up_to_date(base, sid)
    requests.post(f"{base}/v1/sessions/{sid}/questions", json={"count": 2, "worker_id": "ann"}, timeout=30)
    return sid, y
