"""Redis storage for active-clustering sessions (people and crowds answering questions).

Layout (prefix ``shoal:session:{id}``)::

    (hash)            record: dataset, strategy, budget, revision, counters ... (JSON values)
    :state            bytes   the estimator's JSON state (URASC.get_state)
    :model            bytes   JSON {labels, n_clusters, observed_revision, ...}
    :questions        hash    question_id -> JSON {items, type, status, n_answers, created_revision,
                              tie_breakers (once its answers tied)}
    :pool             list    open question ids, best first
    :answers:{qid}    list    JSON answers {answer, worker_id, assignment_id, revision}
    :answer_log       list    the same answers with their question_id, in arrival order (one
                              read for the per-pass aggregation instead of one per question)
    :lease:{qid}      zset    worker id -> lease time (Unix s); 0 once that worker answered
    :assignments      hash    assignment_id -> the question it answered (idempotent retries)
    :ready            list    question ids with enough answers, waiting for the model
    :taken            list    question ids a pass took from :ready and has not committed yet
                              (a pass killed or failed before its commit leaves them to the next)
    :committed        string  the commit_pass call that wrote the last commit, for its retry
    :update           string  the id of the Celery task that runs (or is queued to run) the next pass
    :update_pending   string  set when answers arrive during a run (coalescing)
    :pending_taken    string  the call that last took the pending flag (take_pending), for its retry
    :update_claimed   string  the task that last claimed the slot (started its pass): a slot whose
                              holder has not may be taken over by a retry (record_answers)
    :projection       bytes   JSON 2-D map of the rows (workers.projection), for /ui/sessions/{id}
    :passes           hash    revision -> JSON numbers one committed pass measured (record_pass)
    :item_ids         string  JSON list: the dataset's item ids, copied when the dataset is deleted
                              (DatasetStoreMixin.delete_dataset; read by item_ids)

and ``shoal:sessions``, a sorted set of session ids by creation time (listing), and
``shoal:sessions:unsent`` (:data:`UNSENT_PASSES`), the passes whose task a request took the slot for
and has not sent yet.

The web process only records answers and leases questions; aggregation and
re-clustering run on a worker (``workers.session_tasks``).
"""

import json
import time
import uuid
from typing import NamedTuple

from redis.exceptions import WatchError

from . import stats
from .config import PREFIX
from .dataset_store import DatasetInUse
from .records import ACTIVE as UNFINISHED_JOB_STATES
from .records import decode_record, decode_token, dumps, encode_token, new_id, utcnow_iso
from .session_scripts import (ANSWERS_LUA, FINISH_PASS_LUA, LEASE_LUA, SLOT_LUA, TAKE_PENDING_LUA, TAKE_READY_LUA,
                              UNSENT_PASS_LUA, UPDATE_LUA, WITHDRAW_LUA)
from .tenancy import count_against, index_key, index_record, owned_by

PAIRWISE_ANSWERS = ("must_link", "cannot_link", "dont_know")
TRIPLET_ANSWERS = ("yes", "no", "dont_know")
#: Seconds a lease holds a slot when the record has no ``lease_seconds`` (the API's default too).
DEFAULT_LEASE_SECONDS = 600
#: Session states in which a worker may still read the session's dataset.
OPEN_STATES = ("INITIALIZING", "ACTIVE")
#: Passes whose task a request took the slot for and has not sent yet: ``"{session id}:{task id}"`` -> the
#: time the slot was taken (or handed on by the sweep), until the task is sent (:meth:`SessionStore.mark_sent`).
#: Should the request die before sending it, a live worker sends it (:func:`workers.liveness.dispatch_unsent`),
#: as it does a job's in ``jobs:unsent``.
UNSENT_PASSES = f"{PREFIX}sessions:unsent"


def unsent_pass(sid, token):
    """The member of :data:`UNSENT_PASSES` naming session ``sid``'s pass as task ``token``.

    Parameters
    ----------
    sid : str
        The session id (``ses_`` and hex digits: no ``:``).
    token : str
        The Celery task id of the pass.

    Returns
    -------
    str
        ``"{sid}:{token}"``.
    """
    return f"{sid}:{token}"


#: A session's ``worker_quality`` when its record has none (or only some) of the fields.
DEFAULT_WORKER_QUALITY = {"min_gold_accuracy": 0.7, "min_gold_answered": 5, "exclude_flagged": False}


def worker_quality_of(rec):
    """The session's ``worker_quality`` (gold-based flags of workers), the defaults filled in.

    Parameters
    ----------
    rec : dict
        The session's record (``worker_quality`` may be missing: sessions from before it).

    Returns
    -------
    dict
        ``min_gold_accuracy``, ``min_gold_answered``, ``exclude_flagged``.
    """
    return {**DEFAULT_WORKER_QUALITY, **(rec.get("worker_quality") or {})}


class RecordedAnswers(NamedTuple):
    """What :meth:`SessionStore.record_answers` did with a batch of answers."""

    outcomes: list
    revision: int
    #: The task id the caller must enqueue (it holds the session's slot now), or None.
    enqueue: str = None


class PassSuperseded(Exception):
    """The task running a pass no longer holds the session's slot: it was handed to another pass
    (:mod:`workers.liveness`, the worker having been taken for lost), which redoes this one's work."""


