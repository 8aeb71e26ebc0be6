"""Binary dataset bodies: a request streamed to a file, then checked (``.npy``) or converted (Parquet, Arrow).

Nothing here holds the whole matrix in memory: a body is copied to a file of the data directory's
``tmp/`` in 1 MiB pieces (:func:`receive`), a ``.npy`` file is checked in slices of about 16 MiB
and becomes the matrix file as it is (:func:`check_npy`), and a table is read one record batch at a
time into a new ``.npy`` file (:func:`table_to_npy`). The size limits of a JSON upload
(``SHOAL_MAX_ROWS``, ``SHOAL_MAX_FEATURES``, ``SHOAL_MAX_CELLS``; :func:`check_limits`) bound them too,
from a ``.npy`` header or a Parquet footer before any row is read. Each problem is the 4xx the JSON upload gives
for the same fault, at the same pointer (``/data``, ``/labels``, ``/item_ids``).
"""

import hashlib
import io
import os
import struct
from collections import namedtuple

import numpy as np

from clustering.validation import MAX_ABS_VALUE
from schemas.items import MAX_TEXT, clean_item

from .errors import ApiError

NPY = "application/x-npy"
PARQUET = "application/vnd.apache.parquet"
ARROW_STREAM = "application/vnd.apache.arrow.stream"
#: Column names of a table that are not features.
LABEL, ITEM_ID, TEXT = "label", "item_id", "text"
PIECE = 1 << 20
SLICE = 1 << 24
_DTYPES = (np.dtype("<f4"), np.dtype("<f8"))
HEADER_BYTES = 128
#: Longest ``.npy`` header read (numpy's ``max_header_size``).
HEADER_LIMIT = 10_000
#: Rows of a Parquet file read at a time (a few MiB of embeddings).
BATCH_ROWS = 4096


def _invalid(pointer, message, status=422, code="invalid_input"):
    return ApiError(status, code, f"{pointer[1:]}: {message}", errors={pointer: [message]})


def too_large(limit):
    """The 413 of a binary body past ``SHOAL_MAX_UPLOAD_BYTES``."""
    return ApiError(413, "too_large", f"the body is larger than {limit} bytes (SHOAL_MAX_UPLOAD_BYTES)",
                    errors={"/": [f"at most {limit} bytes"]})


def receive(stream, out, limit, length=None, already=0, first=None):
    """Copy a request body to an open file in :data:`PIECE` pieces; returns the bytes copied.

    Parameters
    ----------
    stream : file-like
        The WSGI input (``read(n)``, ``b""`` at its end).
    out : binary file, open for writing at the right place
    limit : int
        Bytes the file may hold in all (``already`` included).
    length : int or None
        The body's ``Content-Length``; None for a chunked body (read to its end).
    already : int
        Bytes the file held before.
    first : callable or None
        ``first(stream)`` reads the body's first bytes, returns them and may raise to refuse the body
        from its header before the rest is read (:func:`npy_header_check`).

    Raises
    ------
    ApiError
        413 past ``limit`` (checked against ``Content-Length`` first, when there is one).
        A body cut off mid-way (the client went away) ends the copy early: what arrived stays in
        the file, and the caller compares the count with ``length``.
    """
    if length is not None and already + length > limit:
        raise too_large(limit)
    got = 0
    if first is not None:
        try:
            head = first(stream)
        except ApiError:
            raise
        except Exception:  # noqa: BLE001 - the client went away
            head = b""
        got = len(head)
        if already + got > limit:
            raise too_large(limit)
        out.write(head)
        if not head:
            length = got
    while length is None or got < length:
        want = PIECE if length is None else min(PIECE, length - got)
        try:
            piece = stream.read(want)
        except Exception:  # noqa: BLE001 - gunicorn's NoMoreData / socket errors: the client went away
            break
        if not piece:
            break
        if first is not None and got == 0:
            first(piece)
        got += len(piece)
        if already + got > limit:
            raise too_large(limit)
        out.write(piece)
    out.flush()
    return got


