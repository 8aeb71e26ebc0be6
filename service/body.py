"""JSON request bodies nest no deeper than :data:`MAX_JSON_DEPTH` and hold only Unicode text.

Python's JSON decoder recurses once per nested array or object against the
interpreter's recursion limit (1000 frames, part of which the request
itself uses), so a body such as ``"[" * 2000 + "]" * 2000`` would raise
RecursionError inside the parser. The depth is measured on the raw bytes
before anything parses them, and a body nested deeper is a 400.

JSON may escape a lone UTF-16 surrogate (``"\\ud800"``); Python decodes it
to a string that is not Unicode text and that nothing downstream can encode
(Redis took such a ``worker_id`` with a 500). :func:`check_unicode` refuses
it with a 422 naming the field.
"""

import io
import json
import re
import sys

import numpy as np
from flask import current_app, request

from clustering.validation import MAX_HIERARCHY_DEPTH

from .errors import ApiError, pointer_token

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
# \u escapes in the surrogate range D800-DFFF (the quick test)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# once each escaped backslash is replaced by a byte that is no backslash, every backslash left starts an
# escape: a high surrogate escape not followed by a low one, or a low one not preceded by a high one
_LONE_SURROGATE_ESCAPE = re.compile(
    rb"\\u[dD](?:[89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD])[c-fC-F][0-9a-fA-F]{2})")
# a surrogate written as UTF-8 bytes (ED A0-BF xx), which Python's JSON decoder takes with "surrogatepass"
_ENCODED_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
_CHUNK = 1 << 20


def codings(header_value):
    """The codings a ``Content-Encoding`` or ``Transfer-Encoding`` value lists, lower-case (``[]`` for none)."""
    return [c.strip().lower() for c in (header_value or "").split(",") if c.strip()]


def _json_body():
    """The raw body of a POST, PUT or PATCH sent as JSON (what the checks below scan), else None."""
    if request.method not in ("POST", "PUT", "PATCH") or not request.is_json:
        return None
    return request.get_data(cache=True)


def size_chunked_body():
    """before_request: a body sent without ``Content-Length`` (``Transfer-Encoding: chunked``) becomes a sized one.

    Werkzeug reads a body of unknown length up to ``MAX_CONTENT_LENGTH`` and stops there without an
    error, so a chunked body over the limit was parsed cut short (a 400 "Invalid JSON body", not the
    413 a sized one gets), and the checks that look at ``request.content_length`` (the 415 for a body
    that is not JSON) passed it over as no body at all. The body is read here, at most
    ``MAX_CONTENT_LENGTH + 1`` bytes, and the request carries it with its ``Content-Length`` from then
    on: over the limit, the first read of the body is the usual 413 ``too_large``. Registered after the
    API-key check, so an unauthorised body is still not read.

    Raises
    ------
    ApiError
        501 ``transfer_coding_not_implemented`` for a transfer coding other than chunked (gzip,
        deflate, compress: gunicorn passes the body on still coded; RFC 9112 6.1); 400
        ``bad_request`` for a chunked body the server cannot read (a malformed chunk, or cut off:
        gunicorn raises while the body is read, which was a 500).
    """
    from .uploads import binary_request

    environ = request.environ
    transfer = codings(environ.get("HTTP_TRANSFER_ENCODING"))
    if any(c not in ("chunked", "identity") for c in transfer):  # gunicorn takes gzip etc. but decodes none of them
        raise ApiError(501, "transfer_coding_not_implemented",
                       f"the body's transfer coding {', '.join(transfer)} is not implemented: send it chunked "
                       "or with Content-Length, uncompressed")
    if environ.get("CONTENT_LENGTH") or "chunked" not in transfer or binary_request():
        return  # a binary upload streams its body itself (service.uploads), up to SHOAL_MAX_UPLOAD_BYTES
    limit = current_app.config.get("MAX_CONTENT_LENGTH")
    stream, parts, size = environ["wsgi.input"], [], 0
    try:
        while limit is None or size <= limit:
            part = stream.read(_CHUNK if limit is None else min(_CHUNK, limit + 1 - size))
            if not part:
                break
            parts.append(part)
            size += len(part)
    except Exception as exc:  # noqa: BLE001 - the server's own errors: gunicorn's InvalidChunkSize, NoMoreData ...
        raise ApiError(400, "bad_request", "the chunked request body is malformed or was cut off "
                       f"({type(exc).__name__})") from exc
    environ["wsgi.input"] = io.BytesIO(b"".join(parts))
    environ["CONTENT_LENGTH"] = str(size)
    del environ["HTTP_TRANSFER_ENCODING"]
    for cached in ("content_length", "stream"):  # werkzeug's cached properties, if read before this hook
        request.__dict__.pop(cached, None)


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
    raw = _json_body()
    if raw is None:
        return
    depth = json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise ApiError(400, "json_too_deep",
                       f"the JSON body nests arrays and objects {depth} levels deep; at most {MAX_JSON_DEPTH} "
                       f"are allowed (a job's constraints.hierarchy at most {MAX_HIERARCHY_DEPTH})")


