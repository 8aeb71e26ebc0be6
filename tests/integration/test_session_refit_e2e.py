"""A crowd session's answers refit with ``auto`` over the real stack (gunicorn, Redis, Celery worker)."""

import numpy as np
import pytest
import requests
from sklearn.metrics import adjusted_rand_score

from bench.datasets import load
from scripts.stack import wait_up_to_date

from .helpers import upload, wait_done
from .test_sessions_e2e import _crowd_batch

pytestmark = pytest.mark.integration


def _closed(base, sid):
    out, token = [], None
    while True:
        page = requests.get(f"{base}/v1/sessions/{sid}/questions", timeout=30,
                            params={"status": "closed", "page_size": 100, **({"page_token": token} if token else {})})
        out += page.json()["questions"]
        token = page.json()["next_page_token"]
        if not token:
            return out


def test_a_finished_crowd_session_is_refit_with_auto_on_its_answers(live):
    X, y = load("iris", zscore=False)
    did = upload(live, X, y)
    r = requests.post(f"{live}/v1/sessions", json={"dataset_id": did, "n_clusters": 3, "budget": 30,
                                                   "answers_per_question": 3, "pool_size": 10,
                                                   "constraints": {"must_link": [[0, 1]]}}, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    session = wait_up_to_date(live, sid)
    rng, votes, rounds = np.random.default_rng(0), {}, 0
    while session["state"] == "ACTIVE" and rounds < 30:
        rounds += 1
        batch = _crowd_batch(live, sid, rng, lambda it: "must_link" if y[it[0]] == y[it[1]] else "cannot_link",
                             ["must_link", "cannot_link"], votes)
        if not batch:
            break
        requests.post(f"{live}/v1/sessions/{sid}/answers", json={"answers": batch}, timeout=30)
        session = wait_up_to_date(live, sid)
    assert session["state"] == "COMPLETED", session
    model = requests.get(f"{live}/v1/sessions/{sid}/model", timeout=30).json()

    r = requests.post(f"{live}/v1/sessions/{sid}/refit", json={"random_state": 3}, timeout=30)
    assert r.status_code == 202, r.text
    assert r.headers["Location"] == f"/v1/jobs/{r.json()['id']}" and int(r.headers["Retry-After"]) >= 1
    job = wait_done(live, r.json()["id"], timeout=300)
    assert job["state"] == "SUCCEEDED", job.get("error")
    assert job["session_id"] == sid and job["method"] == "auto" and job["random_state"] == 3
    closed = [q for q in _closed(live, sid) if q["aggregated"] in ("must_link", "cannot_link")]
    informative = {k: sum(q["aggregated"] == k for q in closed) for k in ("must_link", "cannot_link")}
    informative["must_link"] += 1  # the seed
    assert job["n_constraints"] == informative
    res = requests.get(live + job["result_url"], timeout=30).json()
    auto = res["auto"]
    assert auto["chosen"]["id"] in {c["id"] for c in auto["candidates"]} and auto["chosen"]["n_clusters"] == 3
    assert auto["folds"]["n_constraints"] <= sum(informative.values()) and auto["timing"]["budget_s"] > 0
    assert len(res["labels"]) == len(y)
    refit, session_ari = adjusted_rand_score(y, res["labels"]), adjusted_rand_score(y, model["labels"])
    assert refit > 0.5, (refit, session_ari, auto["chosen"])
    # the session goes on unchanged: its model is the one it had
    assert requests.get(f"{live}/v1/sessions/{sid}/model", timeout=30).json()["labels"] == model["labels"]
