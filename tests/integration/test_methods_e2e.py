"""The paper methods through the API: COP-RF scores, DCRC predict, ReCon hierarchies."""

import io

import numpy as np
import pytest
import requests
from scipy.cluster.hierarchy import is_valid_linkage
from sklearn.datasets import make_blobs

from .helpers import submit, upload, wait_done

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def blobs(live):
    X, y = make_blobs(60, centers=[[0, 0], [7, 7], [-7, 7]], cluster_std=0.7, random_state=5)
    return upload(live, X, y, [f"b{i}" for i in range(len(y))]), X, y


def _result(base, job):
    assert job["state"] == "SUCCEEDED", job.get("error")
    return requests.get(base + job["result_url"], timeout=30).json()


def _triplets(y, n, rng):
    out = []
    while len(out) < n:
        a, b, c = map(int, rng.choice(len(y), 3, replace=False))
        if y[a] == y[b] != y[c]:
            out.append([a, b, c, "yes"])
        elif y[a] == y[c] != y[b]:
            out.append([a, b, c, "no"])
    return out


def test_cop_rf_scores_each_constraint_in_client_order(live, blobs):
    did, X, y = blobs
    ml = [[0, int(np.flatnonzero(y == y[0])[1])]]
    cl = [[0, int(np.flatnonzero(y != y[0])[0])], [1, int(np.flatnonzero(y == y[1])[2])]]  # last one is wrong
    job = wait_done(live, submit(live, dataset_id=did, method="cop_rf", n_clusters=3,
                                 params={"n_estimators": 60, "filter_repeats": 50},
                                 constraints={"must_link": ml, "cannot_link": cl}).json()["id"])
    res = _result(live, job)
    scores = res["extras"]["constraint_scores"]
    assert len(scores["must_link"]) == 1 and len(scores["cannot_link"]) == 2
    assert res["metrics"]["ari"] > 0.9
    # the clustering breaks the wrong cannot-link, and says so by its index in the client's list
    assert res["violated_constraints"] == {"must_link": [], "cannot_link": [1]}
    assert res["extras"]["dropped_constraints"] is None
    assert res["extras"]["rca_features"] is None


def test_cop_rf_drop_violated_refits_without_the_broken_constraint(live, blobs):
    did, X, y = blobs
    wrong_ml = [[0, int(np.flatnonzero(y != y[0])[0])]]
    cl = [[0, int(np.flatnonzero(y != y[0])[1])]]
    job = wait_done(live, submit(live, dataset_id=did, method="cop_rf", n_clusters=3,
                                 params={"n_estimators": 60, "filter_repeats": 50, "drop_violated": True},
                                 constraints={"must_link": wrong_ml, "cannot_link": cl}).json()["id"])
    res = _result(live, job)
    assert res["extras"]["dropped_constraints"] == {"must_link": [0], "cannot_link": []}
    assert res["diagnostics"]["n_dropped_violated"] == 1 and res["diagnostics"]["n_constraints_used"] == 1
    assert res["metrics"]["ari"] > 0.9


def test_cop_rf_returns_the_rca_features_it_learned(live, blobs):
    did, X, y = blobs
    same = [[int(a), int(b)] for c in range(3) for a, b in [np.flatnonzero(y == c)[:2]]]
    job = wait_done(live, submit(live, dataset_id=did, method="cop_rf", n_clusters=3,
                                 params={"n_estimators": 60, "filter_repeats": 50, "rca_components": 1},
                                 constraints={"must_link": same}).json()["id"])
    res = _result(live, job)
    assert res["metrics"]["ari"] > 0.9
    rca = res["extras"]["rca_features"]
    comps, mean = np.asarray(rca["components"]), np.asarray(rca["mean"])
    assert comps.shape == (1, 2) and np.allclose(mean, X.mean(axis=0))
    assert np.isclose(((X - mean) @ comps.T).std(), 1.0)


