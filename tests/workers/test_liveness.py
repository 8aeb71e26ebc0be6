"""A worker lost as a whole: a live worker's heartbeat re-dispatches its jobs and session passes.

Real Redis (the store fixture's database); the re-dispatched tasks land in
that database's queues, where no worker consumes them, so the tests read
the messages themselves.
"""

import base64
import json
from dataclasses import replace

import numpy as np
import pytest

from workers import liveness
from workers.session_store import SessionStore
from workers.store import Store

from .redis_relay import RedisRelay


@pytest.fixture()
def lstore(store):
    """The store with fast liveness settings and empty worker registry, queues and lists of unsent jobs and
    session passes (the jobs other tests create without sending a task would be sent by these tests' beats)."""
    s = Store(store.r, replace(store.settings, worker_heartbeat_ttl=1.0, worker_lost_after=2.0))
    keys = ("shoal:workers", "shoal:jobs:unsent", "shoal:sessions:unsent", *s.settings.queues.values())
    store.r.delete(*keys)
    yield s
    store.r.delete(*keys)


def _sent(store, queue):
    """(task name, task id, args) of each message waiting in ``queue``."""
    out = []
    for raw in store.r.lrange(store.settings.queues[queue], 0, -1):
        msg = json.loads(raw)
        body = json.loads(base64.b64decode(msg["body"]))
        out.append((msg["headers"]["task"], msg["headers"]["id"], body[0]))
    return out


def _job(store):
    did = store.put_dataset(np.zeros((3, 2)), name="liveness")["id"]
    return store.create_job(dataset_id=did, method="e2cp", n_clusters=2, params={}, constraints={},
                            random_state=0)["id"]


def _lose(store, name, seconds_ago):
    """Make worker ``name``'s heartbeat have run out ``seconds_ago``."""
    store.r.zadd("shoal:workers", {name: liveness.server_time(store.r) - seconds_ago})


def _beat(store, name):
    """:func:`liveness.beat` of worker ``name``, live since its last beat (a new worker's first beat
    only registers it)."""
    store.r.zadd("shoal:workers", {name: liveness.server_time(store.r) + store.settings.worker_heartbeat_ttl})
    return liveness.beat(store, name)


def test_a_lost_workers_job_is_queued_again_for_a_new_task_and_its_own_message_dropped(lstore):
    jid = _job(lstore)
    assert lstore.get_job(jid)["dispatch"] == jid  # the first task's id
    assert lstore.start_job(jid, task_id=jid, worker="dead:1")["state"] == "RUNNING"
    assert lstore.r.hget(liveness.running_key("dead:1"), f"job:{jid}") == jid.encode()
    _lose(lstore, "dead:1", 10)
    counted = int(lstore.r.hget("shoal:stats:jobs", "redispatched:e2cp") or 0)
    assert _beat(lstore, "alive:2") == [f"job:{jid}"]
    rec = lstore.get_job(jid)
    assert rec["state"] == "QUEUED" and rec["attempts"] == 1 and rec["worker"] is None
    assert int(lstore.r.hget("shoal:stats:jobs", "redispatched:e2cp")) == counted + 1  # GET /metrics
    [(name, task_id, args)] = _sent(lstore, "long")
    assert name == "shoal.run_job" and args == [jid] and task_id == rec["dispatch"] != jid
    assert lstore.start_job(jid, task_id=jid, worker="w:3") is None  # the lost task, redelivered
    assert lstore.start_job(jid, task_id=task_id, worker="w:3")["attempts"] == 2
    assert not lstore.r.exists(liveness.running_key("dead:1"))
    assert lstore.r.zscore("shoal:workers", "dead:1") is None
    lstore.finish_job(jid, "SUCCEEDED")
    assert not lstore.r.hexists(liveness.running_key("w:3"), f"job:{jid}")


