"""The annotator page in a real browser, over the whole stack: how fast, and does it teach the model.

Starts Redis, one Celery worker and gunicorn as ``./run.sh`` does, and Debian's Chromium through
Playwright (:mod:`scripts.browser`). Three parts:

1. Page load: ``--loads`` fresh tabs on a link; the time from navigation start to the first
   question shown (measured in the page, ``performance.now()``).
2. Answer -> next question: ``--answers`` answers by key on iris (pairwise, URASC, K known), from
   the ground truth; the time from the key to the next question shown, in the page. Answers after
   which the page had to wait for a pass to refill the pool are counted apart (the target is for
   while the pool has questions).
3. ARI: ``--clicks`` clicked answers on iris (K known) through the page alone; the model's ARI
   before (unconstrained first pass) and after.

    python -m bench.annotator_page --out bench/results/annotator_page.json
    python -m bench.annotator_page --screenshots docs/screenshots     # also the pages' pictures
"""

import argparse
import base64
import json
import os
import platform
import struct
import time
import zlib

import numpy as np
import requests
from sklearn.metrics import adjusted_rand_score

from bench.datasets import load
from scripts.browser import AnnotatorPage, launch, truth
from scripts.stack import Stack, wait_ready, wait_up_to_date


def _session(base, did, wait=True, **body):
    r = requests.post(f"{base}/v1/sessions", json={"dataset_id": did, "n_clusters": 3, **body}, timeout=30)
    r.raise_for_status()
    sid = r.json()["id"]
    if wait:
        wait_up_to_date(base, sid, timeout=600, interval=0.05)
    return sid


def _link(base, sid, **body):
    r = requests.post(f"{base}/v1/sessions/{sid}/annotators", json=body, timeout=30)
    r.raise_for_status()
    return r.json()["url"]


def _ari(base, sid, y):
    return adjusted_rand_score(y, requests.get(f"{base}/v1/sessions/{sid}/model", timeout=30).json()["labels"])


def _p(values, q):
    return float(np.percentile(values, q)) if values else None


