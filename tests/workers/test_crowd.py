"""Session answers: aggregation and per-worker reliability (workers.crowd), on simulated crowds."""

import json

from tests.clustering.test_crowd import crowd_answers as _crowd
from workers.crowd import aggregate, fit_dawid_skene, worker_reliability


def test_majority_vote_ignores_dont_know_and_a_tie_is_dont_know():
    answers = [("a", {"answer": "must_link", "worker_id": "w1"}), ("a", {"answer": "dont_know", "worker_id": "w2"}),
               ("b", {"answer": "must_link", "worker_id": "w1"}), ("b", {"answer": "cannot_link", "worker_id": "w2"}),
               ("c", {"answer": "dont_know", "worker_id": "w1"})]
    out = aggregate(answers, ["a", "b", "c"])
    assert {q: a for q, (a, _) in out.items()} == {"a": "must_link", "b": "dont_know", "c": "dont_know"}
    assert out["b"][1] == ["must_link", "cannot_link"]
    assert fit_dawid_skene(answers) is None  # no two workers share two informative answers


def test_dawid_skene_weighs_workers_by_their_agreement_with_the_consensus():
    truth, answers = _crowd({"good": 0.0, "fair": 0.2, "random": 0.5}, n_questions=100, seed=2)
    ds = fit_dawid_skene(answers)
    assert ds is not None
    labels, accuracy = ds
    assert min(accuracy["good"], accuracy["fair"]) > 0.75 > 0.65 > accuracy["random"]
    by_vote = aggregate(answers, list(truth))
    with_ds = aggregate(answers, list(truth), ds)
    assert all(with_ds[q][0] == labels[q] and with_ds[q][1] == by_vote[q][1] for q in truth)
    right = [sum(out[q][0] == truth[q] for q in truth) for out in (by_vote, with_ds)]
    assert right[1] > right[0], right  # where "fair" and "random" outvote "good", Dawid-Skene sides with "good"


def test_worker_reliability_puts_the_unreliable_worker_first():
    truth, answers = _crowd({"good-1": 0.0, "good-2": 0.05, "sloppy": 0.3}, dont_know={"good-2": 0.1}, seed=2)
    rows = worker_reliability(answers, fit_dawid_skene(answers))
    assert [r["worker_id"] for r in rows][0] == "sloppy"
    by_id = {r["worker_id"]: r for r in rows}
    assert all(r["answers"] == len(truth) for r in rows)
    given = sum(a["answer"] == "dont_know" for _, a in answers if a["worker_id"] == "good-2")
    assert by_id["good-2"]["dont_know"] == given > 0 and by_id["sloppy"]["dont_know"] == 0
    wrong = sum(a["answer"] != truth[q] for q, a in answers if a["worker_id"] == "sloppy")
    # the two others agree on every question but the few good-2 got wrong or skipped
    assert abs(by_id["sloppy"]["agreement"] - (1 - wrong / len(truth))) < 0.1
    assert by_id["sloppy"]["agreement"] < 0.8 < by_id["good-1"]["agreement"]
    assert by_id["sloppy"]["estimated_accuracy"] < 0.8 < by_id["good-1"]["estimated_accuracy"] <= 1.0


def test_without_overlap_there_is_no_estimate_and_nothing_to_compare():
    answers = [(f"q{k}", {"answer": "must_link", "worker_id": f"w{k}"}) for k in range(4)]
    answers.append(("q9", {"answer": "cannot_link"}))  # no worker id: not a worker's answer
    rows = worker_reliability(answers, fit_dawid_skene(answers))
    assert [r["worker_id"] for r in rows] == ["w0", "w1", "w2", "w3"]
    assert all(r["compared"] == 0 and r["agreement"] is None and r["estimated_accuracy"] is None for r in rows)


def _session_after_one_disputed_question(client, store, dataset_id, aggregation):
    """A session where worker "a" and "b" agree on ten questions and "c" always contradicts
    them; on an eleventh, "a" says must_link, "c" cannot_link and "b" dont_know: a tie, so it is
    asked of up to three more workers, who say dont_know, and it closes tied."""
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    r = client.post("/v1/sessions", json={"dataset_id": dataset_id, "n_clusters": 3, "budget": 50,
                                          "answers_per_question": 3, "aggregation": aggregation})
    assert r.status_code == 201, r.json
    sid, ss = r.json["id"], SessionStore(store)
    update_once(store, ss, sid)  # the first pass, as the worker runs it: builds the pool
    questions = ss.lease(sid, 11, None)
    assert len(questions) == 11
    flip = {"must_link": "cannot_link", "cannot_link": "must_link"}
    for k, q in enumerate(questions):
        said = "must_link" if k % 2 else "cannot_link"
        votes = {"a": said, "b": said, "c": flip[said]} if k < 10 else \
            {"a": "must_link", "b": "dont_know", "c": "cannot_link"}
        for w, answer in votes.items():
            assert ss.record_answer(sid, q["question_id"], answer, w, f"{w}-{k}", 0).startswith("accepted")
    qid = questions[10]["question_id"]
    extra = [ss.record_answer(sid, qid, "dont_know", w, f"{w}-10", 0) for w in ("d", "e", "f")]
    assert extra == ["accepted", "accepted", "accepted:ready"] and ss.question(sid, qid)["tie_breakers"] == 3
    update_once(store, ss, sid)
    return ss.question(sid, questions[10]["question_id"])["aggregated"]


