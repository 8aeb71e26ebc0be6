"""Session creation: question type, strategy and parameters are checked before anything is stored."""

import time

import pytest

PROBLEM = "application/problem+json"


@pytest.mark.parametrize("body, pointer, fragment", [
    ({"question_type": "triplet"}, "/n_clusters", "required with question_type 'triplet'"),
    ({"question_type": "triplet", "n_clusters": 3, "strategy": "urasc"}, "/strategy", "uncertainty, random"),
    ({"question_type": "pairwise", "strategy": "uncertainty"}, "/strategy", "urasc, random"),
    ({"question_type": "triplet", "n_clusters": 3, "params": {"k_growth": "verify"}}, "/params/k_growth",
     "Unknown"),
    ({"question_type": "triplet", "n_clusters": 3, "params": {"epsilon": 0.9}}, "/params/epsilon", ""),
    ({"question_type": "triplet", "n_clusters": 61}, "/n_clusters", ""),
    ({"preset": "fastest"}, "/preset", "noisy_answers"),
    ({"question_type": "triplet", "n_clusters": 3, "preset": "noisy_answers"}, "/preset", "no presets"),
    ({"preset": "noisy_answers", "params": {"k_growth": "always"}}, "/params/k_growth", ""),
    ({"aggregation": "plurality"}, "/aggregation", "one_coin"),
    ({"lease_seconds": 0}, "/lease_seconds", ""),
])
def test_invalid_triplet_and_strategy_combinations_are_422_naming_the_field(client, blobs_dataset, body, pointer,
                                                                             fragment):
    r = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], **body})
    assert r.status_code == 422 and r.content_type == PROBLEM, r.json
    assert pointer in r.json["errors"], r.json
    assert fragment in " ".join(r.json["errors"][pointer])


@pytest.mark.parametrize("question_type, n_clusters, strategy", [
    ("triplet", 3, "uncertainty"), ("pairwise", None, "urasc")])
def test_default_strategy_follows_the_question_type(client, blobs_dataset, question_type, n_clusters, strategy):
    r = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "question_type": question_type,
                                          "n_clusters": n_clusters, "budget": 5})
    assert r.status_code == 201, r.json
    assert r.json["strategy"] == strategy and r.json["question_type"] == question_type
    assert r.json["params"]["epsilon" if question_type == "triplet" else "k_growth"] is not None
    assert r.json["aggregation"] == "one_coin"


def test_lease_seconds_is_recorded_and_shown(client, blobs_dataset):
    default = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0]}).json
    given = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "lease_seconds": 90}).json
    assert (default["lease_seconds"], given["lease_seconds"]) == (600, 90)
    assert client.get(f"/v1/sessions/{given['id']}").json["lease_seconds"] == 90


def test_majority_vote_is_kept_when_asked_for(client, blobs_dataset):
    r = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5, "aggregation": "majority"})
    assert r.status_code == 201 and r.json["aggregation"] == "majority"
    assert client.get(f"/v1/sessions/{r.json['id']}").json["aggregation"] == "majority"


def test_pending_model_reason_says_whether_a_pass_is_queued_or_running(client, store, blobs_dataset):
    from workers.session_store import SessionStore

    r = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5})
    assert r.status_code == 201, r.json
    sid = r.json["id"]
    s = client.get(f"/v1/sessions/{sid}").json  # no worker consumes this store's queue
    cond = {c["type"]: c for c in s["conditions"]}["ModelUpToDate"]
    assert cond["status"] == "False" and cond["reason"].endswith("queued")
    assert s["pass_started_at"] is None and s["last_pass_seconds"] is None
    SessionStore(store).update(sid, pass_started_at="2026-11-25T10:00:00.000Z")
    s = client.get(f"/v1/sessions/{sid}").json
    cond = {c["type"]: c for c in s["conditions"]}["ModelUpToDate"]
    assert cond["reason"].endswith("running (started 2026-11-25T10:00:00.000Z)")
    assert s["pass_started_at"] == "2026-11-25T10:00:00.000Z"


