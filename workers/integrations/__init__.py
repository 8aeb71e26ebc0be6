"""Connectors from sessions to annotation platforms: their records, secrets and passes.

Redis layout (under the session, so a session's delete takes them along):

- ``shoal:session:{sid}:integrations`` hash: integration id -> record (JSON)
- ``shoal:integration:{iid}`` string: the session id (the webhook finds its session)
- ``shoal:session:{sid}:integration:{iid}:pushed`` set: question ids sent as tasks
- ``shoal:session:{sid}:integration:{iid}:tasks`` hash: question id -> the platform's task id
- ``shoal:session:{sid}:integration:{iid}:changed`` list: annotations edited after their answer was recorded
- ``shoal:session:{sid}:integration:{iid}:annotated:{task id}`` set: the annotation ids a task got
- ``shoal:session:{sid}:integration:{iid}:resent`` hash: question id -> times sent again as a new task

A question sent as a task is held open for the integration (its holder id
:func:`holder` in the question's lease set, :meth:`workers.session_store.SessionStore.hold`)
until it gets its answers: a pass does not withdraw it under the platform's annotators.

A platform token is kept encrypted (Fernet, key ``SHOAL_INTEGRATION_KEY``) or
named by an environment variable ``SHOAL_INTEGRATION_TOKEN_*`` that the
service and workers read; views never show it.
"""

import hmac
import json
import logging
import os
import secrets

from ..config import PREFIX
from ..fernet_keys import check_integration_key  # noqa: F401 - part of this package's interface
from ..fernet_keys import fernet as _fernet
from ..records import new_id, utcnow_iso

log = logging.getLogger(__name__)

TOKEN_ENV_PREFIX = "SHOAL_INTEGRATION_TOKEN_"
PLATFORMS = ("label_studio",)
#: Record fields a view may show (the encrypted token and the webhook secret never).
PUBLIC_FIELDS = ("id", "session_id", "platform", "url", "project_id", "batch_size", "token_source", "webhook_url",
                 "created_at")


def holder(rec):
    """The id under which integration ``rec`` holds the questions it sent (in their lease sets)."""
    return f"integration:{rec['id']}"


class IntegrationError(Exception):
    """The platform refused or could not be reached; the message says what was asked and what came back."""


def encrypt_token(key, token):
    """``token`` encrypted with the Fernet ``key`` (``SHOAL_INTEGRATION_KEY``), as text."""
    return _fernet(key).encrypt(token.encode()).decode()


def platform_token(settings, rec):
    """The platform token of integration ``rec``: decrypted, or read from its environment variable.

    Raises
    ------
    IntegrationError
        The key or variable is missing, or the token does not decrypt with the key.
    """
    if rec.get("token_env"):
        value = os.environ.get(rec["token_env"])
        if not value:
            raise IntegrationError(f"the environment variable {rec['token_env']} is not set")
        return value
    if not settings.integration_key:
        raise IntegrationError("SHOAL_INTEGRATION_KEY is not set: the stored token cannot be decrypted")
    from cryptography.fernet import InvalidToken

    try:
        return _fernet(settings.integration_key).decrypt(rec["token_encrypted"].encode()).decode()
    except InvalidToken as exc:
        raise IntegrationError("the stored token does not decrypt with SHOAL_INTEGRATION_KEY (was it changed?)") \
            from exc