def _page_loads(base, browser, did, n):
    """First-question times (ms) of ``n`` navigations to a link in one open tab, and of ``n // 4`` in new
    browser contexts (a new profile each: nothing cached, a new renderer)."""
    first = "Number(document.getElementById('app').dataset.firstShownMs)"
    tab, fresh = [], []
    ctx = browser.new_context()
    ann = AnnotatorPage(ctx.new_page())
    for i in range(n):
        if i % 20 == 0:  # each load leases a question it never answers: a new session before the pool of 50 is held
            url = _link(base, _session(base, did, budget=200, pool_size=50), worker_id="loader")
            ann.open(url)  # not counted: the first page of a session (its dataset read into the web process)
        ann.open(url)
        tab.append(float(ann.page.evaluate(first)))
    assert not ann.console_errors, ann.console_errors
    ctx.close()
    for _ in range(max(n // 4, 1)):
        ctx = browser.new_context()
        ann = AnnotatorPage(ctx.new_page())
        ann.open(url)
        fresh.append(float(ann.page.evaluate(first)))
        ctx.close()
    return tab, fresh


def _answers(base, browser, did, y, n):
    """``n`` answers by key from the truth, over as many sessions as it takes (URASC on iris runs out
    of questions after about 170); returns the in-page and wall times (ms) of the answers whose
    next question came from the pool, and the in-page times of those that waited for a pass."""
    in_page, wall, waited = [], [], []
    ctx = browser.new_context()
    ann = AnnotatorPage(ctx.new_page())
    wait_count = "Number(document.getElementById('app').dataset.waits || 0)"
    while len(in_page) + len(waited) < n:
        sid = _session(base, did, budget=n, pool_size=50)
        ann.open(_link(base, sid, worker_id="fast"))
        while len(in_page) + len(waited) < n and not ann.done():
            waits = int(ann.page.evaluate(wait_count))
            seconds = ann.answer(truth(y, ann.rows()), "key")
            if ann.done():
                break
            ms = float(ann.page.evaluate("Number(document.getElementById('app').dataset.lastAnswerMs)"))
            if int(ann.page.evaluate(wait_count)) > waits:
                waited.append(ms)
            else:
                in_page.append(ms)
                wall.append(seconds * 1000)
        ann.flushed()
    assert not ann.console_errors, ann.console_errors
    ctx.close()
    return in_page, wall, waited


def _ari_by_clicks(base, browser, did, y, n):
    sid = _session(base, did, budget=n)
    before = _ari(base, sid, y)
    ctx = browser.new_context()
    ann = AnnotatorPage(ctx.new_page())
    ann.open(_link(base, sid, worker_id="clicker"))
    given = 0
    t0 = time.perf_counter()
    while given < n and not ann.done():
        ann.answer(truth(y, ann.rows()), "click")
        given += 1
    ann.flushed()
    seconds = time.perf_counter() - t0
    rec = wait_up_to_date(base, sid, timeout=600, interval=0.05)
    after = _ari(base, sid, y)
    ctx.close()
    return {"answers": given, "ari_before": round(before, 4), "ari_after": round(after, 4),
            "budget_used": rec["budget_used"], "seconds": round(seconds, 1)}


def _png(value):
    """A 48 x 48 grey-blue PNG whose shade follows ``value`` in [0, 1] (a stand-in picture)."""
    shade = int(60 + 180 * value)
    raw = b"".join(b"\x00" + bytes([shade // 2, shade // 2 + 40, 255 - shade // 3]) * 48 for _ in range(48))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 48, 48, 8, 2, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _screenshots(base, browser, X, y, folder):
    os.makedirs(folder, exist_ok=True)
    raw, _ = load("iris", zscore=False)
    names = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)"]
    lo, hi = raw[:, 2].min(), raw[:, 2].max()
    items = [{"text": f"Iris flower no. {i + 1}", "image_url": _png((raw[i, 2] - lo) / (hi - lo)),
              "fields": {n: float(v) for n, v in zip(names, raw[i])}} for i in range(len(raw))]
    plain = requests.post(f"{base}/v1/datasets", json={"data": X.tolist(), "labels": y.tolist()},
                          timeout=30).json()["id"]
    rich = requests.post(f"{base}/v1/datasets", json={"data": X.tolist(), "labels": y.tolist(), "items": items},
                         timeout=30).json()["id"]
    shots = {}

    def shot(page, name):
        path = os.path.join(folder, f"{name}.png")
        page.screenshot(path=path)
        shots[name] = path

    ctx = browser.new_context(viewport={"width": 960, "height": 720})
    page = ctx.new_page()
    ann = AnnotatorPage(page)
    ann.open(_link(base, _session(base, plain, budget=20), worker_id="ada", quota=12))
    ann.answer(truth(y, ann.rows()), "key")
    shot(page, "question-pairwise")
    ann.open(_link(base, _session(base, rich, budget=20, question_type="triplet"), worker_id="ada", quota=12))
    page.evaluate("document.getElementById('instructions').open = false")
    shot(page, "question-triplet")
    sid = _session(base, plain, budget=1)  # its one question answered, the page waits for the pass
    ann.open(_link(base, sid, worker_id="ada"))
    page.keyboard.press("1")
    page.wait_for_selector("#waiting:not([hidden])", timeout=30000)
    shot(page, "waiting")
    done = _link(base, _session(base, plain, budget=20), worker_id="ada", quota=1,
                 completion_url="https://app.prolific.com/submissions/complete?cc=C0DE")
    ann.open(done)
    ann.answer(truth(y, ann.rows()), "click")
    page.wait_for_selector("#done:not([hidden])")
    shot(page, "done")
    r = requests.post(f"{base}/v1/sessions/{sid}/annotators", json={"worker_id": "ada", "expires_in": 1}, timeout=30)
    time.sleep(1.2)
    page.goto(r.json()["url"])
    shot(page, "expired")
    phone = browser.new_context(viewport={"width": 390, "height": 844})
    pp = phone.new_page()
    AnnotatorPage(pp).open(_link(base, _session(base, rich, budget=20), worker_id="bo"))
    shot(pp, "question-phone")
    phone.close()
    ctx.close()
    return shots


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--answers", type=int, default=200)
    ap.add_argument("--loads", type=int, default=20)
    ap.add_argument("--clicks", type=int, default=70)
    ap.add_argument("--out", default="bench/results/annotator_page.json")
    ap.add_argument("--screenshots", default=None, help="folder for PNGs of each page (and nothing else)")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    X, y = load("iris")
    with Stack() as st, sync_playwright() as pw:
        st.start_redis()
        st.start_worker(concurrency=1)
        base = st.start_web(workers=2)
        wait_ready(base, timeout=90)
        browser = launch(pw)
        if args.screenshots:
            for name, path in _screenshots(base, browser, X, y, args.screenshots).items():
                print(f"{name}: {path}")
            return
        did = requests.post(f"{base}/v1/datasets", json={"data": X.tolist(), "labels": y.tolist()},
                            timeout=30).json()["id"]
        loads, fresh = _page_loads(base, browser, did, args.loads)
        in_page, wall, waited = _answers(base, browser, did, y, args.answers)
        ari = _ari_by_clicks(base, browser, did, y, args.clicks)
        browser.close()
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "page_load_ms": {"n": len(loads), "p50": _p(loads, 50), "p95": _p(loads, 95), "target_p95": 300},
        "page_load_new_context_ms": {"n": len(fresh), "p50": _p(fresh, 50), "p95": _p(fresh, 95), "target_p95": 300},
        "answer_to_next_ms": {"n": len(in_page), "p50": _p(in_page, 50), "p95": _p(in_page, 95), "target_p95": 150,
                              "wall_p95_from_python": _p(wall, 95)},
        "answers_after_waiting_for_a_pass": {"n": len(waited), "p50": _p(waited, 50)},
        "ari_by_clicks": ari,
    }
    print(f"{'measure':<40}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}{'target':>10}")
    for name, key in (("page load (navigation -> question)", "page_load_ms"),
                      ("page load, new browser context", "page_load_new_context_ms"),
                      ("answer -> next question (pool ready)", "answer_to_next_ms")):
        m = result[key]
        print(f"{name:<40}{m['n']:>5}{m['p50']:>10.0f}{m['p95']:>10.0f}{m['target_p95']:>10}")
    w = result["answers_after_waiting_for_a_pass"]
    print(f"{'answers that waited for a pass':<40}{w['n']:>5}{(w['p50'] or 0):>10.0f}")
    print(f"ARI on iris by {ari['answers']} clicked answers: {ari['ari_before']} -> {ari['ari_after']} "
          f"(budget used {ari['budget_used']}, {ari['seconds']} s)")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as fh:
        json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()
