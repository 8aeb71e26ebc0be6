"""Fair dispatch across tenants (workers.fair): a tenant's backlog waits in Redis, not ahead of others in the queue."""

from dataclasses import replace

import pytest

from workers import fair
from workers.store import Store


@pytest.fixture()
def fstore(store):
    s = Store(store.r, replace(store.settings, fair_inflight=2))
    for key in store.r.scan_iter(match="shoal:fair:*"):
        store.r.delete(key)
    return s


def _job(s, owner):
    did = s.put_dataset(__import__("numpy").zeros((3, 2)), owner=owner)["id"]
    return s.create_job(dataset_id=did, method="spectral", n_clusters=2, params={}, constraints={},
                        random_state=0, owner=owner)


def test_a_backlog_is_held_and_another_tenants_job_is_sent_at_once(fstore):
    a_jobs = [_job(fstore, "fair-a") for _ in range(6)]
    admitted = [fair.admit(fstore, rec) for rec in a_jobs]
    assert admitted == [True, True, False, False, False, False]
    assert fair.admit(fstore, _job(fstore, "fair-b"))  # B's single job goes straight to the queue
    sent = []
    assert fair.release(fstore, send=lambda s, jid, task: sent.append(jid)) == []  # A has no room yet
    fair.taken(fstore, a_jobs[0]["id"])  # a worker took one of A's: the next of A's is sent (to the test broker)
    assert fstore.r.zrange("shoal:fair:fair-a:inflight", 0, -1) == [a_jobs[1]["id"].encode(), a_jobs[2]["id"].encode()]
    assert fstore.r.llen("shoal:fair:fair-a:held") == 3


def test_release_serves_tenants_round_robin_and_skips_cancelled_jobs(fstore):
    a = [_job(fstore, "fair-a") for _ in range(4)]
    b = [_job(fstore, "fair-b") for _ in range(4)]
    for rec in a + b:
        fair.admit(fstore, rec)
    fstore.finish_job(a[2]["id"], "CANCELLED")
    for rec in a[:2] + b[:2]:  # the in-flight ones start
        fstore.r.zrem(f"shoal:fair:{rec['owner']}:inflight", rec["id"])
    sent = []
    fair.release(fstore, send=lambda s, jid, task: sent.append(jid))
    assert sorted(sent) == sorted([a[3]["id"], b[2]["id"], b[3]["id"]])
    assert fair.release(fstore, send=lambda s, jid, task: sent.append(jid)) == []


def test_the_sweep_prunes_expired_ids_from_the_listing_indexes(store):
    from workers.tenancy import PRUNE_LOCK, index_key, prune_indexes

    import numpy as np

    keep = store.put_dataset(np.zeros((2, 1)), owner="prune-t")["id"]
    gone = store.put_dataset(np.zeros((2, 1)), owner="prune-t")["id"]
    store.r.delete(f"shoal:dataset:{gone}")  # as if it expired
    store.r.delete(PRUNE_LOCK)
    assert prune_indexes(store.r, batch=10_000) >= 1
    listed = {m.decode() for m in store.r.zrange(index_key("datasets", "prune-t"), 0, -1)}
    assert keep in listed and gone not in listed
    assert prune_indexes(store.r) == 0  # another worker pruned a moment ago
