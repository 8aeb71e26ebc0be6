"""kmeans, the unconstrained reference: scikit-learn's k-means behind the worker and the service."""

import numpy as np
import pytest
from sklearn.cluster import KMeans as SKLearnKMeans
from sklearn.datasets import make_blobs

from clustering.baselines._kmeans import KMeans
from clustering.exceptions import InvalidInputError
from workers.registry import build, extras, fit_kwargs

X, Y = make_blobs(90, centers=3, cluster_std=1.5, random_state=4)


def test_the_worker_gets_scikit_learns_labels_and_its_extras():
    est = build("kmeans", n_clusters=3, params={"n_init": 5}, random_state=7)
    est.fit(X, **fit_kwargs("kmeans", {}))
    ref = SKLearnKMeans(3, n_init=5, random_state=7).fit(X)
    np.testing.assert_array_equal(est.labels_, ref.labels_)
    out = extras("kmeans", est)
    assert out["inertia"] == pytest.approx(ref.inertia_) and out["n_iter"] == ref.n_iter_
    assert np.asarray(out["cluster_centers"]).shape == (3, 2)


def test_parameters_are_checked_in_fit():
    with pytest.raises(InvalidInputError, match="n_init") as exc:
        KMeans(3, n_init=0).fit(X)
    assert exc.value.field == "n_init"


def test_listed_in_the_catalogue_with_its_limits(client):
    (m,) = [m for m in client.get("/v1/methods").json["methods"] if m["id"] == "kmeans"]
    assert m["constraints"] == [] and m["outputs"] == ["labels"]
    assert (m["max_samples"], m["max_propagation"], m["max_closure_pairs"]) == (None, None, None)
    assert {p["name"]: p["default"] for p in m["params"]} == {"init": "k-means++", "n_init": 10, "max_iter": 300,
                                                              "tol": 1e-4}


def test_a_job_is_accepted_and_constraints_are_refused(client, blobs_dataset):
    did, _, _ = blobs_dataset
    body = {"dataset_id": did, "method": "kmeans", "n_clusters": 3}
    r = client.post("/v1/jobs", json={**body, "params": {"n_init": 3}})
    assert r.status_code == 202 and r.json["params"] == {"init": "k-means++", "n_init": 3, "max_iter": 300,
                                                         "tol": 1e-4}
    r = client.post("/v1/jobs", json={**body, "constraints": {"must_link": [[0, 1]]}})
    assert r.status_code == 422 and r.json["code"] == "unsupported_constraints"
    r = client.post("/v1/jobs", json={**body, "params": {"n_init": 101}})
    assert r.status_code == 422 and list(r.json["errors"]) == ["/params/n_init"]
