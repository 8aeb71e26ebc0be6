"""``ShoalClusterer``: a scikit-learn-compatible estimator that clusters on a Shoal service."""

from __future__ import annotations

import inspect
from typing import Any, Mapping

import numpy as np
import numpy.typing as npt

from .client import Shoal
from .datasets import matrix

try:
    from sklearn.base import BaseEstimator, ClusterMixin
except ImportError:  # scikit-learn is optional: the same two methods, by hand
    class BaseEstimator:  # type: ignore[no-redef]
        """get_params / set_params over the ``__init__`` parameters (scikit-learn's contract)."""

        @classmethod
        def _get_param_names(cls) -> list[str]:
            sig = inspect.signature(cls.__init__)
            return sorted(p for p in sig.parameters if p != "self")

        def get_params(self, deep: bool = True) -> dict[str, Any]:
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params: Any) -> Any:
            valid = self._get_param_names()
            for name, value in params.items():
                if name not in valid:
                    raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}")
                setattr(self, name, value)
            return self

    class ClusterMixin:  # type: ignore[no-redef]
        """Marker, as scikit-learn's."""

        _estimator_type = "clusterer"


class ShoalClusterer(ClusterMixin, BaseEstimator):
    """Constrained clustering on a Shoal service, as a scikit-learn estimator.

    ``fit`` uploads ``X``, runs one job of ``method`` and waits for it; the labels come back as
    ``labels_``. The dataset and the job stay on the service (their ids are kept) until their TTL.

    Parameters
    ----------
    base_url : str
        Where the service listens.
    method : str
        A method id of ``GET /v1/methods`` (``cop_rf``, ``e2cp``, ``ccskl``, ...).
    n_clusters : int
        K.
    params : dict, optional
        The method's parameters.
    random_state : int, numpy.random.RandomState or None
        Seed of the job (None: the service's default, 0; a RandomState draws one).
    api_key : str, optional
        ``Authorization: Bearer`` key.

    Attributes
    ----------
    labels_ : ndarray of int64, shape (n_samples,)
        The cluster of each row.
    dataset_id_ : str
        The uploaded dataset.
    job_id_ : str
        The job that computed ``labels_``.
    result_ : Result
        The job's whole result (metrics, extras, conflicts).
    n_features_in_ : int

    Examples
    --------
    ::

        from sklearn.datasets import load_iris
        from shoal_client import ShoalClusterer

        X, y = load_iris(return_X_y=True)
        est = ShoalClusterer("http://127.0.0.1:8000", method="cop_rf", n_clusters=3)
        labels = est.fit_predict(X, must_link=[[0, 1]], cannot_link=[[0, 100]])
    """

    def __init__(self, base_url: str, method: str = "cop_rf", n_clusters: int = 8,
                 params: Mapping[str, Any] | None = None, random_state: Any = None,
                 api_key: str | None = None) -> None:
        self.base_url = base_url
        self.method = method
        self.n_clusters = n_clusters
        self.params = params
        self.random_state = random_state
        self.api_key = api_key

    def fit(self, X: Any, y: Any = None, must_link: Any = None, cannot_link: Any = None) -> ShoalClusterer:
        """Upload ``X``, run the job and keep its labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
            Not sent (scikit-learn's convention for clusterers); use ``Shoal.datasets.create`` to
            get metrics against labels.
        must_link, cannot_link : array-like of shape (n_pairs, 2), optional
            0-based row pairs in the same / in different clusters.

        Returns
        -------
        self

        Raises
        ------
        ShoalError
            What the service answered (:class:`ValidationFailed` for a bad parameter, ...).
        JobFailed
            The job ended FAILED.
        """
        A = matrix(X)
        with Shoal(self.base_url, api_key=self.api_key) as shoal:
            ds = shoal.datasets.create(A)
            job = shoal.jobs.submit(ds, method=self.method, n_clusters=self.n_clusters, must_link=must_link,
                                    cannot_link=cannot_link, params=self.params,
                                    random_state=self._seed())
            self.result_ = job.wait(progress=False)
        self.dataset_id_, self.job_id_ = ds.id, job.id
        self.n_features_in_ = A.shape[1]
        self.labels_ = self.result_.labels
        return self

    def fit_predict(self, X: Any, y: Any = None, must_link: Any = None, cannot_link: Any = None) -> npt.NDArray[np.int64]:
        """:meth:`fit`, then ``labels_``."""
        return self.fit(X, y, must_link=must_link, cannot_link=cannot_link).labels_

    def _seed(self) -> int | None:
        rs = self.random_state
        if rs is None or isinstance(rs, (int, np.integer)):
            return None if rs is None else int(rs)
        if hasattr(rs, "randint"):
            return int(rs.randint(0, 2**32 - 1))
        raise ValueError(f"random_state must be None, an int or a RandomState, not {rs!r}")
