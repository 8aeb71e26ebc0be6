"""Jobs: submit, wait (Retry-After, ETag, a progress bar), result, affinity, cancel, delete, list."""

from __future__ import annotations

import io
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from ._http import jsonable, retry_after_seconds, seg
from ._resource import Resource
from .datasets import Dataset, _pages, dataset_id, matrix
from .errors import JobFailed, Timeout

if TYPE_CHECKING:
    from scipy import sparse

    from ._http import Transport

#: States a job does not leave.
DONE_STATES = ("SUCCEEDED", "FAILED", "CANCELLED")


@dataclass(frozen=True)
class Progress:
    """A job's own account of how far it is.

    Attributes
    ----------
    fraction : float
        0 to 1.
    stage : str or None
        What runs now (``"queued"``, ``"fit"``, ...).
    message : str or None
    """

    fraction: float
    stage: str | None = None
    message: str | None = None


class Result:
    """A SUCCEEDED job's result (``GET /v1/jobs/{id}/result``).

    Attributes
    ----------
    raw : dict
        The whole answer; the properties below read it.
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw

    @property
    def labels(self) -> npt.NDArray[np.int64]:
        """ndarray of int64, shape (n_samples,): the cluster of each row, in row order."""
        return np.asarray(self.raw["labels"], dtype=np.int64)

    @property
    def metrics(self) -> dict[str, float] | None:
        """ARI, NMI, pairwise F-measure, V-measure, Jaccard against the dataset's labels (None without)."""
        return self.raw.get("metrics")

    @property
    def extras(self) -> dict[str, Any]:
        """Method-specific outputs (constraint scores, ReCon's dropped triplets, ...)."""
        return self.raw.get("extras") or {}

    @property
    def conflicts(self) -> list[dict[str, Any]]:
        """Cannot-links contradicting must-link chains (kept under ``on_conflict="keep"``)."""
        return self.raw.get("conflicts") or []

    @property
    def item_ids(self) -> list[str] | None:
        """The dataset's item ids, in row order (None when it has none)."""
        return self.raw.get("item_ids")

    @property
    def n_clusters(self) -> int:
        """Number of clusters."""
        return int(self.raw["n_clusters"])

    @property
    def constraint_satisfaction(self) -> float | None:
        """Fraction of the given pairwise constraints the labels honour (None without any)."""
        return self.raw.get("constraint_satisfaction")

    @property
    def timings(self) -> dict[str, float]:
        """Seconds per stage of the run."""
        return self.raw.get("timings") or {}

    def __repr__(self) -> str:
        return f"Result(job_id={self.raw.get('job_id')!r}, n_clusters={self.raw.get('n_clusters')})"


def _pairs(pairs: Any, width: int) -> list[list[Any]]:
    rows = jsonable(pairs)
    out = []
    for row in rows:
        row = list(row)
        out.append([int(v) for v in row[:width]] + row[width:])
    return out


