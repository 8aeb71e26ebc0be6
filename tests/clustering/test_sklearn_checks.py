"""scikit-learn's own estimator checks (``parametrize_with_checks``) over every public estimator.

A check may fail only where it is declared below with a reason that holds; each
declared failure is verified to still fail (scikit-learn reports an expected
failure that passes as an error), so the list cannot go stale.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from clustering.baselines._kmeans import KMeans

from .test_sklearn_conventions import CASES

#: Every estimator a method card names: the public ones, and the kmeans reference method's.
ESTIMATORS = [make() for make, _ in CASES.values()] + [KMeans(3, n_init=2, random_state=0)]

#: Checks that set ``n_clusters=1``: a clustering into one cluster is refused by design
#: (``n_clusters`` >= 2 in every method's parameter constraints and in ``GET /v1/methods``):
#: the spectral methods need at least two eigenvectors and a constraint can only be
#: violated between two clusters.
_ONE_CLUSTER = "n_clusters=1 is refused by design (n_clusters >= 2: one cluster satisfies no cannot-link)"
_ONE_CLUSTER_CHECKS = ("check_dont_overwrite_parameters", "check_methods_subset_invariance",
                       "check_fit2d_1feature", "check_fit2d_predict1d")
#: Estimators that validate their parameters before the data, so the one-sample
#: check meets the n_clusters=1 refusal first.
_PARAMS_FIRST = {"ActiveDCRC", "CCSKL", "COPRF", "DCRC", "URASC"}
_OBJECT_CELLS = ("a cell that is not a number is refused with InvalidInputError naming the cell "
                 "(a ValueError, answered as a 422 over HTTP), not numpy's TypeError")
#: URASC's ``score`` parameter (the paper's selection score: product, gradient or entropy)
#: shadows the optional ``score(X, y)`` method these checks call.
_SCORE_PARAM = "URASC's parameter `score` (its query-selection score, a wire name) is not a score method"


def expected_failures(estimator):
    """The checks ``estimator`` is declared to fail, with the reason for each.

    Parameters
    ----------
    estimator : BaseEstimator
        One of the estimators of ``CASES``.

    Returns
    -------
    dict of str to str
        Check name -> reason.
    """
    name = type(estimator).__name__
    out = {"check_dtype_object": _OBJECT_CELLS}
    if "n_clusters" in estimator.get_params() and name != "ReCon":
        out.update(dict.fromkeys(_ONE_CLUSTER_CHECKS, _ONE_CLUSTER))
    if name in _PARAMS_FIRST:
        out["check_fit2d_1sample"] = _ONE_CLUSTER
    if name == "URASC":
        out.update(dict.fromkeys(("check_fit_score_takes_y", "check_pipeline_consistency",
                                  "check_n_features_in_after_fitting"), _SCORE_PARAM))
    return out


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failures)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
