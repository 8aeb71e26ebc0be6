"""Redis store: dataset records (matrices in files: :mod:`workers.matrix_files`), job records (the source of truth), results, affinities.

The dataset methods live in :mod:`workers.dataset_store` (a mixin of :class:`Store`),
the plain helpers (ids, timestamps, JSON, page tokens, problem objects) in
:mod:`workers.records`.

Layout (all keys prefixed ``shoal:``)::

    dataset:{id}          hash   meta fields (name, n_samples, ...), JSON values
    dataset:{id}:X        bytes  float64 matrix as .npy, datasets stored before the data directory only
    dataset:{id}:aux      bytes  JSON {"labels": [...] | null, "item_ids": [...] | null}
    dataset:{id}:users    set    "job:{id}" / "session:{id}" of every job and session on it
    matrix:{key}:datasets set    ids of the datasets whose matrix is file {key} (workers.matrix_files)
    matrix:{key}:lock     str    held while a put or the sweep touches file {key}
    matrices              set    every matrix key a dataset named (the sweep's work list)
    upload:{id}           hash   a resumable upload (workers.upload_store); its bytes are a file
    matrices:swept        str    claim of the live worker that sweeps matrix files (liveness.beat)
    datasets              zset   dataset ids by creation time (listing, pagination)
    job:{id}              hash   record: state, progress, attempts, timestamps, error ...
    job:{id}:spec         bytes  JSON: constraints as submitted (index lists)
    job:{id}:result       bytes  JSON result
    job:{id}:affinity     bytes  scipy.sparse .npz of the learned affinity / kernel
    job:{id}:projection   bytes  JSON 2-D map of the rows (workers.projection), for /ui/jobs/{id}
    job:{id}:cancel       flag   cooperative cancellation request
    jobs                  zset   job ids by creation time (listing, pagination)
    jobs:unsent           zset   job id -> creation (or last dispatch) time, until its task is sent (liveness)
    workers               zset   worker name -> heartbeat expiry (Redis server time, s)
    worker:{name}:running hash   "job:{id}" / "session:{id}" -> task id (workers.liveness)
    worker:{name}:recovery str   the live worker recovering lost worker {name} (workers.liveness)

State changes go through :meth:`Store._transition`, an optimistic
transaction that only moves a job out of the states it may leave, so a
late SUCCEEDED never overwrites CANCELLED and a redelivered task never
reruns a finished job.
"""

import hashlib
import io
import json
import time

import redis
import scipy.sparse as sp

from . import stats, tracking
from .broker import enqueue_job_event
from .config import PREFIX, Settings
from .dataset_store import DatasetInUse, DatasetStoreMixin
from .records import ACTIVE, decode_record, decode_token, dumps, encode_token, job_event, new_id, problem, utcnow_iso
from .session_store import refuse_if_in_use
from .tenancy import count_against, index_key, index_record, owned_by
from .upload_store import UploadStoreMixin

#: Redis failures, re-exported so the service need not import redis.
StoreError = redis.RedisError

TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")
#: Jobs whose first task was not sent yet: id -> creation time (:meth:`Store.mark_sent`).
UNSENT = f"{PREFIX}jobs:unsent"
#: How long an Idempotency-Key claim holds while its request runs (s): longer than gunicorn lets any
#: request run (``service.gunicorn_conf.timeout``, 120 s), so the key never frees under a live request.
PENDING_CLAIM_SECONDS = 180