def constraints_body(must_link: Any = None, cannot_link: Any = None, triplets: Any = None,
                     constraints: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The job body's ``constraints`` from the client's arguments.

    Parameters
    ----------
    must_link, cannot_link : array-like of shape (n_pairs, 2), optional
        0-based row indices of pairs in the same / in different clusters.
    triplets : sequence of [a, b, c, answer], optional
        "Is a closer to b than to c?" with answer ``"yes"``, ``"no"`` or ``"dont_know"``.
    constraints : mapping, optional
        More members in the wire form (``relative``, ``hierarchy``, ``must_link_weights``, ...);
        the three above win over the same members here.

    Returns
    -------
    dict or None
        None when no constraint was given.
    """
    body = dict(jsonable(dict(constraints or {})))
    for key, value, width in (("must_link", must_link, 2), ("cannot_link", cannot_link, 2),
                              ("triplets", triplets, 3)):
        if value is not None:
            body[key] = _pairs(value, width)
    return body or None


class Job(Resource):
    """A clustering job. Its state is read at creation and by :meth:`refresh` (and :meth:`wait`).

    Attributes
    ----------
    id : str
    raw : dict
        The job's last view (``GET /v1/jobs/{id}``).
    replayed : bool
        The submit was answered from an earlier request with the same ``Idempotency-Key`` (the
        job already existed: nothing was submitted twice).
    """

    def __init__(self, transport: Transport, data: dict[str, Any], replayed: bool = False) -> None:
        super().__init__(transport, data, replayed)
        self._etag: str | None = None
        self._retry_after: float | None = None

    @property
    def state(self) -> str:
        """QUEUED, RUNNING, SUCCEEDED, FAILED or CANCELLED (as of the last refresh)."""
        return str(self.raw["state"])

    @property
    def done(self) -> bool:
        """The state is final."""
        return self.state in DONE_STATES

    @property
    def error(self) -> dict[str, Any] | None:
        """The problem document of a FAILED job."""
        value: dict[str, Any] | None = self.raw.get("error")
        return value

    @property
    def dataset_id(self) -> str:
        """The dataset it runs on."""
        return str(self.raw["dataset_id"])

    @property
    def method(self) -> str:
        """The method id."""
        return str(self.raw["method"])

    @property
    def progress(self) -> Progress:
        """The job's progress as of the last refresh."""
        p = self.raw.get("progress") or {}
        return Progress(float(p.get("fraction") or 0.0), p.get("stage"), p.get("message"))

    def refresh(self) -> Job:
        """Read the job's state again (a conditional GET: unchanged, the service sends no body).

        Returns
        -------
        Job
            ``self``.
        """
        headers = {"If-None-Match": self._etag} if self._etag else None
        r = self._t.request("GET", f"/v1/jobs/{seg(self.id)}", headers=headers)
        if r.status_code != 304:
            self.raw = r.json()
            self._etag = r.headers.get("ETag")
        self._retry_after = retry_after_seconds(r)
        return self

    def wait(self, progress: bool = True, timeout: float | None = None, poll_interval: float = 1.0) -> Result:
        """Wait until the job is done and return its result.

        Polls ``GET /v1/jobs/{id}`` as often as its ``Retry-After`` says (``poll_interval`` when it
        says nothing). A lost connection is retried (``Shoal(max_retries=...)``) without submitting
        anything again; if the service stays away longer, the error propagates and calling ``wait``
        again (or ``shoal.jobs.get(id).wait()``, from another process) resumes.

        Parameters
        ----------
        progress : bool
            Draw a bar from the job's own progress (needs ``tqdm``, the ``tqdm`` extra; without it
            nothing is drawn).
        timeout : float, optional
            Seconds to wait at most; None waits as long as the job runs.
        poll_interval : float
            Seconds between polls when the answer has no ``Retry-After``.

        Returns
        -------
        Result

        Raises
        ------
        JobFailed
            The job ended FAILED (its ``error`` in ``problem``) or CANCELLED.
        Timeout
            Not done after ``timeout`` seconds (the job goes on: wait again or :meth:`cancel` it).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        bar = _progress_bar(self) if progress else None
        try:
            while True:
                self.refresh()
                if bar is not None:
                    _draw(bar, self.progress)
                if self.done:
                    break
                pause = self._retry_after if self._retry_after is not None else poll_interval
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise Timeout(message=f"job {self.id} is still {self.state} after {timeout} s")
                    pause = min(pause, left)
                time.sleep(max(pause, 0.05))
        finally:
            if bar is not None:
                bar.close()
        if self.state != "SUCCEEDED":
            raise JobFailed(self.id, self.state, self.error)
        return self.result()

    def result(self) -> Result:
        """The result of a SUCCEEDED job (:class:`Conflict` ``result_not_available`` before)."""
        return Result(self._t.request("GET", f"/v1/jobs/{seg(self.id)}/result").json())

    def affinity(self, top_k: int | None = None) -> sparse.csr_matrix | dict[str, Any]:
        """The learned affinity (or kernel) matrix of a SUCCEEDED job.

        Parameters
        ----------
        top_k : int, optional
            None: the whole stored matrix (``?format=npz``) as a ``scipy.sparse.csr_matrix`` of shape
            (n_samples, n_samples) (needs ``scipy``, the ``scipy`` extra). 1-100: the JSON form, each
            row's ``top_k`` largest entries off the diagonal (``indices``, ``values``: lists per row).

        Returns
        -------
        scipy.sparse.csr_matrix or dict

        Raises
        ------
        NotFound
            The method learns no matrix (``GET /v1/methods`` lists ``affinity`` in its outputs).
        ImportError
            ``top_k`` is None and scipy is not installed.
        """
        if top_k is not None:
            return self._t.request("GET", f"/v1/jobs/{seg(self.id)}/affinity",
                                   params={"format": "json", "top_k": int(top_k)}).json()
        try:
            from scipy import sparse
        except ImportError as exc:
            raise ImportError("Job.affinity() needs scipy: pip install 'shoal-client[scipy]', "
                              "or ask for the JSON form with affinity(top_k=10)") from exc
        r = self._t.request("GET", f"/v1/jobs/{seg(self.id)}/affinity", params={"format": "npz"})
        return sparse.load_npz(io.BytesIO(r.content)).tocsr()

    def cancel(self) -> Job:
        """Ask the job to stop (a QUEUED job is CANCELLED at once, a RUNNING one soon); returns ``self``."""
        self.raw = self._t.request("POST", f"/v1/jobs/{seg(self.id)}/cancel", safe=True).json()
        self._etag = None
        return self

    def delete(self) -> None:
        """Delete a finished job with its result (:class:`Conflict` ``job_not_finished`` while it runs)."""
        self._t.request("DELETE", f"/v1/jobs/{seg(self.id)}", gone_ok=True)

    def predict(self, X: Any, item_ids: Sequence[str] | None = None, idempotency_key: str | None = None) -> Job:
        """Assign new rows with the job's fitted model (methods with ``predict`` in their outputs: DCRC).

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            Rows of the fitted dataset's width.
        item_ids : sequence of str, optional
        idempotency_key : str, optional
            Default: a new UUID, reused by every retry of this request.

        Returns
        -------
        Job
            The predict job; its :meth:`wait` returns the new rows' labels.
        """
        body: dict[str, Any] = {"data": matrix(X).tolist()}
        if item_ids is not None:
            body["item_ids"] = [str(i) for i in item_ids]
        r = self._t.request("POST", f"/v1/jobs/{seg(self.id)}/predict", json=body,
                            idempotency_key=idempotency_key or str(uuid.uuid4()))
        return Job(self._t, r.json(), r.headers.get("Idempotent-Replayed") == "true")

    def __repr__(self) -> str:
        return f"Job(id={self.id!r}, method={self.raw.get('method')!r}, state={self.state!r})"


def _progress_bar(job: Job) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=100, desc=f"{job.method} {job.id}", leave=False,
                bar_format="{l_bar}{bar}| {elapsed}{postfix}")


def _draw(bar: Any, p: Progress) -> None:
    bar.n = round(100 * min(max(p.fraction, 0.0), 1.0))
    bar.set_postfix_str(p.stage or "", refresh=False)
    bar.refresh()


class Jobs:
    """``shoal.jobs``: ``POST/GET /v1/jobs`` and one job's routes."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def submit(self, dataset: Dataset | str, method: str = "cop_rf", n_clusters: int = 3,
               must_link: Any = None, cannot_link: Any = None, triplets: Any = None,
               params: Mapping[str, Any] | None = None, random_state: int | None = None,
               callback_url: str | None = None, idempotency_key: str | None = None, *,
               constraints: Mapping[str, Any] | None = None, preset: str | None = None,
               on_conflict: str | None = None, scale: str | None = None) -> Job:
        """Submit a clustering job (``POST /v1/jobs``); it runs on a worker.

        Parameters
        ----------
        dataset : Dataset or str
            The dataset or its id.
        method : str
            A method id from ``GET /v1/methods`` (``shoal.methods()``): ``cop_rf``, ``e2cp``,
            ``dcrc``, ``recon``, ``ccskl``, ...
        n_clusters : int
            K, 2 <= K <= n_samples.
        must_link, cannot_link : array-like of shape (n_pairs, 2), optional
            0-based row pairs in the same / in different clusters (the body's
            ``constraints.must_link`` / ``constraints.cannot_link``).
        triplets : sequence of [a, b, c, answer], optional
            Relative constraints "is a closer to b than to c?", answer ``"yes"`` | ``"no"`` |
            ``"dont_know"`` (``constraints.triplets``; methods dcrc, recon, ...).
        params : mapping, optional
            Method parameters, validated against the method's schema.
        random_state : int, optional
            Seed, 0 to 2**32 - 1 (the service's default: 0).
        callback_url : str, optional
            Gets a signed webhook event when the job ends.
        idempotency_key : str, optional
            Default: a new UUID for this call, sent with every retry of it, so that a submit whose
            answer was lost is answered from the first request instead of starting a second job.
        constraints : mapping, optional
            Further constraint members in their wire form (``relative``, ``hierarchy``,
            ``must_link_weights``, ``cannot_link_weights``).
        preset : str, optional
            A preset of the method (``GET /v1/methods``).
        on_conflict : {"keep", "reject"}, optional
            Contradictory constraints: kept and reported (default), or a 422.
        scale : {"none", "zscore"}, optional
            Feature scaling by the worker.

        Returns
        -------
        Job
            QUEUED (or later): call :meth:`Job.wait`.

        Raises
        ------
        NotFound
            Unknown dataset (``field`` ``/dataset_id``).
        ValidationFailed
            Unknown method or parameter, ``n_clusters`` out of range, bad constraints, ...
            (``field`` names it: ``/params/n_estimators``, ``/constraints/must_link/0``, ...).
        PayloadTooLarge
            More constraints than the service takes.
        """
        body: dict[str, Any] = {"dataset_id": dataset_id(dataset), "method": method, "n_clusters": int(n_clusters)}
        cons = constraints_body(must_link, cannot_link, triplets, constraints)
        optional = {"constraints": cons, "params": jsonable(dict(params)) if params is not None else None,
                    "random_state": None if random_state is None else int(random_state),
                    "callback_url": callback_url, "preset": preset, "on_conflict": on_conflict, "scale": scale}
        body.update({k: v for k, v in optional.items() if v is not None})
        r = self._t.request("POST", "/v1/jobs", json=body, idempotency_key=idempotency_key or str(uuid.uuid4()))
        return Job(self._t, r.json(), r.headers.get("Idempotent-Replayed") == "true")

    def get(self, job_id: str) -> Job:
        """A job by id (:class:`NotFound` for an unknown or expired one)."""
        return Job(self._t, {"id": job_id, "state": "QUEUED"}).refresh()

    def list(self, state: str | None = None, dataset: Dataset | str | None = None,
             limit: int | None = None) -> list[Job]:
        """Jobs, newest first (every page, or the first ``limit``).

        Parameters
        ----------
        state : str, optional
            Only jobs in this state.
        dataset : Dataset or str, optional
            Only jobs on this dataset (also after it was deleted).
        limit : int, optional
        """
        params = {"state": state, "dataset_id": None if dataset is None else dataset_id(dataset)}
        return [Job(self._t, rec) for rec in _pages(self._t, "/v1/jobs", "jobs", params, limit)]