def test_a_worker_is_lost_only_once_its_heartbeat_is_past_the_grace(lstore):
    jid = _job(lstore)
    lstore.start_job(jid, task_id=jid, worker="slow:1")
    _lose(lstore, "slow:1", 1)  # ran out 1 s ago, grace 2 s: a late beat, not a loss
    assert _beat(lstore, "alive:2") == []
    assert lstore.get_job(jid)["state"] == "RUNNING" and _sent(lstore, "long") == []
    assert "slow:1" not in lstore.live_workers() and "alive:2" in lstore.live_workers()


def test_a_lost_worker_is_recovered_by_one_live_worker_only(lstore):
    jid = _job(lstore)
    lstore.start_job(jid, task_id=jid, worker="dead:1")
    _lose(lstore, "dead:1", 10)
    assert _beat(lstore, "alive:2") == [f"job:{jid}"]
    assert _beat(lstore, "alive:3") == []
    assert len(_sent(lstore, "long")) == 1


def test_work_that_moved_on_is_not_dispatched_again(lstore):
    finished, elsewhere = _job(lstore), _job(lstore)
    for jid in (finished, elsewhere):
        lstore.start_job(jid, task_id=jid, worker="dead:1")
    lstore.finish_job(finished, "SUCCEEDED")
    lstore.r.hset(liveness.running_key("dead:1"), f"job:{finished}", finished)  # a stale entry
    lstore.r.hset(f"shoal:job:{elsewhere}", "worker", json.dumps("other:9"))  # started again elsewhere
    _lose(lstore, "dead:1", 10)
    assert _beat(lstore, "alive:2") == []
    assert _sent(lstore, "long") == []
    assert lstore.get_job(finished)["state"] == "SUCCEEDED"
    assert lstore.get_job(elsewhere)["state"] == "RUNNING"
    assert not lstore.r.exists(liveness.running_key("dead:1"))


def test_a_job_from_before_dispatch_ids_is_still_recovered(lstore):
    jid = _job(lstore)
    lstore.r.hdel(f"shoal:job:{jid}", "dispatch")  # a record written by older code
    lstore.start_job(jid, task_id="celery-uuid", worker="dead:1")
    _lose(lstore, "dead:1", 10)
    assert _beat(lstore, "alive:2") == [f"job:{jid}"]
    assert lstore.get_job(jid)["dispatch"] == _sent(lstore, "long")[0][1]


def test_a_lost_workers_session_pass_is_handed_to_a_new_task(lstore, client, blobs_dataset):
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30}).json["id"]
    ss = SessionStore(lstore)
    lstore.r.delete(ss._key(sid, ":update"), lstore.settings.queues["short"])  # the first pass: never run here
    assert ss.claim_update(sid, "pass-1")
    liveness.track(lstore.r, "dead:1", f"session:{sid}", "pass-1")
    _lose(lstore, "dead:1", 10)
    counted = int(lstore.r.hget("shoal:stats:sessions", "passes_redispatched") or 0)
    assert _beat(lstore, "alive:2") == [f"session:{sid}"]
    assert int(lstore.r.hget("shoal:stats:sessions", "passes_redispatched")) == counted + 1
    [(name, task_id, args)] = _sent(lstore, "short")
    assert name == "shoal.session_update" and args == [sid]
    assert lstore.r.get(ss._key(sid, ":update")) == task_id.encode()  # the new task holds the slot
    assert not ss.claim_update(sid, "pass-1")  # the lost task, redelivered, runs nothing


def test_a_session_whose_slot_moved_on_gets_no_extra_pass(lstore, client, blobs_dataset):
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30}).json["id"]
    ss = SessionStore(lstore)
    lstore.r.delete(lstore.settings.queues["short"])
    lstore.r.set(ss._key(sid, ":update"), "pass-2")
    liveness.track(lstore.r, "dead:1", f"session:{sid}", "pass-1")
    _lose(lstore, "dead:1", 10)
    assert _beat(lstore, "alive:2") == []
    assert _sent(lstore, "short") == [] and lstore.r.get(ss._key(sid, ":update")) == b"pass-2"


