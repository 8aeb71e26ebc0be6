"""ShoalClusterer: a scikit-learn estimator whose fit runs a job on the real stack."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

from shoal_client import Shoal, ShoalClusterer

from .conftest import truth_constraints

pytestmark = pytest.mark.integration


def test_fit_uploads_runs_the_job_and_keeps_its_labels(live, iris):
    X, y = iris
    ml, cl = truth_constraints(y, 30, seed=2)
    est = ShoalClusterer(live, method="cop_rf", n_clusters=3, params={"n_estimators": 200}, random_state=0)
    assert est.get_params()["n_clusters"] == 3 and clone(est).get_params() == est.get_params()
    assert est.fit(X, must_link=ml, cannot_link=cl) is est
    assert est.labels_.shape == (150,) and est.n_features_in_ == 4
    assert adjusted_rand_score(y, est.labels_) > 0.5
    with Shoal(live) as shoal:
        assert shoal.datasets.get(est.dataset_id_).n_samples == 150
        job = shoal.jobs.get(est.job_id_)
        assert job.state == "SUCCEEDED" and job.raw["n_constraints"]["must_link"] == len(ml)
    labels = est.set_params(method="e2cp", params=None).fit_predict(X, must_link=ml, cannot_link=cl)
    assert np.array_equal(labels, est.labels_) and est.job_id_ != job.id
    assert adjusted_rand_score(y, labels) > 0.5
