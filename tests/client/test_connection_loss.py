"""A client whose connection to gunicorn really breaks (a TCP relay between them is cut) resumes
without submitting anything twice: the server ends up with exactly one job."""

import pytest
from sklearn.metrics import adjusted_rand_score

from shoal_client import ConnectionFailed, Shoal

from .conftest import relay_to, truth_constraints

pytestmark = pytest.mark.integration


def _jobs_on(live, ds):
    with Shoal(live) as direct:  # not through the relay
        return [j.id for j in direct.jobs.list(dataset=ds)]


def test_a_submit_whose_reply_is_lost_is_answered_from_the_first_request(live, shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X, y)
    ml, cl = truth_constraints(y, 20)
    relay, via = relay_to(live, b"POST /v1/jobs HTTP", down_for=0.3)  # the job is created, its 202 lost
    try:
        with Shoal(via) as client:
            job = client.jobs.submit(ds, method="e2cp", n_clusters=3, must_link=ml, cannot_link=cl)
            assert relay.lost == 1 and job.replayed  # the retry got the first response back
            result = job.wait(progress=False, timeout=120)
    finally:
        relay.close()
    assert _jobs_on(live, ds) == [job.id]
    assert adjusted_rand_score(y, result.labels) > 0.5


def test_a_wait_resumes_when_the_connection_breaks_mid_wait(live, shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X, y)
    ml, cl = truth_constraints(y, 20, seed=1)
    # the first poll of the job: its reply is lost, every connection closed, none accepted for 1.5 s
    relay, via = relay_to(live, b"GET /v1/jobs/job_", down_for=1.5)
    try:
        with Shoal(via) as client:
            job = client.jobs.submit(ds, method="e2cp", n_clusters=3, must_link=ml, cannot_link=cl)
            assert relay.lost == 0
            result = job.wait(progress=False, timeout=120)
            assert relay.lost == 1 and job.state == "SUCCEEDED"
    finally:
        relay.close()
    assert _jobs_on(live, ds) == [job.id]
    assert adjusted_rand_score(y, result.labels) > 0.5


def test_a_wait_cut_off_longer_than_its_retries_resumes_when_called_again(live, shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X, y)
    relay, via = relay_to(live, b"GET /v1/jobs/job_", down_for=None)  # down until restore()
    try:
        with Shoal(via, max_retries=1) as client:
            job = client.jobs.submit(ds, method="e2cp", n_clusters=3)
            with pytest.raises(ConnectionFailed) as err:
                job.wait(progress=False, timeout=120)
            assert relay.lost == 1 and "2 attempt(s)" in str(err.value)
            relay.restore()
            result = job.wait(progress=False, timeout=120)  # the same Job object: nothing submitted again
    finally:
        relay.close()
    assert _jobs_on(live, ds) == [job.id] and result.labels.shape == (150,)


def test_an_answer_whose_reply_is_lost_is_recorded_once(live, shoal, iris):
    import httpx

    X, y = iris
    ds = shoal.datasets.create(X, y)
    relay, via = relay_to(live, b"/answers HTTP", down_for=0.3)
    try:
        with Shoal(via) as client:
            session = client.sessions.create(ds, n_clusters=3, budget=5, pool_size=5)
            q = next(iter(session.questions(worker_id="w1", batch=1, timeout=120)))
            a, b = q.items
            answered = session.answer(q, "same" if y[a] == y[b] else "different")
            assert relay.lost == 1 and answered.outcome == "duplicate"  # the retry found the first attempt's
    finally:
        relay.close()
    listed = httpx.get(f"{live}/v1/sessions/{session.id}/questions", timeout=30).json()["questions"]
    (record,) = [r for r in listed if r["question_id"] == q.id]
    assert record["n_answers"] == 1 and [x["worker_id"] for x in record["answers"]] == ["w1"]
    shoal.sessions.delete(session.id)