def test_untracking_a_pass_leaves_the_next_pass_of_the_same_worker_tracked(lstore):
    key = liveness.running_key("w:1")
    liveness.track(lstore.r, "w:1", "session:s", "pass-2")  # the next pass started first
    liveness.untrack(lstore.r, "w:1", "session:s", "pass-1")
    assert lstore.r.hget(key, "session:s") == b"pass-2"
    liveness.untrack(lstore.r, "w:1", "session:s", "pass-2")
    assert not lstore.r.exists(key)


def test_a_pass_already_running_again_elsewhere_is_not_doubled(lstore, client, blobs_dataset):
    """A cold shutdown hands the pass's own message back at once: if a live worker runs it (same task
    id), the lost worker's record of it must not start a second pass beside it."""
    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30}).json["id"]
    ss = SessionStore(lstore)
    lstore.r.delete(lstore.settings.queues["short"])
    lstore.r.set(ss._key(sid, ":update"), "pass-1")
    liveness.track(lstore.r, "dead:1", f"session:{sid}", "pass-1")
    liveness.track(lstore.r, "alive:2", f"session:{sid}", "pass-1")
    _lose(lstore, "dead:1", 10)
    assert _beat(lstore, "alive:2") == []
    assert _sent(lstore, "short") == [] and lstore.r.get(ss._key(sid, ":update")) == b"pass-1"
    lstore.r.delete(liveness.running_key("alive:2"))


def test_a_lost_job_whose_cancellation_was_asked_for_ends_cancelled(lstore):
    jid = _job(lstore)
    lstore.start_job(jid, task_id=jid, worker="dead:1")
    assert lstore.request_cancel(jid)["state"] == "RUNNING"  # the flag its worker would have seen
    _lose(lstore, "dead:1", 10)
    assert _beat(lstore, "alive:2") == [f"job:{jid}"]
    assert lstore.get_job(jid)["state"] == "CANCELLED" and _sent(lstore, "long") == []


def test_a_worker_restarted_under_the_same_host_and_pid_does_not_hide_the_loss(lstore, monkeypatch):
    """A container restarted after an OOM kill keeps its host name, and its worker is pid 1 again: were
    names ``host:pid``, the new worker's heartbeat would renew the lost one's, which then never counts
    as lost, and its job would wait for the broker's visibility timeout (2 h)."""
    monkeypatch.setenv(liveness.WORKER_NAME_ENV, "")  # restored after the test
    killed = liveness.new_worker_name()
    jid = _job(lstore)
    lstore.start_job(jid, task_id=jid, worker=killed)
    _lose(lstore, killed, 10)
    restarted = liveness.new_worker_name()  # same host, same pid
    assert restarted != killed
    liveness.beat(lstore, restarted)
    liveness.beat(lstore, restarted)
    assert lstore.get_job(jid)["state"] == "QUEUED" and len(_sent(lstore, "long")) == 1


def test_a_worker_back_from_a_redis_outage_does_not_take_its_peers_for_lost(lstore):
    """Redis unreachable for longer than ttl + lost_after stalls every heartbeat at once: the first worker
    back saw nobody either, and must not re-dispatch the work of peers as alive as itself (every running
    job would run twice, every session pass beside a second one)."""
    jid = _job(lstore)
    lstore.start_job(jid, task_id=jid, worker="peer:1")
    _lose(lstore, "peer:1", 10)
    _lose(lstore, "back:2", 10)  # its own heartbeat ran out as long ago
    assert liveness.beat(lstore, "back:2") == []
    assert lstore.get_job(jid)["state"] == "RUNNING" and _sent(lstore, "long") == []
    assert liveness.beat(lstore, "peer:1") == []  # the peer is back as well
    assert liveness.beat(lstore, "back:2") == []
    _lose(lstore, "peer:1", 10)  # and now it is lost for good: the next beat of a live worker sees it
    assert liveness.beat(lstore, "back:2") == [f"job:{jid}"]