class Store(DatasetStoreMixin, UploadStoreMixin):
    """Access to Shoal's state in Redis.

    Parameters
    ----------
    client : redis.Redis
        A client with ``decode_responses=False``.
    settings : workers.config.Settings
    """

    def __init__(self, client, settings):
        self.r = client
        self.settings = settings

    @classmethod
    def from_settings(cls, settings=None):
        settings = settings or Settings.from_env()
        client = redis.Redis.from_url(
            settings.redis_url, socket_connect_timeout=2, socket_timeout=10, health_check_interval=30
        )
        return cls(client, settings)

    # ------------------------------------------------------------------ health
    def ping(self):
        """True when Redis answers."""
        try:
            return bool(self.r.ping())
        except redis.RedisError:
            return False

    def live_workers(self):
        """Names of workers whose heartbeat has not expired, sorted.

        One sorted-set read: ``/readyz`` and every ``/metrics`` scrape call it,
        and it used to SCAN the whole key space for heartbeat keys. The
        heartbeats are in Redis server time (:func:`workers.liveness.beat`).
        """
        now = tracking.server_time(self.r)
        return sorted(m.decode() for m in self.r.zrangebyscore(f"{PREFIX}workers", f"({now}", "+inf"))

    # -------------------------------------------------------- idempotency keys
    def claim_request(self, scope, key, fingerprint, *, pending_ttl=None):
        """Claim an ``Idempotency-Key`` for one request, or find who has it.

        Parameters
        ----------
        scope : str
            The endpoint (method and path): a key is only unique within it.
        key : str
            The client's ``Idempotency-Key`` header.
        fingerprint : str
            A hash of the request body: the same key with another body is an error.
        pending_ttl : int, seconds, optional
            How long the claim holds while the request runs (a crashed request
            frees the key after it); default :data:`PENDING_CLAIM_SECONDS`,
            longer than any request runs (60 s until 2026-11-27, under
            gunicorn's 120 s timeout: a request slower than 60 s lost its key,
            and a retry meanwhile ran it twice).

        Returns
        -------
        dict or None
            None: claimed, run the request. Else the record found:
            ``{"state": "pending" | "done", "fingerprint", "status", "body",
            "headers"}`` (the last three once done).
        """
        rkey = self._request_key(scope, key)
        pending_ttl = PENDING_CLAIM_SECONDS if pending_ttl is None else pending_ttl
        claim = json.dumps({"state": "pending", "fingerprint": fingerprint})
        if self.r.set(rkey, claim, nx=True, ex=pending_ttl):
            return None
        raw = self.r.get(rkey)
        if raw is None:  # expired in between: try once more
            return None if self.r.set(rkey, claim, nx=True, ex=pending_ttl) else {"state": "pending",
                                                                                    "fingerprint": fingerprint}
        return json.loads(raw)

    def finish_request(self, scope, key, fingerprint, status, body, headers, ttl):
        """Remember a successful response under its key for ``ttl`` seconds (replayed on retries)."""
        self.r.set(self._request_key(scope, key), json.dumps(
            {"state": "done", "fingerprint": fingerprint, "status": status, "body": body, "headers": headers}), ex=ttl)

    def release_request(self, scope, key):
        """Forget a claim whose request failed, so the client may retry with the same key."""
        self.r.delete(self._request_key(scope, key))

    @staticmethod
    def _request_key(scope, key):
        return f"{PREFIX}idempotency:{hashlib.sha256(f'{scope} {key}'.encode()).hexdigest()}"

    # -------------------------------------------------------------------- jobs
    def create_job(self, *, dataset_id, method, n_clusters, params, constraints, random_state,
                   on_conflict="keep", scale="none", callback_url=None, n_constraints=None, conflicts=None,
                   n_conflicts=None, kind="fit", parent_job_id=None, preset=None, model=None, n_features=None,
                   owner=None, session_id=None):
        """Create a QUEUED job record; returns the record.

        ``constraints`` is a JSON-able dict of index lists; ``conflicts`` the
        contradictions found at submission (kept, reported in the result) and
        ``n_conflicts`` how many there are (``conflicts`` lists at most 100 of
        them, see :func:`clustering.validation.find_pairwise_conflicts`; None:
        as many as listed).
        ``model`` (bytes, a predict job's copy of its parent's fitted model,
        :meth:`get_model_bytes`) is stored with the record, so the predict job
        runs on the model as it was when requested even if the parent job is
        deleted before it runs. ``n_features`` (the dataset's columns) stays
        with the record, so that rows to predict can be checked against the
        model after the dataset is deleted. ``owner`` is the tenant that owns
        the job (:mod:`workers.tenancy`), None without API keys. ``session_id``:
        the session whose answers a refit job clusters (None for other jobs).
        Raises :class:`DatasetGone` when the dataset no longer exists (the
        record is written in :meth:`on_dataset`'s transaction).
        The job is listed as unsent until :meth:`mark_sent`: should the
        caller die before sending its task, a live worker sends it
        (:func:`workers.liveness.dispatch_unsent`).
        """
        jid = new_id("job")
        now = time.time()
        record = {
            "id": jid,
            "state": "QUEUED",
            "dataset_id": dataset_id,
            "n_features": None if n_features is None else int(n_features),
            "method": method,
            "n_clusters": None if n_clusters is None else int(n_clusters),  # None: auto chooses K
            "params": params,
            "preset": preset,
            "random_state": int(random_state),
            "on_conflict": on_conflict,
            "scale": scale,
            "kind": kind,
            "parent_job_id": parent_job_id,
            "session_id": session_id,
            "callback_url": callback_url,
            "n_constraints": n_constraints or {},
            "n_conflicts": len(conflicts or []) if n_conflicts is None else int(n_conflicts),
            "progress": {"fraction": 0.0, "stage": "queued", "message": None},
            "attempts": 0,
            "dispatch": jid,  # the Celery task id allowed to run it (workers.liveness)
            "worker": None,
            "created_at": utcnow_iso(now),
            "created_ts": now,
            "started_at": None,
            "started_ts": None,
            "finished_at": None,
            "error": None,
            "owner": owner,
        }
        key = f"{PREFIX}job:{jid}"
        spec = dumps({"constraints": constraints, "conflicts": conflicts or []})

        def write(pipe):
            pipe.hset(key, mapping={k: json.dumps(v) for k, v in record.items()})
            pipe.set(f"{key}:spec", spec)
            if model is not None:
                pipe.set(f"{key}:model", model, ex=self.settings.job_ttl)
            index_record(pipe, "jobs", owner, jid, now)
            count_against(pipe, owner, "jobs", jid)
            pipe.zadd(UNSENT, {jid: now})
            self.add_dataset_user(pipe, dataset_id, "job", jid)
            stats.job_submitted(pipe, method)

        self.on_dataset(dataset_id, write)
        return record

    def _read(self, jid):
        return decode_record(self.r.hgetall(f"{PREFIX}job:{jid}"))

    def mark_sent(self, member, listing=UNSENT):
        """Note that the task of ``member`` was sent: it leaves the list of unsent work ``listing``.

        Parameters
        ----------
        member : str
            A job id in :data:`UNSENT` (the default), or a session pass in
            :data:`workers.session_store.UNSENT_PASSES`.
        listing : str
            The sorted set (member -> Unix seconds since it is listed).
        """
        self.r.zrem(listing, member)

    def unsent_since(self, before, limit=100, listing=UNSENT):
        """Members listed in ``listing`` (see :meth:`mark_sent`) since before ``before``, oldest first.

        Parameters
        ----------
        before : float, Unix seconds
        limit : int
            At most this many.
        listing : str
            :data:`UNSENT` (job ids) or :data:`workers.session_store.UNSENT_PASSES`.

        Returns
        -------
        list of str
        """
        return [raw.decode() for raw in self.r.zrangebyscore(listing, "-inf", before, start=0, num=limit)]

    def retry_unsent(self, member, listing=UNSENT):
        """List ``member`` as due at once again (its task was not sent), unless it left ``listing``.

        Parameters
        ----------
        member : str
        listing : str
            As for :meth:`mark_sent`.
        """
        self.r.zadd(listing, {member: 0}, xx=True)

    def dispatch_unsent(self, jid, new_task_id, listed_before):
        """Dispatch a job whose first task was never sent to task ``new_task_id``.

        Claims the job for the caller (:func:`workers.liveness.dispatch_unsent`)
        in the transaction that dispatches it: the job stays listed in
        :data:`UNSENT`, from now, so that should the caller not send the task
        (its Redis or its process gone meanwhile) another live worker's sweep
        dispatches the job again once ``listed_before`` is that far behind;
        the caller takes it off the list once the task is sent
        (:meth:`mark_sent`). A job that has moved on (started, ended, or gone)
        leaves the list.

        Parameters
        ----------
        jid : str
        new_task_id : str
            The task the caller sends next.
        listed_before : float, Unix seconds
            The job must have been listed since before then (another live
            worker's claim lists it anew).

        Returns
        -------
        bool
            True if the job was still listed since before ``listed_before``,
            QUEUED and never started (no attempt), and now names
            ``new_task_id`` as its ``dispatch`` (a task of an earlier id,
            should it come after all, is dropped by :meth:`start_job`); False
            if not.
        """
        key = f"{PREFIX}job:{jid}"

        def tx(pipe):
            raw = pipe.hmget(key, ["state", "attempts"])
            state, attempts = (json.loads(v) if v is not None else None for v in raw)
            listed = pipe.zscore(UNSENT, jid)
            if listed is None or listed > listed_before:  # sent, or claimed by another sweep (it wrote the record)
                pipe.unwatch()
                return False
            pipe.multi()
            if state != "QUEUED" or int(attempts or 0) != 0:  # started, ended or gone: nothing to send
                pipe.zrem(UNSENT, jid)
                return False
            pipe.hset(key, "dispatch", json.dumps(new_task_id))
            pipe.zadd(UNSENT, {jid: time.time()})
            return True

        return self.r.transaction(tx, key, value_from_callable=True)

    def get_job(self, jid):
        """The job record, or None if unknown or expired.

        A job left RUNNING past ``hard_time_limit + visibility_timeout`` has
        lost its worker and will not be redelivered any more: it is failed
        here, so no job stays RUNNING forever.
        """
        rec = self._read(jid)
        if rec is None:
            return None
        s = self.settings
        if rec["state"] == "RUNNING" and rec.get("started_ts"):
            if time.time() - rec["started_ts"] > s.hard_time_limit + s.visibility_timeout + 60:
                self.announce_end(self.finish_job(jid, "FAILED", error=problem(
                    "worker_lost", "Worker lost", 500,
                    "the worker running this job stopped and the job was not redelivered in time")))
                rec = self._read(jid)
        return rec

    def get_job_spec(self, jid):
        raw = self.r.get(f"{PREFIX}job:{jid}:spec")
        return json.loads(raw) if raw else None

    def list_jobs(self, *, state=None, dataset_id=None, page_size=20, page_token=None, owner=None,
                  enforce=False):
        """Newest first, cursor-paginated. Returns ``(records, next_page_token)``;
        ``dataset_id`` keeps the jobs on that dataset (:meth:`page_of_dataset`); ``owner``'s
        only, and with ``enforce`` (API keys on) no record of another owner (:mod:`workers.tenancy`)."""
        load = owned_by(self.get_job, owner, enforce)
        if dataset_id is not None:
            return self.page_of_dataset(dataset_id, "job", load, state=state, page_size=page_size,
                                        page_token=page_token)
        return self.page_newest_first(index_key("jobs", owner), load, state=state, page_size=page_size,
                                      page_token=page_token)

    def page_of_dataset(self, did, kind, load, *, state=None, page_size=20, page_token=None):
        """One page of the jobs or sessions created on dataset ``did``, newest first.

        Reads the dataset's user set (:meth:`dataset_users`) instead of the
        whole index, so it costs what the dataset's own records cost. Pages and
        tokens are those of :meth:`page_newest_first`. The records of a
        deleted or expired dataset are still listed while they exist
        (:meth:`_users_ttl`).

        Parameters
        ----------
        did : str
        kind : {"job", "session"}
        load, state, page_size, page_token
            As for :meth:`page_newest_first`.
        """
        recs = [r for r in (load(rid) for k, rid in self.dataset_users(did) if k == kind)
                if r is not None and (state is None or r["state"] == state)]
        recs.sort(key=lambda r: (r["created_ts"], r["id"]), reverse=True)
        if page_token:
            last = tuple(decode_token(page_token))
            recs = [r for r in recs if (r["created_ts"], r["id"]) < last]
        page = recs[:page_size]
        token = encode_token(page[-1]["created_ts"], page[-1]["id"]) if len(recs) > page_size else None
        return page, token

    def page_newest_first(self, zkey, load, *, state=None, page_size=20, page_token=None):
        """One page of the records indexed in the sorted set ``zkey`` (score = ``created_ts``), newest first.

        Parameters
        ----------
        zkey : str
            Redis sorted set: record id -> creation time (Unix seconds).
        load : callable
            ``load(id)`` -> the record (a dict with ``id``, ``state`` and
            ``created_ts``), or None once it expired or was deleted; such ids
            are dropped from the index.
        state : str or None
            Keep only records in this state.
        page_size : int >= 1
        page_token : str or None
            ``next_page_token`` of the previous page; it encodes the
            (created_ts, id) of that page's last record, so pages stay stable
            while new records arrive.

        Returns
        -------
        records : list of dict
            At most ``page_size``.
        next_page_token : str or None
            None when the page is not full (a full page may be followed by an
            empty one).

        Raises
        ------
        ValueError
            A malformed ``page_token`` (the service checks it first: 400).
        """
        # The cursor: the (score, id) of the last entry read; the next batch starts there, not at a rank.
        # Other requests drop ids (a delete, another listing's clean-up) and add them (a new record ranks
        # first) while this one reads: read by rank, the next batch skipped as many live records as were
        # dropped above it and read one record again for each one added.
        max_score, last_id = "+inf", None
        if page_token:
            max_score, last_id = decode_token(page_token)
        out, gone = [], []
        start = 0
        batch = max(page_size * 2, 50)
        while len(out) < page_size:
            ids = self.r.zrevrangebyscore(zkey, max_score, "-inf", start=start, num=batch, withscores=True)
            if not ids:
                break
            # equal scores come by id, descending: those at the cursor's score from its id up were read
            fresh = [(raw_id.decode(), score) for raw_id, score in ids]
            fresh = [(rid, score) for rid, score in fresh
                     if last_id is None or score != float(max_score) or rid < last_id]
            if not fresh:  # a whole batch of entries at the cursor's score already read: look past them
                start += len(ids)
                continue
            start = 0
            for rid, score in fresh:
                max_score, last_id = score, rid
                rec = load(rid)
                if rec is None:
                    # expired or deleted: dropped from the index once the page is read (one round trip)
                    gone.append(rid)
                    continue
                if state and rec["state"] != state:
                    continue
                out.append(rec)
                if len(out) == page_size:
                    break
        if gone:
            self.r.zrem(zkey, *gone)
        # A full page may be followed by an empty one (allowed by AIP-158).
        token = encode_token(out[-1]["created_ts"], out[-1]["id"]) if len(out) == page_size else None
        return out, token

    def _transition(self, jid, allowed_from, updates, also=None, expect=None):
        """Apply ``updates`` iff the job's state is in ``allowed_from``.

        ``also(pipe, record)``, if given, queues more writes in the same
        transaction (``record``: the job as it was before the update:
        ``state``, ``method``, ``started_ts``, ``worker``, ``dispatch``,
        ``attempts``, those it has). ``expect(record)``, if given, must also
        be true of it. Returns the new record, or None when the job is
        unknown, in another state, or not as expected.
        """
        key = f"{PREFIX}job:{jid}"
        fields = ("state", "method", "started_ts", "worker", "dispatch", "attempts")

        def tx(pipe):
            cur = pipe.hmget(key, list(fields))
            before = {k: json.loads(v) for k, v in zip(fields, cur) if v is not None}
            if cur[0] is None or before["state"] not in allowed_from or (expect is not None and not expect(before)):
                pipe.unwatch()
                return False
            pipe.multi()
            pipe.hset(key, mapping={k: json.dumps(v) for k, v in updates.items()})
            if also is not None:
                also(pipe, before)
            return True

        return self._read(jid) if self.r.transaction(tx, key, value_from_callable=True) else None

    def start_job(self, jid, task_id=None, worker=None, token=None):
        """Mark RUNNING and count the attempt; None if the job must not run.

        Parameters
        ----------
        jid : str
        task_id : str, optional
            The Celery task id asking. A job re-dispatched after its worker
            was lost (:meth:`requeue_lost_job`) runs only as the task its
            ``dispatch`` names: the lost worker's own message, which the broker
            restores after its visibility timeout, is dropped. None (or a
            record from before ``dispatch``) skips the check.
        worker : str, optional
            The worker running it (:func:`workers.liveness.current_worker_name`),
            recorded so that its loss can be noticed; None tracks nothing.
        token : str, optional
            A new id for this start, the same when the call is tried again
            (:func:`workers.tasks.through_outage`), recorded as ``start``: a
            job found RUNNING under it was started by this call, whose reply
            Redis lost, and its record is returned as the write would have
            returned it. Without it the retry took that start for another
            delivery's and answered None (redis-py's own retry, its WATCH
            gone, found the attempt counted), so the task returned and the
            job stayed RUNNING with no task, or it counted one more attempt
            (possibly past ``max_attempts``). None: not checked.

        Returns
        -------
        record : dict or None
            None when the job is unknown, finished, cancelled or dispatched to
            another task, also when it was re-dispatched or started by
            another delivery between this call's read and its write (checked
            in the transaction that marks it RUNNING). When the attempt cap
            is exceeded the job is FAILED and None is returned.
        """
        rec = self._read(jid)
        if token is not None and self._started_by(rec, token):
            return rec
        if rec is None or rec["state"] not in ACTIVE:
            return None
        if task_id is not None and rec.get("dispatch") not in (None, task_id):
            return None
        attempts = int(rec.get("attempts", 0)) + 1
        if attempts > self.settings.max_attempts:
            self.announce_end(self.finish_job(jid, "FAILED", error=problem(
                "attempts_exhausted", "Job failed repeatedly", 500,
                f"the job's worker was lost {attempts - 1} times (limit {self.settings.max_attempts})")))
            return None
        now = time.time()

        def unchanged(before):  # re-dispatched (workers.liveness) or started by another task since the read
            return before.get("dispatch") == rec.get("dispatch") and int(before.get("attempts", 0)) == attempts - 1

        started = self._transition(jid, ACTIVE, {
            "state": "RUNNING", "attempts": attempts, "started_at": utcnow_iso(now), "started_ts": now,
            "worker": worker, "start": token,
            "progress": {"fraction": 0.0, "stage": "starting", "message": f"attempt {attempts}"},
        }, also=lambda pipe, before: tracking.track(pipe, worker, f"job:{jid}", task_id or ""), expect=unchanged)
        if started is None and token is not None:  # redis-py ran the transaction again after losing its reply
            rec = self._read(jid)
            return rec if self._started_by(rec, token) else None
        return started

    @staticmethod
    def _started_by(rec, token):
        """Whether record ``rec`` (or None) is RUNNING as started by the :meth:`start_job` call ``token``."""
        return rec is not None and rec["state"] == "RUNNING" and rec.get("start") == token

    def requeue_lost_job(self, jid, worker, task_id, new_task_id):
        """Put a job that lost worker ``worker`` back in the queue as task ``new_task_id``.

        Called by :func:`workers.liveness.recover_worker`, which sends the task
        after this returns True. In the same transaction the lost worker's
        running hash comes to name ``new_task_id`` for the job: should the
        task not be sent (Redis gone meanwhile), the next recovery of that
        worker finds the job QUEUED for a task it names, and dispatches it
        again to another new task (the record never waits for a task that
        nothing will send, the lost task's own message being dropped).

        Parameters
        ----------
        jid : str
        worker : str
            The lost worker.
        task_id : str
            The task its running hash names for the job: the one it ran the
            job as, or the one an earlier recovery dispatched it to.
        new_task_id : str
            The task id to dispatch the job to.

        Returns
        -------
        bool
            True if the job was RUNNING on ``worker`` as ``task_id`` (or as a
            task of a record from before ``dispatch``), or QUEUED for
            ``task_id`` by an earlier recovery, and is now QUEUED for
            ``new_task_id``; False if it moved on (finished, or started
            elsewhere) and nothing changed.
        """
        unit = f"job:{jid}"

        def lost_here(before):  # RUNNING on the lost worker as that task, or QUEUED for it by a recovery
            if before["state"] == "RUNNING":
                return before.get("worker") == worker and before.get("dispatch") in (task_id, None)
            return before.get("worker") is None and before.get("dispatch") == task_id

        def also(pipe, before):
            tracking.track(pipe, worker, unit, new_task_id)
            if before["state"] == "RUNNING":  # not counted again when only the sending is retried
                stats.job_redispatched(pipe, before.get("method"))

        return self._transition(jid, ("RUNNING", "QUEUED"), {
            "state": "QUEUED", "dispatch": new_task_id, "worker": None,
            "progress": {"fraction": 0.0, "stage": "queued", "message": "worker lost: queued again"},
        }, also=also, expect=lost_here) is not None

    def set_progress(self, jid, fraction, stage, message=None):
        self._transition(jid, ("RUNNING",), {
            "progress": {"fraction": float(min(max(fraction, 0.0), 1.0)), "stage": stage, "message": message}
        })

    def finish_job(self, jid, state, *, error=None, task_id=None, token=None):
        """Move to a terminal state (from QUEUED/RUNNING only) and start the TTL.

        Parameters
        ----------
        jid : str
        state : {"SUCCEEDED", "FAILED", "CANCELLED"}
        error : dict or None
            The problem object of a failure.
        task_id : str, optional
            End the job only if it is dispatched to this Celery task (or its
            record predates ``dispatch``): a job re-dispatched to another task
            (:meth:`requeue_lost_job`) is that task's to end. None: not checked.
        token : str, optional
            A new id for this end, the same when the call is tried again
            (:func:`workers.tasks.end_job`), recorded as ``end``: a job found
            ended under it was ended by this call, whose reply Redis lost.

        Returns
        -------
        dict or None
            The ended record; None if the job is unknown, already ended, or
            dispatched to another task.
        """
        assert state in TERMINAL
        now = time.time()
        updates = {"state": state, "finished_at": utcnow_iso(now), "error": error, "end": token}
        if state == "SUCCEEDED":
            updates["progress"] = {"fraction": 1.0, "stage": "done", "message": None}

        def also(pipe, before):
            stats.job_finished(pipe, before, state, now)
            tracking.untrack(pipe, before.get("worker"), f"job:{jid}")
            pipe.zrem(UNSENT, jid)
            # in the same transaction: a caller that retries after losing the reply (workers.tasks.through_outage)
            # finds the job ended, and its keys must not be left without their expiry
            key = f"{PREFIX}job:{jid}"
            for k in (key, f"{key}:spec", f"{key}:result", f"{key}:affinity", f"{key}:cancel", f"{key}:model",
                      f"{key}:projection"):
                pipe.expire(k, self.settings.job_ttl)

        expect = None if task_id is None else (lambda before: before.get("dispatch") in (task_id, None))
        return self._transition(jid, ACTIVE, updates, also=also, expect=expect)

    def announce_end(self, rec):
        """Queue the ``job.<state>`` event of a job no worker will report.

        A worker sends the event of a job it ran; a job cancelled while
        QUEUED, failed as ``worker_lost`` when read, or failed as
        ``attempts_exhausted`` when a worker picked it up ends without that,
        so its ``callback_url`` gets the event through here
        (``shoal.deliver_webhook``, sent by name). The job's end stands if the
        broker cannot take the event (logged).

        Parameters
        ----------
        rec : dict or None
            :meth:`finish_job`'s return: the record if that call ended the
            job, None if it had already ended (nothing to announce then, so
            each end is announced once).
        """
        if rec is None or not rec.get("callback_url"):
            return
        enqueue_job_event(self.settings, rec["id"], rec["callback_url"], job_event(rec))

    def delete_job(self, jid):
        """Delete a finished job: record, spec, result, affinity, model, listing entry.

        A predict job's rows (the dataset ``POST /v1/jobs/{id}/predict`` stored
        for it) go with it, unless a job or session a client made on them
        still needs them (:meth:`_delete_predict_rows`). A job still QUEUED or
        RUNNING is left alone.

        Returns
        -------
        str
            ``"deleted"``, ``"missing"`` (unknown or expired) or ``"unfinished"``
            (QUEUED or RUNNING: cancel it first).
        """
        key = f"{PREFIX}job:{jid}"

        def tx(pipe):
            raw = pipe.hmget(key, ["state", "dataset_id", "kind", "owner"])
            if raw[0] is None:
                pipe.unwatch()
                return "missing", None
            state, did, kind, owner = (json.loads(v) if v is not None else None for v in raw)
            if state not in TERMINAL:
                pipe.unwatch()
                return "unfinished", None
            pipe.multi()
            pipe.delete(*(key + s for s in ("", ":spec", ":result", ":affinity", ":cancel", ":model", ":projection")))
            pipe.zrem(index_key("jobs", owner), jid)
            pipe.zrem(UNSENT, jid)
            pipe.srem(f"{PREFIX}dataset:{did}:users", f"job:{jid}")
            return "deleted", did if kind == "predict" else None

        outcome, rows = self.r.transaction(tx, key, value_from_callable=True)
        if rows is not None:
            self._delete_predict_rows(rows)
        return outcome

    def _delete_predict_rows(self, did):
        """Delete dataset ``did``, the rows of a predict job just deleted, unless other work needs them.

        The rows are a dataset like any upload (listed, and a client may run jobs and open sessions
        on them), so they are deleted as ``DELETE /v1/datasets/{id}`` deletes one: not while a job on
        them is QUEUED or RUNNING or a session on them is open (deleted unguarded, such a job failed
        with "dataset ... no longer exists"). Kept, they expire with their TTL or the client deletes them.

        Parameters
        ----------
        did : str
            The predict job's ``dataset_id``.

        Returns
        -------
        bool
            True if the rows were deleted (or already gone), False if kept.
        """
        try:
            self.delete_dataset(did, guard=refuse_if_in_use(self, did))
        except DatasetInUse:
            return False
        return True

    def request_cancel(self, jid):
        """Best-effort, idempotent cancellation; returns the record or None.

        A QUEUED job is CANCELLED at once (its ``job.cancelled`` event is
        queued, :meth:`announce_end`); a RUNNING one gets the flag its worker
        checks (:meth:`cancel_requested`) and ends when the worker sees it.
        """
        rec = self._read(jid)
        if rec is None:
            return None
        if rec["state"] in TERMINAL:
            return rec
        self.r.set(f"{PREFIX}job:{jid}:cancel", b"1", ex=self.settings.job_ttl)
        if rec["state"] == "QUEUED":
            self.announce_end(self.finish_job(jid, "CANCELLED"))
        return self._read(jid)

    def cancel_requested(self, jid):
        return bool(self.r.exists(f"{PREFIX}job:{jid}:cancel"))

    # ----------------------------------------------------------------- results
    def save_result(self, jid, result, affinity=None, projection=None):
        """Store the result JSON and, optionally, a sparse affinity (.npz bytes) and the rows' 2-D map
        (:func:`workers.projection.project`, JSON, for ``/ui/jobs/{id}``), while the job runs.

        Returns
        -------
        bool
            False (nothing written) if the job already ended or is gone: a
            second run of it (its worker taken for lost while it still ran,
            :mod:`workers.liveness`) finishing after the first must not replace
            the ended job's keys, which would lose their expiry, nor bring back
            those of a deleted job.
        """
        writes = {"result": dumps(result)}
        if affinity is not None:
            buf = io.BytesIO()
            sp.save_npz(buf, sp.csr_matrix(affinity), compressed=True)
            writes["affinity"] = buf.getvalue()
        if projection is not None:
            writes["projection"] = dumps(projection)
        return self._save_while_active(jid, writes)

    def _save_while_active(self, jid, writes):
        """SET ``job:{jid}:{part}`` for each ``part -> bytes`` of ``writes`` (expiring after ``job_ttl``)
        in one transaction, iff the job is still QUEUED or RUNNING; True if written."""
        key = f"{PREFIX}job:{jid}"

        def tx(pipe):
            state = pipe.hget(key, "state")
            if state is None or json.loads(state) not in ACTIVE:
                pipe.unwatch()
                return False
            pipe.multi()
            for part, value in writes.items():
                pipe.set(f"{key}:{part}", value, ex=self.settings.job_ttl)
            return True

        return self.r.transaction(tx, key, value_from_callable=True)

    def get_result(self, jid):
        raw = self.r.get(f"{PREFIX}job:{jid}:result")
        return json.loads(raw) if raw else None

    def get_projection(self, jid):
        """The 2-D map of a job's rows (:meth:`save_result`), or None (none made, expired or deleted)."""
        raw = self.r.get(f"{PREFIX}job:{jid}:projection")
        return json.loads(raw) if raw else None

    def save_model_state(self, jid, state):
        """Fitted parameters of an inductive model (JSON), for predict jobs; while the job runs
        (False, nothing written, once it ended: see :meth:`save_result`)."""
        return self._save_while_active(jid, {"model": dumps(state)})

    def get_model_bytes(self, jid):
        """The stored model of a job as JSON bytes, or None (none saved, expired or deleted)."""
        return self.r.get(f"{PREFIX}job:{jid}:model")

    def get_model_state(self, jid):
        raw = self.get_model_bytes(jid)
        return json.loads(raw) if raw else None

    def get_affinity_bytes(self, jid):
        return self.r.get(f"{PREFIX}job:{jid}:affinity")


def load_affinity(npz_bytes):
    """CSR matrix from the stored .npz bytes (no pickle)."""
    return sp.load_npz(io.BytesIO(npz_bytes))


