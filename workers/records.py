"""Plain helpers for Shoal's records: ids, timestamps, JSON, page tokens, problem objects.

No Redis here: :mod:`workers.store` and :mod:`workers.session_store` write records
with them, the tasks report errors as :func:`problem` objects, and the service decodes
page tokens with :func:`decode_token`.
"""

import base64
import json
import time
import uuid
from datetime import datetime, timezone

import numpy as np


def utcnow_iso(ts=None):
    """ISO 8601 UTC timestamp with a ``Z`` suffix."""
    dt = datetime.fromtimestamp(ts if ts is not None else time.time(), tz=timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix):
    return f"{prefix}_{uuid.uuid4().hex}"


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
    """A Redis hash of JSON values (``HGETALL`` with bytes keys) as a dict; None when it is empty
    (the key does not exist)."""
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
    return base64.urlsafe_b64encode(json.dumps([ts, jid]).encode()).decode().rstrip("=")


def decode_token(token):
    """Raises ValueError for a malformed token."""
    try:
        pad = "=" * (-len(token) % 4)
        ts, jid = json.loads(base64.urlsafe_b64decode(token + pad))
        return float(ts), str(jid)
    except Exception as exc:  # noqa: BLE001 - any decoding problem is a bad token
        raise ValueError("page_token is not a token returned by this API") from exc


def problem(code, title, status, detail, **extra):
    """An RFC 9457 problem object (dict) for job errors."""
    body = {"type": f"https://shoal.dev/problems/{code.replace('_', '-')}", "title": title,
            "status": status, "detail": detail, "code": code}
    body.update(extra)
    return body
