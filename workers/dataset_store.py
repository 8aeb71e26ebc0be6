"""Datasets in Redis: the matrix, its metadata, and the jobs and sessions that use it.

A mixin of :class:`workers.store.Store` (key layout: that module's docstring). A job
or session is created on a dataset inside :meth:`DatasetStoreMixin.on_dataset`, and
a dataset is deleted inside a transaction that watches its user set
(:meth:`DatasetStoreMixin.delete_dataset`), so the two never interleave.
"""

import hashlib
import io
import json
import time

import numpy as np

from .config import PREFIX
from .records import decode_record, new_id, utcnow_iso
from .tenancy import count_against, index_key, index_record, owned_by


class DatasetGone(LookupError):
    """The dataset a job or session was being created on no longer exists
    (deleted or expired since the request checked it)."""

    def __init__(self, dataset_id):
        super().__init__(f"dataset {dataset_id!r} does not exist or has expired")
        self.dataset_id = dataset_id


class DatasetInUse(Exception):
    """A dataset still needed by unfinished jobs or open sessions was not deleted
    (:func:`workers.session_store.refuse_if_in_use`).

    Attributes
    ----------
    dataset_id : str
    jobs, sessions : list of str
        Ids of the jobs QUEUED or RUNNING and of the sessions INITIALIZING or
        ACTIVE on it, sorted.
    """

    def __init__(self, dataset_id, jobs, sessions):
        super().__init__(f"dataset {dataset_id!r} is still used by {len(jobs)} unfinished job(s) and "
                         f"{len(sessions)} open session(s)")
        self.dataset_id, self.jobs, self.sessions = dataset_id, jobs, sessions


