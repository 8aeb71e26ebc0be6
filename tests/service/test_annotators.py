"""Item content, annotator links, gold and per-worker tallies over HTTP (Flask test client, real Redis).

A link is a capability: it reaches only its own session as its own worker, and nothing of the API.
"""

import time

import pytest

from tests.service.test_session_answers import _open

PROBLEM = "application/problem+json"


def _link(client, sid, **body):
    r = client.post(f"/v1/sessions/{sid}/annotators", json=body)
    assert r.status_code == 201, r.json
    return r.json, r.json["url"].split("/annotate/", 1)[1]


def _step(client, token, answers=(), next=True, held=0):
    return client.post(f"/annotate/{token}/step", json={"answers": list(answers), "next": next, "held": held})


@pytest.fixture()
def opened(client, store, blobs_dataset):
    did, X, y = blobs_dataset
    sid, ss = _open(client, store, did)
    return sid, ss, did, y


def test_items_upload_and_questions_carry_content(client, store, blobs_dataset):
    did, X, y = blobs_dataset
    items = [{"text": f"row {i} <b>bold</b>", "fields": {"colour": "red", "n": i}} if i % 2 else None
             for i in range(len(y))]
    items[2] = {"image_url": "data:image/png;base64,iVBORw0KGgo="}
    r = client.put(f"/v1/datasets/{did}/items", json={"items": items})
    assert r.status_code == 200 and r.json == {"dataset_id": did, "n_items": 31}
    assert client.get(f"/v1/datasets/{did}").json["has_items"] is True
    sid, ss = _open(client, store, did)
    leased = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5}).json["questions"]
    assert leased
    for q in leased:
        assert q["content"] == [items[i] and {k: v for k, v in items[i].items() if v is not None} for i in q["items"]]
    # the list of questions carries the same content as the lease, question by question
    r = client.get(f"/v1/sessions/{sid}/questions", query_string={"status": "open", "page_size": 100})
    assert r.status_code == 200
    listed = {q["question_id"]: q for q in r.json["questions"]}
    assert {q["question_id"] for q in leased} <= set(listed)
    for q in leased:
        assert listed[q["question_id"]]["content"] == q["content"]
        assert listed[q["question_id"]]["item_ids"] == q["item_ids"]
    assert any(c and "<b>bold</b>" in c["text"] for q in leased for c in q["content"]), "text stays as sent"
    assert all(len(q["content"]) == len(q["items"]) for q in r.json["questions"])


@pytest.mark.parametrize("item, pointer", [
    ({"image_url": "javascript:alert(1)"}, "/items/1/image_url"),
    ({"image_url": "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"}, "/items/1/image_url"),
    ({"image_url": "https://x.org/a b.png"}, "/items/1/image_url"),
    ({"image_url": "JAVASCRIPT:alert(1)//https://x.org"}, "/items/1/image_url"),
    ({"text": "x" * 5001}, "/items/1/text"),
    ({"fields": {f"k{i}": i for i in range(13)}}, "/items/1/fields"),
    ({"fields": {"k": {"nested": 1}}}, "/items/1/fields"),
    ({"html": "<script>"}, "/items/1/html"),
])
def test_bad_items_are_422_naming_row_and_field(client, blobs_dataset, item, pointer):
    did, X, y = blobs_dataset
    items = [None] * len(y)
    items[1] = item
    r = client.put(f"/v1/datasets/{did}/items", json={"items": items})
    assert r.status_code == 422 and r.content_type == PROBLEM
    assert pointer in r.json["errors"], r.json
    assert client.get(f"/v1/datasets/{did}").json["has_items"] is False


