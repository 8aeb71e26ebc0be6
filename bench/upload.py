"""Binary uploads through the API: time and peak memory of the API process, and a resumed upload.

Starts Redis and gunicorn (one sync worker) on loopback with a data directory of its own, writes an
``n x d`` float32 matrix as ``.npy`` and as Parquet (one fixed-size-list column, uncompressed) to
disk, then sends each to ``POST /v1/datasets`` as the body, streamed from the file. A third run
uses the resumable protocol (docs/datasets.md): ``POST /v1/uploads``, a ``PATCH`` cut off after
``--cut`` of the bytes (the socket closes mid-body), ``HEAD`` for the offset, a ``PATCH`` of the
rest from there, and ``POST /v1/datasets {"upload_id"}``.

The API process's memory is read from ``/proc/{pid}/status`` of the gunicorn worker: ``idle`` is its
resident set before the uploads, ``peak`` its high-water mark (``VmHWM``, reset before each upload
through ``/proc/{pid}/clear_refs``) after each one; the
page cache the file passes through is not counted (the process reads, never maps, the body).

    PYTHONPATH=. .venv/bin/python -m bench.upload --rows 1000000 --dims 384 --out bench/results/upload.json

Prints a table; ``--out`` writes the numbers as JSON.
"""

import argparse
import json
import os
import socket
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import requests

NPY, PARQUET = "application/x-npy", "application/vnd.apache.parquet"


def write_npy(path, n, d, seed=0):
    """An ``n x d`` float32 matrix of Gaussian blobs, written in slices (never whole in memory)."""
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, (50, d)).astype(np.float32)
    for lo in range(0, n, 65536):
        hi = min(n, lo + 65536)
        X[lo:hi] = centres[rng.integers(0, 50, hi - lo)] + rng.standard_normal((hi - lo, d), dtype=np.float32)
    X.flush()
    del X


def write_parquet(npy_path, path):
    """The same matrix as a Parquet file of one fixed-size-list column ``embedding``, no compression."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    X = np.load(npy_path, mmap_mode="r")
    n, d = X.shape
    typ = pa.list_(pa.float32(), d)
    with pq.ParquetWriter(path, pa.schema([("embedding", typ)]), compression="none") as w:
        for lo in range(0, n, 65536):
            block = np.ascontiguousarray(X[lo:lo + 65536])
            arr = pa.FixedSizeListArray.from_arrays(pa.array(block.ravel()), d)
            w.write_table(pa.table({"embedding": arr}))


def status_kib(pid, field):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def gunicorn_worker(master_pid):
    kids = Path(f"/proc/{master_pid}/task/{master_pid}/children").read_text().split()
    assert len(kids) == 1, kids
    return int(kids[0])


def reset_peak(pid):
    """Reset the process's high-water mark (``echo 5 > /proc/pid/clear_refs``); False where not allowed."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def post_file(base, path, content_type, name):
    size = os.path.getsize(path)
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        r = requests.post(f"{base}/v1/datasets", params={"name": name}, data=f,
                          headers={"Content-Type": content_type, "Content-Length": str(size)}, timeout=600)
    return r, time.perf_counter() - t0


def cut_patch(base, uid, path, offset, nbytes):
    """PATCH ``nbytes`` of the file from ``offset`` on a raw socket that announces the whole rest and closes early."""
    url = urlparse(base)
    total = os.path.getsize(path) - offset
    head = (f"PATCH /v1/uploads/{uid} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/offset+octet-stream"
            f"\r\nUpload-Offset: {offset}\r\nContent-Length: {total}\r\n\r\n").encode()
    with socket.create_connection((url.hostname, url.port)) as s, open(path, "rb") as f:
        s.sendall(head)
        f.seek(offset)
        left = nbytes
        while left:
            piece = f.read(min(1 << 20, left))
            s.sendall(piece)
            left -= len(piece)
        s.shutdown(socket.SHUT_RDWR)


class FileSlice:
    """A file read from ``offset`` to its end (what ``requests`` streams as a body)."""

    def __init__(self, path, offset):
        self.f = open(path, "rb")
        self.f.seek(offset)
        self.len = os.path.getsize(path) - offset

    def read(self, n=-1):
        return self.f.read(n)


