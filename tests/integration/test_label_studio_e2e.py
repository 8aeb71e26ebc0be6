"""Sessions annotated in a real Label Studio server through the connector.

Label Studio runs from its own virtualenv (scripts/label_studio.py, installed
on first use), with SQLite, on loopback. Shoal creates the project and its
webhook; three annotators (one wrong 20% of the time) annotate every task
through Label Studio's API; Label Studio's webhooks bring the answers to
Shoal, which sends the next tasks after every pass. A second webhook records
every event, which is then replayed twice, shuffled: nothing is counted twice.
"""

import json
import random
import socket
import time

import numpy as np
import pytest
import requests
from sklearn.metrics import adjusted_rand_score

from bench.datasets import load
from scripts.label_studio import TOKEN, LabelStudioServer

from .helpers import WebhookReceiver, upload

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600, func_only=True)]

STALL_SECONDS = 60  # no annotation made, no counter moved, no task added: stuck
LOOP_SECONDS = 420

ANNOTATORS = {"ann-1": 0.0, "ann-2": 0.0, "ann-3": 0.2}  # annotator -> probability of a wrong answer
#: Annotates only a task whose question was sent before (a tie-breaker): the pairwise session's first task is
#: answered right, wrong and "Can't tell", a tie, which the connector sends again as a new task.
TIE_BREAKER = "ann-4"
CHOICE = {"must_link": "Same group", "cannot_link": "Different groups", "yes": "Closer to B", "no": "Closer to C"}
FLIP = {"must_link": "cannot_link", "cannot_link": "must_link", "yes": "no", "no": "yes"}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def label_studio(tmp_path_factory):
    root = tmp_path_factory.mktemp("label-studio")
    server = LabelStudioServer(_free_port(), root, root / "label-studio.log").start()
    yield server
    server.stop()


def _api(ls, method, path, **kw):
    r = requests.request(method, f"{ls.url}{path}", headers=ls.headers, timeout=60, **kw)
    assert r.status_code < 300, (method, path, r.status_code, r.text[:500])
    return r.json() if r.content else None


def _annotators(ls):
    """Label Studio user id of each annotator (created once per server)."""
    users = {u["email"]: u["id"] for u in _api(ls, "GET", "/api/users/")}
    out = {}
    for name in [*ANNOTATORS, TIE_BREAKER]:
        email = f"{name}@shoal.test"
        out[name] = users.get(email) or _api(ls, "POST", "/api/users/", json={"email": email, "username": name})["id"]
    return out


def _tasks(ls, project):
    out, page = [], 1
    while True:
        for _ in range(10):  # Label Studio answers 500 when a task is deleted while it lists them: list again
            r = requests.get(f"{ls.url}/api/tasks", params={"project": project, "page": page, "page_size": 100,
                                                             "fields": "all"}, headers=ls.headers, timeout=60)
            if r.status_code != 500:
                break
            time.sleep(0.2)
        if r.status_code == 404:  # past the last page
            return out
        assert r.status_code == 200, r.text[:300]
        body = r.json()
        tasks = body["tasks"] if isinstance(body, dict) else body
        out += tasks
        if len(tasks) < 100:
            return out
        page += 1


def _truth(question_type, items, y):
    if question_type == "pairwise":
        return "must_link" if y[items[0]] == y[items[1]] else "cannot_link"
    a, b, c = items
    return "yes" if y[a] == y[b] and y[a] != y[c] else "no" if y[a] == y[c] and y[a] != y[b] else "dont_know"


def _session_state(live, sid):
    return requests.get(f"{live}/v1/sessions/{sid}", timeout=30).json()