def test_session_callback_to_a_private_host_is_refused_and_nothing_stored(store, blobs_dataset):
    from service import create_app
    from workers.session_store import SessionStore

    client = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_CALLBACK_ALLOW_PRIVATE": False}).test_client()
    before = set(store.r.scan_iter(match=SessionStore(store)._key("*")))
    r = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "callback_url": "http://169.254.169.254/x"})
    assert r.status_code == 422 and r.mimetype == PROBLEM and "/callback_url" in r.json["errors"], r.json
    assert set(store.r.scan_iter(match=SessionStore(store)._key("*"))) == before
    r = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "callback_url": "https://example.com/hook"})
    assert r.status_code == 201 and r.json["callback_url"] == "https://example.com/hook", r.json


def test_every_session_preset_is_accepted_by_name_and_recorded(client, blobs_dataset):
    presets = client.get("/v1/methods").json["session_presets"]
    assert presets
    for preset in presets:
        kind = preset["question_type"]
        k = 3 if kind == "triplet" else None
        base = {"dataset_id": blobs_dataset[0], "question_type": kind, "n_clusters": k, "budget": 5}
        plain = client.post("/v1/sessions", json=base).json
        assert preset["description"] and any(plain["params"][f] != v for f, v in preset["params"].items())
        given = client.post("/v1/sessions", json={**base, "params": preset["params"]})
        named = client.post("/v1/sessions", json={**base, "preset": preset["name"]})
        assert given.status_code == named.status_code == 201, (given.json, named.json)
        assert named.json["params"] == given.json["params"] and named.json["preset"] == preset["name"]
        assert client.get(f"/v1/sessions/{named.json['id']}").json["preset"] == preset["name"]
        assert plain["preset"] is None


def test_params_given_beside_a_session_preset_override_it(client, blobs_dataset):
    r = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5, "preset": "noisy_answers",
                                          "params": {"representative": "most_similar"}})
    assert r.status_code == 201, r.json
    assert r.json["params"]["representative"] == "most_similar" and r.json["params"]["k_growth"] == "verify"


def test_a_deleted_session_is_gone_with_every_key_and_stays_gone(client, store, blobs_dataset):
    from workers.session_store import SessionStore

    ss = SessionStore(store)
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5}).json["id"]
    ss.replace_pool(sid, [{"question_id": "q1", "type": "pairwise", "items": [0, 1]}], 0)
    assert ss.record_answer(sid, "q1", "must_link", "w1", "a1", 0) == "accepted:ready"  # one answer closes it
    ss.add_report(sid, "disagreements", {"question_id": "q1"})
    assert len(list(store.r.scan_iter(match=ss._key(sid, "*")))) >= 5
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    assert list(store.r.scan_iter(match=ss._key(sid, "*"))) == []
    for method, path, body in [("get", "", None), ("delete", "", None), ("get", "/model", None),
                               ("post", "/questions", {"count": 1}),
                               ("post", "/answers", {"answers": [{"question_id": "q1", "answer": "must_link"}]})]:
        r = getattr(client, method)(f"/v1/sessions/{sid}{path}", json=body)
        assert r.status_code == 404 and r.mimetype == PROBLEM, (method, path, r.json)
    # a worker pass that was running writes nothing back into the record
    assert ss.update(sid, state="FAILED") is False and ss.get(sid) is None
    assert ss.record_answer(sid, "q1", "must_link", "w2", "a2", 0) == "rejected:the session was deleted"
    assert ss.record_answers(sid, [{"question_id": "q1", "answer": "must_link"}], 0, 1) is None
    assert not store.r.exists(ss._key(sid))


