"""Annotator links, gold questions and per-worker tallies of a session, in Redis.

Keys (all under the session's, so ``DELETE /v1/sessions/{id}`` removes them, and with its TTL):

- ``shoal:session:{sid}:links`` hash link id -> JSON record (worker, expiry, quota, revoked_at, ...)
- ``shoal:session:{sid}:gold`` JSON list of gold questions (``items``, ``answer``)
- ``shoal:session:{sid}:wstat:{name}`` hashes worker -> integer: ``answers``, ``ms`` (time spent
  answering), ``gold_answered``, ``gold_correct``, ``served`` (questions shown), ``gold_served``
  (gold questions shown: the next one shown is the one after them)
- ``shoal:session:{sid}:counted`` hash assignment id -> milliseconds the worker took on that
  question: an answer retried with the same assignment id is tallied once
- ``shoal:annotator_secret``: the signing secret when ``SHOAL_ANNOTATOR_SECRET`` is unset (made once,
  shared by every web process)

Gold answers are scored here and never reach the session's answers: the model is told each
gold pair at most through the session's own questions, never through gold.
"""

import json
import secrets
import time

from .config import PREFIX
from .records import new_id, utcnow_iso

SECRET_KEY = f"{PREFIX}annotator_secret"
STATS = ("answers", "ms", "gold_answered", "gold_correct", "served", "gold_served")


class AnnotatorStore:
    """Links, gold and tallies of sessions (see the module docstring); ``store`` is a :class:`workers.store.Store`."""

    def __init__(self, store):
        self.r = store.r
        self.ttl = store.settings.job_ttl or None

    def _key(self, sid, suffix):
        return f"{PREFIX}session:{sid}:{suffix}"

    def secret(self, configured=""):
        """The signing secret: ``configured`` when given, else one random secret kept in Redis."""
        if configured:
            return configured
        self.r.set(SECRET_KEY, secrets.token_urlsafe(32), nx=True)
        return self.r.get(SECRET_KEY).decode()

    # ------------------------------------------------------------------ links
    def create_link(self, sid, *, worker_id, expires_in, quota, completion_url, instructions):
        """Store a new link record.

        Parameters
        ----------
        sid : str
        worker_id : str or None
            None: a study link, the worker named by the page's URL.
        expires_in : int
            Seconds from now the link works.
        quota : int or None
            Answers per worker.
        completion_url, instructions : str or None

        Returns
        -------
        dict
            The record: ``id`` (``lnk_...``), ``session_id``, ``worker_id``, ``created_at``,
            ``expires_at`` and ``expires_ts`` (epoch seconds), ``quota``, ``completion_url``,
            ``instructions``, ``revoked_at`` (None).
        """
        now = time.time()
        rec = {"id": new_id("lnk"), "session_id": sid, "worker_id": worker_id, "created_at": utcnow_iso(now),
               "expires_ts": now + expires_in, "expires_at": utcnow_iso(now + expires_in), "quota": quota,
               "completion_url": completion_url, "instructions": instructions, "revoked_at": None}
        key = self._key(sid, "links")
        pipe = self.r.pipeline()
        pipe.hset(key, rec["id"], json.dumps(rec))
        if self.ttl:
            pipe.expire(key, self.ttl)
        pipe.execute()
        return rec

    def links(self, sid):
        """Every link record of the session, oldest first."""
        recs = [json.loads(v) for v in self.r.hvals(self._key(sid, "links"))]
        return sorted(recs, key=lambda r: r["created_at"])

    def link(self, sid, link_id):
        raw = self.r.hget(self._key(sid, "links"), link_id)
        return json.loads(raw) if raw else None

    def revoke(self, sid, link_id):
        """Mark a link revoked (idempotent); its record, or None if unknown."""
        rec = self.link(sid, link_id)
        if rec is not None and not rec["revoked_at"]:
            rec["revoked_at"] = utcnow_iso()
            self.r.hset(self._key(sid, "links"), link_id, json.dumps(rec))
        return rec

    # ------------------------------------------------------------------- gold
    def set_gold(self, sid, gold):
        """Replace the session's gold: ``{"every": n, "questions": [{"items", "answer"}, ...]}``."""
        self.r.set(self._key(sid, "gold"), json.dumps(gold), ex=self.ttl)

    def gold(self, sid):
        """The session's gold (see :meth:`set_gold`); no questions when none was set."""
        raw = self.r.get(self._key(sid, "gold"))
        return json.loads(raw) if raw else {"every": 0, "questions": []}

    # ---------------------------------------------------------------- tallies
    def tally(self, sid, worker, entries):
        """Count a worker's answers once per assignment id.

        Parameters
        ----------
        sid, worker : str
        entries : list of dict
            ``assignment_id``, ``ms`` (time from showing the question to the answer, ms) and, for a
            gold question, ``gold_correct`` (bool).

        Returns
        -------
        int
            How many entries were new (not tallied before under their assignment id).
        """
        if not entries:
            return 0
        counted = self._key(sid, "counted")
        pipe = self.r.pipeline()
        for e in entries:
            pipe.hsetnx(counted, e["assignment_id"], int(e["ms"]))  # the answer's own time, kept
        fresh = [e for e, new in zip(entries, pipe.execute()) if new]
        pipe = self.r.pipeline()
        for e in fresh:
            pipe.hincrby(self._key(sid, "wstat:answers"), worker, 1)
            pipe.hincrby(self._key(sid, "wstat:ms"), worker, int(e["ms"]))
            if "gold_correct" in e:
                pipe.hincrby(self._key(sid, "wstat:gold_answered"), worker, 1)
                pipe.hincrby(self._key(sid, "wstat:gold_correct"), worker, int(bool(e["gold_correct"])))
        if self.ttl:
            for name in ("counted",) + tuple(f"wstat:{s}" for s in STATS):
                pipe.expire(self._key(sid, name), self.ttl)
        pipe.execute()
        return len(fresh)

    def count_served(self, sid, worker, gold=False):
        """Count one question shown to ``worker`` (gold comes first, then every ``every``-th);
        ``gold``: it was a gold question."""
        pipe = self.r.pipeline()
        for name in ("served", "gold_served") if gold else ("served",):
            pipe.hincrby(self._key(sid, f"wstat:{name}"), worker, 1)
            if self.ttl:
                pipe.expire(self._key(sid, f"wstat:{name}"), self.ttl)
        pipe.execute()

    def stats(self, sid, worker=None):
        """``{worker: {answers, ms, gold_answered, gold_correct, served, gold_served}}`` (one worker's dict
        when ``worker`` is given)."""
        pipe = self.r.pipeline()
        for s in STATS:
            if worker is None:
                pipe.hgetall(self._key(sid, f"wstat:{s}"))
            else:
                pipe.hget(self._key(sid, f"wstat:{s}"), worker)
        raw = pipe.execute()
        if worker is not None:
            return {s: int(v or 0) for s, v in zip(STATS, raw)}
        out = {}
        for s, table in zip(STATS, raw):
            for w, v in table.items():
                out.setdefault(w.decode(), dict.fromkeys(STATS, 0))[s] = int(v)
        return out
