"""Dataset matrices as files in a directory shared by the API and the workers.

The matrix of a dataset is not kept in Redis: it is a ``.npy`` file under
``SHOAL_DATA_DIR`` (:attr:`workers.config.Settings.data_dir`), named by its content::

    {data_dir}/matrices/{sha[:2]}/{sha}.{dtype}.{n}x{d}.npy   the matrix (C order, float32 or float64)
    {data_dir}/tmp/                                           uploads and writes in progress

``sha`` is the sha256 of the matrix's bytes (the dataset record's ``checksum``), so two
datasets with the same matrix share one file. A file is written to ``tmp/`` and renamed
into place (atomic on one file system), so a reader never sees half a matrix. Workers
map it (``np.load(mmap_mode="c")``): the pages are shared by every job on the same
machine and read from disk only when touched; a job that writes into its ``X`` gets
private copies of the pages it writes (copy on write), never a change to the file.

Which datasets name a file is kept in Redis (:mod:`workers.dataset_store`); this module
only knows files. Any directory that every process sees under some path of its own
(a local directory, a Docker named volume, an NFS or other shared mount) works: the
key of a file never holds the directory.
"""

import hashlib
import os
import re
import tempfile
import time

import numpy as np

#: A matrix file's key: ``{sha256}.{f4|f8}.{n}x{d}``.
_KEY = re.compile(r"^([0-9a-f]{64})\.(f4|f8)\.([0-9]+)x([0-9]+)$")
CHUNK_ROWS_BYTES = 1 << 24


def matrix_key(sha, dtype, shape):
    """The key of a matrix file: its checksum, dtype and shape (``{sha}.f8.{n}x{d}``)."""
    code = {"float32": "f4", "float64": "f8"}[np.dtype(dtype).name]
    return f"{sha}.{code}.{int(shape[0])}x{int(shape[1])}"


def matrix_checksum(X):
    """sha256 (hex) of a C-ordered matrix's bytes, hashed in slices of rows (no copy of a mapped file)."""
    h = hashlib.sha256()
    for lo, hi in row_slices(X):
        h.update(np.ascontiguousarray(X[lo:hi]).data)
    return h.hexdigest()


def row_slices(X, nbytes=CHUNK_ROWS_BYTES):
    """``(lo, hi)`` row ranges of about ``nbytes`` each, covering ``X``."""
    n = X.shape[0]
    step = max(1, nbytes // max(1, X.itemsize * int(np.prod(X.shape[1:]))))
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)] or [(0, 0)]


class MatrixFiles:
    """Content-addressed ``.npy`` files under one directory.

    Parameters
    ----------
    root : str or os.PathLike
        The data directory (created when missing). Processes may reach the same
        directory through different paths (mounts, symlinks).
    """

    def __init__(self, root):
        self.root = os.fspath(root)
        self.tmp_dir = os.path.join(self.root, "tmp")
        os.makedirs(self.tmp_dir, exist_ok=True)
        os.makedirs(os.path.join(self.root, "matrices"), exist_ok=True)

    def path(self, key):
        """The file of matrix ``key``; ValueError for a key this store never made."""
        if not _KEY.match(key or ""):
            raise ValueError(f"not a matrix key: {key!r}")
        return os.path.join(self.root, "matrices", key[:2], f"{key}.npy")

    def temp_file(self, suffix=".part"):
        """A new, open binary file in the data directory's ``tmp/`` (same file system as the matrices)."""
        return tempfile.NamedTemporaryFile(dir=self.tmp_dir, suffix=suffix, delete=False)

    def write(self, X):
        """Store a matrix; returns its key. Writes nothing when the file is there already.

        Parameters
        ----------
        X : ndarray of shape (n, d), float32 or float64
            Written C-ordered, little-endian.
        """
        X = np.ascontiguousarray(X, dtype=X.dtype.newbyteorder("<"))
        key = matrix_key(matrix_checksum(X), X.dtype, X.shape)
        if not os.path.exists(self.path(key)):
            with self.temp_file() as f:
                np.save(f, X, allow_pickle=False)
            self.adopt(f.name, key)
        return key

    def adopt(self, tmp_path, key):
        """Move a complete ``.npy`` file (in :attr:`tmp_dir`) into place as matrix ``key``."""
        final = self.path(key)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        if os.path.exists(final):
            os.unlink(tmp_path)
        else:
            os.replace(tmp_path, final)

    def exists(self, key):
        return os.path.exists(self.path(key))

    def open(self, key):
        """The matrix, memory-mapped copy-on-write, or None when its file is gone.

        Returns
        -------
        numpy.memmap of shape (n, d) or None
            Writing into it changes only this process's pages, never the file.
        """
        try:
            return np.load(self.path(key), mmap_mode="c", allow_pickle=False)
        except FileNotFoundError:
            return None

    def remove(self, key):
        """Delete matrix ``key``'s file; False if it was not there. A process that has it
        mapped keeps reading it until it lets go (POSIX unlink semantics)."""
        try:
            os.unlink(self.path(key))
            return True
        except FileNotFoundError:
            return False

    def stale_temp_files(self, age):
        """Paths of the files in ``tmp/`` last written more than ``age`` seconds ago."""
        now, out = time.time(), []
        for entry in os.scandir(self.tmp_dir):
            try:
                if entry.is_file() and now - entry.stat().st_mtime > age:
                    out.append(entry.path)
            except FileNotFoundError:
                continue
        return out

    def keys(self):
        """Keys of every matrix file in the directory."""
        out = []
        base = os.path.join(self.root, "matrices")
        for sub in sorted(os.listdir(base)):
            d = os.path.join(base, sub)
            if os.path.isdir(d):
                out += [f[:-4] for f in sorted(os.listdir(d)) if f.endswith(".npy") and _KEY.match(f[:-4])]
        return out