def test_all_answers_are_every_recorded_answer_in_arrival_order(client, store, blobs_dataset):
    """The per-pass aggregation reads one answer log; it holds what each question's list holds."""
    from workers.session_store import SessionStore

    ss = SessionStore(store)
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5,
                                            "answers_per_question": 2}).json["id"]
    ss.replace_pool(sid, [{"question_id": q, "type": "pairwise", "items": it}
                          for q, it in (("q1", [0, 1]), ("q2", [0, 2]))], 0)
    given = [("q2", "cannot_link", "w1", "a1"), ("q1", "must_link", "w1", "a2"), ("q2", "dont_know", "w2", "a3"),
             ("q2", "must_link", "w3", "a4"), ("q1", "must_link", "w1", "a2"), ("q9", "must_link", "w1", "a5")]
    outcomes = [ss.record_answer(sid, q, a, w, asg, 0) for q, a, w, asg in given]
    assert outcomes == ["accepted", "accepted", "accepted:ready", "late:the question already has its answers",
                        "duplicate", "rejected:unknown question_id"]
    logged = ss.all_answers(sid)
    assert [(q, a["answer"], a["worker_id"], a["assignment_id"]) for q, a in logged] == given[:3]
    assert [a for q, a in logged if q == "q2"] == ss.answers(sid, ["q2"])[0]


def test_a_session_from_before_the_answer_log_gets_its_log_rebuilt_from_the_question_lists(
        client, store, blobs_dataset):
    """After an upgrade, a session whose early answers were never logged keeps them all."""
    from workers.session_store import SessionStore

    ss = SessionStore(store)
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5,
                                            "answers_per_question": 3}).json["id"]
    ss.replace_pool(sid, [{"question_id": q, "type": "pairwise", "items": it}
                          for q, it in (("q1", [0, 1]), ("q2", [0, 2]))], 0)
    given = [("q2", "cannot_link", "w1"), ("q1", "must_link", "w1"), ("q2", "dont_know", "w2")]
    for q, a, w in given:
        assert ss.record_answer(sid, q, a, w, None, 0) == "accepted"
    # what the record and the keys of a session created before the log looked like
    store.r.delete(ss._key(sid, ":answer_log"))
    store.r.hdel(ss._key(sid), "answer_log")
    assert "answer_log" not in ss.get(sid)
    given.append(("q1", "cannot_link", "w2"))  # arrives after the upgrade: the only one logged
    assert ss.record_answer(sid, *given[-1], None, 0) == "accepted"
    assert store.r.llen(ss._key(sid, ":answer_log")) == 1
    logged = ss.all_answers(sid)
    assert [(q, a["answer"], a["worker_id"]) for q, a in logged] == given
    assert ss.get(sid)["answer_log"] is True
    assert [a for q, a in logged if q == "q1"] == ss.answers(sid, ["q1"])[0]
    # rebuilt once: later answers are appended by the answer script, in order
    given.append(("q2", "cannot_link", "w3"))  # (a must_link would tie q2's answers: one more asked)
    assert ss.record_answer(sid, *given[-1], None, 0) == "accepted:ready"
    assert [(q, a["answer"], a["worker_id"]) for q, a in ss.all_answers(sid)] == given


def test_sessions_are_listed_newest_first_page_by_page(client, blobs_dataset):
    ids = [client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5}).json["id"]
           for _ in range(3)]
    first = client.get("/v1/sessions?page_size=2").json
    assert [s["id"] for s in first["sessions"]] == ids[:0:-1] and first["next_page_token"]
    assert all(s["model_url"].endswith("/model") and "created_ts" not in s for s in first["sessions"])
    second = client.get(f"/v1/sessions?page_size=2&page_token={first['next_page_token']}").json
    assert second["sessions"][0]["id"] == ids[0]
    # state filter (no worker runs here: every new session is INITIALIZING), deletion, bad input
    assert ids[2] in [s["id"] for s in client.get("/v1/sessions?state=INITIALIZING").json["sessions"]]
    assert ids[2] not in [s["id"] for s in client.get("/v1/sessions?state=ACTIVE").json["sessions"]]
    assert client.delete(f"/v1/sessions/{ids[2]}").status_code == 204
    assert [s["id"] for s in client.get("/v1/sessions?page_size=1").json["sessions"]] == [ids[1]]
    for query, pointer in [("state=DONE", "state"), ("page_size=0", "page_size"), ("page_token=%%%", None)]:
        r = client.get(f"/v1/sessions?{query}")
        assert r.status_code in (400, 422) and r.mimetype == PROBLEM, (query, r.json)


