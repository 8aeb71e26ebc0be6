"""Job record transitions on a real Redis."""

import json

import numpy as np
import pytest

from workers.dataset_store import DatasetGone
from workers.records import dumps
from workers.store import Store


def _job(store, dataset_id=None, **kw):
    if dataset_id is None:
        dataset_id = store.put_dataset(np.zeros((3, 2)), name="jobs")["id"]
    return store.create_job(dataset_id=dataset_id, method="e2cp", n_clusters=2, params={}, constraints={},
                            random_state=0, **kw)


class _InUse(Exception):
    pass


def test_a_job_created_while_a_delete_checks_the_dataset_keeps_it(store):
    """The delete's check and the delete are one transaction: a job created
    on the dataset in between (another request) makes the check run again."""
    from workers.session_store import dataset_in_use

    did = store.put_dataset(np.zeros((4, 2)), name="race")["id"]
    seen, created = [], []

    def guard(users):
        seen.append(users)
        if not created:  # the other request lands between this check and the delete
            created.append(_job(store, dataset_id=did)["id"])
            return
        if dataset_in_use(store, did, users)["jobs"]:
            raise _InUse

    with pytest.raises(_InUse):
        store.delete_dataset(did, guard=guard)
    assert seen == [[], [("job", created[0])]]
    assert store.load_dataset(did) is not None and store.get_dataset_meta(did) is not None


def test_a_dataset_deleted_while_a_job_is_being_created_takes_no_job(store):
    did = store.put_dataset(np.zeros((4, 2)), name="race")["id"]
    calls = []

    def write(pipe):
        calls.append(1)
        if len(calls) == 1:  # the other request deletes it after the existence check
            assert store.delete_dataset(did)
        pipe.set("shoal:test:race-marker", "written")

    with pytest.raises(DatasetGone) as err:
        store.on_dataset(did, write)
    assert err.value.dataset_id == did and len(calls) == 1
    assert not store.r.exists("shoal:test:race-marker")
    with pytest.raises(DatasetGone):
        _job(store, dataset_id=did)
    assert store.dataset_users(did) == []


def test_dataset_roundtrip_is_bit_exact(store):
    X = np.random.default_rng(0).standard_normal((7, 3))
    meta = store.put_dataset(X, name="r", labels=[0, 1, 0, 1, 0, 1, 0], item_ids=list("abcdefg"))
    Y, labels, ids = store.load_dataset(meta["id"])
    assert Y.dtype == np.float64 and np.array_equal(X, Y)
    assert ids == list("abcdefg") and labels[:2] == [0, 1]


def test_terminal_state_is_final(store):
    jid = _job(store)["id"]
    assert store.start_job(jid)["state"] == "RUNNING"
    assert store.request_cancel(jid)["state"] == "RUNNING"  # running: flag only
    assert store.cancel_requested(jid)
    assert store.finish_job(jid, "CANCELLED")["state"] == "CANCELLED"
    assert store.finish_job(jid, "SUCCEEDED") is None  # a late success does not overwrite
    assert store.get_job(jid)["state"] == "CANCELLED"
    assert store.start_job(jid) is None  # a redelivered task does not rerun it


def test_attempt_cap_fails_the_job(store):
    jid = _job(store)["id"]
    for attempt in range(1, store.settings.max_attempts + 1):
        assert store.start_job(jid)["attempts"] == attempt  # each redelivery counts
    assert store.start_job(jid) is None
    rec = store.get_job(jid)
    assert rec["state"] == "FAILED" and rec["error"]["code"] == "attempts_exhausted"


def test_finished_jobs_expire(store):
    from dataclasses import replace

    short = Store(store.r, replace(store.settings, job_ttl=1))
    jid = _job(short)["id"]
    short.finish_job(jid, "FAILED", error={"code": "x"})
    assert 0 < store.r.ttl(f"shoal:job:{jid}") <= 1


