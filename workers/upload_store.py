"""Resumable uploads: a record in Redis, the bytes received so far in the data directory.

A mixin of :class:`workers.store.Store`. Layout::

    upload:{id}        hash   content_type, length (or null), created_at, expires_at (JSON values); expires
    upload:{id}:lock   str    held while one request appends to the upload
    {data_dir}/uploads/{id}   the bytes received so far: its size is the upload's offset

An upload whose record expired (``SHOAL_UPLOAD_TTL``) loses its file in the workers' sweep
(:meth:`UploadStoreMixin.collect_uploads`); ``POST /v1/datasets {"upload_id": ...}`` turns a
complete one into a dataset and deletes it.
"""

import json
import os
import time
import uuid

from .config import PREFIX
from .records import decode_record, new_id, utcnow_iso

_RELEASE_LUA = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class UploadStoreMixin:
    """Upload methods of :class:`workers.store.Store` (uses ``r``, ``settings``, ``matrix_files``)."""

    def upload_path(self, uid):
        """The file holding upload ``uid``'s bytes."""
        return os.path.join(self.matrix_files.root, "uploads", uid)

    def create_upload(self, content_type, length=None, owner=None):
        """A new, empty upload; returns its record (``id``, ``content_type``, ``length``, ``offset``, ...).

        ``owner``: the tenant it belongs to (:mod:`workers.tenancy`); None without API keys.
        """
        uid = new_id("up")
        now = time.time()
        ttl = self.settings.upload_ttl
        rec = {"id": uid, "content_type": content_type, "length": length, "created_at": utcnow_iso(now),
               "expires_at": utcnow_iso(now + ttl), "owner": owner}
        self.r.hset(f"{PREFIX}upload:{uid}", mapping={k: json.dumps(v) for k, v in rec.items()})
        self.r.expire(f"{PREFIX}upload:{uid}", ttl)
        os.makedirs(os.path.dirname(self.upload_path(uid)), exist_ok=True)
        open(self.upload_path(uid), "wb").close()
        return {**rec, "offset": 0}

    def get_upload(self, uid):
        """The upload's record with its ``offset`` (bytes received), or None if unknown or expired."""
        rec = decode_record(self.r.hgetall(f"{PREFIX}upload:{uid}"))
        if rec is None:
            return None
        try:
            rec["offset"] = os.path.getsize(self.upload_path(uid))
        except FileNotFoundError:
            return None
        return rec

    def lock_upload(self, uid):
        """Take upload ``uid``'s lock; returns the token to release it with, or None while another holds it."""
        token = uuid.uuid4().hex
        ms = 1000 * max(self.settings.upload_ttl, 1)
        return token if self.r.set(f"{PREFIX}upload:{uid}:lock", token, nx=True, px=ms) else None

    def unlock_upload(self, uid, token):
        self.r.eval(_RELEASE_LUA, 1, f"{PREFIX}upload:{uid}:lock", token)

    def delete_upload(self, uid):
        """Forget upload ``uid`` and delete its file (if still there); False if it was unknown."""
        existed = self.r.delete(f"{PREFIX}upload:{uid}")
        try:
            os.unlink(self.upload_path(uid))
        except FileNotFoundError:
            pass
        return bool(existed)

    def collect_uploads(self, grace=60.0):
        """Delete the files of uploads whose records expired; returns their ids.

        A file younger than ``grace`` seconds is kept (its record is being written).
        """
        base = os.path.join(self.matrix_files.root, "uploads")
        if not os.path.isdir(base):
            return []
        gone = []
        for entry in os.scandir(base):
            try:
                young = time.time() - entry.stat().st_mtime < grace
            except FileNotFoundError:
                continue
            if not young and not self.r.exists(f"{PREFIX}upload:{entry.name}"):
                try:
                    os.unlink(entry.path)
                    gone.append(entry.name)
                except FileNotFoundError:
                    pass
        return gone