def test_a_session_aggregates_as_it_was_asked(client, store, blobs_dataset):
    assert _session_after_one_disputed_question(client, store, blobs_dataset[0], "majority") == "dont_know"
    assert _session_after_one_disputed_question(client, store, blobs_dataset[0], "one_coin") == "must_link"


def _open_session(client, store, dataset_id, **options):
    from workers.session_store import SessionStore
    from workers.session_tasks import update_once

    r = client.post("/v1/sessions", json={"dataset_id": dataset_id, "n_clusters": 3, "budget": 50, **options})
    assert r.status_code == 201, r.json
    sid, ss = r.json["id"], SessionStore(store)
    update_once(store, ss, sid)  # the first pass, as the worker runs it: builds the pool
    return sid, ss


def test_a_question_goes_to_no_more_workers_than_it_needs_answers(client, store, blobs_dataset):
    sid, ss = _open_session(client, store, blobs_dataset[0], answers_per_question=2, pool_size=6)
    ids = lambda qs: [q["question_id"] for q in qs]  # noqa: E731
    a, b = ss.lease(sid, 4, "a"), ss.lease(sid, 4, "b")
    assert len(a) == 4 and ids(b) == ids(a)  # two slots each: both workers get the best four
    c = ss.lease(sid, 4, "c")
    assert len(c) == 2 and not set(ids(c)) & set(ids(a))  # the full ones are skipped: c gets the other two
    assert ids(ss.lease(sid, 4, "d")) == ids(c)  # the second slot of c's two
    assert ss.lease(sid, 4, "e") == []  # every slot is held
    assert ss.lease(sid, 4, "a") == []  # a is never handed a question twice
    # An answer keeps its slot (the question now needs one answer less and one lease less).
    assert ss.record_answer(sid, a[0]["question_id"], "must_link", "a", "a-0", 0) == "accepted"
    assert ss.lease(sid, 4, "e") == []
    # The anonymous path is untracked: the pool's first open questions, for anyone.
    assert ids(ss.lease(sid, 3, None)) == ids(a)[:3]


def test_an_unanswered_lease_frees_its_slot_when_it_expires(client, store, blobs_dataset):
    import time

    sid, ss = _open_session(client, store, blobs_dataset[0], answers_per_question=1, pool_size=3, lease_seconds=1)
    rec = ss.get(sid)
    assert rec["lease_seconds"] == 1
    first = ss.lease(sid, 3, "slow")  # the session's own answers_per_question and lease_seconds
    assert len(first) == 3 and ss.lease(sid, 3, "fast") == []
    assert ss.record_answer(sid, first[0]["question_id"], "must_link", "slow", "s-0", 0, 1) == "accepted:ready"
    time.sleep(1.2)
    again = ss.lease(sid, 3, "fast")
    # The answered question is ready, not open; the two unanswered leases have expired.
    assert [q["question_id"] for q in again] == [q["question_id"] for q in first[1:]]
    assert ss.lease(sid, 3, "slow") == []  # ... but never back to the worker who let them lapse


def test_the_api_and_the_store_share_the_default_lease():
    from schemas.sessions import DEFAULT_LEASE_SECONDS as api_default
    from workers.session_store import DEFAULT_LEASE_SECONDS as store_default

    assert api_default == store_default


def test_a_refill_does_not_withdraw_a_question_a_worker_is_answering(client, store, blobs_dataset):
    sid, ss = _open_session(client, store, blobs_dataset[0], pool_size=4)
    held, idle = ss.lease(sid, 1, "w")[0], ss.lease(sid, 4, None)[1]
    assert held["question_id"] != idle["question_id"]
    fresh = {"question_id": "q_fresh", "type": "pairwise", "items": [0, 1]}
    left = ss.replace_pool(sid, [fresh], revision=1)
    assert left == {q["question_id"]: q for q in map(json.loads, ss.r.hvals(ss._key(sid, ":questions")))}
    assert ss.question(sid, idle["question_id"])["status"] == "withdrawn"  # nobody held it
    assert ss.question(sid, held["question_id"])["status"] == "open"  # w holds it: its answer still counts
    assert ss.record_answer(sid, held["question_id"], "must_link", "w", "w-1", 1, 1) == "accepted:ready"
    assert ss.record_answer(sid, idle["question_id"], "must_link", "v", "v-1", 1, 1) == \
        "late:the question was withdrawn (no longer asked)"
    # a lease older than lease_seconds no longer keeps a question
    other = ss.lease(sid, 1, "x")[0]
    ss.replace_pool(sid, [], revision=2, lease_seconds=0)
    assert ss.question(sid, other["question_id"])["status"] == "withdrawn"


