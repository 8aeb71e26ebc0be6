"""The client's jobs against the real stack: a whole job, typed errors, idempotent submits."""

import numpy as np
import pytest
from scipy import sparse
from sklearn.metrics import adjusted_rand_score

from shoal_client import Conflict, JobFailed, NotFound, Result, Timeout, ValidationFailed

from .conftest import truth_constraints

pytestmark = pytest.mark.integration


def test_a_job_runs_from_upload_to_labels_and_affinity(shoal, iris, capsys):
    X, y = iris
    ds = shoal.datasets.create(X, y, item_ids=[f"iris-{i}" for i in range(len(y))], name="iris")
    assert (ds.n_samples, ds.n_features) == X.shape and ds.has_labels and ds.has_item_ids
    assert shoal.datasets.get(ds.id).checksum == ds.checksum
    assert ds.id in [d.id for d in shoal.datasets.list()]
    ml, cl = truth_constraints(y, 30)
    job = shoal.jobs.submit(dataset=ds, method="cop_rf", n_clusters=3, must_link=np.array(ml), cannot_link=cl,
                            params={"n_estimators": 200}, random_state=0)
    assert job.state in ("QUEUED", "RUNNING") and not job.replayed
    result = job.wait(progress=True, timeout=240)
    assert job.id in capsys.readouterr().err  # the bar, drawn from the job's own progress
    assert isinstance(result, Result) and job.state == "SUCCEEDED" and job.progress.fraction == 1.0
    assert result.labels.dtype == np.int64 and result.labels.shape == (150,)
    ari = adjusted_rand_score(y, result.labels)
    assert ari > 0.5 and result.metrics["ari"] == pytest.approx(ari)
    assert result.item_ids[7] == "iris-7" and result.conflicts == [] and "constraint_scores" in result.extras
    assert result.constraint_satisfaction > 0.9 and result.raw["job_id"] == job.id
    A = job.affinity()
    assert sparse.issparse(A) and A.shape == (150, 150) and A.nnz > 150
    top = job.affinity(top_k=5)
    assert top["n_samples"] == 150 and all(len(row) == 5 for row in top["indices"])
    assert shoal.jobs.get(job.id).state == "SUCCEEDED"
    assert [j.id for j in shoal.jobs.list(dataset=ds)] == [job.id]
    assert job.id in [j.id for j in shoal.jobs.list(state="SUCCEEDED", limit=100)]
    job.delete()
    with pytest.raises(NotFound):
        shoal.jobs.get(job.id)
    shoal.datasets.delete(ds)
    with pytest.raises(NotFound) as err:
        shoal.datasets.get(ds.id)
    assert err.value.status == 404 and err.value.code == "not_found" and err.value.request_id


def test_errors_are_typed_and_carry_the_problem(shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X[:30])
    with pytest.raises(NotFound) as err:
        shoal.jobs.submit(dataset="ds_" + "0" * 32, method="e2cp", n_clusters=3)
    e = err.value
    assert (e.status, e.code, e.field, e.title) == (404, "not_found", "/dataset_id", "Not found")
    assert e.type == "https://shoal.dev/problems/not-found" and e.problem["instance"] == "/v1/jobs"
    with pytest.raises(ValidationFailed) as err:
        shoal.jobs.submit(ds, method="cop_rf", n_clusters=3, params={"n_estimators": 0})
    e = err.value
    assert (e.status, e.code, e.field) == (422, "invalid_params", "/params/n_estimators")
    assert "/params/n_estimators" in str(e) and e.errors["/params/n_estimators"]
    with pytest.raises(ValidationFailed) as err:
        shoal.jobs.submit(ds, method="e2cp", n_clusters=3, must_link=[[0, 30]])
    assert err.value.field.startswith("/constraints/must_link") and err.value.code == "invalid_constraints"
    with pytest.raises(ValueError, match=r"row 2, column 1"):
        shoal.datasets.create([[0.0, 1.0], [1.0, 2.0], [2.0, float("nan")]])
    job = shoal.jobs.submit(ds, method="e2cp", n_clusters=3)
    if not job.refresh().done:  # a job still running has no result: a 409, or a JobFailed once cancelled
        with pytest.raises(Conflict) as err:
            job.result()
        assert err.value.code == "result_not_available" and err.value.problem["state"] in ("QUEUED", "RUNNING")
    job.wait(progress=False, timeout=120)


def test_a_failed_job_raises_job_failed_with_its_error(shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X[:40])
    # COP-KMeans cannot build a partition from contradictory hard constraints: the job ends FAILED
    job = shoal.jobs.submit(ds, method="cop_kmeans", n_clusters=2, must_link=[[0, 1], [1, 2]],
                            cannot_link=[[0, 2]])
    with pytest.raises(JobFailed) as err:
        job.wait(progress=False, timeout=120)
    e = err.value
    assert e.state == "FAILED" and e.job_id == job.id and e.problem == job.error
    assert e.code == "infeasible_constraints" and e.problem["conflicts"][0]["must_link_chain"] == [0, 1, 2]
    assert "ended FAILED" in str(e) and e.detail in str(e)


def test_the_same_idempotency_key_gets_the_first_job_back(shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X[:50], y[:50])
    first = shoal.jobs.submit(ds, method="e2cp", n_clusters=2, idempotency_key="client-retry-1")
    again = shoal.jobs.submit(ds, method="e2cp", n_clusters=2, idempotency_key="client-retry-1")
    assert again.id == first.id and again.replayed and not first.replayed
    with pytest.raises(ValidationFailed) as err:
        shoal.jobs.submit(ds, method="e2cp", n_clusters=3, idempotency_key="client-retry-1")
    assert err.value.code == "idempotency_key_reused" and err.value.field == "header:Idempotency-Key"
    other = shoal.jobs.submit(ds, method="e2cp", n_clusters=2)  # a new call gets a key of its own
    assert other.id != first.id
    assert sorted(j.id for j in shoal.jobs.list(dataset=ds)) == sorted([first.id, other.id])
    for job in (first, other):
        job.wait(progress=False, timeout=120)


def test_a_wait_times_out_and_a_cancelled_job_raises_job_failed(shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X, y)
    busy = shoal.jobs.submit(ds, method="cop_rf", n_clusters=3, params={"n_estimators": 5000})
    queued = shoal.jobs.submit(ds, method="e2cp", n_clusters=3)  # behind it on the one worker process
    try:
        with pytest.raises(Timeout) as err:
            queued.wait(progress=False, timeout=0.5)
        assert queued.state == "QUEUED" and isinstance(err.value, TimeoutError) and queued.id in str(err.value)
    finally:
        busy.cancel()
        queued.cancel()
    with pytest.raises(JobFailed) as err:
        queued.wait(progress=False, timeout=60)
    assert err.value.state == "CANCELLED" and err.value.job_id == queued.id
    with pytest.raises(JobFailed):
        busy.wait(progress=False, timeout=120)
    assert busy.state == "CANCELLED"