def test_the_lost_task_starting_while_its_job_is_queued_again_does_not_run(lstore):
    """The lost task's own message (a cold shutdown gives it back at once) may start while a live worker
    re-dispatches the job: the dispatch it read must still be the record's when it marks the job
    RUNNING, or the job runs twice (as that task and as the new one)."""
    jid = _job(lstore)
    lstore.start_job(jid, task_id=jid, worker="dead:1")
    raced = []

    class Racing(Store):
        def _transition(self, *args, **kwargs):
            if not raced:  # the recovery lands between start_job's read and its write
                raced.append(lstore.requeue_lost_job(jid, "dead:1", jid, "new-task"))
            return super()._transition(*args, **kwargs)

    assert Racing(lstore.r, lstore.settings).start_job(jid, task_id=jid, worker="w:3") is None
    assert raced == [True]
    rec = lstore.get_job(jid)
    assert rec["state"] == "QUEUED" and rec["dispatch"] == "new-task" and rec["attempts"] == 1
    assert lstore.start_job(jid, task_id="new-task", worker="w:4")["attempts"] == 2


def test_work_that_could_not_be_re_dispatched_is_tried_again_at_the_next_beat(lstore):
    """A Redis error while a lost worker's work is re-dispatched (here: a record that cannot be read for a
    moment) must not leave that work to the broker's visibility timeout: the worker was already taken
    off the heartbeat set, so no later beat looked at it again."""
    jid, other = _job(lstore), _job(lstore)
    for j in (jid, other):
        lstore.start_job(j, task_id=j, worker="dead:1")
    key = f"shoal:job:{jid}"
    progress = lstore.r.hget(key, "progress")
    lstore.r.hset(key, "progress", b"{")  # unreadable for now
    _lose(lstore, "dead:1", 10)
    assert _beat(lstore, "alive:2") == [f"job:{other}"]  # the others are not held back
    lstore.r.hset(key, "progress", progress)
    assert _beat(lstore, "alive:3") == [f"job:{jid}"]
    assert lstore.get_job(jid)["state"] == "QUEUED" and len(_sent(lstore, "long")) == 2
    assert lstore.r.zscore("shoal:workers", "dead:1") is None
    assert not lstore.r.exists(liveness.running_key("dead:1"))


def _beat_cut_off_at(lstore, marker):
    """A live worker's beat whose Redis goes away right after a command holding ``marker`` (a real
    Redis behind a :class:`RedisRelay` that relays that reply and stays down): the beat fails there, with the rest of its writes unsent."""
    import redis

    where = lstore.r.connection_pool.connection_kwargs
    relay = RedisRelay((where["host"], where["port"]), marker, reply_lost=False, down_for=None)
    url = f"redis://127.0.0.1:{relay.port}/{where['db']}"
    try:
        cut_off = Store(redis.Redis.from_url(url, socket_timeout=5), replace(lstore.settings, redis_url=url))
        lstore.r.zadd("shoal:workers", {"alive:2": liveness.server_time(lstore.r) + 1})  # beat before
        with pytest.raises(Exception):
            liveness.beat(cut_off, "alive:2")
        assert relay.down
    finally:
        relay.close()


def _sent_once_redis_is_back(lstore, queue, timeout=10):
    """The messages in ``queue`` once the live worker's next beats (Redis reachable again) sent one."""
    import time

    deadline = time.monotonic() + timeout
    while not _sent(lstore, queue):
        assert time.monotonic() < deadline, "nothing sent once Redis was back"
        _beat(lstore, "alive:2")
        time.sleep(0.2)
    return _sent(lstore, queue)


def test_a_redis_outage_in_the_middle_of_a_re_dispatch_does_not_strand_the_job(lstore):
    """Redis goes away right after a job was queued again for a new task and before that task was sent
    (so neither the send nor undoing the swap can reach it): once Redis is back, a live worker's beat
    must still send the job a task. It stayed QUEUED for a task never sent, the lost task's own message
    dropped when restored (its dispatch no longer the record's), and nothing looked at it again."""

    jid = _job(lstore)
    lstore.start_job(jid, task_id=jid, worker="dead:1")
    _lose(lstore, "dead:1", 10)
    _beat_cut_off_at(lstore, b"worker lost: queued again")
    assert lstore.get_job(jid)["state"] == "QUEUED" and _sent(lstore, "long") == []
    [(_, task_id, args)] = _sent_once_redis_is_back(lstore, "long")
    assert args == [jid] and lstore.get_job(jid)["dispatch"] == task_id