def test_worker_ids_differing_in_a_trailing_nul_are_two_workers():
    """Any JSON string is a worker id; "w" and "w\\u0000" must not be merged into one worker."""
    def answers(other):
        given = [("q1", "w", "must_link"), ("q1", other, "cannot_link"), ("q1", "v", "must_link"),
                 ("q2", "w", "must_link"), ("q2", other, "cannot_link"), ("q2", "v", "must_link"),
                 ("q3", "w", "cannot_link"), ("q3", other, "cannot_link"), ("q3", "v", "cannot_link")]
        return [(q, {"answer": a, "worker_id": w}) for q, w, a in given]

    plain, nul = answers("x"), answers("w\x00")
    ds_plain, ds_nul = fit_dawid_skene(plain), fit_dawid_skene(nul)
    assert ds_nul[0] == ds_plain[0]
    assert ds_nul[1] == {"w": ds_plain[1]["w"], "w\x00": ds_plain[1]["x"], "v": ds_plain[1]["v"]}
    report = {r["worker_id"]: r for r in worker_reliability(nul, ds_nul)}
    assert report["w\x00"]["estimated_accuracy"] == round(ds_plain[1]["x"], 3) < report["w"]["estimated_accuracy"]


def test_anonymous_answers_count_in_the_one_coin_aggregate_as_they_do_in_the_vote():
    """Two answers without a worker id against one of a trusted worker: the vote takes theirs, and so
    must one-coin Dawid-Skene (it left them out, and the trusted worker's single answer won)."""
    answers = [(f"q{k}", {"answer": "must_link", "worker_id": w}) for k in range(5) for w in ("a", "b")]
    answers += [("x", {"answer": "must_link", "worker_id": "a"}),
                ("x", {"answer": "cannot_link", "worker_id": None}), ("x", {"answer": "cannot_link"})]
    ds = fit_dawid_skene(answers)
    assert ds is not None and set(ds[1]) == {"a", "b"}  # only named workers have an accuracy
    assert aggregate(answers, ["x"])["x"][0] == aggregate(answers, ["x"], ds)["x"][0] == "cannot_link"
    # a worker named like the key of an anonymous answer is still a worker of its own
    named = answers + [("y", {"answer": "must_link", "worker_id": "a:11"})]
    assert set(fit_dawid_skene(named)[1]) == {"a", "b", "a:11"}
    # ... and they stay out of the workers' agreement (one may be the worker's own answer)
    rows = {r["worker_id"]: r for r in worker_reliability(answers, ds)}
    assert set(rows) == {"a", "b"} and rows["a"]["compared"] == 5 and rows["a"]["agreement"] == 1.0


def test_a_dont_know_beside_agreeing_answers_is_no_disagreement(client, store, blobs_dataset):
    """The aggregation and the workers' agreement leave dont_know out: so does the disagreements count."""
    from workers.session_tasks import update_once

    sid, ss = _open_session(client, store, blobs_dataset[0], answers_per_question=3, aggregation="majority",
                            strategy="random")
    ss.replace_pool(sid, [{"question_id": f"q{k}", "type": "pairwise", "items": [2 * k, 2 * k + 1]}
                          for k in range(3)], 0)
    given = {"q0": ["must_link", "must_link", "dont_know"], "q1": ["cannot_link", "must_link", "cannot_link"],
             "q2": ["dont_know"] * 3}
    for qid, votes in given.items():
        for w, answer in zip("abc", votes):
            ss.record_answer(sid, qid, answer, w, f"{w}-{qid}", 0)
    update_once(store, ss, sid)
    s = client.get(f"/v1/sessions/{sid}").json
    assert s["counters"]["questions_closed"] == 3 and s["counters"]["disagreements"] == 1
    assert [d["question_id"] for d in s["disagreements"]] == ["q1"]
    from workers.crowd import disagree

    assert not disagree(["must_link", "must_link", "dont_know"]) and not disagree(["dont_know", "dont_know"])
    assert disagree(["yes", "dont_know", "no", "yes"])