def test_the_catalogue_lists_each_question_types_strategies_and_parameters(client, blobs_dataset):
    from schemas.sessions import TripletParamsSchema, URASCParamsSchema

    kinds = {s["question_type"]: s for s in client.get("/v1/methods").json["session_strategies"]}
    schemas = {"pairwise": URASCParamsSchema, "triplet": TripletParamsSchema}
    assert set(kinds) == set(schemas)
    for kind, entry in kinds.items():
        assert [p["name"] for p in entry["params"]] == list(schemas[kind]().fields)
        body = {"dataset_id": blobs_dataset[0], "question_type": kind, "n_clusters": 3, "budget": 5}
        for strategy in entry["strategies"]:  # every listed strategy is accepted; the first is the default
            assert client.post("/v1/sessions", json={**body, "strategy": strategy}).status_code == 201
        assert client.post("/v1/sessions", json=body).json["strategy"] == entry["strategies"][0]


def test_questions_list_their_answers_and_the_aggregate(client, store, blobs_dataset):
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    did, _, y = blobs_dataset
    sid = client.post("/v1/sessions", json={"dataset_id": did, "n_clusters": 3, "budget": 30,
                                            "answers_per_question": 2, "pool_size": 6}).json["id"]
    ss = SessionStore(store)
    update_once(store, ss, sid)  # the worker's first pass, run here: opens the pool
    opened = client.get(f"/v1/sessions/{sid}/questions?status=open&page_size=100").json["questions"]
    assert len(opened) == 6 and all(q["answers"] == [] and q["aggregated"] is None for q in opened)

    def truth(items):
        return "must_link" if y[items[0]] == y[items[1]] else "cannot_link"

    leased = client.post(f"/v1/sessions/{sid}/questions", json={"count": 2, "worker_id": "w1"}).json["questions"]
    batch = [{"question_id": q["question_id"], "answer": truth(q["items"]), "worker_id": w,
              "assignment_id": f"{w}-{q['question_id']}"} for q in leased for w in ("w1", "w2")]
    r = client.post(f"/v1/sessions/{sid}/answers", json={"answers": batch})
    assert [x["outcome"] for x in r.json["results"]] == ["accepted"] * 4
    update_once(store, ss, sid)  # closes the two answered questions
    closed = client.get(f"/v1/sessions/{sid}/questions?status=closed").json["questions"]
    assert sorted(q["question_id"] for q in closed) == sorted(q["question_id"] for q in leased)
    for q in closed:
        assert q["status"] == "closed" and q["n_answers"] == 2 and q["aggregated"] == truth(q["items"])
        assert [(a["worker_id"], a["assignment_id"], a["answer"]) for a in q["answers"]] == [
            (w, f"{w}-{q['question_id']}", truth(q["items"])) for w in ("w1", "w2")]
        assert q["item_ids"] == [f"item-{i}" for i in q["items"]]

    seen, token = [], None
    while True:
        page = client.get(f"/v1/sessions/{sid}/questions?page_size=2" + (f"&page_token={token}" if token else ""))
        assert page.status_code == 200 and len(page.json["questions"]) <= 2
        seen += [q["question_id"] for q in page.json["questions"]]
        token = page.json["next_page_token"]
        if not token:
            break
    assert seen == sorted(set(seen)) and len(seen) == store.r.hlen(f"shoal:session:{sid}:questions") >= 6
    assert client.get(f"/v1/sessions/{sid}/questions?page_token=garbage").status_code == 400
    bad = client.get(f"/v1/sessions/{sid}/questions?status=maybe")
    assert bad.status_code == 422 and bad.content_type == PROBLEM
    assert client.get("/v1/sessions/ses_nope/questions").status_code == 404