def test_a_redis_outage_in_the_middle_of_a_session_hand_over_does_not_strand_the_pass(
        lstore, client, blobs_dataset):
    """As for a job: the slot handed to a new pass, then Redis gone before that pass was sent (and
    before the slot could be freed again). Once Redis is back a live worker's beat must send a pass
    holding the slot; the slot stayed with a task never sent until it expired (the hard time limit
    plus a minute), and a session still INITIALIZING has no answers to queue a pass with."""

    sid = client.post("/v1/sessions", json={"dataset_id": blobs_dataset[0], "budget": 30}).json["id"]
    ss = SessionStore(lstore)
    lstore.r.delete(ss._key(sid, ":update"), lstore.settings.queues["short"])
    assert ss.claim_update(sid, "pass-1")
    liveness.track(lstore.r, "dead:1", f"session:{sid}", "pass-1")
    _lose(lstore, "dead:1", 10)
    _beat_cut_off_at(lstore, b"hand_over")
    assert _sent(lstore, "short") == []
    [(name, task_id, args)] = _sent_once_redis_is_back(lstore, "short")
    assert name == "shoal.session_update" and args == [sid]
    assert lstore.r.get(ss._key(sid, ":update")) == task_id.encode()


def test_the_late_one_of_two_runs_leaves_no_result_behind(lstore):
    """A worker taken for lost while it still ran, and the worker its job went to, both run the job: the
    first to finish ends it, and the other one's result, affinity and model, written after, replaced
    the ended job's keys without their expiry (kept for ever, under noeviction until Redis is full),
    or came back as orphans once the job was deleted."""
    import scipy.sparse as sp

    jid = _job(lstore)
    key = f"shoal:job:{jid}"
    lstore.start_job(jid, task_id=jid, worker="w:1")
    lstore.save_result(jid, {"labels": [0, 0, 1]}, sp.identity(3))
    lstore.save_model_state(jid, {"w": 1})
    assert lstore.finish_job(jid, "SUCCEEDED")
    lstore.save_result(jid, {"labels": [1, 1, 0]}, sp.identity(3))  # the other run, finishing later
    lstore.save_model_state(jid, {"w": 2})
    assert lstore.get_result(jid) == {"labels": [0, 0, 1]} and lstore.get_model_state(jid) == {"w": 1}
    assert all(lstore.r.ttl(f"{key}:{part}") > 0 for part in ("result", "affinity", "model"))
    assert lstore.delete_job(jid) == "deleted"
    lstore.save_result(jid, {"labels": [1, 1, 0]}, sp.identity(3))
    lstore.save_model_state(jid, {"w": 2})
    assert not any(lstore.r.exists(f"{key}:{part}") for part in ("result", "affinity", "model"))


def test_a_job_whose_first_task_was_never_sent_is_sent_once_its_grace_has_passed(lstore):
    """``POST /v1/jobs`` killed between the record and the task: after ``UNSENT_GRACE`` one live worker
    dispatches the job to a new task; a job its request did send, or that started, is left alone."""
    jid, sent, started = _job(lstore), _job(lstore), _job(lstore)
    lstore.mark_sent(sent)
    assert lstore.start_job(started, task_id=started)["state"] == "RUNNING"
    assert _beat(lstore, "alive:2") == []  # within the grace: the request may still send it
    old = liveness.time.time() - liveness.UNSENT_GRACE - 1
    assert lstore.r.zscore("shoal:jobs:unsent", sent) is None
    lstore.r.zadd("shoal:jobs:unsent", {jid: old, started: old})  # as they are once the grace has passed
    assert _beat(lstore, "alive:2") == [f"job:{jid}"]
    assert _beat(lstore, "alive:3") == []  # once
    [(task, task_id, arg)] = _sent(lstore, "long")
    assert (task, arg) == ("shoal.run_job", [jid]) and lstore.get_job(jid)["dispatch"] == task_id != jid
    assert lstore.start_job(jid, task_id=jid) is None  # the first task, should it come after all, is dropped
    assert lstore.start_job(jid, task_id=task_id)["state"] == "RUNNING"
    assert lstore.r.zcard("shoal:jobs:unsent") == 0


