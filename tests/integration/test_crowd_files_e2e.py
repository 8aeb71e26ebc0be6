"""Crowd platforms' files over the whole stack: export questions, answer them, import the results.

An import must record exactly what posting the same answers through
``POST .../answers`` records: two sessions made alike (same data, parameters
and seed) get the same 500 answers, one as a file and one as JSON.
"""

import csv
import io
import time

import numpy as np
import pytest
import requests

from bench.datasets import load

from .helpers import upload

pytestmark = pytest.mark.integration

WORKERS = [f"worker-{k}" for k in range(5)]
TOLOKA_RESULT_COLUMNS = ["INPUT:question_id", "INPUT:items", "INPUT:a", "INPUT:b", "OUTPUT:result", "GOLDEN:result",
                         "HINT:text", "ASSIGNMENT:link", "ASSIGNMENT:assignment_id", "ASSIGNMENT:worker_id",
                         "ASSIGNMENT:status", "ASSIGNMENT:started"]


def _session(base, did):
    body = {"dataset_id": did, "n_clusters": 3, "budget": 100, "answers_per_question": 5, "pool_size": 100,
            "strategy": "random", "random_state": 7}
    r = requests.post(f"{base}/v1/sessions", json=body, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        s = requests.get(f"{base}/v1/sessions/{sid}", timeout=30).json()
        if s["state"] == "ACTIVE":
            return sid
        assert s["state"] != "FAILED", s
        time.sleep(0.2)
    raise AssertionError(f"session {sid} not ACTIVE: {s}")


def _export(base, sid, fmt):
    r = requests.get(f"{base}/v1/sessions/{sid}/questions/export", params={"format": fmt, "count": 1000}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/tab-separated-values" if fmt == "toloka" else "text/csv")
    rows = list(csv.reader(io.StringIO(r.text), delimiter="\t" if fmt == "toloka" else ","))
    return rows[0], rows[1:]


def _recorded(base, sid):
    """{(question_id, worker_id, assignment_id, answer)} of every question, any status."""
    out, token = set(), None
    while True:
        params = {"page_size": 100, **({"page_token": token} if token else {})}
        page = requests.get(f"{base}/v1/sessions/{sid}/questions", params=params, timeout=30).json()
        for q in page["questions"]:
            out |= {(q["question_id"], a["worker_id"], a["assignment_id"], a["answer"]) for a in q["answers"]}
        token = page["next_page_token"]
        if not token:
            return out


def _simulated(questions, y, rng):
    """(question_id, items, worker, answer) for every worker on every question; 10% of answers random."""
    out = []
    for w in WORKERS:
        for qid, items in questions:
            truth = "must_link" if y[items[0]] == y[items[1]] else "cannot_link"
            ans = str(rng.choice(["must_link", "cannot_link"])) if rng.random() < 0.1 else truth
            out.append((qid, items, w, ans))
    return out


def _toloka_file(answers):
    """A Toloka results TSV of ``answers`` (task suites of 10 per worker), with malformed and skipped rows.

    Returns the file, the lines expected malformed, and the rows (line, answer dict) meant for the API.
    """
    lines = ["\t".join(TOLOKA_RESULT_COLUMNS)]
    malformed, api = [], []
    for k, (qid, items, w, ans) in enumerate(answers):
        suite = f"000{k // 10:04d}{w[-1]}--6523e5f1b0a4c8"
        row = [qid, " ".join(map(str, items)), str(items[0]), str(items[1]), ans, "", "",
               f"https://platform.toloka.ai/task/1/{suite}", suite, f"w{w[-1]}a7f3c", "APPROVED",
               "2026-11-28T10:00:00"]
        lines.append("\t".join(row))
        api.append((len(lines), {"question_id": qid, "answer": ans, "worker_id": row[9],
                                 "assignment_id": f"{suite}:{qid}"}))
        if k % 50 == 7:  # a row cut short
            lines.append("\t".join(row[:5]))
            malformed.append(len(lines))
        if k % 50 == 21:  # no answer
            lines.append("\t".join(row[:4] + [""] + row[5:9] + ["wXXa7f3c"] + row[10:]))
            malformed.append(len(lines))
        if k % 100 == 33:  # the same row again: a re-exported file
            lines.append("\t".join(row))
            api.append((len(lines), dict(api[-1][1])))
        if k % 100 == 44:  # a word outside the vocabulary: rejected, as the API rejects it
            bad = row[:4] + ["maybe"] + row[5:8] + [suite + "x"] + row[9:]
            lines.append("\t".join(bad))
            api.append((len(lines), {"question_id": qid, "answer": "maybe", "worker_id": row[9],
                                     "assignment_id": f"{suite}x:{qid}"}))
    lines.append("\t".join(["q_0_1", "0 1", "0", "1", "must_link", "must_link", "same species", "", "gold-1",
                            "w0a7f3c", "APPROVED", ""]))  # a control task: skipped
    lines.append("\t".join(["q_0_2", "0 2", "0", "2", "must_link", "", "", "", "late-1", "w0a7f3c", "REJECTED",
                            ""]))  # rejected on the platform: skipped
    return "\n".join(lines) + "\n", malformed, api


def _csv_file(answers):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["question_id", "items", "worker_id", "assignment_id", "answer"])
    malformed, api = [], []
    for k, (qid, items, worker, ans) in enumerate(answers):
        row = [qid, " ".join(map(str, items)), worker, f"{worker}/{qid}", ans]
        w.writerow(row)
        api.append((k + 2 + len(malformed), {"question_id": qid, "answer": ans, "worker_id": worker,
                                              "assignment_id": f"{worker}/{qid}"}))
        if k % 60 == 5:  # items of another question
            w.writerow([qid, "0 149", worker, f"{worker}/{qid}/2", ans])
            malformed.append(k + 3 + len(malformed))
        if k % 60 == 9:  # no worker id
            w.writerow([qid, "", "", f"anon/{qid}", ans])
            malformed.append(k + 3 + len(malformed))
    return out.getvalue(), malformed, api


@pytest.mark.parametrize("fmt", ["toloka", "csv"])
def test_an_imported_file_records_what_the_api_records(live, fmt):
    X, y = load("iris", zscore=False)
    did = upload(live, X, y)
    via_file, via_api = _session(live, did), _session(live, did)
    header, rows = _export(live, via_file, fmt)
    assert header == (["INPUT:question_id", "INPUT:items", "INPUT:a", "INPUT:b", "GOLDEN:result"] if fmt == "toloka"
                      else ["question_id", "type", "items", "item_ids", "worker_id", "assignment_id", "answer"])
    assert _export(live, via_api, fmt)[1] == rows  # made alike: the same questions
    questions = [(r[0], [int(i) for i in (r[1] if fmt == "toloka" else r[2]).split()]) for r in rows]
    assert len(questions) == 100
    answers = _simulated(questions, y, np.random.default_rng(1))
    assert len(answers) == 500
    text, malformed, api = (_toloka_file if fmt == "toloka" else _csv_file)(answers)

    r = requests.post(f"{live}/v1/sessions/{via_file}/answers/import", params={"format": fmt}, data=text.encode(),
                      headers={"Content-Type": "text/tab-separated-values" if fmt == "toloka" else "text/csv"},
                      timeout=60)
    assert r.status_code == 200, r.text
    report = r.json()
    by_line = {x["line"]: x for x in report["results"]}
    assert sorted(x["line"] for x in report["results"] if x["outcome"] == "malformed") == malformed
    assert all(by_line[n]["reason"] for n in malformed)
    skipped = 2 if fmt == "toloka" else 0
    assert report["counts"]["skipped"] == skipped
    assert report["rows"] == len(api) + len(malformed) + skipped == sum(report["counts"].values())

    posted = requests.post(f"{live}/v1/sessions/{via_api}/answers", json={"answers": [a for _, a in api]},
                           timeout=60)
    assert posted.status_code == 200, posted.text
    for (line, a), res in zip(api, posted.json()["results"]):
        assert (by_line[line]["outcome"], by_line[line]["reason"]) == (res["outcome"], res["reason"]), line
        assert by_line[line]["assignment_id"] == a["assignment_id"]
    counts = report["counts"]
    assert counts["accepted"] == 500 and counts["rejected"] == (5 if fmt == "toloka" else 0)
    assert counts["duplicate"] == (5 if fmt == "toloka" else 0)
    assert _recorded(live, via_file) == _recorded(live, via_api)
    assert len(_recorded(live, via_file)) == 500

    again = requests.post(f"{live}/v1/sessions/{via_file}/answers/import", params={"format": fmt},
                          data=text.encode(), headers={"Content-Type": "text/csv"}, timeout=60).json()
    assert again["counts"]["accepted"] == 0 and again["counts"]["duplicate"] == 500 + counts["duplicate"]
    session = requests.get(f"{live}/v1/sessions/{via_file}", timeout=30).json()
    assert session["counters"]["accepted"] == 500


def test_an_import_names_its_problems(live):
    X, y = load("iris", zscore=False)
    sid = _session(live, upload(live, X, y))
    url = f"{live}/v1/sessions/{sid}/answers/import"
    r = requests.post(url, params={"format": "toloka"}, data=b"INPUT:question_id\tOUTPUT:result\nq_0_1\tyes\n",
                      headers={"Content-Type": "text/tab-separated-values"}, timeout=30)
    assert r.status_code == 422 and r.headers["Content-Type"] == "application/problem+json"
    assert "ASSIGNMENT:worker_id" in r.json()["detail"]
    r = requests.post(url, params={"format": "csv"}, data=b"question_id,worker_id\n",
                      headers={"Content-Type": "application/octet-stream"}, timeout=30)
    assert r.status_code == 415
    r = requests.post(url, params={"format": "csv"}, data=b"\xff\xfe", headers={"Content-Type": "text/csv"},
                      timeout=30)
    assert r.status_code == 422 and "UTF-8" in r.json()["detail"]
    r = requests.post(url, params={"format": "xlsx"}, data=b"a", headers={"Content-Type": "text/csv"}, timeout=30)
    assert r.status_code == 422 and "format" in str(r.json())