@pytest.mark.parametrize("rows, body, pointer, fragment", [
    (2, {}, "/dataset_id", "has 2 rows, at least 3"),
    (2, {"question_type": "triplet", "n_clusters": 2}, "/dataset_id", "has 2 rows, at least 3"),
    (3, {"n_clusters": 3}, "/n_clusters", "must be < n_samples"),
    (3, {"n_clusters": 3, "strategy": "random"}, "/n_clusters", "must be < n_samples"),
    (3, {"question_type": "triplet", "n_clusters": 4}, "/n_clusters", "<= n_samples (3)"),
])
def test_a_session_that_could_never_run_is_refused_at_creation(client, rows, body, pointer, fragment):
    did = client.post("/v1/datasets", json={"data": [[float(i), float(i * i)] for i in range(rows)]}).json["id"]
    r = client.post("/v1/sessions", json={"dataset_id": did, **body})
    assert r.status_code == 422 and r.content_type == PROBLEM, r.json
    assert list(r.json["errors"]) == [pointer] and fragment in r.json["errors"][pointer][0], r.json
    assert fragment in r.json["detail"]


@pytest.mark.parametrize("body", [{"n_clusters": 2}, {"question_type": "triplet", "n_clusters": 3},
                                  {"question_type": "triplet", "n_clusters": 3, "strategy": "random"}])
def test_the_smallest_sessions_that_can_run_are_accepted_and_run(client, store, body):
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    did = client.post("/v1/datasets", json={"data": [[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]]}).json["id"]
    r = client.post("/v1/sessions", json={"dataset_id": did, "budget": 2, **body})
    assert r.status_code == 201, r.json
    assert update_once(store, SessionStore(store), r.json["id"])[0] in ("ACTIVE", "COMPLETED")


def test_a_failed_session_says_so_in_its_condition_and_model(client, store, blobs_dataset, monkeypatch):
    """A pass that fails (here: the dataset expired before the first pass) leaves a FAILED
    session whose condition and model answer name the failure, not a queued pass."""
    from workers import session_tasks

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 5}).json["id"]
    store.delete_dataset(blobs_dataset[0])  # as if its TTL ran out
    monkeypatch.setattr(session_tasks, "get_store", lambda: store)
    from workers.session_store import SessionStore

    queued = store.r.get(SessionStore(store)._key(sid, ":update")).decode()  # the id of the task queued
    session_tasks.session_update.apply(args=[sid], task_id=queued)  # the worker's task, run here
    s = client.get(f"/v1/sessions/{sid}").json
    assert s["state"] == "FAILED" and "no longer exists" in s["error"]["detail"]
    cond = {c["type"]: c for c in s["conditions"]}["ModelUpToDate"]
    assert cond["status"] == "False" and "failed" in cond["reason"] and s["error"]["detail"] in cond["reason"]
    r = client.get(f"/v1/sessions/{sid}/model")
    assert r.status_code == 409 and r.content_type == PROBLEM and r.json["code"] == "session_failed", r.json
    assert s["error"]["detail"] in r.json["detail"] and r.json["error"] == s["error"]


@pytest.mark.parametrize("kind", ["session", "job"])
def test_work_the_broker_refused_is_failed_and_frees_its_dataset(store, kind):
    """The store reachable, the broker not (a refused connection): the 503 leaves the session FAILED, as
    a job, so the dataset can be deleted. The session stayed INITIALIZING, holding its dataset (DELETE
    answered 409 naming it) until it expired, though its client was told the creation failed."""
    from dataclasses import replace

    from service import create_app
    from workers.store import Store

    broken = Store(store.r, replace(store.settings, redis_url="redis://127.0.0.1:1/1"))
    c = create_app({"TESTING": True, "SHOAL_STORE": broken}).test_client()
    did = c.post("/v1/datasets", json={"data": [[float(i % 7), float(i % 3)] for i in range(40)]}).json["id"]
    body = {"dataset_id": did, "n_clusters": 2, **({"method": "spectral"} if kind == "job" else {})}
    r = c.post(f"/v1/{kind}s", json=body)
    assert r.status_code == 503 and r.json["code"] == "unavailable", r.json
    listed = c.get(f"/v1/{kind}s").json[f"{kind}s"]
    rec = next(x for x in listed if x["dataset_id"] == did)
    assert rec["state"] == "FAILED" and rec["error"]["code"] == "queue_unavailable", rec
    assert c.delete(f"/v1/datasets/{did}").status_code == 204