def resumed_upload(base, path, cut):
    size = os.path.getsize(path)
    t0 = time.perf_counter()
    rec = requests.post(f"{base}/v1/uploads", json={"content_type": NPY, "length": size}, timeout=30).json()
    uid = rec["id"]
    cut_patch(base, uid, path, 0, int(size * cut))
    for _ in range(100):  # the server notices the closed socket and keeps what arrived
        offset = int(requests.head(f"{base}/v1/uploads/{uid}", timeout=30).headers["Upload-Offset"])
        busy = requests.patch(f"{base}/v1/uploads/{uid}", data=b"", timeout=30,
                              headers={"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"})
        if busy.status_code == 204:
            break
        time.sleep(0.1)
    body = FileSlice(path, offset)
    r = requests.patch(f"{base}/v1/uploads/{uid}", data=body, timeout=600,
                       headers={"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream",
                                "Content-Length": str(body.len)})
    assert r.status_code == 204, r.text
    assert int(r.headers["Upload-Offset"]) == size
    done = requests.post(f"{base}/v1/datasets", json={"upload_id": uid, "name": "resumed"}, timeout=600)
    return done, time.perf_counter() - t0, offset


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--dims", type=int, default=384)
    p.add_argument("--cut", type=float, default=0.4, help="share of the bytes sent before the interruption")
    p.add_argument("--work-dir", default=None, help="where the files and the data directory go (default: a temp dir)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    from scripts.stack import Stack

    work = Path(args.work_dir or tempfile.mkdtemp(prefix="shoal-upload-"))
    data_dir = work / "data"
    npy_path, pq_path = work / "matrix.npy", work / "matrix.parquet"
    t0 = time.perf_counter()
    write_npy(npy_path, args.rows, args.dims)
    write_parquet(npy_path, pq_path)
    print(f"wrote {npy_path} ({os.path.getsize(npy_path) / 2**20:.0f} MiB) and {pq_path} "
          f"({os.path.getsize(pq_path) / 2**20:.0f} MiB) in {time.perf_counter() - t0:.1f} s")

    env = {"SHOAL_DATA_DIR": str(data_dir), "SHOAL_MAX_UPLOAD_BYTES": str(8 * 2**30),
           "SHOAL_MAX_ROWS": str(max(args.rows, 100_000)), "SHOAL_MAX_CELLS": str(max(args.rows * args.dims, 10**7))}
    rows = []
    with Stack(env=env, log_dir=work / "logs") as st:
        st.env.pop("REDIS_URL", None)
        st.redis_url = None
        st.start_redis()
        base = st.start_web(workers=1)
        _wait_health(base)
        pid = gunicorn_worker(st.procs["web"].pid)
        requests.get(f"{base}/v1/datasets", timeout=30)  # the first request imports what the views need
        idle = status_kib(pid, "VmRSS")
        for label, kind, path in (("npy body", NPY, npy_path), ("npy resumed", None, npy_path),
                                  ("parquet body", PARQUET, pq_path)):
            if not reset_peak(pid):
                raise RuntimeError("cannot reset the API process's VmHWM (/proc/pid/clear_refs)")
            before = status_kib(pid, "VmRSS")
            if kind is None:
                r, secs, offset = resumed_upload(base, path, args.cut)
            else:
                (r, secs), offset = post_file(base, path, kind, label), None
            assert r.status_code == 201, r.text
            peak = status_kib(pid, "VmHWM")
            size = os.path.getsize(path)
            rows.append({"upload": label, "bytes": size, "rows": r.json()["n_samples"], "dims": r.json()["n_features"],
                         "seconds": round(secs, 2), "mb_per_s": round(size / 1e6 / secs, 1),
                         "idle_rss_mib": round(idle / 1024, 1), "rss_before_mib": round(before / 1024, 1),
                         "peak_rss_mib": round(peak / 1024, 1),
                         "peak_above_idle_mib": round((peak - idle) / 1024, 1), "resumed_at": offset,
                         "checksum": r.json()["checksum"][:12]})
            print(rows[-1], flush=True)
    print()
    cols = ["upload", "bytes", "rows", "dims", "seconds", "mb_per_s", "idle_rss_mib", "rss_before_mib", "peak_rss_mib",
            "peak_above_idle_mib", "resumed_at", "checksum"]
    print(" | ".join(cols))
    for row in rows:
        print(" | ".join(str(row[c]) for c in cols))
    if args.out:
        Path(args.out).write_text(json.dumps({"rows": args.rows, "dims": args.dims, "cut": args.cut,
                                              "results": rows}, indent=2) + "\n")


def _wait_health(base, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if requests.get(f"{base}/healthz", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{base} did not answer")


if __name__ == "__main__":
    main()
