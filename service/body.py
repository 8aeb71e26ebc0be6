"""JSON request bodies nest no deeper than :data:`MAX_JSON_DEPTH`.

Python's JSON decoder recurses once per nested array or object against the
interpreter's recursion limit (1000 frames, part of which the request
itself uses), so a body such as ``"[" * 2000 + "]" * 2000`` would raise
RecursionError inside the parser. The depth is measured on the raw bytes
before anything parses them, and a body nested deeper is a 400.
"""

import re

import numpy as np
from flask import request

from clustering.validation import MAX_HIERARCHY_DEPTH

from .errors import ApiError

# Deepest nesting of arrays and objects in a request body. Leaves room for a
# job's constraints.hierarchy (MAX_HIERARCHY_DEPTH levels inside the body's
# object and its "constraints" object) and stays far below the depth at which
# decoding, encoding or repr() of the body could exhaust the recursion limit.
MAX_JSON_DEPTH = 512
assert MAX_JSON_DEPTH >= MAX_HIERARCHY_DEPTH + 2

_KEEP = b'[]{}"'
_DROP = bytes(sorted(set(range(256)) - set(_KEEP)))
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CHUNK = 1 << 20


def json_depth(raw):
    """Deepest nesting of arrays and objects in a JSON text, without parsing it.

    Parameters
    ----------
    raw : bytes
        The text (UTF-8). Brackets inside strings do not count.

    Returns
    -------
    int
        0 for a scalar, 1 for ``[1, 2]`` or ``{"a": 1}``, 2 for ``[[1]]``, ...
        For malformed text (which the parser rejects anyway) the number is
        only an estimate.

    Notes
    -----
    Escape sequences are removed first (so ``"\\""`` cannot end a string
    early), then every byte but brackets and quotes, then the strings; what
    remains are brackets, whose running balance is the depth. Linear in the
    body, at C speed: about 0.1 s for a 64 MB matrix.
    """
    if b"\\" in raw:
        raw = _ESCAPE.sub(b"", raw)
    reduced = raw.translate(None, _DROP)
    if b'"' in reduced:
        reduced = _STRING.sub(b"", reduced)
    depth = deepest = 0
    for lo in range(0, len(reduced), _CHUNK):  # chunks: a 64 MB body of "[" needs 8 MB at a time, not 512
        brackets = np.frombuffer(reduced, dtype=np.uint8, count=min(_CHUNK, len(reduced) - lo), offset=lo)
        running = depth + np.cumsum(np.where(np.isin(brackets, _OPEN), 1, -1))
        deepest, depth = max(deepest, int(running.max())), int(running[-1])
    return deepest


def check_json_depth():
    """before_request: 400 ``json_too_deep`` for a JSON body nested deeper than :data:`MAX_JSON_DEPTH`.

    Raises
    ------
    ApiError
        400 naming the limit (a job's ``constraints.hierarchy`` has its own,
        :data:`clustering.validation.MAX_HIERARCHY_DEPTH`).
    """
    if request.method not in ("POST", "PUT", "PATCH") or not request.is_json:
        return
    depth = json_depth(request.get_data(cache=True))
    if depth > MAX_JSON_DEPTH:
        raise ApiError(400, "json_too_deep",
                       f"the JSON body nests arrays and objects {depth} levels deep; at most {MAX_JSON_DEPTH} "
                       f"are allowed (a job's constraints.hierarchy at most {MAX_HIERARCHY_DEPTH})")