def has_lone_surrogate(raw):
    """Whether a JSON text escapes a UTF-16 surrogate that is not half of a pair.

    Parameters
    ----------
    raw : bytes
        The text (UTF-8).

    Returns
    -------
    bool
        True for ``"\\ud800"`` or ``"\\udc00x"``, and for a surrogate
        written as UTF-8 bytes (``ED A0 80``); False for a pair such as
        ``"\\ud83d\\ude00"`` and for an escaped backslash followed by
        ``ud800``. Linear, and C-speed searches only (a 64 MB body of escapes
        takes a fraction of a second, as parsing it does).
    """
    if _ENCODED_SURROGATE.search(raw):  # not UTF-8 at all, but Python's JSON decoder lets it through
        return True
    if not _SURROGATE_ESCAPE.search(raw):
        return False
    # each escaped backslash (\\) -> "_": a backslash run keeps its parity (an odd one ends in an escape);
    # dropping them instead would join escapes that were apart (\ud800\\\udc00: lone high, "\", lone low)
    return _LONE_SURROGATE_ESCAPE.search(raw.replace(b"\\\\", b"_")) is not None


#: Types of JSON values that are always Unicode text: numbers, booleans, null.
_SCALARS = frozenset({int, float, bool, type(None)})


def _may_hold_non_text(value):
    """False if ``value`` surely holds no string that is not Unicode text (C-speed checks only)."""
    if isinstance(value, str):
        return not value.isascii()
    if isinstance(value, list):
        return not _SCALARS.issuperset(map(type, value))
    return isinstance(value, dict)


def _is_not_text(value):
    """Whether ``value`` is a string that UTF-8 cannot encode (it holds a lone surrogate)."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _first_pointer(value, match, visit=None):
    """JSON pointer of the first value or object key, depth first in document order, that ``match``es.

    Parameters
    ----------
    value : object
        A parsed JSON document.
    match : callable
        ``match(node) -> bool``, asked of every value visited and of every object key.
    visit : callable, optional
        ``visit(child) -> bool``: False passes over a child and all it holds (a data
        matrix of numbers need not cost a Python step per cell). Default: visit all.

    Returns
    -------
    str or None
        An RFC 6901 pointer (``"/"`` for the document itself), or None.
    """
    stack = [(value, "")]
    while stack:
        node, ptr = stack.pop()
        if match(node):
            return ptr or "/"
        if isinstance(node, dict):
            children = []
            for k, v in node.items():
                child = f"{ptr}/{pointer_token(k)}"
                if match(k):
                    return child
                if visit is None or visit(v):
                    children.append((v, child))
            stack.extend(reversed(children))
        elif isinstance(node, list):
            kept = range(len(node)) if visit is None else [i for i, v in enumerate(node) if visit(v)]
            stack.extend((node[i], f"{ptr}/{i}") for i in reversed(kept))
    return None


def _first_non_text(value):
    """JSON pointer of the first string (or object key) that is not Unicode text, or None.

    A body can hold a 64 MiB data matrix: only values that may hold such a
    string are visited (an ASCII string, or an array of numbers, is passed
    over at C speed), so the walk costs a fraction of the parse.
    """
    return _first_pointer(value, _is_not_text, _may_hold_non_text)


def check_unicode():
    """before_request: 422 ``invalid_unicode`` for a JSON body with a string that is not Unicode text.

    Raises
    ------
    ApiError
        422 whose ``errors`` points at the first such string (or object key).
    """
    raw = _json_body()
    if raw is None or not has_lone_surrogate(raw):
        return
    body = request.get_json(silent=True)
    pointer = _first_non_text(body) if body is not None else None
    if pointer is None:  # unparseable, or the escape sat where the parser drops it: the view reports
        return
    message = "holds a lone UTF-16 surrogate escape (such as \\ud800 without its pair): not Unicode text"
    raise ApiError(422, "invalid_unicode", f"{pointer} {message}", errors={pointer: [message]})


class _LongInteger:
    """Stands for an integer literal too long for Python to convert (see :func:`check_long_integers`)."""


_LONG_INTEGER = _LongInteger()


def check_long_integers():
    """before_request: 422 for an integer literal longer than Python converts (``sys.get_int_max_str_digits()``).

    Python's JSON decoder raises a bare ``ValueError`` ("Exceeds the limit (4300 digits) for integer
    string conversion") on such a literal, which the argument parser does not take for a decoding
    error: every JSON endpoint answered 500. The limit itself guards against quadratic-time
    conversions and stays. No field takes a number that long, so the literal is refused where it
    stands, as other numbers out of range are. Only a body holding such a run of digits (a C-speed
    search) is decoded here.

    Raises
    ------
    ApiError
        422 ``invalid_input`` whose ``errors`` points at the first such integer.
    """
    raw = _json_body()
    if raw is None:
        return
    limit = sys.get_int_max_str_digits()
    # a run is only tried from its first digit: [0-9]{n} alone is tried from every digit of every run,
    # quadratic in a run's length (a 64 MiB body of 4300-digit integers took 130 s of CPU to search)
    if not limit or not re.search(rb"(?<![0-9])[0-9]{%d}" % (limit + 1), raw):
        return
    try:
        body = json.loads(raw, parse_int=lambda s: _LONG_INTEGER if len(s.lstrip("-")) > limit else int(s))
    except ValueError:  # not JSON: the parser's 400
        return
    pointer = _first_pointer(body, lambda v: v is _LONG_INTEGER)
    if pointer is None:  # the digits were inside a string
        return
    message = f"is an integer of more than {limit} digits: far outside the range of any field"
    raise ApiError(422, "invalid_input", f"{pointer} {message}", errors={pointer: [message]})