class IntegrationStore:
    """Integration records of sessions (see the module docstring); ``store`` is a :class:`workers.store.Store`."""

    def __init__(self, store):
        self.r, self.settings = store.r, store.settings

    def _key(self, sid, suffix=""):
        return f"{PREFIX}session:{sid}{suffix}"

    def create(self, sid, **fields):
        """Write a new integration record of session ``sid``; returns it (with its ``webhook_secret``)."""
        iid = new_id("int")
        rec = {"id": iid, "session_id": sid, "created_at": utcnow_iso(),
               "webhook_secret": secrets.token_urlsafe(32), **fields}
        ttl = self.r.ttl(self._key(sid))
        pipe = self.r.pipeline()
        pipe.hset(self._key(sid, ":integrations"), iid, json.dumps(rec))
        pipe.set(f"{PREFIX}integration:{iid}", sid)
        if ttl and ttl > 0:
            pipe.expire(self._key(sid, ":integrations"), ttl)
            pipe.expire(f"{PREFIX}integration:{iid}", ttl)
        pipe.execute()
        return rec

    def update(self, rec):
        self.r.hset(self._key(rec["session_id"], ":integrations"), rec["id"], json.dumps(rec))

    def of_session(self, sid):
        return [json.loads(v) for _, v in sorted(self.r.hgetall(self._key(sid, ":integrations")).items())]

    def get(self, iid):
        sid = self.r.get(f"{PREFIX}integration:{iid}")
        if sid is None:
            return None
        raw = self.r.hget(self._key(sid.decode() if isinstance(sid, bytes) else sid, ":integrations"), iid)
        return json.loads(raw) if raw else None

    def delete(self, sid, iid):
        pipe = self.r.pipeline()
        pipe.hdel(self._key(sid, ":integrations"), iid)
        pipe.delete(f"{PREFIX}integration:{iid}", self._key(sid, f":integration:{iid}:pushed"),
                    self._key(sid, f":integration:{iid}:changed"), self._key(sid, f":integration:{iid}:tasks"),
                    self._key(sid, f":integration:{iid}:resent"))
        done = bool(pipe.execute()[0])
        literal = "".join("\\" + c if c in "*?[]\\" else c for c in f"{sid}:integration:{iid}")
        keys = list(self.r.scan_iter(match=f"{PREFIX}session:{literal}:annotated:*", count=1000))
        if keys:
            self.r.delete(*keys)
        return done

    def mark_pushed(self, rec, qids):
        """Add ``qids`` to the questions sent; returns those not sent before (in the order given)."""
        key = self._key(rec["session_id"], f":integration:{rec['id']}:pushed")
        pipe = self.r.pipeline()
        for q in qids:
            pipe.sadd(key, q)
        return [q for q, added in zip(qids, pipe.execute()) if added]

    def unmark_pushed(self, rec, qids):
        if qids:
            self.r.srem(self._key(rec["session_id"], f":integration:{rec['id']}:pushed"), *qids)

    def pushed(self, rec):
        """The question ids sent as tasks (and not taken back)."""
        raw = self.r.smembers(self._key(rec["session_id"], f":integration:{rec['id']}:pushed"))
        return {x.decode() if isinstance(x, bytes) else x for x in raw}

    def set_task_ids(self, rec, mapping):
        """Remember the platform's task id of each question sent (``{question_id: task_id}``)."""
        if mapping:
            self.r.hset(self._key(rec["session_id"], f":integration:{rec['id']}:tasks"),
                        mapping={q: str(t) for q, t in mapping.items()})

    def pop_task_ids(self, rec, qids):
        """The platform's task ids of ``qids`` (None where unknown), forgotten in the same step."""
        key = self._key(rec["session_id"], f":integration:{rec['id']}:tasks")
        pipe = self.r.pipeline()
        pipe.hmget(key, list(qids))
        pipe.hdel(key, *qids)
        return [int(t) if t is not None else None for t in pipe.execute()[0]]

    def task_ids(self, rec, qids):
        """The platform's task id (the latest sent) of each of ``qids``, None where unknown."""
        if not qids:
            return []
        raw = self.r.hmget(self._key(rec["session_id"], f":integration:{rec['id']}:tasks"), list(qids))
        return [int(t) if t is not None else None for t in raw]

    def add_annotation(self, rec, task_id, annotation_id):
        """Note that task ``task_id`` got annotation ``annotation_id``; returns how many distinct ones it has."""
        key = self._key(rec["session_id"], f":integration:{rec['id']}:annotated:{int(task_id)}")
        pipe = self.r.pipeline()
        pipe.sadd(key, str(annotation_id))
        pipe.scard(key)
        pipe.expire(key, self.settings.job_ttl)
        return int(pipe.execute()[1])

    def annotation_counts(self, rec, task_ids):
        """How many distinct annotations each task of ``task_ids`` got (0 for None)."""
        pipe = self.r.pipeline()
        for t in task_ids:
            pipe.scard(self._key(rec["session_id"], f":integration:{rec['id']}:annotated:{int(t or 0)}"))
        return [int(n) if t is not None else 0 for t, n in zip(task_ids, pipe.execute())] if task_ids else []

    def count_resent(self, rec, qids):
        """Count one more sending again of each of ``qids``; returns the new counts."""
        key = self._key(rec["session_id"], f":integration:{rec['id']}:resent")
        pipe = self.r.pipeline()
        for q in qids:
            pipe.hincrby(key, q, 1)
        pipe.expire(key, self.settings.job_ttl)
        return pipe.execute()[:-1] if qids else []

    def resent(self, rec, qids):
        """How many times each of ``qids`` was sent again (0 if never)."""
        if not qids:
            return []
        raw = self.r.hmget(self._key(rec["session_id"], f":integration:{rec['id']}:resent"), list(qids))
        return [int(x or 0) for x in raw]

    def pushed_count(self, rec):
        return self.r.scard(self._key(rec["session_id"], f":integration:{rec['id']}:pushed"))

    def add_changed(self, rec, item):
        """Note an annotation edited after its answer was recorded (kept: the last 1000)."""
        key = self._key(rec["session_id"], f":integration:{rec['id']}:changed")
        pipe = self.r.pipeline()
        pipe.rpush(key, json.dumps(item))
        pipe.ltrim(key, -1000, -1)
        pipe.execute()

    def changed(self, rec):
        return [json.loads(x) for x in self.r.lrange(self._key(rec["session_id"],
                                                                f":integration:{rec['id']}:changed"), 0, -1)]


def secret_ok(rec, given):
    """Whether ``given`` is integration ``rec``'s webhook secret (constant-time)."""
    return bool(given) and hmac.compare_digest(given.encode(), rec["webhook_secret"].encode())


def public_view(rec):
    """What the API shows of an integration: never its token or webhook secret."""
    return {k: rec.get(k) for k in PUBLIC_FIELDS}