def _past_grace(lstore, *jids, again=False, listing="shoal:jobs:unsent"):
    """List ``jids`` (or the session passes ``"{sid}:{task id}"`` in ``shoal:sessions:unsent``) as unsent
    since before ``UNSENT_GRACE``, as they are once the grace has passed (``again``: those still listed only)."""
    old = liveness.time.time() - liveness.UNSENT_GRACE - 1
    lstore.r.zadd(listing, {jid: old for jid in jids}, xx=again)


def test_an_unsent_job_whose_task_the_sweep_could_not_send_is_sent_by_a_later_beat(lstore):
    """The sweep dispatched the job to a new task, then the broker refused the task: the job went back on
    the list for the next beat, but that beat found its ``dispatch`` no longer the job id and took it for
    a job that had moved on: QUEUED for a task never sent, off the list, for good."""
    jid = _job(lstore)
    _past_grace(lstore, jid)
    no_broker = Store(lstore.r, replace(lstore.settings, redis_url="redis://127.0.0.1:1/1"))  # refused
    lstore.r.zadd("shoal:workers", {"alive:2": liveness.server_time(lstore.r) + 1})
    assert liveness.beat(no_broker, "alive:2") == []
    assert _sent(lstore, "long") == [] and lstore.get_job(jid)["state"] == "QUEUED"
    assert _beat(lstore, "alive:2") == [f"job:{jid}"]
    [(_, task_id, args)] = _sent(lstore, "long")
    assert args == [jid] and lstore.get_job(jid)["dispatch"] == task_id
    assert lstore.r.zscore("shoal:jobs:unsent", jid) is None


def test_a_redis_outage_in_the_middle_of_the_unsent_sweep_does_not_strand_the_job(lstore):
    """Redis gone once the sweep had claimed the job (it took the job off the list of unsent jobs, then
    read its dispatch), before it sent a task: once Redis is back a live worker's beat must still send
    the job a task, once the job's grace has passed again. It stayed QUEUED with no task and off the
    list: never to run, never to expire, holding its dataset."""
    jid = _job(lstore)
    _past_grace(lstore, jid)
    _beat_cut_off_at(lstore, b"dispatch")
    assert lstore.get_job(jid)["state"] == "QUEUED" and _sent(lstore, "long") == []
    assert _beat(lstore, "alive:2") == []  # the sweep that claimed it may still send it
    _past_grace(lstore, jid, again=True)
    [(_, task_id, args)] = _sent_once_redis_is_back(lstore, "long")
    assert args == [jid] and lstore.get_job(jid)["dispatch"] == task_id


def test_a_job_the_sweep_sent_but_could_not_mark_sent_is_sent_again_after_the_grace_only(lstore):
    """Redis gone right after the sweep dispatched the job, and so before it could note the send: the
    job stays listed, for another grace (its task may be waiting in the queue), and is then dispatched
    again to a newer task, the earlier one dropped should it come."""
    jid = _job(lstore)
    _past_grace(lstore, jid)
    _beat_cut_off_at(lstore, b"shoal.run_job")  # the task's message: sent, nothing after it
    [(_, first, _)] = _sent(lstore, "long")
    assert lstore.get_job(jid)["dispatch"] == first
    assert lstore.r.zscore("shoal:jobs:unsent", jid) > liveness.time.time() - 60  # listed, since the send
    assert _beat(lstore, "alive:2") == []  # within the new grace
    _past_grace(lstore, jid, again=True)
    assert _beat(lstore, "alive:2") == [f"job:{jid}"]
    second = lstore.get_job(jid)["dispatch"]
    assert second != first and lstore.start_job(jid, task_id=first) is None
    assert lstore.start_job(jid, task_id=second)["state"] == "RUNNING"