@pytest.mark.parametrize("question_type", ["pairwise", "triplet"])
def test_a_session_annotated_in_label_studio(live, label_studio, question_type):
    started = time.monotonic()
    X, y = load("iris", zscore=False)
    did = upload(live, X, y)
    body = {"dataset_id": did, "question_type": question_type, "n_clusters": 3, "budget": 60,
            "answers_per_question": 3, "pool_size": 20}
    r = requests.post(f"{live}/v1/sessions", json=body, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    r = requests.post(f"{live}/v1/sessions/{sid}/integrations", json={
        "platform": "label_studio", "url": label_studio.url, "token": TOKEN, "webhook_base_url": live,
        "batch_size": 10}, timeout=60)
    assert r.status_code == 201, r.text
    integ = r.json()
    assert TOKEN not in r.text and "webhook_secret" not in r.text and integ["token_source"] == "encrypted"
    project = integ["project_id"]
    config = _api(label_studio, "GET", f"/api/projects/{project}")
    assert config["maximum_annotations"] == 3 and ("same_group" if question_type == "pairwise" else "closer") \
        in config["label_config"]
    users = _annotators(label_studio)
    rng = np.random.default_rng(0 if question_type == "pairwise" else 1)
    done, annotations = set(), []  # (task id, annotator); annotation ids
    task_of_question, tied = {}, None  # question id -> its first task; the question made to tie
    with WebhookReceiver() as recorder:
        _api(label_studio, "POST", "/api/webhooks/", json={
            "url": recorder.url, "project": project, "send_payload": True, "send_for_all_actions": False,
            "actions": ["ANNOTATION_CREATED", "ANNOTATION_UPDATED"]})
        deadline, last_move, seen = time.monotonic() + LOOP_SECONDS, time.monotonic(), None
        while True:
            session = _session_state(live, sid)
            if session["state"] == "COMPLETED":
                break
            tasks = _tasks(label_studio, project)
            now = (session["state"], json.dumps(session["counters"], sort_keys=True), session["budget_used"],
                   len(tasks), len(annotations))
            if now != seen:
                seen, last_move = now, time.monotonic()
            stuck = time.monotonic() - last_move > STALL_SECONDS
            assert not stuck and time.monotonic() < deadline, _stall_report(
                live, sid, tasks, "no progress for %d s" % STALL_SECONDS if stuck else "over %d s" % LOOP_SECONDS)
            new = 0
            for task in sorted(tasks, key=lambda t: t["id"]):
                items, qtype, qid = task["meta"]["items"], question_type, task["meta"]["shoal_question"]
                assert task["data"]["question_id"] == qid
                assert all(task["data"][f"{c}_text"] for c in "abc"[:len(items)])  # the items' features shown
                first_task = task_of_question.setdefault(qid, task["id"])
                if tied is None and qtype == "pairwise":
                    tied = qid
                crowd = {**({TIE_BREAKER: 0.0} if first_task != task["id"] else {}), **ANNOTATORS}
                for k, (name, p_wrong) in enumerate(crowd.items()):
                    if (task["id"], name) in done:
                        continue
                    done.add((task["id"], name))
                    answer = _truth(qtype, items, y)
                    if qid == tied and first_task == task["id"]:
                        choice = ["Can't tell", CHOICE[FLIP[answer]], CHOICE[answer]][k]  # 1 vs 1: a tie
                    elif answer == "dont_know":
                        choice = "Can't tell"
                    else:
                        choice = CHOICE[FLIP[answer] if rng.random() < p_wrong else answer]
                    result = [{"from_name": "same_group" if qtype == "pairwise" else "closer", "to_name": "a",
                               "type": "choices", "value": {"choices": [choice]}}]
                    r = requests.post(f"{label_studio.url}/api/tasks/{task['id']}/annotations/",
                                      json={"result": result, "completed_by": users[name]},
                                      headers=label_studio.headers, timeout=60)
                    assert r.status_code == 201, (task["id"], r.status_code, r.text[:300])
                    annotations.append(r.json()["id"])
                    new += 1
            if not new:
                time.sleep(0.3)
        deadline = time.monotonic() + 60
        while len(recorder.received) < len(annotations) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        events = [(h, b) for h, b in recorder.received]
    session = _session_state(live, sid)
    c = session["counters"]
    # every annotation made is one event, and every event is accounted for
    assert len(events) == len(annotations) >= 3 * 60, (len(events), len(annotations))
    assert c["accepted"] + c["duplicate"] + c["late"] + c["rejected"] == c["answers_received"] == len(events), c
    assert c["accepted"] >= 3 * 60, c
    if tied is not None:  # the tie went out again as a new task, where the tie-breaker closed it
        q = _question(live, sid, tied)
        sent = [t for t in _tasks(label_studio, project) if t["meta"]["shoal_question"] == tied]
        assert len(sent) == 2 and q["tie_breakers"] == 1 and q["status"] == "closed", (sent, q)
        assert [a["worker_id"] for a in q["answers"]][-1] == f"ls-{users[TIE_BREAKER]}"
        assert c["rejected"] == 3, c  # the first three annotators on the new task: they answered it already
    model = requests.get(f"{live}/v1/sessions/{sid}/model", timeout=30).json()
    ari = adjusted_rand_score(y, model["labels"])
    print(f"{question_type}: {len(annotations)} annotations, counters {c}, ARI {ari:.3f}, "
          f"{time.monotonic() - started:.0f} s")
    assert ari >= 0.85, (ari, c)

    # Replayed webhooks, each twice and shuffled, are never counted again
    hooks = _api(label_studio, "GET", "/api/webhooks/", params={"project": project})
    shoal_hook = next(h for h in hooks if h["url"] == integ["webhook_url"])
    secret_header = shoal_hook["headers"]
    replays = [b for _, b in events] * 2
    random.Random(3).shuffle(replays)
    before = _recorded(live, sid)
    outcomes = []
    for b in replays:
        r = requests.post(integ["webhook_url"], data=b, headers={"Content-Type": "application/json", **secret_header},
                          timeout=30)
        assert r.status_code == 200, r.text
        outcomes.append(r.json()["outcome"])
    assert "accepted" not in outcomes and outcomes.count("duplicate") >= 2 * c["accepted"]
    after = _session_state(live, sid)["counters"]
    assert after["accepted"] == c["accepted"] and _recorded(live, sid) == before
    r = requests.post(integ["webhook_url"], data=events[0][1], headers={"Content-Type": "application/json",
                                                                        "X-Shoal-Integration-Secret": "wrong"},
                      timeout=30)
    assert r.status_code == 401 and r.headers["Content-Type"] == "application/problem+json"

    # An annotation edited in Label Studio (one whose answer was recorded) is reported as a changed answer
    recorded_ids = {a for _, _, a, _ in before}
    first = next(e["annotation"] for e in (json.loads(b) for _, b in events)
                 if f"ls-{project}-{e['annotation']['id']}" in recorded_ids
                 and e["annotation"]["result"][0]["value"]["choices"][0] != "Can't tell")
    was = first["result"][0]["value"]["choices"][0]
    now = {"Same group": "Different groups", "Different groups": "Same group", "Closer to B": "Closer to C",
           "Closer to C": "Closer to B"}[was]
    _api(label_studio, "PATCH", f"/api/annotations/{first['id']}/", json={"result": [
        {**first["result"][0], "value": {"choices": [now]}}]})
    listed = requests.get(f"{live}/v1/sessions/{sid}/integrations", timeout=30).json()["integrations"][0]
    assert TOKEN not in json.dumps(listed)
    assert [(x["assignment_id"], x["now"]) for x in listed["changed_answers"]] == \
        [(f"ls-{project}-{first['id']}", {v: k for k, v in CHOICE.items()}[now])]
    assert _recorded(live, sid) == before  # the recorded answer stands
    assert listed["tasks_sent"] >= 60


def _stall_report(live, sid, tasks, why):
    """What a stuck session waits for: its counters, open questions, tasks short of annotations."""
    session = _session_state(live, sid)
    open_q = requests.get(f"{live}/v1/sessions/{sid}/questions", params={"status": "open", "page_size": 100},
                          timeout=30).json()["questions"]
    short = [(t["id"], t["meta"]["shoal_question"], t.get("total_annotations")) for t in tasks
             if (t.get("total_annotations") or 0) < 3]
    return (f"Label Studio session {sid} stuck ({why}): state {session['state']}, budget used "
            f"{session['budget_used']} of {session['budget']}, counters {session['counters']}; open questions "
            f"{[(q['question_id'], q['n_answers'], q['tie_breakers']) for q in open_q]}; tasks short of 3 "
            f"annotations (id, question, annotations) {short}; {len(tasks)} tasks in all")


def _question(live, sid, qid):
    out, token = None, None
    while out is None:
        params = {"page_size": 100, **({"page_token": token} if token else {})}
        page = requests.get(f"{live}/v1/sessions/{sid}/questions", params=params, timeout=30).json()
        out = next((q for q in page["questions"] if q["question_id"] == qid), None)
        token = page["next_page_token"]
        assert out is not None or token, qid
    return out


def _recorded(live, sid):
    out, token = set(), None
    while True:
        params = {"page_size": 100, **({"page_token": token} if token else {})}
        page = requests.get(f"{live}/v1/sessions/{sid}/questions", params=params, timeout=30).json()
        for q in page["questions"]:
            out |= {(q["question_id"], a["worker_id"], a["assignment_id"], a["answer"]) for a in q["answers"]}
        token = page["next_page_token"]
        if not token:
            return out
