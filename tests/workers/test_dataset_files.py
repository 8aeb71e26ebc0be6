"""Dataset matrices live in files of the data directory: shared content, mapping, deletion, expiry."""

import os
import time
from dataclasses import replace

import numpy as np
import pytest

from workers.dataset_store import MATRICES, matrix_users_key
from workers.store import Store


def _files(store):
    return set(store.matrix_files.keys())


def test_one_file_for_equal_content_kept_while_a_dataset_names_it(store):
    X = np.random.default_rng(1).normal(size=(50, 4))
    before = _files(store)
    a = store.put_dataset(X, name="a")
    b = store.put_dataset(X.copy(), name="b")
    assert a["matrix"] == b["matrix"] and a["checksum"] == b["checksum"]
    assert _files(store) - before == {a["matrix"]}
    assert not store.r.exists(f"shoal:dataset:{a['id']}:X")  # the matrix is not in Redis
    assert store.delete_dataset(a["id"])
    assert store.matrix_files.exists(a["matrix"])  # b still names it
    np.testing.assert_array_equal(store.load_dataset(b["id"])[0], X)
    assert store.delete_dataset(b["id"])
    assert not store.matrix_files.exists(a["matrix"])
    assert not store.r.sismember(MATRICES, a["matrix"])


def test_a_worker_maps_the_file_and_writes_only_its_own_pages(store):
    X = np.arange(40.0).reshape(10, 4)
    meta = store.put_dataset(X, name="mapped")
    Y, _, _ = store.load_dataset(meta["id"])
    assert isinstance(Y, np.memmap) and Y.dtype == np.float64
    Y /= 2  # an estimator that scales in place
    np.testing.assert_array_equal(store.load_dataset(meta["id"])[0], X)  # the file is unchanged
    with open(store.matrix_files.path(meta["matrix"]), "rb") as f:
        np.testing.assert_array_equal(np.load(f), X)


def test_the_sweep_removes_files_of_expired_datasets_only(store):
    short = Store(store.r, replace(store.settings, dataset_ttl=1))
    rng = np.random.default_rng(2)
    gone = short.put_dataset(rng.normal(size=(20, 3)), name="expires")
    kept_X = rng.normal(size=(20, 3))
    shared = short.put_dataset(kept_X, name="expires too")
    kept = store.put_dataset(kept_X, name="stays")  # same content, no expiry soon
    deadline = time.monotonic() + 10
    while store.get_dataset_meta(gone["id"]) is not None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert store.load_dataset(gone["id"]) is None
    assert store.matrix_files.exists(gone["matrix"])  # until the sweep
    removed = store.collect_matrices()
    assert gone["matrix"] in removed and not store.matrix_files.exists(gone["matrix"])
    assert shared["matrix"] not in removed and store.matrix_files.exists(kept["matrix"])
    assert {m.decode() for m in store.r.smembers(matrix_users_key(kept["matrix"]))} == {kept["id"]}
    np.testing.assert_array_equal(store.load_dataset(kept["id"])[0], kept_X)


def test_a_put_while_the_sweep_holds_the_lock_waits_and_the_file_stays(store):
    X = np.random.default_rng(3).normal(size=(30, 2))
    first = store.put_dataset(X, name="first")
    assert store.delete_dataset(first["id"]) and not store.matrix_files.exists(first["matrix"])
    with store.matrix_lock(first["matrix"]):
        with store.matrix_lock(first["matrix"], wait=False) as held:
            assert held is False
    again = store.put_dataset(X, name="again")  # the content comes back: the file is written anew
    assert again["matrix"] == first["matrix"] and store.matrix_files.exists(again["matrix"])
    assert again["matrix"] not in store.collect_matrices()


def test_two_paths_to_one_directory_see_the_same_matrices(store, tmp_path):
    link = tmp_path / "mount-b"
    os.symlink(store.settings.data_dir, link)
    other = Store(store.r, replace(store.settings, data_dir=str(link)))
    meta = store.put_dataset(np.eye(5), name="shared")
    np.testing.assert_array_equal(other.load_dataset(meta["id"])[0], np.eye(5))
    assert other.delete_dataset(meta["id"])
    assert not store.matrix_files.exists(meta["matrix"])


def test_a_missing_file_reads_as_a_gone_dataset(store):
    meta = store.put_dataset(np.ones((4, 2)) * 7, name="lost file")
    store.matrix_files.remove(meta["matrix"])
    assert store.load_dataset(meta["id"]) is None


def test_keys_name_only_matrix_files(store):
    with pytest.raises(ValueError):
        store.matrix_files.path("../../etc/passwd")


def test_the_sweep_removes_files_of_expired_uploads(store):
    rec = store.create_upload("application/x-npy", 100)
    path = store.upload_path(rec["id"])
    assert os.path.exists(path) and store.get_upload(rec["id"])["offset"] == 0
    assert rec["id"] not in store.collect_uploads(grace=0)  # its record holds it
    store.r.delete(f"shoal:upload:{rec['id']}")  # as when SHOAL_UPLOAD_TTL runs out
    assert store.get_upload(rec["id"]) is None
    assert rec["id"] in store.collect_uploads(grace=0) and not os.path.exists(path)
