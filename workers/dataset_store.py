"""Datasets: metadata, labels and users in Redis, the matrix in a shared directory.

A mixin of :class:`workers.store.Store` (key layout: that module's docstring). The
matrix is a content-addressed file (:mod:`workers.matrix_files`); Redis holds which
datasets name each file (``matrix:{key}:datasets``), and a file goes once none
does: on delete (:meth:`DatasetStoreMixin.delete_dataset`) and, for datasets that
expired, in the workers' sweep (:meth:`DatasetStoreMixin.collect_matrices`). A job
or session is created on a dataset inside :meth:`DatasetStoreMixin.on_dataset`, and
a dataset is deleted inside a transaction that watches its user set
(:meth:`DatasetStoreMixin.delete_dataset`), so the two never interleave.
"""

import io
import json
import os
import time
import uuid
from contextlib import contextmanager

import numpy as np

from .config import PREFIX
from .matrix_files import MatrixFiles, matrix_checksum, matrix_key
from .records import decode_record, new_id, utcnow_iso
from .tenancy import count_against, index_key, index_record, owned_by

#: Every matrix key some dataset named when it was stored (the sweep's work list).
MATRICES = f"{PREFIX}matrices"
#: Seconds a matrix's lock holds at most (a put writes or renames its file under it).
LOCK_MS = 120_000
_RELEASE_LUA = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def matrix_users_key(key):
    """The set of dataset ids whose record names matrix ``key``."""
    return f"{PREFIX}matrix:{key}:datasets"


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

    @property
    def matrix_files(self):
        """The :class:`workers.matrix_files.MatrixFiles` under ``settings.data_dir`` (made on first use)."""
        files = self.__dict__.get("_matrix_files")
        if files is None:
            files = self.__dict__["_matrix_files"] = MatrixFiles(self.settings.data_dir)
        return files

    @contextmanager
    def matrix_lock(self, key, wait=True):
        """Hold matrix ``key``'s lock (a put and the sweep of the same file never overlap).

        Yields True when held; with ``wait=False`` yields False at once when another holds it.
        """
        lock, token = f"{PREFIX}matrix:{key}:lock", uuid.uuid4().hex
        deadline = time.monotonic() + LOCK_MS / 1000
        while not self.r.set(lock, token, nx=True, px=LOCK_MS):
            if not wait or time.monotonic() > deadline:
                yield False
                return
            time.sleep(0.02)
        try:
            yield True
        finally:
            self.r.eval(_RELEASE_LUA, 1, lock, token)

    def put_dataset(self, X=None, *, name=None, labels=None, item_ids=None, upload=None, owner=None):
        """Store a validated matrix; returns its metadata dict.

        Parameters
        ----------
        X : ndarray of shape (n, d), finite, or None
            Stored as float64 (a JSON upload); None with ``upload``.
        labels : list of int or str, or None
        item_ids : list of str, or None
        owner : str or None
            The tenant that owns it (:mod:`workers.tenancy`); None without API keys.
        upload : dict or None
            A checked ``.npy`` file in the data directory's ``tmp/``: ``{"path", "checksum",
            "dtype", "shape"}`` (:mod:`service.uploads`); it is moved into place (float32 stays float32).
        """
        if upload is None:
            X = np.ascontiguousarray(X, dtype=np.float64)
            sha, dtype, shape = matrix_checksum(X), X.dtype, X.shape
        else:
            sha, dtype, shape = upload["checksum"], np.dtype(upload["dtype"]), tuple(upload["shape"])
        key = matrix_key(sha, dtype, shape)
        did = new_id("ds")
        now = time.time()
        ttl = self.settings.dataset_ttl
        meta = {
            "id": did,
            "name": name,
            "n_samples": int(shape[0]),
            "n_features": int(shape[1]),
            "has_labels": labels is not None,
            "n_classes": None if labels is None else len(set(labels)),
            "has_item_ids": item_ids is not None,
            "has_items": False,
            "checksum": sha,
            "dtype": dtype.name,
            "matrix": key,
            "created_at": utcnow_iso(now),
            "created_ts": now,
            "expires_at": utcnow_iso(now + ttl) if ttl else None,
            "owner": owner,
        }
        rkey = f"{PREFIX}dataset:{did}"
        files = self.matrix_files
        with self.matrix_lock(key):
            if upload is not None:
                files.adopt(upload["path"], key)
            elif not files.exists(key):
                files.write(X)
            pipe = self.r.pipeline()
            pipe.hset(rkey, mapping={k: json.dumps(v) for k, v in meta.items()})
            index_record(pipe, "datasets", owner, did, now)
            count_against(pipe, owner, "bytes", did, int(shape[0]) * int(shape[1]) * dtype.itemsize)
            pipe.set(f"{rkey}:aux", json.dumps({"labels": labels, "item_ids": item_ids}))
            pipe.sadd(matrix_users_key(key), did)
            pipe.sadd(MATRICES, key)
            if ttl:
                for k in (rkey, f"{rkey}:aux"):
                    pipe.expire(k, ttl)
            pipe.execute()
        return meta

    def set_dataset_aux(self, did, *, labels=None, item_ids=None):
        """Give a dataset its labels and item ids (after a binary upload); False if it is gone.

        The metadata's ``has_labels``, ``n_classes`` and ``has_item_ids`` follow; the caller
        checked lengths and types. Runs in a transaction on the record, so it does not
        bring back a dataset deleted meanwhile.
        """
        rkey = f"{PREFIX}dataset:{did}"

        def tx(pipe):
            if not pipe.exists(rkey):
                pipe.unwatch()
                return False
            ttl = pipe.ttl(rkey)
            pipe.multi()
            pipe.hset(rkey, mapping={"has_labels": json.dumps(labels is not None),
                                     "n_classes": json.dumps(None if labels is None else len(set(labels))),
                                     "has_item_ids": json.dumps(item_ids is not None)})
            pipe.set(f"{rkey}:aux", json.dumps({"labels": labels, "item_ids": item_ids}),
                     ex=ttl if ttl and ttl > 0 else None)
            return True

        return self.r.transaction(tx, rkey, value_from_callable=True)

    def collect_matrices(self):
        """Remove the files no dataset names any more (those of expired datasets); returns their keys.

        A matrix's user set loses the datasets whose records are gone; a file whose set is
        empty is deleted under the matrix's lock (a put of the same content waits for it
        and writes the file anew). Files of ``tmp/`` a day old (writes and single-request
        uploads of processes that died) go too.
        """
        gone = []
        for raw in self.r.smembers(MATRICES):
            key = raw.decode()
            with self.matrix_lock(key, wait=False) as held:
                if held and self._drop_if_unnamed(key):
                    gone.append(key)
        for path in self.matrix_files.stale_temp_files(24 * 3600):  # writes of processes that died
            _unlink(path)
        return gone

    def get_dataset_meta(self, did):
        """The dataset's metadata dict (see :meth:`put_dataset`), or None if unknown or expired."""
        return decode_record(self.r.hgetall(f"{PREFIX}dataset:{did}"))

    def load_dataset(self, did):
        """Returns ``(X, labels, item_ids)`` or None; labels as given (ints or str).

        ``X`` is the matrix file mapped copy-on-write (:meth:`workers.matrix_files.MatrixFiles.open`):
        float64, or float32 for a binary upload that sent float32.
        """
        key = f"{PREFIX}dataset:{did}"
        matrix, aux = self.r.hget(key, "matrix"), self.r.get(f"{key}:aux")
        if aux is None:
            return None
        if matrix is not None:  # a file in the data directory, mapped (workers.matrix_files)
            X = self.matrix_files.open(json.loads(matrix))
        else:  # stored in Redis by an earlier version
            xb = self.r.get(f"{key}:X")
            X = None if xb is None else np.load(io.BytesIO(xb), allow_pickle=False)
        if X is None:
            return None
        aux = json.loads(aux)
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

        The matrix file goes with it unless another dataset names the same content.

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
        freed = []

        def tx(pipe):
            freed.clear()
            if not pipe.exists(key):
                pipe.unwatch()
                return False
            owner = json.loads(pipe.hget(key, "owner") or "null")
            users = sorted(tuple(m.decode().split(":", 1)) for m in pipe.smembers(users_key))
            if guard is not None:
                guard(users)
            keep = self._item_ids_for_sessions(pipe, key, users)
            matrix = pipe.hget(key, "matrix")
            pipe.multi()
            if matrix is not None:
                freed.append(json.loads(matrix))
                pipe.srem(matrix_users_key(freed[-1]), did)
            for session_key, ids in keep:
                pipe.set(session_key, ids, ex=self.settings.job_ttl or None)
            pipe.delete(key, f"{key}:X", f"{key}:aux", f"{key}:items")
            pipe.zrem(index_key("datasets", owner), did)
            ttl = self._users_ttl(0)
            if ttl:
                pipe.expire(users_key, ttl)
            return True

        deleted = self.r.transaction(tx, key, users_key, value_from_callable=True)
        for matrix in freed[-1:] if deleted else ():
            self._free_matrix(matrix)
        return deleted

    def _free_matrix(self, key):
        """Delete matrix ``key``'s file if no dataset names it any more."""
        with self.matrix_lock(key):
            self._drop_if_unnamed(key)

    def _drop_if_unnamed(self, key):
        """Under matrix ``key``'s lock: forget the datasets of its user set whose records are gone, and
        delete the file when none is left. True if it was deleted."""
        users = [m.decode() for m in self.r.smembers(matrix_users_key(key))]
        pipe = self.r.pipeline()
        for did in users:
            pipe.exists(f"{PREFIX}dataset:{did}")
        dead = [did for did, alive in zip(users, pipe.execute()) if not alive]
        if dead:
            self.r.srem(matrix_users_key(key), *dead)
        if len(dead) < len(users):
            return False
        self.r.srem(MATRICES, key)
        self.matrix_files.remove(key)
        return True


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