def test_dcrc_fits_triplets_and_predicts_new_rows(live, blobs):
    did, X, y = blobs
    trip = _triplets(y, 60, np.random.default_rng(0))
    job = wait_done(live, submit(live, dataset_id=did, method="dcrc", n_clusters=3,
                                 constraints={"triplets": trip}).json()["id"])
    res = _result(live, job)
    assert res["metrics"]["ari"] > 0.9
    proba = np.asarray(res["extras"]["probabilities"])
    assert proba.shape == (len(y), 3) and np.allclose(proba.sum(axis=1), 1, atol=1e-4)
    new = X[:5] + 0.01
    r = requests.post(f"{live}/v1/jobs/{job['id']}/predict", json={"data": new.tolist()}, timeout=30)
    assert r.status_code == 202, r.text
    pred = _result(live, wait_done(live, r.json()["id"]))
    assert pred["labels"] == res["labels"][:5]
    bad = requests.post(f"{live}/v1/jobs/{job['id']}/predict", json={"data": [[1.0, 2.0, 3.0]]}, timeout=30)
    assert bad.status_code == 422 and "/data" in bad.json()["errors"]

    # Deleting the predict job takes the rows it was given; the fitted job and its dataset stay.
    rows = requests.get(f"{live}/v1/jobs/{r.json()['id']}", timeout=30).json()["dataset_id"]
    assert requests.get(f"{live}/v1/datasets/{rows}", timeout=30).status_code == 200
    assert requests.delete(f"{live}/v1/jobs/{r.json()['id']}", timeout=30).status_code == 204
    assert requests.get(f"{live}/v1/jobs/{r.json()['id']}", timeout=30).status_code == 404
    assert requests.get(f"{live}/v1/datasets/{rows}", timeout=30).status_code == 404
    assert requests.get(f"{live}/v1/jobs/{job['id']}/result", timeout=30).status_code == 200
    assert requests.get(f"{live}/v1/datasets/{did}", timeout=30).status_code == 200


def test_a_fitted_model_predicts_after_its_dataset_is_deleted(live, blobs):
    """Predict needs the model and the new rows, not the training rows: deleting the dataset (allowed once
    its jobs are done) must not turn predict into a 404 about a dataset the request never named."""
    _, X, y = blobs
    did = upload(live, X, y)
    job = wait_done(live, submit(live, dataset_id=did, method="dcrc", n_clusters=3, scale="zscore",
                                 constraints={"triplets": _triplets(y, 60, np.random.default_rng(2))}).json()["id"])
    labels = _result(live, job)["labels"]
    assert requests.delete(f"{live}/v1/datasets/{did}", timeout=30).status_code == 204
    r = requests.post(f"{live}/v1/jobs/{job['id']}/predict", json={"data": X[:5].tolist()}, timeout=30)
    assert r.status_code == 202, r.text
    assert _result(live, wait_done(live, r.json()["id"]))["labels"] == labels[:5]
    bad = requests.post(f"{live}/v1/jobs/{job['id']}/predict", json={"data": [[1.0, 2.0, 3.0]]}, timeout=30)
    assert bad.status_code == 422 and "/data" in bad.json()["errors"]


def test_recon_returns_a_hierarchy_that_satisfies_the_triplets(live, blobs):
    did, X, y = blobs
    rel = [t[:3] if t[3] == "yes" else [t[0], t[2], t[1]] for t in _triplets(y, 40, np.random.default_rng(1))]
    job = wait_done(live, submit(live, dataset_id=did, method="recon", n_clusters=3,
                                 constraints={"relative": rel}).json()["id"])
    res = _result(live, job)
    Z = np.asarray(res["extras"]["linkage_matrix"])
    assert Z.shape == (len(y) - 1, 4) and is_valid_linkage(Z)
    assert res["extras"]["newick"].endswith(";")
    assert res["metrics"]["ari"] > 0.9


def test_recon_infeasible_triplets_kept_or_rejected(live, blobs):
    did, X, y = blobs
    rel = [[0, 1, 2], [0, 2, 1]]  # ab|c and ac|b: no tree has both
    rej = requests.post(f"{live}/v1/jobs", json={"dataset_id": did, "method": "recon", "n_clusters": 3,
                                                "constraints": {"relative": rel}, "on_conflict": "reject"},
                        timeout=30)
    assert rej.status_code == 422 and rej.json()["code"] == "contradictory_constraints"
    assert {c["index"] for c in rej.json()["relative"]["conflicting"]} == {0, 1}
    job = wait_done(live, submit(live, dataset_id=did, method="recon", n_clusters=3,
                                 constraints={"relative": rel}).json()["id"])
    res = _result(live, job)
    assert res["extras"]["feasible"] is False and len(res["extras"]["dropped_triplets"]["relative"]) == 1