def _unsent_session(lstore):
    """A session as ``POST /v1/sessions`` leaves it when it dies before sending the first pass's task (the
    record, :meth:`SessionStore.create`), and its store."""
    ss = SessionStore(lstore)
    did = lstore.put_dataset(np.zeros((12, 2)), name="liveness")["id"]
    sid = ss.create(dataset_id=did, strategy="urasc", n_clusters=2, budget=5, question_type="pairwise",
                    answers_per_question=1, params={}, random_state=0)["id"]
    return ss, sid


def _past_grace_passes(lstore, *members):
    _past_grace(lstore, *members, listing="shoal:sessions:unsent")


def test_a_session_whose_first_pass_was_never_sent_gets_it_once_the_grace_has_passed(lstore):
    """``POST /v1/sessions`` killed between the record and the first pass's task: the session stayed
    INITIALIZING with nothing queued, holding its dataset. After the grace one live worker hands the slot
    to a new task and sends it; the first task, should it come after all, runs nothing beside it."""
    ss, sid = _unsent_session(lstore)
    assert lstore.r.get(ss._key(sid, ":update")) == sid.encode()  # the first pass's task is the session id
    assert _beat(lstore, "alive:2") == []  # within the grace: the request may still send it
    _past_grace_passes(lstore, f"{sid}:{sid}")
    assert _beat(lstore, "alive:2") == [f"session:{sid}"]
    assert _beat(lstore, "alive:3") == []  # once
    [(task, task_id, args)] = _sent(lstore, "short")
    assert (task, args) == ("shoal.session_update", [sid]) and task_id != sid
    assert lstore.r.get(ss._key(sid, ":update")) == task_id.encode()
    assert lstore.r.zcard("shoal:sessions:unsent") == 0
    assert not ss.claim_update(sid, sid)  # the first task, come after all, runs no pass
    assert ss.claim_update(sid, task_id)


def test_a_first_pass_that_started_or_a_session_deleted_is_not_sent_again(lstore):
    """A first pass whose request sent it and died before noting it (the pass started), or whose session
    was deleted before the grace ran out: nothing is sent, and neither stays listed."""
    ss, started = _unsent_session(lstore)
    _, deleted = _unsent_session(lstore)
    assert ss.claim_update(started, started)
    assert ss.delete(deleted)
    _past_grace_passes(lstore, f"{started}:{started}", f"{deleted}:{deleted}")
    assert _beat(lstore, "alive:2") == []
    assert _sent(lstore, "short") == [] and lstore.r.zcard("shoal:sessions:unsent") == 0
    assert lstore.r.get(ss._key(started, ":update")) == started.encode()
    assert not lstore.r.exists(ss._key(deleted, ":update"))


def test_a_sent_pass_whose_slot_moved_on_leaves_the_list_without_a_new_task(lstore):
    """A pass sent but not noted as sent, whose slot went on to the next pass (answers queued it, a retry
    took it over): the sweep must leave that pass's slot alone, or two passes would run at once."""
    ss, sid = _unsent_session(lstore)
    assert ss.claim_update(sid, sid) and ss.hand_over_update(sid, sid, "pass-2")
    _past_grace_passes(lstore, f"{sid}:{sid}")
    assert _beat(lstore, "alive:2") == []
    assert _sent(lstore, "short") == [] and lstore.r.get(ss._key(sid, ":update")) == b"pass-2"
    assert lstore.r.zcard("shoal:sessions:unsent") == 0


def test_answers_that_take_the_slot_list_their_pass_until_it_is_sent(lstore):
    """``POST .../answers`` takes the slot for a pass in the step that records the answers: that pass is
    listed as unsent in the same step (a request dying before the send left the slot held until it
    expired, with the questions waiting, and for good if nothing was left to answer), and leaves the list
    once the request sent it."""
    from workers.submit import send_session_update

    ss, sid = _unsent_session(lstore)
    ss.finish_update(sid, sid)
    ss.mark_sent(sid, sid)
    ss.replace_pool(sid, [{"question_id": "q_0_1", "type": "pairwise", "items": [0, 1]}], 0)
    done = ss.record_answers(sid, [{"question_id": "q_0_1", "answer": "must_link"}], 0, 1)
    assert done.enqueue and lstore.r.get(ss._key(sid, ":update")) == done.enqueue.encode()
    assert lstore.r.zscore("shoal:sessions:unsent", f"{sid}:{done.enqueue}") is not None
    send_session_update(ss, sid, done.enqueue)
    assert lstore.r.zcard("shoal:sessions:unsent") == 0
    assert [t for _, t, _ in _sent(lstore, "short")] == [done.enqueue]


