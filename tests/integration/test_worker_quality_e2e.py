"""Gold flags inside a session's passes, through the real stack (gunicorn, Celery, Redis).

Three workers answer a pairwise session on iris (one answer a question) through their annotator
pages' JSON endpoint (``POST /annotate/<token>/step``), gold questions mixed in: one answers
right (wrong 5% of the time), two at random. Two sessions (majority vote) get the same crowd:
one with ``worker_quality.exclude_flagged`` and one without. Gold flags the random workers in
both; only the first leaves their earlier answers out of its passes, stops handing them
questions (their pages end ``flagged``) and still completes, and its model is better.
Each worker steps after the model has taken every answer before, so a session does not
depend on how fast its passes run.
"""

import time

import numpy as np
import pytest
import requests
from sklearn.metrics import adjusted_rand_score

from bench.datasets import load

from .helpers import upload

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]

# worker -> probability of a wrong answer; the honest worker answers gold right (with gold every second
# question and 4 gold answers judged, two slips of a 5% worker would flag it and leave nobody to answer)
CROWD = {"honest": 0.05, "random-1": 0.5, "random-2": 0.5}
FLIP = {"must_link": "cannot_link", "cannot_link": "must_link"}


def _gold(y, rng, n=12):
    out = []
    while len(out) < n:
        i, j = (int(v) for v in rng.choice(len(y), 2, replace=False))
        out.append({"items": [i, j], "answer": "must_link" if y[i] == y[j] else "cannot_link"})
    return out


def _up_to_date(live, sid, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        state = requests.get(f"{live}/v1/sessions/{sid}", timeout=30).json()
        if state["observed_revision"] == state["revision"] or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


def _run(live, did, y, exclude):
    body = {"dataset_id": did, "question_type": "pairwise", "n_clusters": 3, "budget": 60,
            "answers_per_question": 1, "pool_size": 20, "random_state": 0, "preset": "noisy_answers", "aggregation": "majority",
            "worker_quality": {"min_gold_accuracy": 0.7, "min_gold_answered": 4, "exclude_flagged": exclude}}
    r = requests.post(f"{live}/v1/sessions", json=body, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    assert r.json()["worker_quality"] == body["worker_quality"]
    r = requests.post(f"{live}/v1/sessions/{sid}/gold", json={"every": 2, "questions": _gold(y, np.random.default_rng(7))},
                      timeout=30)
    assert r.status_code == 200, r.text
    pages = {}
    for w in CROWD:
        r = requests.post(f"{live}/v1/sessions/{sid}/annotators", json={"worker_id": w}, timeout=30)
        assert r.status_code == 201, r.text
        pages[w] = r.json()["url"] + "/step"
    rngs = {w: np.random.default_rng(k) for k, w in enumerate(CROWD)}
    pending = {w: [] for w in CROWD}
    done, deadline, last_move, seen = {}, time.monotonic() + 240, time.monotonic(), None
    while len(done) < len(CROWD):
        moved = False
        for w, p_wrong in CROWD.items():
            if w in done:
                continue
            r = requests.post(pages[w], json={"answers": pending[w], "next": True}, timeout=30)
            assert r.status_code == 200, r.text
            out, pending[w] = r.json(), []
            _up_to_date(live, sid)  # each worker leases from the model of every answer before its own
            moved |= any(x["outcome"] == "accepted" for x in out["results"])
            if out["done"]:
                done[w] = out["done"]
            elif out["question"] is not None:
                q = out["question"]
                i, j = (it["row"] for it in q["items"])
                truth = "must_link" if y[i] == y[j] else "cannot_link"
                pending[w] = [{"question_id": q["question_id"], "ms": 500,
                               "answer": FLIP[truth] if rngs[w].random() < p_wrong
                               and not (w == "honest" and q["question_id"].startswith("gold-")) else truth}]
        state = requests.get(f"{live}/v1/sessions/{sid}", timeout=30).json()
        if state["state"] == "COMPLETED":
            break
        if moved or (state["revision"], state["budget_used"]) != seen:
            seen, last_move = (state["revision"], state["budget_used"]), time.monotonic()
        assert time.monotonic() - last_move < 60 and time.monotonic() < deadline, state
        if not moved:
            time.sleep(0.2)
    for _ in range(300):  # the last pass
        state = requests.get(f"{live}/v1/sessions/{sid}", timeout=30).json()
        if state["state"] == "COMPLETED" and state["observed_revision"] == state["revision"]:
            break
        time.sleep(0.2)
    assert state["state"] == "COMPLETED", (done, state)
    model = requests.get(f"{live}/v1/sessions/{sid}/model", timeout=30).json()
    workers = requests.get(f"{live}/v1/sessions/{sid}/workers", timeout=30).json()["workers"]
    return model, {w["worker_id"]: w for w in workers}, done


def test_flagged_workers_answers_stop_counting(live):
    X, y = load("iris", zscore=False)
    did = upload(live, X, y)
    kept, kept_tally, kept_done = _run(live, did, y, exclude=False)
    dropped, dropped_tally, dropped_done = _run(live, did, y, exclude=True)
    # excluded: the random workers' pages end "flagged" (no more questions), the honest one's with the session
    assert dropped_done["random-1"] == dropped_done["random-2"] == "flagged", dropped_done
    assert dropped_done.get("honest") in (None, "session") and "flagged" not in kept_done.values(), (dropped_done,
                                                                                                   kept_done)
    for model, tally, exclude in ((kept, kept_tally, False), (dropped, dropped_tally, True)):
        rows = {w["worker_id"]: w for w in model["workers"]}
        assert set(rows) == set(CROWD), rows
        assert not rows["honest"]["flagged"] and rows["honest"]["gold_accuracy"] >= 0.7, rows["honest"]
        for w in ("random-1", "random-2"):
            assert rows[w]["flagged"] and rows[w]["gold_answered"] >= 4, rows[w]
            assert rows[w]["gold_accuracy"] == tally[w]["gold_accuracy"] < 0.7, (rows[w], tally[w])
            assert rows[w]["excluded"] is exclude
        assert not rows["honest"]["excluded"]
    assert kept["excluded_answers"] == 0 and dropped["excluded_answers"] > 0
    ari_kept, ari_dropped = (adjusted_rand_score(y, m["labels"]) for m in (kept, dropped))
    print(f"ARI with the random workers' answers {ari_kept:.3f}, without (flagged by gold) {ari_dropped:.3f}; "
          f"answers left out {dropped['excluded_answers']}")
    assert ari_dropped >= ari_kept + 0.1, (ari_kept, ari_dropped)