def test_recon_reports_dropped_and_violated_constraints_in_the_clients_lists(live, blobs):
    """fit gets triplets, relative and the hierarchy's ab|c rows as one array: the result must not
    report rows of it (relative[0] came back as dropped row 2, a hierarchy row as an index past both lists)."""
    did, X, y = blobs
    c = {"triplets": [[3, 4, 5, "dont_know"], [0, 1, 2, "yes"]], "relative": [[0, 2, 1]]}
    res = _result(live, wait_done(live, submit(live, dataset_id=did, method="recon", n_clusters=3,
                                                  constraints=c).json()["id"]))
    extras = res["extras"]
    assert extras["feasible"] is False
    assert extras["conflict"] == {"triplets": [1], "relative": [0], "hierarchy": []}
    assert res["diagnostics"]["conflicting_triplets"] == extras["conflict"]
    assert res["diagnostics"]["dropped_triplets"] == extras["dropped_triplets"]
    dropped = extras["dropped_triplets"]
    assert len(dropped["triplets"]) + len(dropped["relative"]) == 1 and dropped["hierarchy"] == []
    # A caterpillar over five of ten random rows: its two outermost leaves are outlier branches of the cut,
    # re-attached to the nearest clusters, which breaks two of the hierarchy's ab|c.
    small = upload(live, np.random.default_rng(0).normal(size=(10, 2)))
    res = _result(live, wait_done(live, submit(live, dataset_id=small, method="recon", n_clusters=3,
                                                  constraints={"hierarchy": [0, [1, [2, [3, 4]]]]}).json()["id"]))
    viol = res["extras"]["cut_violations"]
    assert viol["triplets"] == [] and viol["relative"] == [] and len(viol["hierarchy"]) == 2
    lab = res["labels"]
    for a, b, c in viol["hierarchy"]:  # each an ab|c of the hierarchy that the labels break
        assert {a, b, c} <= set(range(5)) and lab[a] != lab[b] and lab[c] in (lab[a], lab[b])
    assert res["extras"]["dropped_triplets"] == {"triplets": [], "relative": [], "hierarchy": []}


def test_recon_from_a_client_hierarchy(live, blobs):
    did, X, y = blobs
    groups = [[int(i) for i in np.flatnonzero(y == k)] for k in range(3)]
    tree = [groups[0], [groups[1], groups[2]]]
    job = wait_done(live, submit(live, dataset_id=did, method="recon", n_clusters=3,
                                 constraints={"hierarchy": tree}).json()["id"])
    assert _result(live, job)["metrics"]["ari"] == 1.0


def test_recon_from_a_hierarchy_at_the_depth_limit_runs_on_the_worker(live):
    """The worker decodes the job record (hierarchy included) again: at the limit that must still work."""
    from clustering.validation import MAX_HIERARCHY_DEPTH

    n = MAX_HIERARCHY_DEPTH + 1
    tree = [0, 1]
    for i in range(2, n):  # a caterpillar: n - 1 = MAX_HIERARCHY_DEPTH levels
        tree = [tree, i]
    did = upload(live, (np.arange(n, dtype=float) ** 2)[:, None])  # centroid linkage agrees: a quick fit
    job = wait_done(live, submit(live, dataset_id=did, method="recon", n_clusters=2,
                                 constraints={"hierarchy": tree}).json()["id"])
    assert job["state"] == "SUCCEEDED", job["error"]
    labels = _result(live, job)["labels"]
    assert labels[:-1] == [labels[0]] * (n - 1) and labels[-1] != labels[0]  # the last leaf joins at the root


def test_ccskl_returns_beta_and_its_kernel(live, blobs):
    did, X, y = blobs
    rng = np.random.default_rng(4)
    pairs = rng.choice(len(y), size=(30, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    ml = [p.tolist() for p in pairs if y[p[0]] == y[p[1]]]
    cl = [p.tolist() for p in pairs if y[p[0]] != y[p[1]]]
    job = wait_done(live, submit(live, dataset_id=did, method="ccskl", n_clusters=3,
                                 params={"n_components": 10, "n_neighbors": 8},
                                 constraints={"must_link": ml, "cannot_link": cl}).json()["id"])
    res = _result(live, job)
    beta = np.asarray(res["extras"]["beta"])
    assert beta.shape == (10,) and (beta >= 0).all() and (np.diff(beta) <= 1e-12).all()
    assert res["metrics"]["ari"] > 0.9
    raw = requests.get(f"{live}{job['affinity_url']}?format=npz", timeout=30)
    import scipy.sparse as sp

    K = sp.load_npz(io.BytesIO(raw.content)).toarray()
    assert K.shape == (len(y), len(y)) and np.allclose(K, K.T)
    assert np.linalg.eigvalsh(K).min() > -1e-8  # a kernel: positive semi-definite