def test_lost_worker_is_failed_not_stuck(store):
    jid = _job(store)["id"]
    store.start_job(jid)
    s = store.settings
    store.r.hset(f"shoal:job:{jid}", "started_ts", str(1.0))  # started long ago
    rec = store.get_job(jid)
    assert rec["state"] == "FAILED" and rec["error"]["code"] == "worker_lost"
    assert s.hard_time_limit < s.visibility_timeout


def test_dumps_writes_non_finite_floats_as_null_and_numpy_values_as_plain_json():
    plain = {"a": [1, 2.5, "x", None, True], "b": {"c": (3, 4)}}
    assert json.loads(dumps(plain)) == {"a": [1, 2.5, "x", None, True], "b": {"c": [3, 4]}}
    assert json.loads(dumps({"s": float("nan"), "t": [np.float64("inf"), -np.inf, 1.0]})) == {
        "s": None, "t": [None, None, 1.0]}
    assert json.loads(dumps({"u": np.int64(3), "v": np.array([[1.5, np.nan]]), "w": np.bool_(True)})) == {
        "u": 3, "v": [[1.5, None]], "w": True}


def test_a_predict_job_runs_on_its_copy_of_the_model_after_the_fitted_job_is_deleted(client, store, blobs_dataset,
                                                                                     dcrc_job):
    from workers.tasks import run_predict

    did, X, y = blobs_dataset
    parent, est = dcrc_job

    r = client.post(f"/v1/jobs/{parent}/predict", json={"data": X[:7].tolist()})
    assert r.status_code == 202, r.json
    assert client.delete(f"/v1/jobs/{parent}").status_code == 204  # before any worker took the prediction
    job = store.start_job(r.json["id"])
    assert run_predict(store, job)["state"] == "SUCCEEDED"
    assert store.get_result(job["id"])["labels"] == est.predict(X[:7]).tolist()
    # the copy goes with the predict job
    assert client.delete(f"/v1/jobs/{job['id']}").status_code == 204
    assert not store.r.exists(f"shoal:job:{job['id']}:model")
    # the fitted job is gone: a new prediction is a 404
    assert client.post(f"/v1/jobs/{parent}/predict", json={"data": X[:2].tolist()}).status_code == 404


def test_a_filtered_listing_past_expired_records_skips_none_of_the_live_ones(store):
    """Records that expired (their hash gone, their index entry left) were dropped from the index while
    the listing read it by rank: each one dropped moved the later ids up a rank, and the next batch,
    read from the old offset, skipped as many live records. Here the one CANCELLED job, behind 10
    expired ones and beyond the first batch of 50, was not listed at all."""
    import uuid

    zkey = f"shoal:test:index:{uuid.uuid4().hex}"
    records = {f"rec{i:03d}": {"id": f"rec{i:03d}", "created_ts": 1000.0 - i, "state": "SUCCEEDED"}
               for i in range(60)}
    store.r.zadd(zkey, {rid: rec["created_ts"] for rid, rec in records.items()})
    records["rec055"]["state"] = "CANCELLED"
    for i in range(10):  # the newest ten expired
        del records[f"rec{i:03d}"]
    page, token = store.page_newest_first(zkey, records.get, state="CANCELLED", page_size=1)
    assert [r["id"] for r in page] == ["rec055"]
    page, token = store.page_newest_first(zkey, records.get, state="SUCCEEDED", page_size=100)
    assert len(page) == 49 and token is None  # every live one, each once
    assert store.r.zcard(zkey) == 50  # the expired entries are gone from the index
    store.r.delete(zkey)


