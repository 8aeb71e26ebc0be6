"""Record ids in paths and bodies name records, never other Redis keys or key patterns.

The store builds its keys from the ids (``shoal:session:{id}``, ``shoal:dataset:{id}:aux``, ...), and
the session delete removes ``shoal:session:{id}:*``: an id with ``*`` or ``:`` in it reached them.
"""

import numpy as np
import pytest

from workers.session_store import SessionStore

PROBLEM = "application/problem+json"


def _session_with_keys(client, store, did):
    ss = SessionStore(store)
    sid = client.post("/v1/sessions", json={"dataset_id": did, "budget": 5}).json["id"]
    ss.replace_pool(sid, [{"question_id": "q1", "type": "pairwise", "items": [0, 1]}], 0)
    assert ss.record_answer(sid, "q1", "must_link", "w1", "a1", 0) == "accepted:ready"
    ss.save_model(sid, {"session_id": sid, "observed_revision": 0, "labels": [0] * 60, "n_clusters": 1})
    return sid


def _keys(store, sid):
    return sorted(store.r.scan_iter(match=SessionStore(store)._key(sid, ":*")))


@pytest.mark.parametrize("pattern", ["*", "ses_*", "ses_%3F*", "[a-z]*", "*:*"])
def test_a_session_id_that_is_a_key_pattern_deletes_no_session(client, store, blobs_dataset, pattern):
    # DELETE /v1/sessions/* answered 404 and deleted shoal:session:*:* -- every session's questions,
    # answers, pool and model.
    sids = [_session_with_keys(client, store, blobs_dataset[0]) for _ in range(2)]
    before = {sid: _keys(store, sid) for sid in sids}
    r = client.delete(f"/v1/sessions/{pattern}")
    assert r.status_code == 404 and r.mimetype == PROBLEM
    assert {sid: _keys(store, sid) for sid in sids} == before
    for sid in sids:
        assert client.get(f"/v1/sessions/{sid}/model").status_code == 200
        assert client.get(f"/v1/sessions/{sid}/questions").json["questions"][0]["question_id"] == "q1"


def test_the_store_deletes_one_session_whatever_its_id_holds(client, store, blobs_dataset):
    ss = SessionStore(store)
    sid = _session_with_keys(client, store, blobs_dataset[0])
    before = _keys(store, sid)
    for pattern in ("*", "ses_*", "[s]es_*", "\\*"):
        assert ss.delete(pattern) is False
    assert _keys(store, sid) == before


def test_an_id_naming_another_key_of_a_record_is_a_404_and_changes_nothing(client, store, blobs_dataset):
    # DELETE /v1/datasets/{id}:aux deleted the dataset's labels and item ids (204) past the in-use check,
    # DELETE /v1/sessions/{id}:model the session's model; GETs of such ids were 503 or 500 (WRONGTYPE).
    did = blobs_dataset[0]
    sid = _session_with_keys(client, store, did)
    jid = client.post("/v1/jobs", json={"dataset_id": did, "method": "e2cp", "n_clusters": 3}).json["id"]
    for method, path in [("delete", f"/v1/datasets/{did}:aux"), ("delete", f"/v1/datasets/{did}:X"),
                         ("get", f"/v1/datasets/{did}:aux"), ("delete", f"/v1/sessions/{sid}:model"),
                         ("get", f"/v1/sessions/{sid}:model"), ("get", f"/v1/sessions/{sid}:questions/model"),
                         ("get", f"/v1/sessions/{sid}:pool/questions"),
                         ("post", f"/v1/sessions/{sid}:pool/questions"),
                         ("get", f"/v1/jobs/{jid}:spec"), ("get", f"/v1/jobs/{jid}:spec/result"),
                         ("post", f"/v1/jobs/{jid}:spec/cancel"), ("delete", f"/v1/jobs/{jid}:spec")]:
        r = getattr(client, method)(path, json={} if method == "post" else None)
        assert r.status_code == 404 and r.mimetype == PROBLEM, (method, path, r.status_code)
    assert store.get_item_ids(did) == [f"item-{i}" for i in range(60)]
    assert client.get(f"/v1/sessions/{sid}/model").status_code == 200
    assert client.get(f"/v1/jobs/{jid}").json["state"] == "QUEUED"
    r = client.post("/v1/sessions", json={"dataset_id": f"{did}:X"})
    assert r.status_code == 404 and "/dataset_id" in r.json["errors"]
    assert client.post("/v1/jobs", json={"dataset_id": f"{did}:aux", "method": "e2cp", "n_clusters": 2}
                       ).status_code == 404
    assert np.isfinite(store.load_dataset(did)[0]).all()
