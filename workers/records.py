"""Plain helpers for Shoal's records: ids, timestamps, JSON, page tokens, problem objects.

No Redis here: :mod:`workers.store` and :mod:`workers.session_store` write records
with them, the tasks report errors as :func:`problem` objects, and the service decodes
page tokens with :func:`decode_token`.
"""

import base64
import json
import math
import re
import time
import uuid
from datetime import datetime, timezone

import numpy as np

#: Job states of a job not yet ended (QUEUED or RUNNING).
ACTIVE = ("QUEUED", "RUNNING")


def utcnow_iso(ts=None):
    """ISO 8601 UTC timestamp with millisecond precision and a ``Z`` suffix.

    Parameters
    ----------
    ts : float or None, default=None
        Unix time in seconds; None: now.

    Returns
    -------
    str
        For example ``"2026-11-27T09:21:11.000Z"``.
    """
    dt = datetime.fromtimestamp(ts if ts is not None else time.time(), tz=timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix):
    """A new random record id ``"{prefix}_{32 hex digits}"`` (uuid4), e.g. ``new_id("job")``."""
    return f"{prefix}_{uuid.uuid4().hex}"


_RECORD_ID = re.compile(r"(ds|job|ses|lnk|key|up)_[0-9a-f]{32}")


def is_record_id(value, prefix):
    """Whether ``value`` has the form of an id :func:`new_id` makes with ``prefix``.

    The store builds its Redis keys from ids (``shoal:session:{id}``, ``shoal:dataset:{id}:aux``) and
    a session's delete removes ``shoal:session:{id}:*``: a client's id must be checked to be one of
    these before it names a key, or ``*`` and ``{id}:model`` would name other records' keys.

    Parameters
    ----------
    value : str
    prefix : {"ds", "job", "ses", "lnk", "key", "up"}

    Returns
    -------
    bool
    """
    match = _RECORD_ID.fullmatch(value) if isinstance(value, str) else None
    return match is not None and match.group(1) == prefix


def _finite_json(obj):
    """Replace non-finite floats by None so JSON output never holds NaN/Infinity."""
    if isinstance(obj, float):
        return obj if np.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite_json(v) for v in obj]
    if isinstance(obj, np.generic):
        return _finite_json(obj.item())
    if isinstance(obj, np.ndarray):
        return _finite_json(obj.tolist())
    return obj


def decode_record(raw):
    """A Redis hash of JSON values as a dict.

    Parameters
    ----------
    raw : dict of bytes to bytes
        ``HGETALL``'s reply (bytes field names, JSON-encoded values).

    Returns
    -------
    dict or None
        Field name (str) to decoded value; None when ``raw`` is empty (the key
        does not exist).
    """
    if not raw:
        return None
    return {k.decode(): json.loads(v) for k, v in raw.items()}


def dumps(obj):
    """Compact JSON of ``obj`` with non-finite floats as null (numpy scalars and arrays as plain values).

    Parameters
    ----------
    obj : JSON-able data, possibly holding numpy scalars or arrays

    Returns
    -------
    str
    """
    try:  # plain finite data, the usual case: no walk (0.05 s of a long session's pass on its state)
        return json.dumps(obj, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps(_finite_json(obj), allow_nan=False, separators=(",", ":"))


def encode_token(ts, jid):
    """The page token after record ``jid`` created at Unix time ``ts`` (seconds): URL-safe
    base64 of ``[ts, jid]`` without padding; :func:`decode_token` reads it."""
    return base64.urlsafe_b64encode(json.dumps([ts, jid]).encode()).decode().rstrip("=")


def decode_token(token):
    """``(ts, id)`` from a token of :func:`encode_token` (ts: Unix time in seconds, float).

    Raises
    ------
    ValueError
        The token is malformed (not one this API returned).
    """
    try:
        pad = "=" * (-len(token) % 4)
        ts, jid = json.loads(base64.urlsafe_b64decode(token + pad))
        # what encode_token writes: a finite number and a string. A NaN (JSON's NaN, or "nan" through float())
        # reached Redis as a score range it refuses, a 503 for a request that can never succeed.
        if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts) \
                or not isinstance(jid, str):
            raise ValueError("not [finite number, string]")
        return float(ts), jid
    except Exception as exc:  # noqa: BLE001 - any decoding problem is a bad token
        raise ValueError("page_token is not a token returned by this API") from exc


def job_event(rec):
    """The webhook event of a job's end, as ``shoal.deliver_webhook`` POSTs it.

    Built from the record the end wrote and carried in the task's arguments, so every attempt
    sends it as it was when the job ended, also once the job was deleted (a task that read the
    job when it ran dropped the event of a job deleted before its first attempt or a retry).

    Parameters
    ----------
    rec : dict
        The ended job's record (``id`` and a terminal ``state``).

    Returns
    -------
    dict
        ``{"type": "job.<state>", "job_id", "state", "result_url"}``; ``result_url`` is null unless
        the job SUCCEEDED, as in the job's own view.
    """
    jid, state = rec["id"], rec["state"]
    return {"type": f"job.{state.lower()}", "job_id": jid, "state": state,
            "result_url": f"/v1/jobs/{jid}/result" if state == "SUCCEEDED" else None}


def problem(code, title, status, detail, **extra):
    """An RFC 9457 problem object for job and session errors.

    Parameters
    ----------
    code : str
        Stable machine-readable code (snake_case); also names the ``type`` URI.
    title, detail : str
    status : int
        HTTP status the problem stands for.
    **extra
        Further members (e.g. ``errors``), added as given.

    Returns
    -------
    dict
    """
    body = {"type": f"https://shoal.dev/problems/{code.replace('_', '-')}", "title": title,
            "status": status, "detail": detail, "code": code}
    body.update(extra)
    return body