def test_a_pass_the_sweep_could_not_send_is_sent_by_a_later_beat(lstore):
    """The broker refused the task the sweep handed the slot to: the pass stays listed, due at once, and
    the next beat hands the slot on again (from the task never sent) and sends it."""
    ss, sid = _unsent_session(lstore)
    _past_grace_passes(lstore, f"{sid}:{sid}")
    no_broker = Store(lstore.r, replace(lstore.settings, redis_url="redis://127.0.0.1:1/1"))  # refused
    lstore.r.zadd("shoal:workers", {"alive:2": liveness.server_time(lstore.r) + 1})
    assert liveness.beat(no_broker, "alive:2") == []
    refused = lstore.r.get(ss._key(sid, ":update")).decode()
    assert refused != sid and _sent(lstore, "short") == []
    assert lstore.r.zscore("shoal:sessions:unsent", f"{sid}:{refused}") == 0
    assert _beat(lstore, "alive:2") == [f"session:{sid}"]
    [(_, task_id, _)] = _sent(lstore, "short")
    assert task_id not in (sid, refused) and lstore.r.get(ss._key(sid, ":update")) == task_id.encode()
    assert lstore.r.zcard("shoal:sessions:unsent") == 0


class _Killed(BaseException):
    """Where a process is killed: nothing after it runs."""


def test_a_next_pass_whose_worker_died_before_sending_it_is_sent_once_the_grace_has_passed(lstore, monkeypatch):
    """A pass ending with answers pending hands its slot to the next pass, then sends that task: its
    process killed in between left the slot with a task never sent (the lost worker's recovery hands on
    only the slot of the task it ran) until the slot expired, and, nothing left to answer, for good."""
    from workers import session_tasks

    def killed(*args):
        raise _Killed

    ss, sid = _unsent_session(lstore)
    ss.mark_sent(sid, sid)
    assert ss.claim_update(sid, sid)  # the first pass runs
    assert not ss.request_update(sid, "answers")  # answers meanwhile: one more pass pending
    monkeypatch.setattr(session_tasks, "_enqueue_pass", killed)
    with pytest.raises(_Killed):
        session_tasks._close_pass(ss, sid, sid, ss.get(sid), ("ACTIVE", 0), 0.1)
    new = lstore.r.get(ss._key(sid, ":update")).decode()
    assert new != sid and _sent(lstore, "short") == []
    assert lstore.r.zrange("shoal:sessions:unsent", 0, -1) == [f"{sid}:{new}".encode()], "not listed as unsent"
    _past_grace_passes(lstore, f"{sid}:{new}")
    assert _beat(lstore, "alive:2") == [f"session:{sid}"]
    [(_, task_id, args)] = _sent(lstore, "short")
    assert args == [sid] and lstore.r.get(ss._key(sid, ":update")) == task_id.encode()
    assert not ss.claim_update(sid, new)  # the task never sent, should it come after all, runs nothing


def test_a_deleted_session_leaves_the_list_of_unsent_passes(lstore):
    """``DELETE /v1/sessions/{id}`` removes the session's passes listed as unsent, as ``DELETE /v1/jobs/{id}``
    removes a job from ``jobs:unsent``: they stayed listed until a live worker's sweep, the grace later
    (for good while no worker beats), naming a session that no longer exists."""
    ss, sid = _unsent_session(lstore)
    _, other = _unsent_session(lstore)
    lstore.r.zadd("shoal:sessions:unsent", {f"{sid}:next-pass": 1.0})
    assert ss.delete(sid)
    assert lstore.r.zrange("shoal:sessions:unsent", 0, -1) == [f"{other}:{other}".encode()]
