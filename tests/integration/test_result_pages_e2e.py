"""The result pages on the real stack: gunicorn, a Celery worker, Redis."""

import numpy as np
import pytest
import requests

from .result_pages import CROWD, iris_job, iris_session, page_data

pytestmark = pytest.mark.integration


def test_a_finished_job_page_shows_every_row_its_clusters_and_its_marked_constraints(live):
    jid, y = iris_job(live)
    r = requests.get(f"{live}/ui/jobs/{jid}", timeout=30)
    assert r.status_code == 200 and "script-src 'self'" in r.headers["Content-Security-Policy"]
    data = page_data(r.text)
    result = requests.get(f"{live}/v1/jobs/{jid}/result", timeout=30).json()
    pts = data["map"]["points"]
    assert len(pts["rows"]) == len(pts["x"]) == 150 and data["map"]["source"] == "data"
    assert len(set(pts["cluster"])) == data["n_clusters"] == 3 and pts["cluster"] == result["labels"]
    assert pts["item_id"][:2] == ["iris-0", "iris-1"]
    flags = [ln[3] for ln in data["constraints"]["lines"]]
    n_violated = sum(len(v) for v in result["violated_constraints"].values())
    assert flags.count("contradictory") == result["n_conflicts"] == 1
    assert 1 <= flags.count("violated") <= n_violated  # [0, 100] at least; a contradictory one counts once
    assert data["constraints"]["n_total"] == data["constraints"]["n_drawn"] == 34
    row = requests.get(f"{live}{data['rows_url']}0", timeout=30).json()
    assert row["item_id"] == "iris-0" and len(row["features"]) == 4 and len(row["neighbours"]) == 5
    assert sum(y[n["row"]] == y[0] for n in row["neighbours"]) >= 4


def test_a_method_with_a_learned_embedding_is_mapped_from_it(live):
    jid, _ = iris_job(live, method="ccskl")
    data = page_data(requests.get(f"{live}/ui/jobs/{jid}", timeout=30).text)
    assert data["map"]["source"] == "embedding" and len(data["map"]["points"]["rows"]) == 150


def test_a_session_page_shows_each_pass_the_workers_and_the_questions_in_flight(live):
    sid, y = iris_session(live, rounds=3)
    r = requests.get(f"{live}/ui/sessions/{sid}", timeout=30)
    assert r.status_code == 200, r.text
    data = page_data(r.text)
    model = requests.get(f"{live}/v1/sessions/{sid}/model", timeout=30).json()
    assert len(data["map"]["points"]["rows"]) == 150 and data["map"]["points"]["cluster"] == model["labels"]
    passes = data["passes"]
    assert len(passes) >= 3 and [p["revision"] for p in passes] == sorted(p["revision"] for p in passes)
    assert passes[-1]["ari"] == pytest.approx(model["metrics"]["ari"])
    assert all(p["ari"] is not None for p in passes) and passes[0]["agreement"] is None  # no answer yet
    assert 0.5 < passes[-1]["agreement"] < 1 and passes[-1]["n_workers"] == 3  # "sloppy" disagrees
    drawn = data["constraints"]["lines"]
    assert len(drawn) == len(model["must_link"]) + len(model["cannot_link"]) > 0
    assert sum(ln[3] != "" for ln in drawn) == len([a for a in model["contradicted_answers"]])
    html = " ".join(r.text.split())
    for w in CROWD:
        assert f"<td>{w}</td>" in html
    assert "Questions in flight" in html and "<td>ann</td>" in html.split("Questions in flight")[1]
    assert html.count('class="cluster"') == 3


def test_a_triplet_session_page_maps_its_model_without_pair_lines(live):
    from bench.datasets import load

    from .helpers import upload
    from .result_pages import wait_up_to_date

    X, y = load("iris", zscore=False)
    did = upload(live, X, y, name="iris")
    r = requests.post(f"{live}/v1/sessions", json={"dataset_id": did, "n_clusters": 3, "budget": 10,
                                                   "question_type": "triplet"}, timeout=30)
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    wait_up_to_date(live, sid)
    page = requests.get(f"{live}/ui/sessions/{sid}", timeout=30)
    assert page.status_code == 200, page.text
    data = page_data(page.text)
    assert len(data["map"]["points"]["rows"]) == 150 and data["constraints"]["lines"] == []
    assert data["map"]["points"]["item_id"] is None and len(data["passes"]) == 1
    assert np.isclose(data["passes"][0]["ari"], requests.get(f"{live}/v1/sessions/{sid}/model",
                                                             timeout=30).json()["metrics"]["ari"])
