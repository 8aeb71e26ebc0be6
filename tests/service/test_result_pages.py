"""The result pages (service.ui) through the Flask test client on a real Redis.

The jobs here are written to the store as a worker writes them (no worker consumes this store's
queue): the pages are checked for what they embed and how they escape it.
"""

import json
import re

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from service import create_app
from service.ui import ASSET_MAX_AGE
from workers.projection import project

HOSTILE = ['</script><script>alert("x")</script>', "<img src=x onerror=alert(1)>", "a & b ' \" <svg onload=alert(2)>"]


def _page_data(html):
    m = re.search(r'<script type="application/json" id="shoal-data">(.*?)</script>', html, re.S)
    assert m, html[:500]
    return json.loads(m.group(1))


def _finished_job(store, client, *, name="blobs", item_ids=None, labels_true=True, constraints=None,
                  max_points=None, owner=None):
    X, y = make_blobs(60, centers=[[0, 0], [8, 8], [-8, 8]], cluster_std=0.6, random_state=1)
    body = {"name": name, "data": X.tolist(), "item_ids": item_ids}
    if labels_true:
        body["labels"] = y.tolist()
    r = client.post("/v1/datasets", json={k: v for k, v in body.items() if v is not None})
    assert r.status_code == 201, r.json
    did = r.json["id"]
    labels = y.copy()
    constraints = constraints or {}
    conflicts = [{"cannot_link": [0, 1], "cannot_link_index": 1, "must_link_chain": [0, 1]}] if constraints else []
    jid = store.create_job(dataset_id=did, method="copkmeans", n_clusters=3, params={}, constraints=constraints,
                           random_state=0, conflicts=conflicts, owner=owner)["id"]
    store.start_job(jid)
    result = {"job_id": jid, "method": "copkmeans", "labels": labels.tolist(), "item_ids": item_ids,
              "n_clusters": 3, "cluster_sizes": np.bincount(labels).tolist(), "constraint_satisfaction": 0.5,
              "violated_constraints": {"must_link": [0], "cannot_link": []} if constraints else None,
              "conflicts": conflicts, "n_conflicts": len(conflicts), "metrics": None,
              "timings": {"fit_seconds": 0.01, "queued_seconds": 0.0}, "diagnostics": {}, "extras": {}}
    store.save_result(jid, result, projection=project(X, max_points=max_points or 20_000))
    store.finish_job(jid, "SUCCEEDED")
    return jid, X, y


def test_a_finished_job_page_embeds_every_point_its_clusters_and_marked_constraints(client, store):
    y_pairs = make_blobs(60, centers=[[0, 0], [8, 8], [-8, 8]], cluster_std=0.6, random_state=1)[1]
    a, b = (int(i) for i in np.flatnonzero(y_pairs == 0)[:2])
    c = int(np.flatnonzero(y_pairs == 1)[0])
    constraints = {"must_link": [[a, c], [a, b]], "cannot_link": [[b, c], [0, 1]]}
    jid, X, y = _finished_job(store, client, constraints=constraints)
    r = client.get(f"/ui/jobs/{jid}")
    assert r.status_code == 200 and r.mimetype == "text/html"
    data = _page_data(r.get_data(as_text=True))
    pts = data["map"]["points"]
    assert len(pts["rows"]) == len(pts["x"]) == len(pts["y"]) == 60 and not data["map"]["sampled"]
    assert sorted(set(pts["cluster"])) == [0, 1, 2] and data["n_clusters"] == 3
    assert pts["cluster"] == y.tolist()
    lines = {(i, j, kind): flag for i, j, kind, flag in data["constraints"]["lines"]}
    assert lines == {(a, c, "must_link"): "violated", (a, b, "must_link"): "", (b, c, "cannot_link"): "",
                     (0, 1, "cannot_link"): "contradictory"}
    assert data["constraints"]["n_total"] == 4
    html = r.get_data(as_text=True)
    assert "Samples per cluster" in html and html.count('class="cluster"') == 3
    assert 'data-row="' in html and "/ui/static/plotly.min.js?v=" in html


def test_hostile_names_and_item_ids_reach_the_page_only_escaped(client, store):
    ids = [HOSTILE[i % 3] + str(i) for i in range(60)]
    jid, _, _ = _finished_job(store, client, name=HOSTILE[0], item_ids=ids)
    html = client.get(f"/ui/jobs/{jid}").get_data(as_text=True)
    for raw in ("<script>alert", "<img src=x", "<svg onload", "</script><script>"):
        assert raw not in html
    assert html.count("<script") == 3  # the JSON block, plotly.js, result.js: nothing else
    data = _page_data(html)
    assert data["map"]["points"]["item_id"] == ids  # the JSON block gives them back unchanged
    assert "&lt;img src=x onerror=alert(1)&gt;" in html or "&lt;/script&gt;" in html
    row = client.get(f"/ui/jobs/{jid}/rows/1")
    assert row.status_code == 200 and row.mimetype == "application/json" and row.json["item_id"] == ids[1]


