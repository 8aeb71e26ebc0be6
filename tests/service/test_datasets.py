"""Dataset upload: validation errors are problem+json 4xx naming the field; nothing is altered."""

import json

import numpy as np
import pytest

PROBLEM = "application/problem+json"


def test_upload_and_read_back_metadata(client, store):
    X = [[1.5, 2.0], [3.25, -4.0], [0.0, 1e-300]]
    r = client.post("/v1/datasets", json={"name": "tiny", "data": X, "labels": ["a", "b", "a"]})
    assert r.status_code == 201
    assert r.headers["Location"].endswith(r.json["id"])
    assert (r.json["n_samples"], r.json["n_features"], r.json["n_classes"]) == (3, 2, 2)
    got = client.get(f"/v1/datasets/{r.json['id']}")
    assert got.status_code == 200 and got.json["checksum"] == r.json["checksum"]
    stored, labels, ids = store.load_dataset(r.json["id"])
    np.testing.assert_array_equal(stored, np.asarray(X))  # bit-exact: nothing silently changed
    assert labels == ["a", "b", "a"] and ids is None


@pytest.mark.parametrize(
    "raw, pointer, fragment",
    [
        ('{"data": [[1, 2], [3]]}', "/data", "same length"),
        ('{"data": [[1, "2"], [3, 4]]}', "/data", "[0][1]"),
        ('{"data": [[1, true], [3, 4]]}', "/data", "[0][1]"),
        ('{"data": [[1, null], [3, 4]]}', "/data", "[0][1]"),
        ('{"data": [[1, NaN], [3, 4]]}', "/data", "finite"),
        ('{"data": [[1, 2], [Infinity, 4]]}', "/data", "[1][0]"),
        ('{"data": []}', "/data", "at least one row"),
        ('{"data": [[]]}', "/data", "at least one row"),
        ('{"data": 5}', "/data", "list of rows"),
        ('{"data": [[1, 2], [3, 4]], "labels": [0]}', "/labels", "1 values for 2 rows"),
        ('{"data": [[1, 2], [3, 4]], "item_ids": ["a", "a"]}', "/item_ids", "more than once"),
        ('{"data": [[1, 2], [3, 4]], "extra": 1}', "/extra", "Unknown"),
        ("{}", "/data", "required"),
    ],
)
def test_invalid_uploads_name_the_field(client, raw, pointer, fragment):
    r = client.post("/v1/datasets", data=raw, content_type="application/json")
    assert r.status_code == 422, r.data
    assert r.mimetype == PROBLEM
    body = r.json
    assert body["status"] == 422 and body["code"] == "invalid_input"
    assert pointer in body["errors"], body
    assert any(fragment in m for m in body["errors"][pointer]), body["errors"]


def test_unparseable_json_is_400(client):
    r = client.post("/v1/datasets", data='{"data": [[1, 2]', content_type="application/json")
    assert r.status_code == 400 and r.mimetype == PROBLEM


def test_wrong_content_type_is_415(client):
    r = client.post("/v1/datasets", data="a,b\n1,2", content_type="text/csv")
    assert r.status_code == 415 and r.mimetype == PROBLEM


def test_too_many_rows_is_413(client):
    X = np.zeros((5001, 1)).tolist()
    r = client.post("/v1/datasets", json={"data": X})
    assert r.status_code == 413 and r.json["code"] == "too_large"


def test_too_many_bytes_is_413(app):
    app.config["MAX_CONTENT_LENGTH"] = 1000
    r = app.test_client().post("/v1/datasets", data=json.dumps({"data": [[1.0] * 200] * 2}),
                               content_type="application/json")
    assert r.status_code == 413 and r.mimetype == PROBLEM


def test_unknown_and_deleted_dataset_404(client):
    r = client.post("/v1/datasets", json={"data": [[1, 2], [3, 4]]})
    did = r.json["id"]
    assert client.delete(f"/v1/datasets/{did}").status_code == 204
    for resp in (client.get(f"/v1/datasets/{did}"), client.delete(f"/v1/datasets/{did}")):
        assert resp.status_code == 404 and resp.mimetype == PROBLEM


def test_redis_down_is_503_not_500():
    from service import create_app
    from workers.config import Settings
    from workers.store import Store

    dead = Store.from_settings(Settings(redis_url="redis://127.0.0.1:1/0"))
    app = create_app({"TESTING": True, "SHOAL_STORE": dead})
    r = app.test_client().post("/v1/datasets", json={"data": [[1, 2], [3, 4]]})
    assert r.status_code == 503 and r.mimetype == PROBLEM
    assert app.test_client().get("/readyz").status_code == 503
    assert app.test_client().get("/healthz").status_code == 200