class DatasetStoreMixin:
    """Dataset methods of :class:`workers.store.Store`; they use its ``r`` (the Redis client),
    ``settings`` (:class:`workers.config.Settings`) and ``page_newest_first``."""

    def put_dataset(self, X, *, name=None, labels=None, item_ids=None, owner=None):
        """Store a validated matrix; returns its metadata dict.

        Parameters
        ----------
        X : ndarray of shape (n, d), float64, finite
        labels : list of int or str, or None
        item_ids : list of str, or None
        owner : str or None
            The tenant that owns it (:mod:`workers.tenancy`); None without API keys.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        did = new_id("ds")
        buf = io.BytesIO()
        np.save(buf, X, allow_pickle=False)
        now = time.time()
        ttl = self.settings.dataset_ttl
        meta = {
            "id": did,
            "name": name,
            "n_samples": int(X.shape[0]),
            "n_features": int(X.shape[1]),
            "has_labels": labels is not None,
            "n_classes": None if labels is None else len(set(labels)),
            "has_item_ids": item_ids is not None,
            "has_items": False,
            "checksum": hashlib.sha256(X.tobytes()).hexdigest(),
            "created_at": utcnow_iso(now),
            "created_ts": now,
            "expires_at": utcnow_iso(now + ttl) if ttl else None,
            "owner": owner,
        }
        key = f"{PREFIX}dataset:{did}"
        pipe = self.r.pipeline()
        pipe.hset(key, mapping={k: json.dumps(v) for k, v in meta.items()})
        index_record(pipe, "datasets", owner, did, now)
        count_against(pipe, owner, "bytes", did, X.nbytes)
        pipe.set(f"{key}:X", buf.getvalue())
        pipe.set(f"{key}:aux", json.dumps({"labels": labels, "item_ids": item_ids}))
        if ttl:
            for k in (key, f"{key}:X", f"{key}:aux"):
                pipe.expire(k, ttl)
        pipe.execute()
        return meta

    def get_dataset_meta(self, did):
        """The dataset's metadata dict (see :meth:`put_dataset`), or None if unknown or expired."""
        return decode_record(self.r.hgetall(f"{PREFIX}dataset:{did}"))

    def load_dataset(self, did):
        """Returns ``(X, labels, item_ids)`` or None; labels as given (ints or str)."""
        key = f"{PREFIX}dataset:{did}"
        xb, aux = self.r.mget(f"{key}:X", f"{key}:aux")
        if xb is None:
            return None
        X = np.load(io.BytesIO(xb), allow_pickle=False)
        aux = json.loads(aux) if aux else {}
        return X, aux.get("labels"), aux.get("item_ids")

    def get_item_ids(self, did):
        """The dataset's item ids (list of str), or None if it has none or is gone."""
        aux = self.r.get(f"{PREFIX}dataset:{did}:aux")
        return json.loads(aux).get("item_ids") if aux else None

    def put_items(self, did, items):
        """Replace the content of a dataset's rows (:mod:`schemas.items`); False if the dataset is gone.

        Parameters
        ----------
        did : str
        items : list of (dict or None)
            One per row, in row order (validated); None rows are stored as nothing.

        Returns
        -------
        bool
            Whether the dataset existed; its metadata's ``has_items`` is set in the same step.
        """
        key = f"{PREFIX}dataset:{did}"
        rows = {str(i): json.dumps(it) for i, it in enumerate(items) if it}

        def tx(pipe):
            if not pipe.exists(key):
                pipe.unwatch()
                return False
            ttl = pipe.ttl(key)
            pipe.multi()
            pipe.delete(f"{key}:items")
            if rows:
                pipe.hset(f"{key}:items", mapping=rows)
                if ttl and ttl > 0:
                    pipe.expire(f"{key}:items", ttl)
            pipe.hset(key, "has_items", json.dumps(bool(rows)))
            return True

        return self.r.transaction(tx, key, value_from_callable=True)

    def get_items(self, did, rows):
        """The content of ``rows`` (ints) of dataset ``did``: one dict or None per row."""
        if not rows:
            return []
        raw = self.r.hmget(f"{PREFIX}dataset:{did}:items", [str(int(i)) for i in rows])
        return [json.loads(v) if v else None for v in raw]

    def list_datasets(self, *, page_size=20, page_token=None, owner=None, enforce=False):
        """Dataset metadata, newest first, cursor-paginated: ``(records, next_page_token)``
        (see :meth:`page_newest_first`); ``owner``'s only (its index), and with ``enforce``
        (API keys on) no record of another owner even if listed there."""
        return self.page_newest_first(index_key("datasets", owner), owned_by(self.get_dataset_meta, owner, enforce),
                                      page_size=page_size, page_token=page_token)

    def on_dataset(self, did, write):
        """Run ``write(pipe)`` in a transaction that commits only while dataset ``did`` exists.

        The dataset's metadata key is watched from the existence check to the
        commit, so a ``DELETE /v1/datasets/{id}`` (which watches the dataset's
        user set, see :meth:`delete_dataset`) and the creation of a job or
        session on it cannot interleave: either the record lands first and the
        delete sees its user, or the delete lands first and this raises.

        Parameters
        ----------
        did : str
        write : callable
            Queues the writes on the pipeline (in MULTI mode); may be called
            again when a concurrent change to the dataset restarts the transaction.

        Raises
        ------
        DatasetGone
            The dataset does not exist (any more).
        """
        key = f"{PREFIX}dataset:{did}"

        def tx(pipe):
            if not pipe.exists(key):
                pipe.unwatch()
                raise DatasetGone(did)
            pipe.multi()
            write(pipe)

        self.r.transaction(tx, key)

    def add_dataset_user(self, pipe, did, kind, rid):
        """Queue on ``pipe`` the note that job or session ``rid`` uses dataset ``did``.

        Parameters
        ----------
        pipe : redis pipeline
            The pipeline that creates the record, so both land together.
        kind : {"job", "session"}
        """
        key = f"{PREFIX}dataset:{did}:users"
        pipe.sadd(key, f"{kind}:{rid}")
        ttl = self._users_ttl(self.settings.dataset_ttl or None)
        if ttl:
            pipe.expire(key, ttl)

    def _users_ttl(self, remaining):
        """Seconds a dataset's user set is kept, or None for no expiry.

        ``remaining`` bounds what is left of the dataset's own life from above
        (``dataset_ttl`` when a record is added; None: it never expires; 0:
        deleted). Its jobs and sessions outlive it by at most
        ``job_ttl`` (a record expires ``job_ttl`` after it finished or was last
        touched, and a dataset is deleted only once none is unfinished or
        open), so the set outlives the dataset by that much and the
        ``?dataset_id=`` listings find every record that is still there.
        """
        if remaining is None or not self.settings.job_ttl:
            return None
        return remaining + self.settings.job_ttl

    def dataset_users(self, did):
        """The jobs and sessions created on dataset ``did``.

        Returns
        -------
        list of (str, str)
            ``(kind, id)`` pairs, kind ``"job"`` or ``"session"``, sorted; records
            that expired or were deleted since are included (see
            :meth:`forget_dataset_users`).
        """
        raw = self.r.smembers(f"{PREFIX}dataset:{did}:users")
        return sorted(tuple(m.decode().split(":", 1)) for m in raw)

    def forget_dataset_users(self, did, users):
        """Drop ``(kind, id)`` pairs whose records are gone from the dataset's user set."""
        if users:
            self.r.srem(f"{PREFIX}dataset:{did}:users", *(f"{k}:{i}" for k, i in users))

    def _item_ids_for_sessions(self, pipe, key, users):
        """``(key, JSON)`` of the item-id copies the sessions of a dataset being deleted keep.

        A session reads its items' ids from its dataset (``GET .../model``, ``.../questions``); its
        model outlives the dataset, and so do the ids that name its labels (a job's result holds its
        own). Each session still there gets ``session:{id}:item_ids`` (``SessionStore.item_ids``
        reads it; the session's delete removes it with its other keys).
        """
        sessions = [sid for kind, sid in users if kind == "session"]
        if not sessions:
            return []
        aux = pipe.get(f"{key}:aux")
        ids = json.loads(aux).get("item_ids") if aux else None
        if ids is None:
            return []
        raw = json.dumps(ids)
        return [(f"{PREFIX}session:{sid}:item_ids", raw) for sid in sessions
                if pipe.exists(f"{PREFIX}session:{sid}")]

    def delete_dataset(self, did, guard=None):
        """Delete the matrix and metadata; False if the dataset did not exist.

        The sessions on it keep a copy of its item ids (:meth:`_item_ids_for_sessions`), written in
        the delete's transaction.

        The user set stays until its records expire (:meth:`_users_ttl`), so
        the ``?dataset_id=`` listings keep finding the finished jobs and closed
        sessions of a deleted dataset.

        Parameters
        ----------
        did : str
        guard : callable or None
            Called with the dataset's users (:meth:`dataset_users`) inside a
            transaction that watches the dataset and its user set; it raises to
            keep the dataset (``DELETE /v1/datasets/{id}`` raises its 409 while
            a job or session still needs it). A job or session created on the
            dataset meanwhile (:meth:`on_dataset`) restarts the transaction, so
            the guard sees it; the guard may run more than once.

        Raises
        ------
        Exception
            Whatever ``guard`` raises; nothing is deleted then.
        """
        key = f"{PREFIX}dataset:{did}"
        users_key = f"{key}:users"

        def tx(pipe):
            if not pipe.exists(key):
                pipe.unwatch()
                return False
            owner = json.loads(pipe.hget(key, "owner") or "null")
            users = sorted(tuple(m.decode().split(":", 1)) for m in pipe.smembers(users_key))
            if guard is not None:
                guard(users)
            keep = self._item_ids_for_sessions(pipe, key, users)
            pipe.multi()
            for session_key, ids in keep:
                pipe.set(session_key, ids, ex=self.settings.job_ttl or None)
            pipe.delete(key, f"{key}:X", f"{key}:aux", f"{key}:items")
            pipe.zrem(index_key("datasets", owner), did)
            ttl = self._users_ttl(0)
            if ttl:
                pipe.expire(users_key, ttl)
            return True

        return self.r.transaction(tx, key, users_key, value_from_callable=True)