class SessionStore:
    """Session records, question pools and answers in Redis.

    Parameters
    ----------
    store : workers.store.Store
        Shares its Redis client and settings.
    """

    def __init__(self, store):
        self.store = store
        self.r = store.r
        self.settings = store.settings
        self._answers_script = self.r.register_script(ANSWERS_LUA)
        self._update_script = self.r.register_script(UPDATE_LUA)
        self._lease_script = self.r.register_script(LEASE_LUA)
        self._finish_script = self.r.register_script(FINISH_PASS_LUA)
        self._withdraw_script = self.r.register_script(WITHDRAW_LUA)
        self._take_ready_script = self.r.register_script(TAKE_READY_LUA)
        self._slot_script = self.r.register_script(SLOT_LUA)
        self._take_pending_script = self.r.register_script(TAKE_PENDING_LUA)
        self._unsent_script = self.r.register_script(UNSENT_PASS_LUA)

    def _key(self, sid, suffix=""):
        return f"{PREFIX}session:{sid}{suffix}"

    # ------------------------------------------------------------- records
    def create(self, *, dataset_id, strategy, n_clusters, budget, question_type, answers_per_question,
               params, random_state, aggregation="one_coin", callback_url=None, preset=None,
               lease_seconds=DEFAULT_LEASE_SECONDS, seeds=(), owner=None, worker_quality=None):
        """Create an INITIALIZING session record on dataset ``dataset_id``; returns it.

        ``seeds``: constraints the client already has, as answers (pairwise
        ``[i, j, "must_link" | "cannot_link"]``, triplet ``[a, b, c, answer]``);
        the passes tell them to the model free of budget (``counters.seeded``).

        Raises :class:`workers.dataset_store.DatasetGone` when the dataset no longer
        exists (the record is written in ``Store.on_dataset``'s transaction).
        The same transaction takes the re-clustering slot for the first pass,
        whose task id is the session id (:func:`workers.submit.start_session`
        sends it), and lists that pass as unsent until :meth:`mark_sent`:
        should the caller die before sending it, a live worker sends it
        (:func:`workers.liveness.dispatch_unsent`). The session stayed
        INITIALIZING with no pass queued, holding its dataset, until it expired.
        """
        sid = new_id("ses")
        now = time.time()
        rec = {
            "id": sid, "dataset_id": dataset_id, "strategy": strategy, "n_clusters": n_clusters,
            "budget": int(budget), "question_type": question_type,
            "answers_per_question": int(answers_per_question), "lease_seconds": int(lease_seconds),
            "aggregation": aggregation,
            "worker_quality": worker_quality_of({"worker_quality": worker_quality}),
            "params": params, "preset": preset,
            "random_state": int(random_state), "revision": 0, "observed_revision": -1,
            "state": "INITIALIZING", "error": None,
            "counters": {"answers_received": 0, "accepted": 0, "duplicate": 0, "late": 0, "rejected": 0,
                         "questions_closed": 0, "questions_unused": 0, "disagreements": 0, "conflicts": 0,
                         "seeded": 0},
            "budget_used": 0, "budget_committed": 0,  # used by the model; + waiting for it (answer script)
            "created_at": utcnow_iso(now), "created_ts": now, "updated_at": utcnow_iso(now),
            "pass_started_at": None, "last_pass_seconds": None, "callback_url": callback_url,
            "answer_log": True,  # every answer is in :answer_log (see all_answers); not on the wire
            "seeds": [list(s) for s in seeds],
            "owner": owner,  # the tenant (workers.tenancy); None without API keys
        }

        def write(pipe):
            pipe.hset(self._key(sid), mapping={k: json.dumps(v) for k, v in rec.items()})
            index_record(pipe, "sessions", owner, sid, now)
            count_against(pipe, owner, "sessions", sid)
            pipe.set(self._key(sid, ":update"), sid, ex=self._slot_ttl())  # the first pass's task holds it
            pipe.zadd(UNSENT_PASSES, {unsent_pass(sid, sid): now})
            self.store.add_dataset_user(pipe, dataset_id, "session", sid)
            stats.session_created(pipe, question_type)

        self.store.on_dataset(dataset_id, write)
        self._touch(sid)
        return rec

    def list(self, *, state=None, dataset_id=None, page_size=20, page_token=None, owner=None, enforce=False):
        """Sessions, newest first, cursor-paginated: ``(records, next_page_token)``
        (see :meth:`workers.store.Store.page_newest_first`); ``dataset_id`` keeps
        the sessions on that dataset (:meth:`workers.store.Store.page_of_dataset`);
        ``owner``'s only, and with ``enforce`` (API keys on) no record of another owner."""
        load = owned_by(self.get, owner, enforce)
        if dataset_id is not None:
            return self.store.page_of_dataset(dataset_id, "session", load, state=state, page_size=page_size,
                                              page_token=page_token)
        return self.store.page_newest_first(index_key("sessions", owner), load, state=state, page_size=page_size,
                                            page_token=page_token)

    def _touch(self, sid):
        ttl = self.settings.job_ttl
        keys = [self._key(sid, s) for s in ("", ":state", ":model", ":questions", ":pool", ":assignments",
                                             ":ready", ":taken", ":disagreements", ":conflicts", ":item_ids",
                                             ":projection", ":passes")]
        pipe = self.r.pipeline()
        for k in keys:
            pipe.expire(k, ttl)
        pipe.execute()

    def get(self, sid):
        return decode_record(self.r.hgetall(self._key(sid)))

    def item_ids(self, rec):
        """The item ids of a session's dataset, also once the dataset was deleted.

        Parameters
        ----------
        rec : dict
            The session's record (``id``, ``dataset_id``).

        Returns
        -------
        list of str or None
            The dataset's ids; after its delete the copy the session kept
            (:meth:`workers.dataset_store.DatasetStoreMixin.delete_dataset`); None when
            the dataset has none.
        """
        ids = self.store.get_item_ids(rec["dataset_id"])
        if ids is None:
            raw = self.r.get(self._key(rec["id"], ":item_ids"))
            ids = json.loads(raw) if raw else None
        return ids

    def exists(self, sid):
        """Whether the session's record exists (not deleted or expired)."""
        return bool(self.r.exists(self._key(sid)))

    def count_pass(self, state, seconds):
        """Count one re-clustering pass (ending in ``state``, ``seconds`` long) for ``GET /metrics``."""
        pipe = self.r.pipeline()
        stats.session_pass(pipe, state, seconds)
        pipe.execute()

    def update(self, sid, **fields):
        """Set record fields; False (nothing written) if the session does not exist."""
        fields["updated_at"] = utcnow_iso()
        args = [x for k, v in fields.items() for x in (k, json.dumps(v))]
        return bool(self._update_script(keys=[self._key(sid)], args=args))

    def finish_pass(self, sid, revision, used, **fields):
        """Write the end of a re-clustering pass in one atomic step.

        Parameters
        ----------
        sid : str
        revision : int
            The revision the pass read: the model reflects the answers up to
            it, and up to the current revision when no question got all its
            answers since the pass took the waiting ones (the later answers
            closed nothing); ``observed_revision`` is set accordingly.
        used : int
            Questions the model has used (``budget_used``). ``budget_committed``
            becomes ``used`` plus the questions that got all their answers
            since the pass took the waiting ones.
        **fields
            More record fields (``state``, ``error``, ...).

        Returns
        -------
        int or None
            The ``observed_revision`` written; None if the session no longer exists.
        """
        fields["updated_at"] = utcnow_iso()
        args = [revision, int(used)] + [x for k, v in fields.items() for x in (k, json.dumps(v))]
        out = self._finish_script(keys=[self._key(sid), self._key(sid, ":ready")], args=args)
        return None if out is None else int(out)

    def delete(self, sid):
        """Delete the session and everything under it; False if it did not exist.

        Its passes listed as unsent (:data:`UNSENT_PASSES`) leave that list too.
        A re-clustering pass still running may write a few keys back (pool,
        model, state); the task deletes them again when it sees the record gone
        (``workers.session_tasks.session_update``). Those keys carry the TTL.
        """
        key = self._key(sid)
        owner = json.loads(self.r.hget(key, "owner") or "null")
        existed = bool(self.r.delete(key))
        self.r.zrem(index_key("sessions", owner), sid)
        # the id is matched literally: a "*" in it would match every session's keys
        literal = "".join("\\" + c if c in "*?[]\\" else c for c in sid)
        keys = list(self.r.scan_iter(match=f"{self._key(literal)}:*", count=1000))
        for i in range(0, len(keys), 500):
            self.r.delete(*keys[i:i + 500])
        unsent = [m for m, _ in self.r.zscan_iter(UNSENT_PASSES, match=unsent_pass(literal, "*"), count=1000)]
        if unsent:
            self.r.zrem(UNSENT_PASSES, *unsent)
        return existed

    # ----------------------------------------------------------- estimator state
    def save_state(self, sid, state):
        self.r.set(self._key(sid, ":state"), dumps(state), ex=self.settings.job_ttl)

    def load_state(self, sid):
        raw = self.r.get(self._key(sid, ":state"))
        return json.loads(raw) if raw else None

    def save_model(self, sid, model):
        self.r.set(self._key(sid, ":model"), dumps(model), ex=self.settings.job_ttl)

    def get_model(self, sid):
        raw = self.r.get(self._key(sid, ":model"))
        return json.loads(raw) if raw else None

    def save_projection(self, sid, projection):
        """Keep the 2-D map of the session's rows (:func:`workers.projection.project`) for its page."""
        self.r.set(self._key(sid, ":projection"), dumps(projection), ex=self.settings.job_ttl)

    def get_projection(self, sid):
        """The 2-D map of the session's rows, or None (its first pass has not committed yet)."""
        raw = self.r.get(self._key(sid, ":projection"))
        return json.loads(raw) if raw else None

    def record_pass(self, sid, revision, stats_of_pass):
        """Keep what one committed pass measured (its model's ARI, the crowd's agreement ...).

        Parameters
        ----------
        sid : str
        revision : int
            The revision the pass read: a pass redone for the same revision replaces its entry.
        stats_of_pass : dict
            JSON-able numbers (see :func:`workers.session_tasks.pass_stats`).
        """
        key = self._key(sid, ":passes")
        pipe = self.r.pipeline()
        pipe.hset(key, str(int(revision)), dumps(stats_of_pass))
        pipe.expire(key, self.settings.job_ttl)
        pipe.execute()

    def passes(self, sid):
        """What each committed pass measured (:meth:`record_pass`), by revision."""
        raw = self.r.hgetall(self._key(sid, ":passes"))
        return [json.loads(v) for _, v in sorted(raw.items(), key=lambda kv: int(kv[0]))]

    def in_flight(self, sid, limit=50):
        """Open questions with the workers whose lease on them is running.

        Parameters
        ----------
        sid : str
        limit : int
            At most this many questions (by question id).

        Returns
        -------
        list of dict
            ``question_id``, ``type``, ``items``, ``n_answers`` and ``leased_by`` (worker ids whose
            lease has not expired and who have not answered yet).
        """
        rec = self.get(sid) or {}
        seconds = rec.get("lease_seconds", DEFAULT_LEASE_SECONDS)
        page, _ = self.page_questions(sid, status="open", page_size=limit)
        since = time.time() - seconds
        pipe = self.r.pipeline()
        for q in page:
            pipe.zrangebyscore(self._key(sid, f":lease:{q['question_id']}"), f"({since}", "+inf")
        leases = pipe.execute() if page else []
        return [{"question_id": q["question_id"], "type": q["type"], "items": q["items"],
                 "n_answers": q.get("n_answers", len(q["answers"])), "leased_by": [w.decode() for w in held]}
                for q, held in zip(page, leases)]

    # ------------------------------------------------------------- questions
    def replace_pool(self, sid, questions, revision, lease_seconds=DEFAULT_LEASE_SECONDS, *, final=False):
        """Open ``questions`` (dicts with ``question_id`` and ``items``), best first.

        Questions still open keep their answers and leases. Questions no
        longer suggested are withdrawn (answers to them become ``late``)
        unless they have answers or a worker holds a lease on them younger
        than ``lease_seconds``: that worker's answer is still taken (with 48
        workers and a pool of 50, 3.6% of the answers came late when leased
        questions were withdrawn under them; bench/speed_crowd.py). A
        question kept open, because it has answers (fewer than it needs) or
        a live lease, stays in the pool, after the suggested ones, oldest
        first, so workers can still be handed it, leases count it in flight
        against the budget, and the answers paid for are not wasted. Out of
        the pool it was never leased again until a later pass; one kept for
        its lease held no budget, so the question leased in its place could
        take the last of it and its holders' answers came back ``late``. With
        ``final`` (the session is complete: its budget is used up or nothing
        is left to ask) every open question not in ``questions`` is
        withdrawn, also one with answers: it can never close. A withdrawn
        question suggested again reopens with the answers it had.

        Parameters
        ----------
        sid : str
        questions : list of dict
            The new pool, best first: ``question_id``, ``type``, ``items``
            (row indices) and optionally ``sample`` and ``score``.
        revision : int
            The session revision the pool was computed at (``created_revision``
            of questions opened now).
        lease_seconds : float, default=DEFAULT_LEASE_SECONDS
            Age (s) below which a worker's lease keeps a question open.
        final : bool, default=False
            Withdraw every other open question (see above).

        Returns
        -------
        dict
            question_id -> question document, every question of the session
            as this call left it (the pass reuses this one read of the
            question hash for its closed questions).
        """
        qkey, pkey = self._key(sid, ":questions"), self._key(sid, ":pool")
        existing = decode_record(self.r.hgetall(qkey)) or {}
        keep = {q["question_id"] for q in questions}
        stale = [qid for qid, q in existing.items() if q["status"] == "open" and qid not in keep
                 and (final or q["n_answers"] == 0)]
        if stale:
            withdrawn = self._withdraw_script(keys=[qkey], args=[self._key(sid, ":lease:"),
                                                                 repr(time.time() - lease_seconds),
                                                                 "1" if final else "0", *stale])
            existing.update((q["question_id"], q) for q in map(json.loads, withdrawn))
        # questions no longer suggested that stay open (answers, a live lease, or an answer since the read
        # above: the script withdrew none of those): leasable after the suggested ones
        unfinished = sorted((q for qid, q in existing.items() if q["status"] == "open" and qid not in keep),
                            key=lambda q: (q["created_revision"], q["question_id"]))
        pipe = self.r.pipeline()
        for q in questions:
            old = existing.get(q["question_id"])
            if old is None or old["status"] == "withdrawn":
                doc = {"question_id": q["question_id"], "type": q["type"], "items": q["items"],
                       "status": "open", "n_answers": old["n_answers"] if old else 0, "created_revision": revision,
                       "sample": q.get("sample"), "score": q.get("score")}
                if old and old.get("tie_breakers"):  # it still waits for them (record_answers)
                    doc["tie_breakers"] = old["tie_breakers"]
                pipe.hset(qkey, q["question_id"], json.dumps(doc))
                existing[q["question_id"]] = doc
        pipe.delete(pkey)
        if questions or unfinished:
            pipe.rpush(pkey, *[q["question_id"] for q in questions + unfinished])
        pipe.execute()
        self._touch(sid)
        return existing

    def page_questions(self, sid, *, status=None, page_size=20, page_token=None):
        """Questions of a session with their answers, by question id, cursor-paginated.

        Parameters
        ----------
        sid : str
        status : {"open", "ready", "closed", "withdrawn"} or None
            Keep only questions in this state.
        page_size : int >= 1
        page_token : str or None
            ``next_page_token`` of the previous page (it encodes that page's
            last question id, so questions opened since do not shift pages).

        Returns
        -------
        questions : list of dict
            The question documents (``question_id``, ``type``, ``items``,
            ``status``, ``n_answers``, ``created_revision``, ``tie_breakers``
            (see :meth:`record_answers`), and once closed ``aggregated`` and
            ``model_outcome``; None before), each with
            ``answers``: its recorded answers (``worker_id``,
            ``assignment_id``, ``answer``, ``revision``) in arrival order.
        next_page_token : str or None
            None on the last page.

        Raises
        ------
        ValueError
            A malformed ``page_token`` (the service checks it first: 400).
        """
        after = decode_token(page_token)[1] if page_token else None
        raw = self.r.hgetall(self._key(sid, ":questions"))
        docs = sorted((q for q in map(json.loads, raw.values()) if (status is None or q["status"] == status)
                       and (after is None or q["question_id"] > after)), key=lambda q: q["question_id"])
        page = docs[:page_size]
        for q, given in zip(page, self.answers(sid, [q["question_id"] for q in page])):
            q.setdefault("aggregated", None)
            q.setdefault("model_outcome", None)
            q.setdefault("tie_breakers", 0)
            q["answers"] = [{k: a.get(k) for k in ("worker_id", "assignment_id", "answer", "revision")}
                            for a in given]
        token = encode_token(0, page[-1]["question_id"]) if len(docs) > page_size else None
        return page, token

    def lease(self, sid, count, worker_id, *, answers_per_question=None, lease_seconds=None):
        """Up to ``count`` open questions for a worker, best first, in one atomic step.

        A named worker gets only questions it was never handed, and a question
        only while it still has a free slot: its answers plus the leases other
        workers hold on it (younger than ``lease_seconds`` and not answered yet)
        are fewer than ``answers_per_question`` plus its ``tie_breakers``
        (:meth:`record_answers`). So a crowd spreads over the
        pool instead of all answering its first questions, whose later answers
        would arrive ``late`` (bench/speed_crowd.py: 61-89% of the answers of
        12-48 workers before). A lease not answered within ``lease_seconds``
        frees its slot. Without ``worker_id`` nothing is tracked: every caller
        gets the pool's first open questions. Either way, a question nobody
        holds or has answered is handed out only while the questions committed
        to the model (``budget_committed``) plus those in flight in the pool
        (with answers, or, for named workers, a live lease) are fewer than the
        budget: with one question of budget left a lease of 10 handed out 10,
        and 9 answers came back ``late``.

        Parameters
        ----------
        sid : str
        count : int >= 1
            Most questions to hand out.
        worker_id : str or None
            The worker the questions are leased to; None: untracked.
        answers_per_question : int or None
            The session's; read from its record when None.
        lease_seconds : float or None
            The session's lease length (s); read from its record when None.

        Returns
        -------
        list of dict
            The question documents (``question_id``, ``type``, ``items``, ...).
        """
        qkey, pkey = self._key(sid, ":questions"), self._key(sid, ":pool")
        if answers_per_question is None or lease_seconds is None:
            rec = self.get(sid) or {}
            answers_per_question = answers_per_question or rec.get("answers_per_question", 1)
            lease_seconds = lease_seconds or rec.get("lease_seconds", DEFAULT_LEASE_SECONDS)
        raw = self._lease_script(keys=[qkey, pkey, self._key(sid), self._key(sid, ":ready")],
                                 args=[count, worker_id or "", time.time(), lease_seconds, answers_per_question,
                                       self._key(sid, ":lease:"), self.settings.job_ttl])
        return [json.loads(q) for q in raw]

    def record_answers(self, sid, answers, revision, answers_per_question=None, *, refused=0, request_pass=True):
        """Record a batch of answers and count them, in one atomic step (one round trip).

        The answers, their outcomes, the session's counters and revision and
        the service-wide answer counts of ``GET /metrics`` are written by one
        script (``ANSWERS_LUA``): a request that dies at any point has recorded
        and counted all of its answers or none. Recorded one step each and
        counted at the end, the answers stored before a crash were never
        counted, and the client's retry found them ``duplicate``.

        A question whose informative answers tie once it has
        ``answers_per_question`` of them (as many must_link as cannot_link, or
        yes as no; dont_know and no informative answer at all are not a tie)
        stays open for one more answer: its ``tie_breakers`` (answers asked
        beyond ``answers_per_question``) grows by one and leasing hands it to
        one more worker. It closes at the first answer after which its answers
        no longer tie, or tied after ``answers_per_question`` extra answers. A
        tie closed as it was became "dont_know" under majority vote and still
        used one question of the budget (URASC takes a dont_know as asked);
        the question counts once against the budget whatever its answers.

        Parameters
        ----------
        sid : str
        answers : sequence of dict
            ``question_id``, ``answer``, and optionally ``worker_id`` and
            ``assignment_id`` (None: untracked), in the order given.
        revision : int
            The session's revision when the answers arrived (stored with each).
        answers_per_question : int or None
            The session's; read from its record when None.
        refused : int, default=0
            Answers of the same request rejected before recording (a word
            outside the session's vocabulary): counted as received and
            rejected in the same step.
        request_pass : bool, default=True
            Take the slot or mark a pass pending when one is due (see Notes);
            False: the caller runs the passes itself (tests, tools).

        Returns
        -------
        RecordedAnswers or None
            None if the session does not exist (nothing written). Otherwise
            ``outcomes``, one per answer: ``accepted``, ``accepted:ready``
            (the question now has enough answers, and they do not tie),
            ``duplicate`` (the assignment id answered this question before: a
            retry, nothing recorded), ``late:<reason>`` (question closed or
            withdrawn, or the budget is used up: the model has used or is
            being told ``budget`` questions) or ``rejected:<reason>`` (unknown
            question, an assignment id already used for another question, or a
            worker answering a question it answered before; nothing is
            recorded, so a retry is rejected again); ``revision``, the
            session's revision after the batch (one more than before when an
            answer was accepted); ``enqueue``, the id of the re-clustering task
            the caller must enqueue (:func:`workers.submit.send_session_update`),
            the session's slot being that task's now, or None.

        Notes
        -----
        A pass is due when an answer closed a question, when a duplicate's
        question waits for a pass that has not taken it yet, or when questions
        wait with no pass running or queued. The last two are what a request
        that recorded answers and died before it queued their pass leaves
        behind, so its client's retry queues it. A free slot is taken for a new
        task (``enqueue``); one held marks the next pass pending, as
        :meth:`request_update` does, except a slot whose holder has not started
        (:meth:`claim_update`) while a duplicate's question waits: the dead
        request may have taken it and never enqueued its task, which would hold
        the slot, and the questions, until the slot expires, so the retry's
        task takes it over (a task that was enqueued after all runs nothing,
        :meth:`claim_update` being false for it). A slot taken lists its task
        in :data:`UNSENT_PASSES` in the same step, until the caller sent it
        (:meth:`mark_sent`): a request that died before, and had no retry,
        left the slot held until it expired (``hard_time_limit`` + 60 s), and
        its questions waiting for good when no answer came after that (none
        left to lease); a live worker sends the task now
        (:func:`workers.liveness.dispatch_unsent`).
        """
        if answers_per_question is None:  # the caller has not read the record
            rec = self.get(sid)
            if rec is None:
                return None
            answers_per_question = rec["answers_per_question"]
        now = time.time()
        token = uuid.uuid4().hex if request_pass else ""
        keys = [self._key(sid), self._key(sid, ":questions"), self._key(sid, ":assignments"),
                self._key(sid, ":ready"), self._key(sid, ":answer_log"), stats.SESSIONS, self._key(sid, ":update"),
                self._key(sid, ":update_pending"), self._key(sid, ":update_claimed"), UNSENT_PASSES]
        args = [answers_per_question, self.settings.job_ttl, json.dumps(utcnow_iso(now)), int(refused), token,
                self._slot_ttl(), unsent_pass(sid, token), repr(now)]
        for a in answers:
            qid, worker, assignment = a["question_id"], a.get("worker_id"), a.get("assignment_id")
            given = {"answer": a["answer"], "worker_id": worker, "assignment_id": assignment, "revision": revision,
                     "at": time.time()}  # arrival order (_rebuild_answer_log sorts by it)
            keys += [self._key(sid, f":answers:{qid}"), self._key(sid, f":lease:{qid}")]
            logged = json.dumps({"question_id": qid, **given})
            args += [qid, assignment or "", json.dumps(given), worker or "", logged]
        out = self._answers_script(keys=keys, args=args)
        if out is None:
            return None
        outcomes = [o.decode() if isinstance(o, bytes) else o for o in out[2:]]
        return RecordedAnswers(outcomes, int(out[0]), token if int(out[1]) else None)

    def record_answer(self, sid, qid, answer, worker_id, assignment_id, revision, answers_per_question=None):
        """Record and count one answer: a batch of one (:meth:`record_answers`) requesting no pass.

        For callers that run the passes themselves (tests, tools).

        Parameters
        ----------
        sid, qid : str
            The session and the question answered.
        answer : str
            The answer word (``must_link``, ``cannot_link``, ``dont_know``; or ``yes``, ``no``).
        worker_id, assignment_id : str or None
            None: untracked.
        revision : int
            The session's revision when the answer arrived.
        answers_per_question : int or None
            The session's; read from its record when None.

        Returns
        -------
        str
            Its outcome (see :meth:`record_answers`), or ``rejected:the session was deleted``.
        """
        done = self.record_answers(sid, [{"question_id": qid, "answer": answer, "worker_id": worker_id,
                                          "assignment_id": assignment_id}], revision, answers_per_question,
                                   request_pass=False)
        return "rejected:the session was deleted" if done is None else done.outcomes[0]

    def hold(self, sid, qids, holder):
        """Keep questions ``qids`` open for ``holder`` until they get their answers (or it lets go).

        A lease that never expires (score ``+inf`` in the question's lease
        set): a pass does not withdraw the question (:meth:`replace_pool`;
        only the pass that completes the session does), and leasing counts it
        in flight against the budget. For a platform holding a task of the
        question (:mod:`workers.integrations`), whose annotators come when
        the platform sends them, not within ``lease_seconds``.

        Parameters
        ----------
        sid : str
        qids : list of str
        holder : str
            The holder's id in the lease set (not a worker that answers).
        """
        if not qids:
            return
        pipe = self.r.pipeline()
        for qid in qids:
            pipe.zadd(self._key(sid, f":lease:{qid}"), {holder: float("inf")})
            pipe.expire(self._key(sid, f":lease:{qid}"), self.settings.job_ttl)
        pipe.execute()

    def release(self, sid, qids, holder):
        """Let go of the questions :meth:`hold` kept for ``holder`` (a later pass may withdraw them)."""
        if not qids:
            return
        pipe = self.r.pipeline()
        for qid in qids:
            pipe.zrem(self._key(sid, f":lease:{qid}"), holder)
        pipe.execute()

    def question(self, sid, qid):
        raw = self.r.hget(self._key(sid, ":questions"), qid)
        return json.loads(raw) if raw else None

    def answers(self, sid, qids):
        """The recorded answers (dicts, arrival order) of each question in ``qids``: one list per
        question, read in one round trip."""
        pipe = self.r.pipeline()
        for qid in qids:
            pipe.lrange(self._key(sid, f":answers:{qid}"), 0, -1)
        return [[json.loads(a) for a in raw] for raw in pipe.execute()]

    def answered_constraints(self, sid, rec):
        """The session's known constraints and aggregated answers, as a job's ``constraints``.

        Parameters
        ----------
        sid : str
        rec : dict
            The session's record (``question_type``, ``seeds``).

        Returns
        -------
        constraints : dict
            Pairwise: ``must_link`` and ``cannot_link`` lists of ``[i, j]``;
            triplet: ``triplets`` rows ``[a, b, c, "yes" | "no"]``. The seeds
            first, then every closed question's aggregated answer by question
            id, whatever the model did with it (an answer URASC refused as a
            conflict, or found implied, is an answer all the same); ``dont_know``
            aggregates are left out.
        n_questions : int
            Closed questions whose answers are among them.
        """
        docs = sorted((q for q in map(json.loads, self.r.hvals(self._key(sid, ":questions")))
                       if q["status"] == "closed"), key=lambda q: q["question_id"])
        if rec["question_type"] == "triplet":
            rows = [list(map(int, s[:3])) + [s[3]] for s in rec.get("seeds") or [] if s[3] in ("yes", "no")]
            told = [q for q in docs if q.get("aggregated") in ("yes", "no")]
            return {"triplets": rows + [list(q["items"]) + [q["aggregated"]] for q in told]}, len(told)
        out = {"must_link": [], "cannot_link": []}
        for i, j, a in rec.get("seeds") or []:
            out[a].append([int(i), int(j)])
        told = [q for q in docs if q.get("aggregated") in out]
        for q in told:
            out[q["aggregated"]].append(list(q["items"]))
        return out, len(told)

    def all_answers(self, sid, rec=None):
        """Every recorded answer of the session as (question_id, answer dict), in arrival order.

        One read of the session's answer log: a pass used to read every
        question's answer list, 89 ms of a 0.4 s pass once segment had 1400
        questions (bench/speed_session_pass.py). A session created before the
        log existed (its record has no ``answer_log`` flag) gets its log
        rebuilt first from the per-question lists (:meth:`_rebuild_answer_log`),
        once; without that its earlier answers would be missing.

        Parameters
        ----------
        sid : str
        rec : dict or None
            The session's record when the caller holds it; None reads it.

        Returns
        -------
        list of (str, dict)
            ``(question_id, {answer, worker_id, assignment_id, revision, at})``
            for every accepted answer (late, duplicate and rejected ones are
            not logged); ``at`` in Unix seconds.
        """
        rec = self.get(sid) if rec is None else rec
        if rec is not None and not rec.get("answer_log"):
            self._rebuild_answer_log(sid)
        logged = map(json.loads, self.r.lrange(self._key(sid, ":answer_log"), 0, -1))
        return [(e.pop("question_id"), e) for e in logged]

    def _rebuild_answer_log(self, sid):
        """Write the answer log of a session that predates it, from the per-question answer lists.

        The lists hold every accepted answer, also those that arrived after
        the upgrade (which the answer script appended to a partial log), so
        the log is replaced by all of them ordered by arrival time (``at``),
        and the record is flagged. The questions hash changes with every
        accepted answer, so it is watched: an answer arriving meanwhile makes
        the transaction retry.
        """
        rkey, qkey, lkey = self._key(sid), self._key(sid, ":questions"), self._key(sid, ":answer_log")
        with self.r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(rkey, qkey)
                    if not pipe.exists(rkey):
                        return
                    qids = [q.decode() for q in pipe.hkeys(qkey)]
                    # one round trip on another connection; the WATCH above still guards the write
                    entries = [{"question_id": qid, **a} for qid, given in zip(qids, self.answers(sid, qids))
                               for a in given]
                    entries.sort(key=lambda e: e.get("at", 0))
                    pipe.multi()
                    pipe.delete(lkey)
                    if entries:
                        pipe.rpush(lkey, *map(json.dumps, entries))
                        pipe.expire(lkey, self.settings.job_ttl)
                    pipe.hset(rkey, "answer_log", "true")
                    pipe.execute()
                    return
                except WatchError:
                    continue

    def pop_ready(self, sid):
        """Take the questions with enough answers for a pass, in one atomic step.

        They leave the ready list (answers arriving later queue the next pass)
        for the session's ``:taken`` list, where they stay until the pass
        commits them (:meth:`commit_pass`). A pass whose worker was killed,
        or that failed, before its commit left them there, and the next pass
        takes them again: without this, the questions such a pass took stayed
        ``ready`` forever, their answers never told to the model.

        Returns
        -------
        list of str
            The question ids taken and not yet committed, oldest first.
        """
        ids = self._take_ready_script(keys=[self._key(sid, ":ready"), self._key(sid, ":taken")],
                                      args=[self.settings.job_ttl])
        return [i.decode() if isinstance(i, bytes) else i for i in ids]

    def commit_pass(self, sid, state, closed, deltas, reports=(), token=None):
        """Write what a pass learnt from the questions it took, in one transaction.

        The estimator's state, the closed question documents, the counters and
        the reports are written together with emptying the ``:taken`` list
        (:meth:`pop_ready`), so a pass killed at any point before this either
        wrote none of them (the next pass tells the same questions to the
        state from before) or all of them (nothing is told twice or counted
        twice). A commit whose reply Redis lost (a restart, or a reply later
        than the socket timeout) is run again by redis-py, its WATCH gone:
        the call records a new id of its own (``:committed``) in the same
        transaction, and the retry that finds it writes nothing. It used to
        read the counters the commit had written and add the pass's deltas
        (and reports) a second time.

        Parameters
        ----------
        sid : str
        state : dict
            The estimator's JSON state (:meth:`save_state`).
        closed : list of dict
            Question documents with ``status`` "closed", ``aggregated``,
            ``votes`` and ``model_outcome`` set by the pass (questions waiting
            for the model are not changed by answers, which are late, so
            reading them first and writing them here loses nothing).
        deltas : dict of str to int
            Added to the record's ``counters``.
        reports : sequence of (str, dict)
            ``(kind, item)`` appended to ``disagreements`` or ``conflicts``.
        token : str, optional
            The task running the pass: it commits only while it holds the
            slot (checked in the transaction). None: not checked.

        Returns
        -------
        bool
            False (nothing written) if the session no longer exists.

        Raises
        ------
        PassSuperseded
            If ``token`` no longer holds the slot (nothing written).
        """
        key, ttl, slot = self._key(sid), self.settings.job_ttl, self._key(sid, ":update")
        committed, call = self._key(sid, ":committed"), uuid.uuid4().hex
        blob = dumps(state)

        def tx(pipe):
            if pipe.get(committed) == call.encode():  # this call's commit went through, its reply was lost
                pipe.unwatch()
                return True
            raw = pipe.hget(key, "counters")
            if raw is None:  # deleted meanwhile
                pipe.unwatch()
                return False
            if token is not None and pipe.get(slot) != token.encode():
                pipe.unwatch()
                return None
            counters = json.loads(raw)
            for k, v in deltas.items():
                counters[k] = counters.get(k, 0) + v
            pipe.multi()
            pipe.set(self._key(sid, ":state"), blob, ex=ttl)
            if closed:
                pipe.hset(self._key(sid, ":questions"), mapping={q["question_id"]: json.dumps(q) for q in closed})
            pipe.delete(self._key(sid, ":taken"))
            pipe.hset(key, "counters", json.dumps(counters))
            pipe.set(committed, call, ex=self._slot_ttl())
            for kind, item in reports:
                rkey = self._key(sid, f":{kind}")
                pipe.rpush(rkey, dumps(item))
                pipe.ltrim(rkey, -1000, -1)
                pipe.expire(rkey, ttl)
            return True

        done = self.r.transaction(tx, key, slot, value_from_callable=True)
        if done is None:
            raise PassSuperseded(sid)
        return done

    def holds_update(self, sid, token):
        """Whether task ``token`` holds the session's re-clustering slot.

        Parameters
        ----------
        sid : str
        token : str or None
            The Celery task id; None is not checked (True).

        Returns
        -------
        bool
        """
        return token is None or self.r.get(self._key(sid, ":update")) == token.encode()

    def questions(self, sid, qids):
        """The documents of questions ``qids``, in one read.

        Parameters
        ----------
        sid : str
        qids : list of str or bytes
            Question ids (as stored in the pool list, bytes, or as given).

        Returns
        -------
        list of (dict or None)
            One question document per id, in the order of ``qids``; None
            for an id the session does not have.
        """
        raw = self.r.hmget(self._key(sid, ":questions"), qids) if qids else []
        return [json.loads(q) if q else None for q in raw]

    def add_report(self, sid, kind, item):
        """Append to ``disagreements`` or ``conflicts`` (kept for the session view)."""
        key = self._key(sid, f":{kind}")
        self.r.rpush(key, dumps(item))
        self.r.ltrim(key, -1000, -1)
        self.r.expire(key, self.settings.job_ttl)

    def reports(self, sid, kind, limit=100):
        return [json.loads(x) for x in self.r.lrange(self._key(sid, f":{kind}"), -limit, -1)]

    # ------------------------------------------------------------ coalescing
    # The slot (:update) holds the Celery task id of the one task allowed to run the session's next
    # pass. Each task runs one pass and hands the slot to a task it enqueues when answers came
    # meanwhile, so no task outlives the time limits however long a crowd keeps answering (one task
    # looping over its passes hit the soft limit after 3300 s of answers and failed the session). The
    # slot expires a minute after the hard time limit from the start of its pass (no pass runs
    # longer), so a task whose worker was lost never holds it for good; a redelivered task keeps its
    # id and so its slot.
    def _slot_ttl(self):
        return self.settings.hard_time_limit + 60

    def acquire_update(self, sid, token):
        """Take the session's single re-clustering slot for task ``token``; False if another task holds it.

        ``token`` is a new task id: a slot found already its own was taken by
        this call before its reply was lost (a retry through a Redis outage,
        :func:`workers.tasks.through_outage`), and the caller must still send
        the task.
        """
        key = self._key(sid, ":update")
        return bool(self.r.set(key, token, nx=True, ex=self._slot_ttl())) or self.r.get(key) == token.encode()

    def request_update(self, sid, token):
        """True if the caller must enqueue a re-clustering as task ``token`` (the slot is now its);
        otherwise a pending flag makes the task holding the slot enqueue one more pass, so a session
        has at most one update running and one pending.

        For tests and tools: the service takes the slot in :meth:`create` and :meth:`record_answers`,
        which also list the pass in :data:`UNSENT_PASSES`; this does not, so a caller that dies before
        it sends task ``token`` leaves the slot held until it expires."""
        if self.acquire_update(sid, token):
            return True
        self.r.set(self._key(sid, ":update_pending"), b"1", ex=self._slot_ttl())
        return False

    def claim_update(self, sid, token):
        """Start a pass as task ``token``.

        Parameters
        ----------
        sid : str
        token : str
            The Celery task id.

        Returns
        -------
        bool
            True (and the slot's expiry restarts) if the slot is the task's,
            free, or held as code before 2026-11-27 left it ("running");
            False if another task holds it (that task runs the pass). The
            claim is recorded (``:update_claimed``): a slot whose holder has
            started is never taken over (:meth:`record_answers`).
        """
        return bool(self._slot_script(keys=[self._key(sid, ":update"), self._key(sid, ":update_claimed")],
                                      args=["claim", token, "", self._slot_ttl()]))

    def hand_over_update(self, sid, token, new_token, record=None):
        """Pass the slot from task ``token`` to task ``new_token`` (about to be enqueued).

        Parameters
        ----------
        sid : str
        token, new_token : str
            Celery task ids: the one holding the slot, the next pass's.
        record : (str, str), optional
            ``(hash key, field)`` set to ``new_token`` in the same step: a lost
            worker's running hash (:func:`workers.liveness.recover_worker`), so
            that a new task that could not be sent is handed over again.

        Returns
        -------
        bool
            False (nothing changed) if ``token`` no longer holds the slot.
        """
        keys, args = [self._key(sid, ":update")], ["hand_over", token, new_token, self._slot_ttl()]
        if record is not None:
            keys.append(record[0])
            args.append(record[1])
        return bool(self._slot_script(keys=keys, args=args))

    def list_unsent(self, sid, token):
        """List task ``token``'s pass of session ``sid`` as unsent, from now (before the slot is taken for it).

        For a worker handing its slot on (``workers.session_tasks``): listed
        first, a slot the new task takes is never held unlisted, and should
        the process die before it sends the task (or :meth:`mark_sent`), a
        live worker sends it (:func:`workers.liveness.dispatch_unsent`); a
        slot the caller then does not get leaves the list at that sweep.

        Parameters
        ----------
        sid, token : str
        """
        self.r.zadd(UNSENT_PASSES, {unsent_pass(sid, token): time.time()})

    def mark_sent(self, sid, token):
        """Note that task ``token``, which holds (or held) session ``sid``'s slot, was sent.

        The pass leaves :data:`UNSENT_PASSES`, where :meth:`create` and
        :meth:`record_answers` listed it when they took the slot for it (and
        :meth:`list_unsent` before a worker handed the slot to it).

        Parameters
        ----------
        sid, token : str
        """
        self.store.mark_sent(unsent_pass(sid, token), UNSENT_PASSES)

    def dispatch_unsent(self, member, new_token, listed_before):
        """Hand the slot of a pass whose task was never sent to task ``new_token``, which the caller sends.

        The claim of the caller (:func:`workers.liveness.dispatch_unsent`),
        in one step: ``member`` leaves :data:`UNSENT_PASSES`; if its task
        still holds the slot and never started (:meth:`claim_update`), the
        slot goes to ``new_token`` and the pass of ``new_token`` is listed
        from now, until the caller sends it (:meth:`mark_sent`); should the
        caller not, another live worker's sweep hands it over again once it
        is listed since before that sweep's ``listed_before``. The unsent task,
        should it come after all, runs nothing while the slot is another
        task's (once the slot is free it claims it for one more pass, as any
        task may), so the session never has two passes at once; a pass that started, a slot
        released, handed on or expired, and a session deleted (its slot with
        it) are left alone.

        Parameters
        ----------
        member : str
            ``"{session id}:{task id}"``, as :meth:`workers.store.Store.unsent_since` lists them.
        new_token : str
            A new task id.
        listed_before : float, Unix seconds
            ``member`` must have been listed since before then.

        Returns
        -------
        str or None
            The session id if the slot is ``new_token``'s now (send its
            task), else None (nothing to send).
        """
        sid, _, token = member.partition(":")
        keys = [UNSENT_PASSES, self._key(sid, ":update"), self._key(sid, ":update_claimed")]
        done = self._unsent_script(keys=keys, args=[member, token, unsent_pass(sid, new_token), new_token,
                                                    repr(listed_before), repr(time.time()), self._slot_ttl()])
        return sid if done else None

    def take_pending(self, sid, token=None):
        """Consume the pending flag; True if another pass is needed.

        Parameters
        ----------
        sid : str
        token : str, optional
            A new id for this call, the same when it is tried again
            (:func:`workers.tasks.through_outage`): a retry after Redis lost
            the reply of the call that took the flag answers True again. With
            None (a plain delete) that retry found the flag gone and answered
            False, and the pass the flag asked for was never queued: the
            answers waited unused until more answers came.

        Returns
        -------
        bool
        """
        if token is None:
            return bool(self.r.delete(self._key(sid, ":update_pending")))
        return bool(self._take_pending_script(keys=[self._key(sid, ":update_pending"),
                                                    self._key(sid, ":pending_taken")],
                                              args=[token, self._slot_ttl()]))

    def finish_update(self, sid, token=None):
        """Free the slot if task ``token`` holds it (None: whoever holds it)."""
        if token is None:
            self.r.delete(self._key(sid, ":update"))
        else:
            self._slot_script(keys=[self._key(sid, ":update")], args=["release", token, "", self._slot_ttl()])


