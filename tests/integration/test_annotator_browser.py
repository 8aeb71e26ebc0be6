"""The annotator page in a real Chromium against the real stack (gunicorn, Redis, Celery worker).

People answer through the page alone: pairwise and triplet questions on iris by click and by key,
one unreliable worker beside them, the model gets better, no answer is lost or counted twice,
hostile item content stays text, links die when they expire or are revoked, and axe-core finds
no serious or critical accessibility violation.
"""

import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import requests
from sklearn.metrics import adjusted_rand_score

from playwright import sync_api

from bench.datasets import load
from scripts.browser import AnnotatorPage, launch, serious_violations, truth
from scripts.stack import wait_up_to_date

from .helpers import upload

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def browser():
    pw = sync_api.sync_playwright().start()
    b = launch(pw)
    yield b
    b.close()
    pw.stop()


@pytest.fixture(scope="module")
def iris(live):
    X, y = load("iris")
    return upload(live, X, y, name="iris"), y


def _session(live, did, **body):
    r = requests.post(f"{live}/v1/sessions", json={"dataset_id": did, "n_clusters": 3, **body}, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    wait_up_to_date(live, sid, timeout=120)
    return sid


def _ari(live, sid, y):
    labels = requests.get(f"{live}/v1/sessions/{sid}/model", timeout=30).json()["labels"]
    return adjusted_rand_score(y, labels)


def _link(live, sid, **body):
    r = requests.post(f"{live}/v1/sessions/{sid}/annotators", json=body, timeout=30)
    assert r.status_code == 201, r.text
    return r.json()


def _recorded(live, sid):
    """(worker, question) -> answers recorded, over every question of the session."""
    out, token = {}, None
    while True:
        params = {"page_size": 100, **({"page_token": token} if token else {})}
        page = requests.get(f"{live}/v1/sessions/{sid}/questions", params=params, timeout=30).json()
        for q in page["questions"]:
            for a in q["answers"]:
                out.setdefault((a["worker_id"], q["question_id"]), []).append(a["answer"])
        token = page["next_page_token"]
        if not token:
            return out


def _axe(page):
    bad = serious_violations(page)
    assert not bad, bad


def _work(ann, y, n, rng=None, hows=("click", "key", "letter"), swaps=None):
    """Answer ``n`` questions from the truth (at random with ``rng``); returns {question_id: answer}.

    ``swaps`` (a list) collects whether the page showed each triplet's candidates swapped."""
    given = {}
    for i in range(n):
        if ann.done():
            break
        rows, qid = ann.rows(), ann.question_id()
        if swaps is not None:
            swaps.append(ann.swapped())
        words = ["yes", "no", "dont_know"] if len(rows) == 3 else ["must_link", "cannot_link", "dont_know"]
        value = str(rng.choice(words[:2])) if rng is not None else truth(y, rows)
        ann.answer(value, hows[i % len(hows)])
        given[qid] = value
    return given


def test_pairwise_crowd_on_iris_through_the_page(live, browser, iris):
    did, y = iris
    sid = _session(live, did, budget=70)
    before = _ari(live, sid, y)
    same = [int(i) for i in np.flatnonzero(y == y[0])[1:3]]
    diff = [int(i) for i in np.flatnonzero(y != y[0])[:2]]
    gold = {"questions": [{"items": [0, j], "answer": "must_link"} for j in same]
            + [{"items": [0, j], "answer": "cannot_link"} for j in diff], "every": 8}
    assert requests.post(f"{live}/v1/sessions/{sid}/gold", json=gold, timeout=30).status_code == 200
    good_ctx, sloppy_ctx = browser.new_context(), browser.new_context()
    good = AnnotatorPage(good_ctx.new_page())
    sloppy = AnnotatorPage(sloppy_ctx.new_page())
    good.open(_link(live, sid, worker_id="good")["url"])
    _axe(good.page)
    # keyboard alone: Tab to an answer button and press Enter
    for _ in range(20):
        good.page.keyboard.press("Tab")
        if good.page.evaluate("document.activeElement.classList.contains('answer')"):
            break
    assert good.page.evaluate("document.activeElement.dataset.answer") == "must_link"
    rows, qid, before_ready = good.rows(), good.question_id(), good.ready()
    if truth(y, rows) == "must_link":
        good.page.keyboard.press("Enter")
        good.wait_question(before_ready)
        given = {qid: "must_link"}
    else:
        given = {}
    given.update(_work(good, y, 20 - len(given)))
    sloppy.open(_link(live, sid, worker_id="sloppy")["url"])
    sloppy_given = _work(sloppy, y, 12, rng=np.random.default_rng(3))
    given.update(_work(good, y, 20))
    assert len(given) == 40
    good.flushed()
    sloppy.flushed()
    recorded = _recorded(live, sid)
    for worker, answers in (("good", given), ("sloppy", sloppy_given)):
        model = {q: a for q, a in answers.items() if not q.startswith("gold-")}
        mine = {q: a for (w, q), a in recorded.items() if w == worker}
        assert mine == {q: [a] for q, a in model.items()}, worker  # none lost, none twice
    listed = requests.get(f"{live}/v1/sessions/{sid}/workers", timeout=30).json()["workers"]
    workers = {w["worker_id"]: w for w in listed}
    assert workers["good"]["answers"] == 40 and workers["sloppy"]["answers"] == len(sloppy_given)
    assert workers["good"]["gold_answered"] >= 4 and workers["good"]["gold_accuracy"] == 1.0
    assert workers["good"]["seconds_per_answer"] > 0
    wait_up_to_date(live, sid, timeout=120)
    after = _ari(live, sid, y)
    assert after > before, (before, after)
    assert good.console_errors == [] and sloppy.console_errors == []
    good_ctx.close()
    sloppy_ctx.close()


def test_triplets_by_click_and_key_with_undo(live, browser, iris):
    did, y = iris
    sid = _session(live, did, budget=30, question_type="triplet")
    before = _ari(live, sid, y)
    ctx = browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    ann = AnnotatorPage(ctx.new_page())
    ann.open(_link(live, sid, worker_id="t1")["url"])
    _axe(ann.page)
    # a wrong answer undone within the window, then the right one
    rows, qid = ann.rows(), ann.question_id()
    right = truth(y, rows)
    wrong = {"yes": "no", "no": "yes", "dont_know": "yes"}[right]
    ann.answer(wrong, "click")
    ann.page.keyboard.press("u")
    ann.page.wait_for_function("qid => document.getElementById('app').dataset.questionId === qid", arg=qid)
    given = {qid: right}
    assert ann.rows() == rows  # the same question (its candidates may have changed sides)
    ann.answer(right, "key")
    swaps = []
    given.update(_work(ann, y, 29, swaps=swaps))
    assert len(given) == 30 and 0 < sum(swaps) < len(swaps)  # b and c shown on either side
    ann.flushed()
    recorded = {q: a for (w, q), a in _recorded(live, sid).items() if w == "t1"}
    assert recorded == {q: [a] for q, a in given.items()}
    wait_up_to_date(live, sid, timeout=180)
    after = _ari(live, sid, y)
    assert after >= before, (before, after)
    assert ann.console_errors == []
    ctx.close()


HOSTILE = ["<script>window.__pwned = 1; alert(1)</script>", "<img src=x onerror=\"window.__pwned=1;alert(2)\">",
           "javascript:alert(3)", "\"><svg onload=alert(4)>", "{{ 7*7 }} {% raw %}"]


def test_hostile_content_is_text(live, browser):
    X, y = load("iris")
    did = upload(live, X, y, name="hostile")
    tiny_png = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAA"
                "AABJRU5ErkJggg==")
    items = [{"text": HOSTILE[i % len(HOSTILE)], "image_url": tiny_png if i % 3 == 0 else None,
              "fields": {"link": "javascript:alert(5)", "<b>name</b>": "<i>x</i>"}} for i in range(len(y))]
    assert requests.put(f"{live}/v1/datasets/{did}/items", json={"items": items}, timeout=30).status_code == 200
    for bad in ({"image_url": "javascript:alert(1)"},
                {"image_url": "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+PC9zdmc+"},
                {"text": "<script>" * (10 * 1024 * 1024 // 8)}):
        r = requests.put(f"{live}/v1/datasets/{did}/items", json={"items": [bad] + [None] * (len(y) - 1)}, timeout=60)
        assert r.status_code in (413, 422), r.status_code
    sid = _session(live, did, budget=10)
    ctx = browser.new_context()
    page = ctx.new_page()
    dialogs, requests_seen = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests_seen.append(r.url))
    ann = AnnotatorPage(page)
    ann.open(_link(live, sid, worker_id="h1")["url"])
    for _ in range(3):
        rows = ann.rows()
        texts = page.eval_on_selector_all("#items .item .text", "els => els.map(e => e.textContent)")
        assert texts == [HOSTILE[r % len(HOSTILE)] for r in rows]
        assert page.eval_on_selector_all("#items a, #items script, #items svg, #items iframe", "els => els.length") == 0
        assert "<b>name</b>" in page.inner_text("#items")
        ann.answer("dont_know", "key")
    assert dialogs == [] and page.evaluate("window.__pwned") is None
    # Shoal's script and the first question's JSON (a data block, never run) are the page's only scripts
    assert page.evaluate("Array.from(document.scripts).map(s => s.type || 'js')") == ["application/json", "js"]
    assert all(u.startswith(live) or u.startswith("data:") for u in requests_seen), requests_seen
    assert ann.console_errors == []
    ctx.close()


def test_link_pages_expired_revoked_done(live, browser, iris):
    did, y = iris
    sid = _session(live, did, budget=20)
    ctx = browser.new_context()
    page = ctx.new_page()
    expired = _link(live, sid, worker_id="e1", expires_in=1)
    time.sleep(1.2)
    assert page.goto(expired["url"]).status == 410
    assert "expired" in page.inner_text("h1")
    _axe(page)
    forged = expired["url"][:-4] + ("AAAA" if not expired["url"].endswith("AAAA") else "BBBB")
    assert page.goto(forged).status == 401 and "does not work" in page.inner_text("h1")
    # done: the quota reached, the completion link shown
    done = _link(live, sid, worker_id="d1", quota=2,
                 completion_url="https://app.prolific.com/submissions/complete?cc=C0DE")
    ann = AnnotatorPage(page)
    ann.open(done["url"])
    _work(ann, y, 2)
    page.wait_for_selector("#done:not([hidden])")
    assert page.get_attribute("#completion-link", "href") == done["completion_url"]
    _axe(page)
    # revoked while open: the next answer shows the page that says so, and nothing is recorded
    rev = _link(live, sid, worker_id="r1")
    ann.open(rev["url"])
    qid = ann.question_id()
    assert requests.delete(f"{live}/v1/sessions/{sid}/annotators/{rev['id']}", timeout=30).status_code == 204
    ann.answer("dont_know", "key")
    ann.page.keyboard.press("3") if not ann.page.evaluate("!document.getElementById('failed').hidden") else None
    page.wait_for_selector("#failed:not([hidden])")
    assert "withdrawn" in page.inner_text("#failed-title")
    assert ("r1", qid) not in _recorded(live, sid)
    assert page.goto(rev["url"]).status == 410
    ctx.close()


def test_a_worker_flagged_by_gold_first_is_told_its_answers_no_longer_count(live, browser, iris):
    did, y = iris
    sid = _session(live, did, budget=20,
                   worker_quality={"min_gold_accuracy": 0.7, "min_gold_answered": 3, "exclude_flagged": True})
    pairs = [[0, int(j)] for j in np.flatnonzero(y == y[0])[1:3]] + [[0, int(j)] for j in np.flatnonzero(y != y[0])[:2]]
    gold = {"questions": [{"items": p, "answer": "must_link" if y[p[0]] == y[p[1]] else "cannot_link"}
                          for p in pairs], "first": 3, "every": 5}
    assert requests.post(f"{live}/v1/sessions/{sid}/gold", json=gold, timeout=30).status_code == 200
    ctx = browser.new_context()
    ann = AnnotatorPage(ctx.new_page())
    ann.open(_link(live, sid, worker_id="careless")["url"])
    seen = []
    for _ in range(4):  # three gold questions first, each answered wrong, then a question of the session
        if ann.done():
            break
        seen.append(ann.question_id())
        ann.answer("cannot_link" if truth(y, ann.rows()) == "must_link" else "must_link", "key")
    assert seen[:3] == ["gold-0", "gold-1", "gold-2"] and not seen[3].startswith("gold"), seen
    ann.page.wait_for_selector("#done:not([hidden])")
    assert "no longer count" in ann.page.inner_text("#done-why")
    ann.flushed()
    assert ("careless", seen[3]) not in _recorded(live, sid)  # sent after the flag: rejected
    r = requests.post(f"{live}/v1/sessions/{sid}/questions", json={"count": 1, "worker_id": "careless"}, timeout=30)
    assert r.json()["questions"] == [] and "flagged" in r.json()["worker_excluded"]
    _axe(ann.page)
    assert not ann.console_errors, ann.console_errors
    ctx.close()


def test_lost_connection_resends_without_doubles(live, browser, iris):
    did, y = iris
    sid = _session(live, did, budget=20)
    ctx = browser.new_context()
    ann = AnnotatorPage(ctx.new_page())
    ann.open(_link(live, sid, worker_id="c1")["url"])
    given = _work(ann, y, 2)
    ctx.set_offline(True)
    rows, qid = ann.rows(), ann.question_id()
    before = ann.ready()
    ann.page.keyboard.press("1" if truth(y, rows) == "must_link" else "2")
    given[qid] = truth(y, rows)
    ann.page.wait_for_selector("#failed:not([hidden])", timeout=20000)
    assert "Connection lost" in ann.page.inner_text("#failed-title")
    ctx.set_offline(False)
    ann.page.wait_for_function("n => Number(document.getElementById('app').dataset.ready) > n && "
                               "!document.getElementById('question').hidden", arg=before, timeout=30000)
    given.update(_work(ann, y, 2))
    ann.flushed()
    recorded = {q: a for (w, q), a in _recorded(live, sid).items() if w == "c1"}
    assert recorded == {q: [a] for q, a in given.items()}
    ctx.close()


@contextmanager
def _study_site():
    """A loopback HTTP server standing in for the platform's completion page: yields (base URL, paths asked)."""
    asked = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server name)
            asked.append(self.path)
            body = b"<!doctype html><title>Submission complete</title><h1>Submission complete</h1>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_a_prolific_visit_from_study_url_to_completion(live, browser, iris):
    """A study link opened as Prolific opens it: the participant id names the worker, the quota ends
    the visit, and the browser lands on the study's completion URL with its code."""
    did, y = iris
    sid = _session(live, did, budget=30)
    pid, study, visit = "5f3c9a0e1b2d4c6e8f0a1b2c", "65a1b2c3d4e5f60718293a4b", "66f0e1d2c3b4a59687786950"
    with _study_site() as (site, asked):
        complete = f"{site}/submissions/complete?cc=C0DE42"
        link = _link(live, sid, worker_id=None, quota=4, completion_url=complete)
        assert link["worker_id"] is None
        ctx = browser.new_context()
        page = ctx.new_page()
        ann = AnnotatorPage(page)
        ann.open(f"{link['url']}?PROLIFIC_PID={pid}&STUDY_ID={study}&SESSION_ID={visit}")
        given = _work(ann, y, 10)  # stops when the page says the worker is done
        assert len(given) == 4 and ann.done()
        # the done screen comes once Shoal has every answer: nothing is left to send when the worker leaves
        recorded = {q: a for (w, q), a in _recorded(live, sid).items() if w == pid}
        assert recorded == {q: [a] for q, a in given.items()}
        workers = {w["worker_id"]: w for w in requests.get(f"{live}/v1/sessions/{sid}/workers", timeout=30)
                   .json()["workers"]}
        assert set(workers) == {pid} and workers[pid]["answers"] == 4
        page.wait_for_selector("#completion-link", state="visible")
        page.click("#completion-link")
        page.wait_for_url(complete, timeout=30000)
        assert page.url == complete and "Submission complete" in page.inner_text("h1")
        assert "/submissions/complete?cc=C0DE42" in asked
        # coming back to the link later: still done, nothing asked again
        ann.open(f"{link['url']}?PROLIFIC_PID={pid}&STUDY_ID={study}&SESSION_ID={visit}")
        assert ann.done() and page.get_attribute("#completion-link", "href") == complete
        assert ann.console_errors == []
        # another participant on the same study link (the same browser, too) is another worker
        other = "5f3c9a0e1b2d4c6e8f0a1b2d"
        ann.open(f"{link['url']}?PROLIFIC_PID={other}&STUDY_ID={study}&SESSION_ID=66f0e1d2c3b4a59687786951")
        assert not ann.done()
        more = _work(ann, y, 1)
        ann.flushed()
        ctx.close()
    by_worker = {}
    for (w, q), a in _recorded(live, sid).items():
        by_worker.setdefault(w, {})[q] = a
    assert by_worker == {pid: {q: [a] for q, a in given.items()}, other: {q: [a] for q, a in more.items()}}
