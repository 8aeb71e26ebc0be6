"""Two workers reach the data directory through different paths (as two machines mount one volume)."""

import os
import time

import numpy as np
import pytest
import requests

from .helpers import submit, upload, wait_done

pytestmark = pytest.mark.integration


def test_two_workers_on_two_mount_paths_run_jobs_on_one_dataset(tmp_path):
    from scripts.stack import Stack, wait_ready
    from workers.config import Settings
    from workers.store import Store

    data = tmp_path / "volume"
    data.mkdir()
    mount_b = tmp_path / "mount-b"
    os.symlink(data, mount_b)
    env = {"SHOAL_DATA_DIR": str(data), "SHOAL_MATRIX_SWEEP_INTERVAL": "0.5"}
    st = Stack(env=env, log_dir=tmp_path / "logs")
    st.env.pop("REDIS_URL", None)
    st.redis_url = None
    try:
        st.start_redis()
        st.start_worker(concurrency=1)
        st.start_worker(concurrency=1, env={"SHOAL_DATA_DIR": str(mount_b)})
        base = st.start_web(workers=1)
        wait_ready(base, timeout=90)
        store = Store.from_settings(Settings(redis_url=st.redis_url, data_dir=str(data)))
        deadline = time.monotonic() + 60
        while len(store.live_workers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(store.live_workers()) == 2

        rng = np.random.default_rng(0)
        X = np.vstack([rng.normal(0, 0.3, (40, 3)), rng.normal(4, 0.3, (40, 3))])
        did = upload(base, X, name="shared volume")
        matrix = store.get_dataset_meta(did)["matrix"]
        assert os.path.exists(os.path.join(mount_b, "matrices", matrix[:2], f"{matrix}.npy"))
        jobs = [submit(base, dataset_id=did, method="cop_kmeans", n_clusters=2, random_state=i,
                       constraints={"must_link": [[0, 1]], "cannot_link": [[0, 79]]}).json()["id"]
                for i in range(6)]
        done = [wait_done(base, j, timeout=120) for j in jobs]
        assert all(j["state"] == "SUCCEEDED" for j in done), done
        workers = {store.get_job(j)["worker"] for j in jobs}
        assert len(workers) == 2, workers  # both mount paths served jobs
        labels = {tuple(requests.get(f"{base}/v1/jobs/{j}/result", timeout=30).json()["labels"]) for j in jobs}
        assert all(len(set(lab[:40])) == 1 and lab[0] != lab[79] for lab in labels)

        # the dataset's record runs out (as SHOAL_DATASET_TTL makes it); a worker's sweep removes its file
        for key in (f"shoal:dataset:{did}", f"shoal:dataset:{did}:aux"):
            store.r.pexpire(key, 200)
        deadline = time.monotonic() + 30
        while store.matrix_files.exists(matrix) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not store.matrix_files.exists(matrix)
        assert requests.get(f"{base}/v1/datasets/{did}", timeout=30).status_code == 404
    finally:
        st.stop()
