"""Datasets: upload a matrix (with optional labels and item ids), read, list, delete."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from ._http import jsonable, seg
from ._resource import Resource

if TYPE_CHECKING:
    from ._http import Transport


class Dataset(Resource):
    """A dataset stored by the service (the matrix stays there; this holds its metadata).

    Attributes
    ----------
    id : str
        ``ds_...``: what jobs and sessions name.
    n_samples, n_features : int
        Shape of the stored matrix.
    name : str or None
    has_labels : bool
        Ground-truth labels were given: results then carry metrics (ARI, NMI, ...).
    has_item_ids : bool
    checksum : str
        sha256 of the float64 matrix bytes.
    items : sequence or None
        The ``items`` given to :meth:`Datasets.create` (kept here, never sent): what a person is
        shown for each row; :class:`shoal_client.Question` hands out those of its rows.
    raw : dict
        The service's whole answer.
    """

    def __init__(self, transport: Transport, data: dict[str, Any], items: Sequence[Any] | None = None) -> None:
        super().__init__(transport, data)
        self.items = items

    @property
    def n_samples(self) -> int:
        """Rows."""
        return int(self.raw["n_samples"])

    @property
    def n_features(self) -> int:
        """Columns."""
        return int(self.raw["n_features"])

    @property
    def name(self) -> str | None:
        """The name given at upload."""
        value: str | None = self.raw.get("name")
        return value

    @property
    def has_labels(self) -> bool:
        """Ground truth given."""
        return bool(self.raw.get("has_labels"))

    @property
    def has_item_ids(self) -> bool:
        """Item ids given."""
        return bool(self.raw.get("has_item_ids"))

    @property
    def checksum(self) -> str | None:
        """Sha256 of the float64 matrix."""
        value: str | None = self.raw.get("checksum")
        return value

    def delete(self) -> None:
        """Delete the dataset (finished jobs keep their results).

        Raises
        ------
        Conflict
            ``dataset_in_use``: jobs on it are QUEUED or RUNNING or sessions on it are open
            (``problem["jobs"]``, ``problem["sessions"]`` list them).
        """
        self._t.request("DELETE", f"/v1/datasets/{seg(self.id)}", gone_ok=True)

    def __repr__(self) -> str:
        return f"Dataset(id={self.id!r}, n_samples={self.n_samples}, n_features={self.n_features})"


def matrix(X: Any, name: str = "X") -> npt.NDArray[np.float64]:
    """``X`` as a 2-D float64 array of finite numbers (JSON has no NaN or infinity to send).

    Raises
    ------
    ValueError
        ``X`` is not 2-D, or a cell is NaN or infinite (the message names the first one).
    """
    A = np.asarray(X, dtype=float)
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {A.shape}")
    bad = np.argwhere(~np.isfinite(A))
    if len(bad):
        r, c = (int(v) for v in bad[0])
        raise ValueError(f"{name} has {len(bad)} NaN or infinite value(s), the first at row {r}, column {c}")
    return A


def dataset_id(dataset: Dataset | str) -> str:
    """The id of a :class:`Dataset` or of an id string."""
    return dataset.id if isinstance(dataset, Dataset) else str(dataset)


class Datasets:
    """``shoal.datasets``: ``POST/GET/DELETE /v1/datasets``."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def create(self, X: Any, y: Sequence[Any] | None = None, item_ids: Sequence[str] | None = None,
               items: Sequence[Any] | None = None, name: str | None = None,
               idempotency_key: str | None = None) -> Dataset:
        """Upload a matrix.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite numbers within ±1e100 (a pandas DataFrame or a list of lists works too).
        y : array-like of shape (n_samples,), optional
            Ground-truth labels (ints or strings): results then report ARI, NMI, ... against them.
        item_ids : sequence of str, optional
            Unique ids of the rows (1-200 characters each); results, conflicts and questions name them.
        items : sequence, optional
            What each row shows a person (text, an image URL, ...). Kept by the returned object only,
            never sent: :meth:`shoal_client.Session.questions` yields questions whose ``objects`` are
            the items of their rows.
        name : str, optional
            At most 200 characters.
        idempotency_key : str, optional
            Default: a new UUID, sent with every retry of this upload so that one upload is stored
            once however many attempts it takes.

        Returns
        -------
        Dataset

        Raises
        ------
        ValueError
            ``X`` is not 2-D or holds NaN or infinity, or ``items`` does not have one entry per row.
        ValidationFailed
            422: NaN or infinite values, ragged rows, labels or ids of the wrong length, ...
            (``errors`` names the member, e.g. ``/data``).
        PayloadTooLarge
            413: more rows, columns or cells than the service takes.
        """
        A = matrix(X)
        if items is not None and len(items) != A.shape[0]:
            raise ValueError(f"items has {len(items)} entries for {A.shape[0]} rows")
        body: dict[str, Any] = {"data": A.tolist()}
        if y is not None:
            body["labels"] = jsonable(np.asarray(y).tolist() if isinstance(y, np.ndarray) else list(y))
        if item_ids is not None:
            body["item_ids"] = [str(i) for i in item_ids]
        if name is not None:
            body["name"] = name
        r = self._t.request("POST", "/v1/datasets", json=body,
                            idempotency_key=idempotency_key or str(uuid.uuid4()))
        return Dataset(self._t, r.json(), items)

    def get(self, dataset_id: str) -> Dataset:
        """Metadata of a stored dataset; raises :class:`NotFound` for an unknown or expired id."""
        return Dataset(self._t, self._t.request("GET", f"/v1/datasets/{seg(dataset_id)}").json())

    def list(self, limit: int | None = None) -> list[Dataset]:
        """Stored datasets, newest first (every page, or the first ``limit``)."""
        return [Dataset(self._t, d) for d in _pages(self._t, "/v1/datasets", "datasets", {}, limit)]

    def delete(self, dataset: Dataset | str) -> None:
        """Delete a dataset given as object or id (see :meth:`Dataset.delete`)."""
        self._t.request("DELETE", f"/v1/datasets/{seg(dataset_id(dataset))}", gone_ok=True)


def _pages(t: Transport, path: str, key: str, params: dict[str, Any], limit: int | None) -> Iterator[dict[str, Any]]:
    """The records of a cursor-paginated list endpoint, page after page."""
    token: str | None = None
    seen = 0
    while True:
        page = t.request("GET", path, params={**params, "page_token": token, "page_size": 100}).json()
        for rec in page[key]:
            if limit is not None and seen >= limit:
                return
            seen += 1
            yield rec
        token = page.get("next_page_token")
        if not token:
            return