def test_list_datasets_newest_first_with_pagination(client):
    ids = [client.post("/v1/datasets", json={"name": f"list-{i}", "data": [[i, 1.0], [2.0, 3.0]]}).json["id"]
           for i in range(3)]
    assert client.delete(f"/v1/datasets/{ids[1]}").status_code == 204
    seen, token = [], None
    while True:
        page = client.get("/v1/datasets?page_size=2" + (f"&page_token={token}" if token else "")).json
        assert len(page["datasets"]) <= 2
        seen += page["datasets"]
        token = page["next_page_token"]
        if not token:
            break
    listed = [d["id"] for d in seen]
    assert len(listed) == len(set(listed))
    assert [i for i in listed if i in ids] == [ids[2], ids[0]]  # newest first, the deleted one gone
    first = next(d for d in seen if d["id"] == ids[0])
    assert first == client.get(f"/v1/datasets/{ids[0]}").json
    assert client.get("/v1/datasets?page_token=garbage").status_code == 400


def test_a_dataset_in_use_stays_until_its_jobs_end_and_its_sessions_close(client, store, blobs_dataset):
    did = blobs_dataset[0]
    jid = client.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3}).json["id"]
    sid = client.post("/v1/sessions", json={"dataset_id": did, "budget": 5}).json["id"]
    r = client.delete(f"/v1/datasets/{did}")
    assert r.status_code == 409 and r.mimetype == PROBLEM and r.json["code"] == "dataset_in_use"
    assert r.json["jobs"] == [jid] and r.json["sessions"] == [sid]
    assert "1 unfinished job(s) and 1 open session(s)" in r.json["detail"]
    assert client.get(f"/v1/datasets/{did}").status_code == 200
    assert store.load_dataset(did)[0].shape == blobs_dataset[1].shape

    assert client.post(f"/v1/jobs/{jid}/cancel").json["state"] == "CANCELLED"
    r = client.delete(f"/v1/datasets/{did}")
    assert r.status_code == 409 and r.json["jobs"] == [] and r.json["sessions"] == [sid]

    from workers.session_store import SessionStore
    assert SessionStore(store).update(sid, state="COMPLETED")
    assert client.delete(f"/v1/datasets/{did}").status_code == 204
    assert client.get(f"/v1/datasets/{did}").status_code == 404
    assert client.get(f"/v1/sessions/{sid}").status_code == 200  # a completed session keeps its record
    assert client.get(f"/v1/jobs/{jid}").json["state"] == "CANCELLED"
    # the records are still listed by their dataset, until they expire themselves
    assert [r["id"] for r in client.get(f"/v1/jobs?dataset_id={did}").json["jobs"]] == [jid]
    assert [r["id"] for r in client.get(f"/v1/sessions?dataset_id={did}").json["sessions"]] == [sid]
    assert 0 < store.r.ttl(f"shoal:dataset:{did}:users") <= store.settings.job_ttl
    assert client.delete(f"/v1/jobs/{jid}").status_code == 204
    assert client.get(f"/v1/jobs?dataset_id={did}").json["jobs"] == []


def test_users_whose_records_are_gone_do_not_hold_a_dataset(client, store, blobs_dataset):
    did = blobs_dataset[0]
    sid = client.post("/v1/sessions", json={"dataset_id": did, "budget": 5}).json["id"]
    assert client.delete(f"/v1/datasets/{did}").status_code == 409
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    assert store.dataset_users(did) == [("session", sid)]
    assert client.delete(f"/v1/datasets/{did}").status_code == 204


@pytest.mark.parametrize("body, pointed", [({"dataset_id": "ds_gone", "method": "e2cp"}, True),
                                           ({"data": [[1.0, 2.0]]}, False)])
def test_a_dataset_gone_mid_request_answers_404(app, body, pointed):
    """Store.on_dataset raises DatasetGone when a delete wins the race; the app's
    handler turns it into a 404 problem naming /dataset_id when the client sent it."""
    from workers.dataset_store import DatasetGone

    with app.test_request_context("/v1/jobs", method="POST", json=body):
        resp = app.make_response(app.handle_user_exception(DatasetGone("ds_gone")))
    assert resp.status_code == 404 and resp.mimetype == PROBLEM
    doc = resp.get_json()
    assert doc["code"] == "not_found" and "ds_gone" in doc["detail"]
    assert (doc.get("errors") == {"/dataset_id": ["unknown dataset"]}) == pointed


def test_a_method_not_allowed_is_a_405_problem_naming_the_allowed_methods(client):
    r = client.put("/v1/datasets", json={})
    assert r.status_code == 405 and r.mimetype == PROBLEM and r.json["code"] == "method_not_allowed"
    assert {m.strip() for m in r.headers["Allow"].split(",")} >= {"GET", "POST"}
