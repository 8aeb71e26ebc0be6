"""Sessions seeded with constraints the client already has (``constraints`` in ``POST /v1/sessions``).

The worker's passes run here (``update_once``) on the test store, so each test
decides when a pass runs.
"""

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.metrics import adjusted_rand_score

PROBLEM = "application/problem+json"
X, Y = load_iris(return_X_y=True)


@pytest.fixture()
def iris(client):
    r = client.post("/v1/datasets", json={"data": X.tolist(), "labels": Y.tolist(), "name": "iris"})
    assert r.status_code == 201, r.json
    return r.json["id"]


def _chains(n_per_class, rng):
    """Ground-truth must-links chained inside each class, and a cannot-link between classes' first rows."""
    must, firsts = [], []
    for c in range(3):
        rows = rng.permutation(np.flatnonzero(Y == c))[:n_per_class + 1].tolist()
        must += [[rows[0], r] for r in rows[1:]]
        firsts.append(rows[0])
    cannot = [[firsts[0], firsts[1]], [firsts[0], firsts[2]], [firsts[1], firsts[2]]]
    return must, cannot


def _open(client, store, body):
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    r = client.post("/v1/sessions", json=body)
    assert r.status_code == 201, r.json
    sid, ss = r.json["id"], SessionStore(store)
    update_once(store, ss, sid)
    ss.finish_update(sid)
    return sid


def test_seeded_constraints_shape_the_model_and_cost_no_question(client, store, iris):
    must, cannot = _chains(12, np.random.default_rng(0))
    base = {"dataset_id": iris, "n_clusters": 3, "budget": 10}
    plain = _open(client, store, base)
    seeded = _open(client, store, {**base, "constraints": {"must_link": must, "cannot_link": cannot}})
    s = client.get(f"/v1/sessions/{seeded}").json
    assert s["n_seeds"] == len(must) + len(cannot) == 39
    assert s["counters"]["seeded"] >= 36  # the chains join the sets their first rows found
    assert s["counters"]["questions_closed"] == 0 and s["budget_used"] == 0 and s["budget_remaining"] == 10
    assert s["state"] == "ACTIVE"
    model = client.get(f"/v1/sessions/{seeded}/model").json
    assert model["n_questions_used"] == 0
    ari_plain = adjusted_rand_score(Y, client.get(f"/v1/sessions/{plain}/model").json["labels"])
    ari_seeded = adjusted_rand_score(Y, model["labels"])
    assert ari_seeded > ari_plain + 0.1, (ari_plain, ari_seeded)
    leased = client.post(f"/v1/sessions/{seeded}/questions", json={"count": 10, "worker_id": "w"}).json
    assert len(leased["questions"]) == 10  # the whole budget is still there to ask


def test_a_contradictory_seed_is_kept_and_reported(client, store, iris):
    must, cannot = _chains(3, np.random.default_rng(1))
    a, b = must[0]
    sid = _open(client, store, {"dataset_id": iris, "n_clusters": 3, "budget": 10,
                                "constraints": {"must_link": must, "cannot_link": cannot + [[a, b]]}})
    s = client.get(f"/v1/sessions/{sid}").json
    assert s["counters"]["conflicts"] == 1
    assert [c["items"] for c in s["conflicts"]] == [[a, b]] and s["conflicts"][0]["question_id"] is None


def test_triplet_sessions_take_triplets_and_relative_seeds_free_of_budget(client, store, iris):
    rows = [np.flatnonzero(Y == c) for c in range(3)]
    trip = [[int(rows[0][i]), int(rows[0][i + 1]), int(rows[1][i]), "yes"] for i in range(10)]
    rel = [[int(rows[1][i]), int(rows[1][i + 1]), int(rows[2][i])] for i in range(10)]
    sid = _open(client, store, {"dataset_id": iris, "n_clusters": 3, "budget": 5, "question_type": "triplet",
                                "constraints": {"triplets": trip, "relative": rel}})
    s = client.get(f"/v1/sessions/{sid}").json
    assert (s["n_seeds"], s["counters"]["seeded"], s["budget_used"], s["state"]) == (20, 20, 0, "ACTIVE")
    assert len(client.post(f"/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "w"}).json[
        "questions"]) == 5


@pytest.mark.parametrize("body, pointer, code", [
    ({"constraints": {"triplets": [[0, 1, 2, "yes"]]}}, "/constraints/triplets", "unsupported_constraints"),
    ({"constraints": {"must_link": [[0, 1]], "must_link_weights": [0.5]}}, "/constraints/must_link_weights",
     "unsupported_constraints"),
    ({"constraints": {"hierarchy": [[0, 1], 2]}}, "/constraints/hierarchy", "unsupported_constraints"),
    ({"constraints": {"must_link": [[0, 150]]}}, "/constraints/must_link/0/1", "invalid_constraints"),
    ({"constraints": {"must_link": [[3, 3]]}}, "/constraints/must_link/0", "invalid_constraints"),
    ({"question_type": "triplet", "constraints": {"cannot_link": [[0, 1]]}}, "/constraints/cannot_link",
     "unsupported_constraints"),
])
def test_seeds_a_session_does_not_take_are_a_422_naming_them(client, iris, body, pointer, code):
    r = client.post("/v1/sessions", json={"dataset_id": iris, "n_clusters": 3, **body})
    assert r.status_code == 422 and r.content_type == PROBLEM, r.json
    assert r.json["code"] == code and pointer in r.json["errors"], r.json
    assert client.get(f"/v1/sessions?dataset_id={iris}").json["sessions"] == []  # nothing was created
