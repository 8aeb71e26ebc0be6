"""``POST /v1/sessions/{id}/refit``: a job on a session's answers (real Redis; the session's passes run inline)."""

import pytest

PROBLEM = "application/problem+json"


def _seeds(y):
    """A true must-link and a true cannot-link of row 0."""
    same = next(i for i in range(1, len(y)) if y[i] == y[0])
    other = next(i for i in range(1, len(y)) if y[i] != y[0])
    return {"must_link": [[0, same]], "cannot_link": [[0, other]]}


def _answered_session(client, store, y, **body):
    """A pairwise session with seeds, one pass, and two questions answered and closed by a second pass."""
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    did = body.pop("dataset_id")
    seeds = _seeds(y)
    sid = client.post("/v1/sessions", json={"dataset_id": did, "n_clusters": 3, "budget": 30,
                                            "answers_per_question": 2, "pool_size": 6, "constraints": seeds,
                                            **body}).json["id"]
    ss = SessionStore(store)
    update_once(store, ss, sid)
    leased = client.post(f"/v1/sessions/{sid}/questions", json={"count": 3, "worker_id": "w1"}).json["questions"]

    def truth(items):
        return "must_link" if y[items[0]] == y[items[1]] else "cannot_link"

    answers = {q["question_id"]: truth(q["items"]) for q in leased[:2]}
    answers[leased[2]["question_id"]] = "dont_know"  # closes with no informative answer: not sent
    batch = [{"question_id": qid, "answer": a, "worker_id": w, "assignment_id": f"{w}-{qid}"}
             for qid, a in answers.items() for w in ("w1", "w2")]
    assert client.post(f"/v1/sessions/{sid}/answers", json={"answers": batch}).status_code == 200
    update_once(store, ss, sid)
    return sid, did, leased, truth


def test_a_refit_is_an_auto_job_on_the_seeds_and_every_informative_aggregated_answer(client, store,
                                                                                       blobs_dataset):
    did, _, y = blobs_dataset
    sid, _, leased, truth = _answered_session(client, store, y, dataset_id=did)
    r = client.post(f"/v1/sessions/{sid}/refit", json={})
    assert r.status_code == 202, r.json
    job = r.json
    assert r.headers["Location"] == f"/v1/jobs/{job['id']}" and "Retry-After" in r.headers
    assert job["method"] == "auto" and job["session_id"] == sid and job["dataset_id"] == did
    assert job["n_clusters"] == 3 and job["state"] == "QUEUED" and job["scale"] == "auto"
    spec = store.get_job_spec(job["id"])
    want = _seeds(y)
    for q in leased[:2]:
        want[truth(q["items"])].append(q["items"])
    assert {k: sorted(spec["constraints"][k]) for k in want} == {k: sorted(v) for k, v in want.items()}
    assert job["n_constraints"] == {k: len(v) for k, v in want.items()}
    assert client.get(f"/v1/jobs/{job['id']}").json["session_id"] == sid
    # another method, K left to auto, and a random_state of its own
    other = client.post(f"/v1/sessions/{sid}/refit", json={"method": "cop_rf", "random_state": 7,
                                                           "params": {"n_estimators": 50}})
    assert other.status_code == 202 and other.json["method"] == "cop_rf" and other.json["random_state"] == 7
    assert client.post(f"/v1/sessions/{sid}/refit", json={"n_clusters": None}).json["n_clusters"] is None
    # an ordinary job names no session
    plain = client.post("/v1/jobs", json={"dataset_id": did, "method": "ccskl", "n_clusters": 3}).json
    assert plain["session_id"] is None


@pytest.mark.parametrize("body, status, code, pointer", [
    ({"method": "dcrc"}, 422, "unsupported_constraints", "/method"),
    ({"method": "nope"}, 422, "unknown_method", "/method"),
    ({"method": "ccskl", "n_clusters": None}, 422, "invalid_n_clusters", "/n_clusters"),
    ({"params": {"budget_factor": 50}}, 422, "invalid_params", "/params/budget_factor"),
    ({"scale": "minmax"}, 422, None, "/scale"),
    ({"labels": [1]}, 422, None, "/labels"),
])
def test_a_refit_the_method_cannot_run_is_a_problem_naming_the_field(client, store, blobs_dataset, body, status,
                                                                      code, pointer):
    did, _, y = blobs_dataset
    sid, _, _, _ = _answered_session(client, store, y, dataset_id=did)
    before = len(store.list_jobs(page_size=100)[0])
    r = client.post(f"/v1/sessions/{sid}/refit", json=body)
    assert r.status_code == status and r.content_type == PROBLEM, r.json
    assert code is None or r.json["code"] == code
    assert any(k.startswith(pointer) for k in r.json["errors"]), r.json
    assert len(store.list_jobs(page_size=100)[0]) == before  # nothing queued


def test_a_session_without_a_model_or_unknown_gets_no_refit(client, blobs_dataset):
    did, _, _ = blobs_dataset
    sid = client.post("/v1/sessions", json={"dataset_id": did, "n_clusters": 3, "budget": 5}).json["id"]
    r = client.post(f"/v1/sessions/{sid}/refit", json={})
    assert r.status_code == 409 and r.content_type == PROBLEM and r.json["code"] == "model_not_ready"
    assert client.post("/v1/sessions/ses_nope/refit", json={}).status_code == 404


def test_a_triplet_session_is_refit_on_its_yes_and_no_answers(client, store, blobs_dataset):
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    did, _, y = blobs_dataset
    sid = client.post("/v1/sessions", json={"dataset_id": did, "question_type": "triplet", "n_clusters": 3,
                                            "budget": 20, "answers_per_question": 1, "pool_size": 4,
                                            "constraints": {"relative": [[0, *_seeds(y)["must_link"][0][1:],
                                                                            _seeds(y)["cannot_link"][0][1]]]}}).json["id"]
    ss = SessionStore(store)
    update_once(store, ss, sid)
    leased = client.post(f"/v1/sessions/{sid}/questions", json={"count": 2, "worker_id": "w"}).json["questions"]
    answers = ["yes", "dont_know"]
    batch = [{"question_id": q["question_id"], "answer": a, "worker_id": "w", "assignment_id": q["question_id"]}
             for q, a in zip(leased, answers)]
    client.post(f"/v1/sessions/{sid}/answers", json={"answers": batch})
    update_once(store, ss, sid)
    assert client.post(f"/v1/sessions/{sid}/refit", json={"method": "e2cp"}).json["code"] == \
        "unsupported_constraints"
    r = client.post(f"/v1/sessions/{sid}/refit", json={})
    assert r.status_code == 202, r.json
    spec = store.get_job_spec(r.json["id"])
    seed = [0, _seeds(y)["must_link"][0][1], _seeds(y)["cannot_link"][0][1], "yes"]
    assert spec["constraints"]["triplets"] == [seed, leased[0]["items"] + ["yes"]]