def test_item_content_is_shown_escaped_in_samples_and_rows(client, store):
    jid, _, _ = _finished_job(store, client)
    items = [{"text": HOSTILE[r % 3], "image_url": "https://example.org/a.png",
              "fields": {"note": "<i>v</i>"}} for r in range(60)]
    did = store.get_job(jid)["dataset_id"]
    assert client.put(f"/v1/datasets/{did}/items", json={"items": items}).status_code == 200
    html = client.get(f"/ui/jobs/{jid}").get_data(as_text=True)
    assert "<script>alert" not in html and "<img src=x" not in html and "&lt;img src=x" in html
    row = client.get(f"/ui/jobs/{jid}/rows/4").json
    assert row["content"] == items[4] and row["cluster"] in (0, 1, 2)


def test_row_detail_has_features_ranges_and_neighbours_of_the_same_blob(client, store):
    jid, X, y = _finished_job(store, client)
    r = client.get(f"/ui/jobs/{jid}/rows/7")
    assert r.status_code == 200
    d = r.json
    assert [f["name"] for f in d["features"]] == ["x0", "x1"]
    assert d["features"][0]["value"] == pytest.approx(X[7, 0])
    assert d["features"][1]["max"] == pytest.approx(X[:, 1].max())
    assert len(d["neighbours"]) == 5 and all(n["cluster"] == y[7] for n in d["neighbours"])
    gone = client.get(f"/ui/jobs/{jid}/rows/60")
    assert gone.status_code == 404 and gone.mimetype == "application/problem+json"


def test_a_large_dataset_is_drawn_as_a_sample_and_the_page_says_so(client, store):
    jid, _, _ = _finished_job(store, client, max_points=25)
    r = client.get(f"/ui/jobs/{jid}")
    data = _page_data(r.get_data(as_text=True))
    assert data["map"]["sampled"] and len(data["map"]["points"]["rows"]) == 25 and data["n_samples"] == 60
    assert "25 of 60 rows drawn" in " ".join(r.get_data(as_text=True).split())


@pytest.mark.parametrize("path", ["/ui/jobs/job_" + "0" * 32, "/ui/jobs/nonsense", "/ui/sessions/ses_" + "0" * 32,
                                  "/ui/sessions/x", "/ui/jobs/job_" + "0" * 32 + "/rows/0"])
def test_an_unknown_id_is_a_404_problem(client, path):
    r = client.get(path)
    assert r.status_code == 404 and r.mimetype == "application/problem+json" and r.json["code"] == "not_found"


def test_every_page_answer_carries_a_strict_content_security_policy(client, store):
    jid, _, _ = _finished_job(store, client)
    for path in (f"/ui/jobs/{jid}", f"/ui/jobs/{jid}/rows/0", "/ui/static/result.js"):
        csp = client.get(path).headers["Content-Security-Policy"]
        script = next(p for p in csp.split(";") if p.strip().startswith("script-src")).split()
        assert script == ["script-src", "'self'"] and "default-src 'none'" in csp and "frame-ancestors 'none'" in csp


def test_an_unfinished_job_gets_a_page_that_waits(client, store, blobs_dataset):
    jid = store.create_job(dataset_id=blobs_dataset[0], method="copkmeans", n_clusters=3, params={},
                           constraints={}, random_state=0)["id"]
    r = client.get(f"/ui/jobs/{jid}")
    assert r.status_code == 200 and "is QUEUED" in r.get_data(as_text=True) and r.headers["Retry-After"] == "1"
    html = r.get_data(as_text=True)
    assert 'data-retry-after="1"' in html and "waiting.js" in html and "shoal-data" not in html
    assert 'http-equiv="refresh"' not in html  # axe-core: a timed refresh is a critical violation
    store.start_job(jid)
    store.finish_job(jid, "FAILED", error={"detail": "<b>it broke</b>"})
    html = client.get(f"/ui/jobs/{jid}").get_data(as_text=True)
    assert "is FAILED" in html and "&lt;b&gt;it broke&lt;/b&gt;" in html and "waiting.js" not in html


def test_static_files_come_from_shoal_with_long_cache_headers(client):
    r = client.get("/ui/static/plotly.min.js")
    assert r.status_code == 200 and len(r.data) > 1_000_000 and b"plotly" in r.data[:2000].lower()
    assert f"max-age={ASSET_MAX_AGE}" in r.headers["Cache-Control"] and "immutable" in r.headers["Cache-Control"]
    assert client.get("/ui/static/result.js").status_code == 200
    assert client.get("/ui/static/../ui.py").status_code == 404
    assert client.get("/ui/static/widgetbundle.js").status_code == 404


def test_with_api_keys_the_pages_need_the_key_and_their_static_files_do_not(store):
    key, other = "page-key-0123456789", "other-key-0123456789"
    locked = create_app({"TESTING": True, "SHOAL_STORE": store,
                         "SHOAL_API_KEYS": f"pages:{key},others:{other}"}).test_client()
    owner = locked.application.test_client()
    owner.environ_base["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    jid, _, _ = _finished_job(store, owner, owner="pages")
    assert locked.get(f"/ui/jobs/{jid}").status_code == 401
    assert locked.get(f"/ui/jobs/{jid}/rows/0").status_code == 401
    assert locked.get(f"/ui/jobs/{jid}", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert locked.get(f"/ui/jobs/{jid}", headers={"Authorization": f"Bearer {other}"}).status_code == 404
    assert locked.get("/ui/static/result.js").status_code == 200


def _open_client(store):
    return create_app({"TESTING": True, "SHOAL_STORE": store}).test_client()