def test_a_listing_skips_and_repeats_nothing_when_other_requests_change_the_index_meanwhile(store):
    """The listing read the index in batches by rank (offset). Between two batches another request
    may drop ids from it (a DELETE, or another listing's clean-up of expired ones) or add one (a new
    job is ranked first): each id dropped above the offset made the next batch skip a live record, and
    each one added made it read the previous batch's last record again (listed twice)."""
    import uuid

    zkey = f"shoal:test:index:{uuid.uuid4().hex}"
    records = {f"rec{i:03d}": {"id": f"rec{i:03d}", "created_ts": 1000.0 - i, "state": "SUCCEEDED"}
               for i in range(120)}
    store.r.zadd(zkey, {rid: rec["created_ts"] for rid, rec in records.items()})
    records["rec055"]["state"] = "CANCELLED"

    def load_while_others_delete(rid):
        if rid == "rec020":  # first batch: another request deletes ten records this listing has passed
            for i in range(10):
                del records[f"rec{i:03d}"]
            store.r.zrem(zkey, *(f"rec{i:03d}" for i in range(10)))
        return records.get(rid)

    page, _ = store.page_newest_first(zkey, load_while_others_delete, state="CANCELLED", page_size=1)
    assert [r["id"] for r in page] == ["rec055"]

    def load_while_a_job_is_created(rid):
        if rid == "rec030":  # a new record, the newest: ranked first
            new = f"new{len(records):03d}"
            records[new] = {"id": new, "created_ts": 2000.0 + len(records), "state": "QUEUED"}
            store.r.zadd(zkey, {new: records[new]["created_ts"]})
        return records.get(rid)

    records["rec059"]["state"] = records["rec100"]["state"] = "RUNNING"  # the first batch's last, and one after
    page, _ = store.page_newest_first(zkey, load_while_a_job_is_created, state="RUNNING", page_size=2)
    assert [r["id"] for r in page] == ["rec059", "rec100"]
    store.r.delete(zkey)


def test_deleting_a_predict_job_keeps_its_rows_while_a_job_on_them_is_unfinished(client, store, dcrc_job):
    """A predict job's rows are a dataset like any other: listed, and a client may run a job on them.
    Deleting the predict job deleted them unguarded, so that job, QUEUED, failed as soon as a worker
    took it ("dataset ... no longer exists"), where ``DELETE /v1/datasets/{id}`` answers 409."""
    from workers.tasks import run_predict

    parent, _ = dcrc_job
    r = client.post(f"/v1/jobs/{parent}/predict", json={"data": [[0.0, 0.0], [8.0, 8.0], [-8.0, 8.0]]})
    assert r.status_code == 202, r.json
    pid, rows = r.json["id"], r.json["dataset_id"]
    assert run_predict(store, store.start_job(pid))["state"] == "SUCCEEDED"
    other = client.post("/v1/jobs", json={"dataset_id": rows, "method": "spectral", "n_clusters": 2})
    assert other.status_code == 202, other.json  # QUEUED: no worker reads this Redis database

    assert client.delete(f"/v1/jobs/{pid}").status_code == 204
    assert client.get(f"/v1/datasets/{rows}").status_code == 200  # kept for the queued job
    assert store.load_dataset(rows) is not None
    assert client.delete(f"/v1/datasets/{rows}").status_code == 409
    assert client.post(f"/v1/jobs/{other.json['id']}/cancel").json["state"] == "CANCELLED"
    assert client.delete(f"/v1/datasets/{rows}").status_code == 204


def test_deleting_a_predict_job_deletes_its_rows_when_nothing_else_uses_them(client, store, dcrc_job):
    from workers.tasks import run_predict

    parent, _ = dcrc_job
    r = client.post(f"/v1/jobs/{parent}/predict", json={"data": [[0.0, 0.0], [8.0, 8.0]]})
    pid, rows = r.json["id"], r.json["dataset_id"]
    assert run_predict(store, store.start_job(pid))["state"] == "SUCCEEDED"
    assert client.delete(f"/v1/jobs/{pid}").status_code == 204
    assert client.get(f"/v1/datasets/{rows}").status_code == 404
    assert not store.r.exists(f"shoal:dataset:{rows}:X")