def test_a_completed_session_keeps_its_item_ids_after_its_dataset_is_deleted(client, store, blobs_dataset):
    """"Jobs already finished and completed sessions keep their results": a job's result kept its
    item_ids, but the session's model and questions read them from the dataset and answered null
    once it was deleted, so a client could no longer map the labels to its items."""
    from workers.session_store import SessionStore

    ss = SessionStore(store)
    did = client.post("/v1/datasets", json={"data": [[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]],
                                            "item_ids": ["a", "b", "c", "d"]}).json["id"]
    sid = client.post("/v1/sessions", json={"dataset_id": did, "budget": 1, "n_clusters": 2}).json["id"]
    ss.replace_pool(sid, [{"question_id": "q1", "type": "pairwise", "items": [0, 2]}], 0)
    assert ss.record_answer(sid, "q1", "cannot_link", None, None, 0) == "accepted:ready"
    ss.save_model(sid, {"session_id": sid, "observed_revision": 0, "labels": [0, 0, 1, 1], "n_clusters": 2})
    assert ss.update(sid, state="COMPLETED")
    before = client.get(f"/v1/sessions/{sid}/model").json["item_ids"]
    assert before == ["a", "b", "c", "d"]
    assert client.delete(f"/v1/datasets/{did}").status_code == 204
    assert client.get(f"/v1/datasets/{did}").status_code == 404
    assert client.get(f"/v1/sessions/{sid}/model").json["item_ids"] == before
    (question,) = client.get(f"/v1/sessions/{sid}/questions").json["questions"]
    assert question["item_ids"] == ["a", "c"]
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    assert list(store.r.scan_iter(match=ss._key(sid, "*"))) == []  # the copy goes with the session


def test_a_held_question_stays_open_until_answered_and_counts_against_the_budget(client, store, blobs_dataset):
    """A platform's task holds its question (SessionStore.hold): passes do not withdraw it, the budget counts it."""
    from workers.session_store import SessionStore

    ss = SessionStore(store)
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 2}).json["id"]
    ss.replace_pool(sid, [{"question_id": q, "type": "pairwise", "items": [0, k + 1]}
                          for k, q in enumerate(["q1", "q2", "q3"])], 0)
    assert [q["question_id"] for q in ss.lease(sid, 2, "integration:int_1", lease_seconds=1)] == ["q1", "q2"]
    ss.hold(sid, ["q1", "q2"], "integration:int_1")
    time.sleep(1.1)  # past the lease: only the hold keeps them
    # two questions in flight use the budget of 2: nothing more is handed out
    assert ss.lease(sid, 5, "w1", answers_per_question=1, lease_seconds=1) == []
    docs = ss.replace_pool(sid, [{"question_id": "q4", "type": "pairwise", "items": [1, 2]}], 1, lease_seconds=1)
    assert docs["q1"]["status"] == docs["q2"]["status"] == "open" and docs["q3"]["status"] == "withdrawn"
    ss.release(sid, ["q2"], "integration:int_1")
    docs = ss.replace_pool(sid, [{"question_id": "q4", "type": "pairwise", "items": [1, 2]}], 2, lease_seconds=1)
    assert docs["q1"]["status"] == "open" and docs["q2"]["status"] == "withdrawn"
    docs = ss.replace_pool(sid, [], 3, lease_seconds=1, final=True)  # the completing pass withdraws it too
    assert docs["q1"]["status"] == "withdrawn"