def test_items_count_and_huge_strings(client, blobs_dataset):
    did, X, y = blobs_dataset
    r = client.put(f"/v1/datasets/{did}/items", json={"items": [None] * 3})
    assert r.status_code == 422 and "/items" in r.json["errors"]
    huge = [{"text": "<script>" * (10 * 1024 * 1024 // 8)}] + [None] * (len(y) - 1)
    r = client.put(f"/v1/datasets/{did}/items", json={"items": huge})
    assert r.status_code in (413, 422) and r.content_type == PROBLEM
    r = client.post("/v1/datasets", json={"data": X.tolist(), "items": [{"text": "a"}]})
    assert r.status_code == 422 and "/items" in r.json["errors"]


def test_link_grants_its_session_only(client, store, blobs_dataset):
    did, X, y = blobs_dataset
    sid, ss = _open(client, store, did)
    other, _ = _open(client, store, did)
    link, token = _link(client, sid, worker_id="ann-1", quota=3)
    assert link["worker_id"] == "ann-1" and link["revoked_at"] is None
    page = client.get(f"/annotate/{token}")
    assert page.status_code == 200
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.headers["Referrer-Policy"] == "no-referrer"
    data = _step(client, token).json
    q = data["question"]
    assert q and data["progress"] == {"answered": 0, "left_in_quota": 3, "quota": 3, "budget": 30,
                                      "budget_remaining": 30}
    assert {it["row"] for it in q["items"]} == set(ss.question(sid, q["question_id"])["items"])
    # the other session's questions are unknown to this link: its answer is rejected there, not recorded
    oq = client.post(f"/v1/sessions/{other}/questions", json={"count": 1}).json["questions"][0]
    r = _step(client, token, [{"question_id": oq["question_id"], "answer": "must_link"}]).json
    assert r["results"][0]["outcome"] in ("accepted", "rejected")  # as this session knows the id (or not)
    assert ss.get(other)["counters"]["answers_received"] == 0
    q = r["question"]
    # the token is not a path into the API, nor a key for it
    assert client.get(f"/v1/sessions/{other}", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    # answering: counted once under the link's worker, whatever the retries
    ans = [{"question_id": q["question_id"], "answer": "must_link", "ms": 1500}]
    first = _step(client, token, ans, next=False).json
    again = _step(client, token, ans, next=False).json
    assert first["results"][0]["outcome"] == "accepted" and again["results"][0]["outcome"] == "duplicate"
    recorded = ss.answers(sid, [q["question_id"]])[0]
    assert [(a["worker_id"], a["assignment_id"]) for a in recorded] == [("ann-1", f"page:ann-1:{q['question_id']}")]
    assert store.r.hget(f"shoal:session:{sid}:counted", f"page:ann-1:{q['question_id']}") == b"1500"
    workers = client.get(f"/v1/sessions/{sid}/workers").json["workers"]
    n = 1 + (r["results"][0]["outcome"] == "accepted")
    assert workers == [{"worker_id": "ann-1", "answers": n, "seconds_per_answer": round(1.5 / n, 3), "gold_answered": 0,
                        "gold_correct": 0, "gold_accuracy": None, "agreement": None, "agreement_n": 0}]
    # a forged or altered token is refused
    assert _step(client, token[:-2] + ("AA" if not token.endswith("AA") else "BB")).status_code == 401
    assert client.get(f"/annotate/{token}x").status_code == 401


def test_link_behind_api_keys_and_api_refuses_token(store, blobs_dataset, client):
    from service import create_app

    key = "k" * 32
    locked = create_app({"TESTING": True, "SHOAL_STORE": store, "SHOAL_API_KEYS": key}).test_client()
    did, X, y = blobs_dataset
    sid, ss = _open(client, store, did)
    link, token = _link(client, sid, worker_id="ann-2")
    assert locked.get(f"/annotate/{token}").status_code == 200  # the page needs no key
    assert _step(locked, token).status_code == 200
    for path in (f"/v1/sessions/{sid}", f"/v1/sessions/{sid}/questions", f"/v1/sessions/{sid}/annotators"):
        r = locked.get(path, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401, path
    assert locked.post(f"/v1/sessions/{sid}/answers", headers={"Authorization": f"Bearer {token}"},
                       json={"answers": []}).status_code == 401


def test_expired_and_revoked_links(client, opened):
    sid, ss, did, y = opened
    short, tshort = _link(client, sid, worker_id="ann-3", expires_in=1)
    revoked, trev = _link(client, sid, worker_id="ann-4")
    assert _step(client, trev).status_code == 200
    assert client.delete(f"/v1/sessions/{sid}/annotators/{revoked['id']}").status_code == 204
    r = _step(client, trev)
    assert r.status_code == 410 and r.json["code"] == "link_revoked"
    page = client.get(f"/annotate/{trev}")
    assert page.status_code == 410 and b"withdrawn" in page.data
    time.sleep(1.1)
    r = _step(client, tshort, [{"question_id": "q_0_1", "answer": "must_link"}])
    assert r.status_code == 410 and r.json["code"] == "link_expired"
    assert client.get(f"/annotate/{tshort}").status_code == 410
    assert ss.get(sid)["counters"]["answers_received"] == 0
    listed = {l["id"]: l for l in client.get(f"/v1/sessions/{sid}/annotators").json["links"]}
    assert listed[revoked["id"]]["revoked_at"] and listed[short["id"]]["revoked_at"] is None
    assert client.delete(f"/v1/sessions/{sid}/annotators/lnk_{'0' * 32}").status_code == 404
    # a deleted session takes its links with it
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    assert _step(client, trev).status_code == 404


def test_open_link_names_worker_from_prolific_parameters(client, opened):
    sid, ss, did, y = opened
    link, token = _link(client, sid, completion_url="https://app.prolific.com/submissions/complete?cc=C0DE", quota=1)
    assert link["worker_id"] is None
    assert client.get(f"/annotate/{token}").status_code == 400  # no participant id
    assert _step(client, token).status_code == 403
    assert client.get(f"/annotate/{token}?PROLIFIC_PID=<script>").status_code == 400
    page = client.get(f"/annotate/{token}?PROLIFIC_PID=5f0c1a&STUDY_ID=s1&SESSION_ID=x1")
    assert page.status_code == 200
    own = page.get_data(as_text=True).split('data-step-url="/annotate/', 1)[1].split("/step", 1)[0]
    q = _step(client, own).json["question"]
    done = _step(client, own, [{"question_id": q["question_id"], "answer": "cannot_link"}]).json
    assert done["done"] == "quota" and done["question"] is None
    assert done["completion_url"] == "https://app.prolific.com/submissions/complete?cc=C0DE"
    assert ss.answers(sid, [q["question_id"]])[0][0]["worker_id"] == "5f0c1a"


def test_gold_is_scored_and_never_told_to_the_model(client, opened):
    sid, ss, did, y = opened
    same = [i for i in range(len(y)) if y[i] == y[0]][1]
    diff = [i for i in range(len(y)) if y[i] != y[0]][0]
    bad = client.post(f"/v1/sessions/{sid}/gold", json={"questions": [{"items": [0, 1, 2], "answer": "yes"}]})
    assert bad.status_code == 422 and set(bad.json["errors"]) == {"/questions/0/items", "/questions/0/answer"}
    bad = client.post(f"/v1/sessions/{sid}/gold", json={"questions": [{"items": [0, 999], "answer": "must_link"}]})
    assert bad.status_code == 422 and "/questions/0/items" in bad.json["errors"]
    gold = {"questions": [{"items": [0, same], "answer": "must_link"}, {"items": [0, diff], "answer": "cannot_link"}],
            "every": 2}
    assert client.post(f"/v1/sessions/{sid}/gold", json=gold).json == {**gold, "first": 0}
    link, token = _link(client, sid, worker_id="ann-5")
    received = ss.get(sid)["counters"]["answers_received"]
    seen, answers = [], []
    for _ in range(4):
        q = _step(client, token, answers).json["question"]
        seen.append(q["question_id"])
        answers = [{"question_id": q["question_id"], "answer": "must_link", "ms": 100}]
    _step(client, token, answers, next=False)
    assert seen[1] == "gold-0" and seen[3] == "gold-1" and not seen[0].startswith("gold")
    w = client.get(f"/v1/sessions/{sid}/workers").json["workers"][0]
    assert (w["answers"], w["gold_answered"], w["gold_correct"], w["gold_accuracy"]) == (4, 2, 1, 0.5)
    assert ss.get(sid)["counters"]["answers_received"] == received + 2  # the gold answers are not the model's


def _gold_pairs(y, n):
    """``n`` gold pairs of the dataset with their true answers."""
    return [{"items": [i, i + 1], "answer": "must_link" if y[i] == y[i + 1] else "cannot_link"} for i in range(n)]


@pytest.mark.parametrize("body, pointer", [
    ({"first": -1}, "/first"), ({"first": 1001}, "/first"), ({"first": 2.5}, "/first"), ({"first": "3"}, "/first"),
    ({"first": True}, "/first"), ({"first": 4}, "/first"),  # more than the 3 gold questions
])
def test_gold_first_is_validated(client, opened, body, pointer):
    sid, ss, did, y = opened
    r = client.post(f"/v1/sessions/{sid}/gold", json={"questions": _gold_pairs(y, 3), **body})
    assert r.status_code == 422 and r.content_type == PROBLEM, r.json
    assert pointer in r.json["errors"], r.json
    ok = client.post(f"/v1/sessions/{sid}/gold", json={"questions": _gold_pairs(y, 3), "first": 3, "every": 2})
    assert ok.status_code == 200 and ok.json["first"] == 3


def test_gold_first_comes_before_any_other_question(client, opened):
    sid, ss, did, y = opened
    gold = {"questions": _gold_pairs(y, 5), "first": 3, "every": 3}
    assert client.post(f"/v1/sessions/{sid}/gold", json=gold).status_code == 200
    link, token = _link(client, sid, worker_id="ann-first")
    seen, held = [], []
    for _ in range(6):  # the page holds each answer (undo) and sends it with the step after next
        q = _step(client, token, held[:-1], held=1 if held else 0).json["question"]
        seen.append(q["question_id"])
        held = held[-1:] + [{"question_id": q["question_id"], "answer": "must_link", "ms": 100}]
    # three gold first (each a new one although its answer is still held), then one in every 3
    assert seen[:3] == ["gold-0", "gold-1", "gold-2"], seen
    assert not seen[3].startswith("gold") and not seen[4].startswith("gold") and seen[5] == "gold-3", seen


def _flag(client, sid, y, token, n=5):
    """Answer ``n`` gold questions shown first on the page, all wrong: the worker is flagged."""
    answers = []
    for _ in range(n):
        q = _step(client, token, answers).json["question"]
        assert q["question_id"].startswith("gold-"), q
        i, j = (it["row"] for it in q["items"])
        answers = [{"question_id": q["question_id"], "ms": 100,
                    "answer": "cannot_link" if y[i] == y[j] else "must_link"}]
    return _step(client, token, answers).json


def test_flagged_worker_is_leased_nothing_and_its_later_answers_are_rejected(client, store, blobs_dataset):
    did, X, y = blobs_dataset
    quality = {"min_gold_accuracy": 0.7, "min_gold_answered": 5, "exclude_flagged": True}
    sid, ss = _open(client, store, did, answers_per_question=2, worker_quality=quality)
    assert client.post(f"/v1/sessions/{sid}/gold", json={"questions": _gold_pairs(y, 8), "first": 5}).status_code == 200
    link, token = _link(client, sid, worker_id="spammer")
    # before the flag the worker is handed questions like any other (on the API too)
    before = client.post(f"/v1/sessions/{sid}/questions", json={"count": 1, "worker_id": "spammer"}).json
    assert len(before["questions"]) == 1 and before["worker_excluded"] is None
    qid = before["questions"][0]["question_id"]
    out = _flag(client, sid, y, token)
    assert out["question"] is None and out["done"] == "flagged", out
    assert all(r["outcome"] == "accepted" for r in out["results"])
    workers = {w["worker_id"]: w for w in client.get(f"/v1/sessions/{sid}/workers").json["workers"]}
    assert workers["spammer"]["gold_answered"] == 5 and workers["spammer"]["gold_accuracy"] == 0.0
    # the lease hands it nothing, says why, and gives no Retry-After (waiting brings nothing)
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": 5, "worker_id": "spammer"})
    assert r.status_code == 200 and r.json["questions"] == [] and "Retry-After" not in r.headers
    assert "flagged" in r.json["worker_excluded"] and "min_gold_accuracy 0.7" in r.json["worker_excluded"]
    # another worker is still leased questions, this one among them
    other = client.post(f"/v1/sessions/{sid}/questions", json={"count": 30, "worker_id": "honest"}).json
    assert qid in {q["question_id"] for q in other["questions"]} and other["worker_excluded"] is None
    # its answer to the question leased before the flag is rejected, naming the flag, and fills no slot:
    # its lease is let go at once (a third worker gets the question's second slot)
    assert qid not in {q["question_id"] for q in client.post(
        f"/v1/sessions/{sid}/questions", json={"count": 30, "worker_id": "third"}).json["questions"]}
    counters = ss.get(sid)["counters"]
    r = client.post(f"/v1/sessions/{sid}/answers",
                    json={"answers": [{"question_id": qid, "answer": "must_link", "worker_id": "spammer"},
                                      {"question_id": qid, "answer": "must_link", "worker_id": "honest"}]})
    assert r.status_code == 200
    rejected, accepted = r.json["results"]
    assert rejected["outcome"] == "rejected" and "flagged by gold questions" in rejected["reason"], rejected
    assert accepted["outcome"] == "accepted" and accepted["reason"] is None  # one of two: not ready
    assert ss.question(sid, qid)["n_answers"] == 1
    assert [a["worker_id"] for a in ss.answers(sid, [qid])[0]] == ["honest"]
    assert qid in {q["question_id"] for q in client.post(
        f"/v1/sessions/{sid}/questions", json={"count": 30, "worker_id": "fourth"}).json["questions"]}
    after = ss.get(sid)["counters"]
    assert after["rejected"] == counters.get("rejected", 0) + 1
    # on the page: no question, the done screen's reason, its answers (gold ones too) rejected
    page = _step(client, token, [{"question_id": qid, "answer": "cannot_link", "ms": 10},
                                 {"question_id": "gold-5", "answer": "must_link", "ms": 10}]).json
    assert page["question"] is None and page["done"] == "flagged"
    assert [x["outcome"] for x in page["results"]] == ["rejected", "rejected"], page
    assert all("flagged by gold questions" in x["reason"] for x in page["results"])
    assert client.get(f"/v1/sessions/{sid}/workers").json["workers"][0]["gold_answered"] == 5  # not tallied


def test_a_flag_without_exclude_flagged_only_reports(client, store, blobs_dataset):
    did, X, y = blobs_dataset
    sid, ss = _open(client, store, did, worker_quality={"min_gold_answered": 5})
    assert client.post(f"/v1/sessions/{sid}/gold", json={"questions": _gold_pairs(y, 8), "first": 5}).status_code == 200
    link, token = _link(client, sid, worker_id="spammer")
    out = _flag(client, sid, y, token)
    assert out["done"] is None and out["question"] is not None and not out["question"]["question_id"].startswith("gold")
    r = client.post(f"/v1/sessions/{sid}/questions", json={"count": 1, "worker_id": "spammer"}).json
    assert len(r["questions"]) == 1 and r["worker_excluded"] is None