def dataset_in_use(store, did, users=None):
    """The unfinished jobs and open sessions that still need dataset ``did``.

    Parameters
    ----------
    store : workers.store.Store
    did : str
    users : list of (str, str) or None
        The dataset's users as :meth:`workers.store.Store.dataset_users` gives
        them (read from the store when None).

    Returns
    -------
    dict
        ``{"jobs": [...], "sessions": [...]}``: ids of jobs QUEUED or RUNNING
        and of sessions INITIALIZING or ACTIVE on the dataset, sorted. Users
        whose records expired or were deleted are dropped from the dataset's
        user set on the way.
    """
    sessions = SessionStore(store)
    busy, gone = {"jobs": [], "sessions": []}, []
    for kind, rid in (store.dataset_users(did) if users is None else users):
        rec = store.get_job(rid) if kind == "job" else sessions.get(rid)
        if rec is None:
            gone.append((kind, rid))
        elif rec["state"] in (UNFINISHED_JOB_STATES if kind == "job" else OPEN_STATES):
            busy[f"{kind}s"].append(rid)
    store.forget_dataset_users(did, gone)
    return busy


def refuse_if_in_use(store, did):
    """A ``guard`` for :meth:`workers.store.Store.delete_dataset` that keeps dataset ``did`` while it is in use.

    Parameters
    ----------
    store : workers.store.Store
    did : str

    Returns
    -------
    callable
        ``guard(users)``: raises :class:`workers.dataset_store.DatasetInUse`
        when :func:`dataset_in_use` finds unfinished jobs or open sessions
        among ``users``.
    """
    def guard(users):
        busy = dataset_in_use(store, did, users)
        if busy["jobs"] or busy["sessions"]:
            raise DatasetInUse(did, busy["jobs"], busy["sessions"])

    return guard