def check_npy(path, limits):
    """Check a ``.npy`` file as a dataset matrix; returns ``{"path", "checksum", "dtype", "shape"}``.

    Parameters
    ----------
    path : str
        The file (the whole upload).
    limits : Limits
        ``SHOAL_MAX_ROWS``, ``SHOAL_MAX_FEATURES``, ``SHOAL_MAX_CELLS`` (:func:`limits_of`).

    Raises
    ------
    ApiError
        422 at ``/data`` for a file that is not ``.npy`` version 1 or 2, a dtype other than
        little-endian float32 / float64, Fortran order, not 2-D, fewer than 2 rows, a size that
        does not match its header, or a cell that is not finite or beyond ``±1e100`` (the first,
        as ``data[r][c]``); 413 at ``/data`` for more rows, columns or cells than ``limits``
        (from the header, before any cell is read).
    """
    with open(path, "rb") as f:
        dtype, (n, d) = _npy_header(f, limits)
        start = f.tell()
        need = n * d * dtype.itemsize
        have = os.path.getsize(path) - start
        if have != need:
            raise _invalid("/data", f"holds {have} bytes of data; shape {(n, d)} of {dtype.name} needs {need}")
        sha = hashlib.sha256()
        rows = max(1, SLICE // (d * dtype.itemsize))
        buf = bytearray(rows * d * dtype.itemsize)
        row0 = 0
        while row0 < n:
            got = f.readinto(buf)
            block = np.frombuffer(buf, dtype=dtype, count=got // dtype.itemsize).reshape(-1, d)
            check_cells(block, row0)
            sha.update(memoryview(buf)[:got])
            row0 += block.shape[0]
    return {"path": path, "checksum": sha.hexdigest(), "dtype": dtype.name, "shape": [int(n), int(d)]}


def _npy_header(f, limits):
    """Read and check a ``.npy`` header from ``f`` (at its start); returns ``(dtype, (n, d))``."""
    try:
        version = np.lib.format.read_magic(f)
        read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in read:
            raise ValueError(f"version {version[0]}.{version[1]} is not read here (1.0 and 2.0 are)")
        shape, fortran, dtype = read[version](f, max_header_size=HEADER_LIMIT)
    except Exception as exc:  # noqa: BLE001 - numpy's header parser raises ValueError, SyntaxError, TokenError ...
        raise _invalid("/data", f"not a .npy file: {exc}") from exc
    if dtype not in _DTYPES:
        raise _invalid("/data", f"dtype {dtype.str} is not taken: send little-endian float32 or float64 (<f4, <f8)")
    if fortran:
        raise _invalid("/data", "is in Fortran order: send it C-ordered (np.ascontiguousarray)")
    if len(shape) != 2:
        raise _invalid("/data", f"has shape {shape}: send a 2-D matrix, one row per item")
    n, d = shape
    check_shape(n, d, limits)
    return dtype, (n, d)


def npy_header_check(limits):
    """A ``first`` for :func:`receive`: read a ``.npy`` body's header alone, 413 past ``limits``.

    Only the header's bytes are read (its length is in its first 12), so a file too large is refused
    before its rows are sent. Any other fault of the header is left to :func:`check_npy`.
    """
    def check(stream):
        head = stream.read(12)
        if len(head) == 12 and head[:6] == b"\x93NUMPY" and head[6] in (1, 2):
            size = struct.unpack("<H", head[8:10])[0] + 10 if head[6] == 1 else struct.unpack("<I", head[8:12])[0] + 12
            if size <= HEADER_LIMIT:
                head += stream.read(size - 12)
                try:
                    _npy_header(io.BytesIO(head), limits)
                except ApiError as exc:
                    if exc.status == 413:
                        raise
        return head
    return check


class Limits(namedtuple("Limits", "max_rows max_features max_cells")):
    """The size limits of a dataset: ``SHOAL_MAX_ROWS``, ``SHOAL_MAX_FEATURES``, ``SHOAL_MAX_CELLS``."""


def limits_of(config):
    """The :class:`Limits` of an app's ``config``."""
    return Limits(config["SHOAL_MAX_ROWS"], config["SHOAL_MAX_FEATURES"], config["SHOAL_MAX_CELLS"])


def check_limits(n, d, limits, pointer="/data"):
    """413 ``too_large`` at ``pointer`` for more rows, columns or cells than ``limits``.

    The JSON upload's check (:func:`service.datasets.check_size`) and every binary one's: the same
    problem for the same matrix, whatever its encoding. ``n`` may be a lower bound (rows counted so far).
    """
    if n > limits.max_rows:
        raise ApiError(413, "too_large", f"data has {n} rows, at most {limits.max_rows} are allowed",
                       errors={pointer: [f"at most {limits.max_rows} rows"]})
    if d > limits.max_features:
        raise ApiError(413, "too_large", f"data has {d} columns, at most {limits.max_features} are allowed",
                       errors={pointer: [f"at most {limits.max_features} columns"]})
    if n * d > limits.max_cells:
        raise ApiError(413, "too_large", f"data has {n * d} cells, at most {limits.max_cells} are allowed",
                       errors={pointer: [f"at most {limits.max_cells} cells"]})


def check_shape(n, d, limits):
    """413 past ``limits`` (:func:`check_limits`), 422 for fewer than 2 rows or no column."""
    check_limits(n, d, limits)
    if n < 2 or d < 1:
        raise _invalid("/data", f"has shape ({n}, {d}): at least 2 rows and 1 column are needed")


def check_cells(block, row0, columns=None):
    """422 naming the first cell of ``block`` (rows ``row0...``) that is not finite or beyond ``±1e100``."""
    if block.dtype == np.float32:  # every finite float32 is far inside ±1e100
        bad = ~np.isfinite(block)
    else:
        with np.errstate(invalid="ignore"):
            bad = ~(np.abs(block) <= MAX_ABS_VALUE)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        v = block[r, c]
        what = "is not finite (NaN, null or infinity)" if not np.isfinite(v) else f"is beyond ±{MAX_ABS_VALUE:g}"
        name = "" if columns is None else f" (column {columns[c]!r})"
        raise _invalid("/data", f"data[{row0 + r}][{c}]{name} {what}")


def npy_header(dtype, shape):
    """A ``.npy`` version 1.0 header of exactly :data:`HEADER_BYTES` bytes (rewritten once the rows are counted)."""
    text = "{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }" % (np.dtype(dtype).str, *shape)
    text = text.ljust(HEADER_BYTES - 10 - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text.encode("latin1")


def table_to_npy(path, kind, out, limits):
    """Convert a Parquet file or an Arrow IPC stream to a ``.npy`` matrix file, one batch at a time.

    Parameters
    ----------
    path : str
        The uploaded table.
    kind : {PARQUET, ARROW_STREAM}
    out : binary file, open for writing (empty)
        Receives the matrix.
    limits : Limits
        ``SHOAL_MAX_ROWS``, ``SHOAL_MAX_FEATURES``, ``SHOAL_MAX_CELLS``: a Parquet file's row count
        is checked from its footer before any row is read, an Arrow stream's batch by batch.

    Returns
    -------
    upload : dict
        ``{"path", "checksum", "dtype", "shape"}`` of ``out``.
    labels, item_ids, items : list or None
        From the columns ``label`` (integers or strings), ``item_id`` (strings) and ``text`` (strings
        or nulls: each row's item ``{"text": ...}``, None for a null, as ``PUT /v1/datasets/{id}/items``
        stores them), when present.

    Notes
    -----
    The features are either one fixed-size-list column (an embedding per row) or every numeric
    column but ``label``, ``item_id`` and ``text``. float32 when every feature column is float32,
    else float64. A null or NaN cell is a 422 at ``/data``; a text longer than
    :data:`schemas.items.MAX_TEXT` characters a 422 at ``/items``.
    """
    import pyarrow as pa

    try:
        if kind == PARQUET:
            import pyarrow.parquet as pq

            # read page by page (buffer_size), not a whole column chunk (a row group's embeddings) at once
            table = pq.ParquetFile(path, buffer_size=PIECE, pre_buffer=False)
            schema, batches = table.schema_arrow, table.iter_batches(batch_size=BATCH_ROWS)
            total = table.metadata.num_rows
        else:
            reader = pa.ipc.open_stream(pa.OSFile(path))
            schema, batches, total = reader.schema, reader, None
        features, dtype, d = _features(schema, limits)
        if total is not None:
            check_limits(total, d, limits)  # the footer's count: nothing read yet
        out.write(npy_header(dtype, (0, d)))
        sha, n, labels, ids, texts = hashlib.sha256(), 0, [], [], []
        for batch in batches:
            check_limits(n + batch.num_rows, d, limits)  # an Arrow stream tells its length as it goes
            block = _block(batch, schema, features, dtype, d)
            check_cells(block, n, features if len(features) > 1 else None)
            data = np.ascontiguousarray(block).data
            sha.update(data)
            out.write(data)
            if LABEL in schema.names:
                labels += _labels(batch.column(schema.get_field_index(LABEL)), n)
            if ITEM_ID in schema.names:
                ids += _item_ids(batch.column(schema.get_field_index(ITEM_ID)), n)
            if TEXT in schema.names:
                texts += _texts(batch.column(schema.get_field_index(TEXT)), n)
            n += batch.num_rows
    except ApiError:
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError, IndexError, KeyError) as exc:
        raise _invalid("/data", f"not a readable {'Parquet file' if kind == PARQUET else 'Arrow IPC stream'}: "
                       f"{exc}") from exc
    finally:
        pa.default_memory_pool().release_unused()  # give the batches' memory back to the system
    check_shape(n, d, limits)
    if ITEM_ID in schema.names and len(set(ids)) != len(ids):
        raise _invalid("/item_ids", "an item id occurs more than once")
    out.seek(0)
    out.write(npy_header(dtype, (n, d)))
    out.flush()
    upload = {"path": out.name, "checksum": sha.hexdigest(), "dtype": np.dtype(dtype).name, "shape": [n, d]}
    items = [clean_item({"text": t}) for t in texts] if TEXT in schema.names else None
    return upload, (labels if LABEL in schema.names else None), (ids if ITEM_ID in schema.names else None), items


def _features(schema, limits):
    import pyarrow as pa

    names = [f.name for f in schema if f.name not in (LABEL, ITEM_ID, TEXT)]
    if TEXT in schema.names and not (pa.types.is_string(schema.field(TEXT).type)
                                     or pa.types.is_large_string(schema.field(TEXT).type)
                                     or pa.types.is_null(schema.field(TEXT).type)):
        raise _invalid("/items", f"column {TEXT!r} is {schema.field(TEXT).type}: it must hold strings (or nulls)")
    if not names:
        raise _invalid("/data", "the table has no feature column (only label, item_id, text)")
    first = schema.field(names[0])
    if len(names) == 1 and pa.types.is_fixed_size_list(first.type):
        value = first.type.value_type
        if not (pa.types.is_floating(value) or pa.types.is_integer(value)):
            raise _invalid("/data", f"column {first.name!r} holds {value}: not numbers")
        dtype = np.float32 if pa.types.is_float32(value) else np.float64
        return names, dtype, first.type.list_size
    for name in names:
        t = schema.field(name).type
        if not (pa.types.is_floating(t) or pa.types.is_integer(t)):
            raise _invalid("/data", f"column {name!r} is {t}: every feature column must be numeric, or one "
                           "fixed-size list column hold the embeddings")
    if len(names) > limits.max_features:
        check_limits(2, len(names), limits)
    dtype = np.float32 if all(pa.types.is_float32(schema.field(n).type) for n in names) else np.float64
    return names, dtype, len(names)


def _block(batch, schema, features, dtype, d):
    import pyarrow as pa

    cols = [batch.column(schema.get_field_index(name)) for name in features]
    if len(cols) == 1 and pa.types.is_fixed_size_list(cols[0].type):
        col = cols[0]
        if col.null_count:
            row = next(i for i, v in enumerate(col.is_null().to_pylist()) if v)
            raise _invalid("/data", f"data[{row}] (column {features[0]!r}) is null")
        values = col.flatten().to_numpy(zero_copy_only=False)
        return values.astype(dtype, copy=False).reshape(-1, d)
    block = np.empty((batch.num_rows, d), dtype=dtype)
    for j, col in enumerate(cols):
        block[:, j] = col.to_numpy(zero_copy_only=False)  # nulls arrive as NaN: check_cells names them
    return block


def _labels(col, row0):
    values = col.to_pylist()
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise _invalid("/labels", f"labels[{row0 + i}] must be an integer or a string")
    return values


def _item_ids(col, row0):
    values = col.to_pylist()
    for i, v in enumerate(values):
        if not isinstance(v, str) or not 1 <= len(v) <= 200:
            raise _invalid("/item_ids", f"item_ids[{row0 + i}] must be a string of 1 to 200 characters")
    return values


def _texts(col, row0):
    values = col.to_pylist()
    for i, v in enumerate(values):
        if v is not None and len(v) > MAX_TEXT:
            raise _invalid("/items", f"items[{row0 + i}].text has {len(v)} characters, at most {MAX_TEXT}")
    return values
