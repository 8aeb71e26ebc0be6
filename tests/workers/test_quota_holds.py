"""Quota holds (workers.tenancy.hold_quota): room taken under a lock, counted until let go or expired."""

import uuid

from workers.tenancy import HOLD_SECONDS, hold_quota, quota_key, quota_used, release_quota


def _all_count(ids):
    return [True] * len(ids)


def test_a_hold_counts_until_it_is_let_go_and_no_hold_is_taken_past_the_limit(store):
    r, tenant = store.r, "t-" + uuid.uuid4().hex[:8]
    first, used = hold_quota(r, tenant, "jobs", 2, 3, _all_count)
    assert first is not None and used == 0
    assert quota_used(r, tenant, "jobs", _all_count) == 2
    refused, used = hold_quota(r, tenant, "jobs", 2, 3, _all_count)
    assert refused is None and used == 2
    assert 0 < r.ttl(f"shoal:quota-{first}") <= HOLD_SECONDS
    release_quota(r, tenant, "jobs", first)
    assert quota_used(r, tenant, "jobs", _all_count) == 0
    assert r.zcard(quota_key(tenant, "jobs")) == 0


def test_a_hold_whose_request_died_stops_counting_when_it_expires(store):
    r, tenant = store.r, "t-" + uuid.uuid4().hex[:8]
    r.zadd(quota_key(tenant, "jobs"), {"job_x": 1})  # a record that still counts
    held, _ = hold_quota(r, tenant, "jobs", 1, 5, _all_count)
    r.delete(f"shoal:quota-{held}")  # what its expiry does when no request lets go
    assert quota_used(r, tenant, "jobs", _all_count) == 1
    assert r.zrange(quota_key(tenant, "jobs"), 0, -1) == [b"job_x"]
