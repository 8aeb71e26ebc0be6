"""Thin Celery tasks: load by id -> build estimator -> fit -> save -> final state."""

import json
import logging
import threading
import time
import uuid

import numpy as np
import redis
import scipy.sparse as sp
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

from clustering._metrics import clustering_scores, constraint_satisfaction, violated_constraints
from clustering.cards import CARDS
from clustering.exceptions import InfeasibleConstraintsError, InvalidInputError

from . import fair, liveness, projection, registry
from .callbacks import CallbackRefused, pinned_address, post_pinned
from .celery_app import app
from .records import job_event, problem
from .webhook_signing import sign_webhook
from .store import Store

log = logging.getLogger(__name__)

# Affinities up to this many rows are stored whole; larger ones as top-k rows.
FULL_AFFINITY_LIMIT = 2000
STORED_TOP_K = 100

_store = None


def get_store():
    global _store
    if _store is None:
        _store = Store.from_settings(app.shoal_settings)
    return _store


class JobCancelled(Exception):
    """Raised from the progress callback when a client cancelled the job."""


#: Redis not answering (restarting, loading its data, failing over, unreachable); ``BusyLoadingError``
#: is a ``ConnectionError``.
REDIS_DOWN = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def through_outage(call, *args, **kwargs):
    """``call(*args, **kwargs)``, tried again until Redis answers.

    A job's inputs, result and end live in Redis, which is also the broker:
    while it is away nothing else can happen, and a job whose end is not
    written stays RUNNING under a live worker, which no other worker takes
    over, for ``hard_time_limit + visibility_timeout``. So the task waits for
    Redis (doubling pauses up to 5 s) instead of failing; the task's time
    limits bound the wait (a soft limit reached in it ends the job FAILED,
    ``time_limit``, once Redis answers, :func:`run_job`; a hard limit
    reached in it ends the job from the worker's main process once Redis
    answers, :func:`_end_job_at_hard_limit`).

    Parameters
    ----------
    call : callable
        A store method.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    object
        What ``call`` returns.
    """
    pause = 0.1
    while True:
        try:
            return call(*args, **kwargs)
        except REDIS_DOWN as exc:
            log.warning("Redis unreachable (%s): %s again in %.1f s", exc, getattr(call, "__name__", call), pause)
            time.sleep(pause)
            pause = min(2 * pause, 5.0)


def through_outage_past_soft_limit(call, *args, **kwargs):
    """:func:`through_outage`, waiting on for Redis when the soft time limit is reached in its wait.

    For the steps that end a piece of work already done or decided (a
    job's end, :func:`end_job_past_soft_limit`; a session pass's end and
    handing its slot on, :mod:`workers.session_tasks`): the soft limit's
    exception ended the task there, leaving them undone. ``call`` is tried
    again with the same arguments, as after a lost reply; the hard time
    limit still bounds the wait.

    Parameters
    ----------
    call : callable
        A store method (or function) safe to call again after a lost reply.
    *args, **kwargs
        Its arguments.

    Returns
    -------
    object
        What ``call`` returns.
    """
    try:
        return through_outage(call, *args, **kwargs)
    except SoftTimeLimitExceeded:
        log.warning("soft time limit reached waiting for Redis: %s waits on", getattr(call, "__name__", call))
        return through_outage(call, *args, **kwargs)


def end_job(store, job_id, state, *, error=None, task_id=None, token=None):
    """:meth:`Store.finish_job` through a Redis outage, as :func:`through_outage`, without losing its event.

    A write whose reply a Redis restart lost is tried again (by redis-py,
    whose retry finds its WATCH gone, or by :func:`through_outage`), finds
    the job already ended by that write, and ``finish_job`` answers None, so
    the caller sent no event. When the job stands ended under this call's
    ``token`` after a None, that record is returned, as the write would have
    returned it. Another end is not taken for this one, even of the same
    state and error: a client's cancel that read the job QUEUED just before
    the worker started it ends it CANCELLED (and sends its event) while the
    worker runs, and the worker, seeing the cancel flag, took that end for
    its own and sent the event a second time.

    Parameters
    ----------
    store : workers.store.Store
    job_id : str
    state : {"SUCCEEDED", "FAILED", "CANCELLED"}
    error : dict or None
        The problem object of a failure.
    task_id : str, optional
        End the job only if it is dispatched to this task
        (:meth:`Store.finish_job`); None: not checked.
    token : str, optional
        The id of this end (:meth:`Store.finish_job`), the same on every try
        of it; None: a new one.

    Returns
    -------
    dict or None
        The ended record; None if the job was unknown or another end stands.
    """
    token = token or uuid.uuid4().hex
    rec = through_outage(store.finish_job, job_id, state, error=error, task_id=task_id, token=token)
    if rec is None:
        job = through_outage(store.get_job, job_id)
        if job is not None and job["state"] == state and job.get("end") == token:
            return job
    return rec


def end_job_past_soft_limit(store, job_id, state, *, error=None, task_id=None):
    """:func:`end_job`, waiting on for Redis when the soft time limit is reached in its wait.

    The soft limit's exception, raised in :func:`through_outage`'s wait,
    used to end the task with the job's end unwritten: RUNNING under a live
    worker (which nobody takes over) until a read failed it as
    ``worker_lost``, ``hard_time_limit + visibility_timeout`` later. The
    same end is written instead (a write whose reply was lost is found by
    :func:`end_job`); the hard time limit still bounds the wait
    (:func:`through_outage_past_soft_limit`), under one ``token`` for every
    try.

    Parameters
    ----------
    store : workers.store.Store
    job_id : str
    state : {"SUCCEEDED", "FAILED", "CANCELLED"}
    error : dict or None
        The problem object of a failure.
    task_id : str, optional
        End the job only if it is dispatched to this task; None: not checked.

    Returns
    -------
    dict or None
        The ended record; None if the job was unknown or another end stands.
    """
    return through_outage_past_soft_limit(end_job, store, job_id, state, error=error, task_id=task_id,
                                          token=uuid.uuid4().hex)


def report_progress(store, job_id, fraction, stage):
    """:meth:`Store.set_progress`, skipped (logged) while Redis is unreachable: the job goes on.

    Parameters
    ----------
    store : workers.store.Store
    job_id : str
    fraction : float
    stage : str
    """
    try:
        store.set_progress(job_id, fraction, stage)
    except REDIS_DOWN as exc:
        log.warning("job %s: progress not reported, Redis unreachable: %s", job_id, exc)


def make_callback(store, job_id, interval):
    """``callback(stage, fraction)`` for estimators: throttled progress + cancellation.

    Both are best effort while Redis is unreachable: the fit goes on, and a
    later call reports and checks again (a failed progress write used to
    fail the job, and then the job's end could not be written either).
    """
    state = {"last": 0.0, "last_cancel_check": 0.0}

    def callback(stage, fraction):
        now = time.monotonic()
        if now - state["last_cancel_check"] >= 0.2:
            state["last_cancel_check"] = now
            try:
                cancelled = store.cancel_requested(job_id)
            except REDIS_DOWN:
                cancelled = False
            if cancelled:
                raise JobCancelled(job_id)
        if now - state["last"] >= interval:
            state["last"] = now
            report_progress(store, job_id, 0.05 + 0.9 * float(fraction), str(stage))

    return callback


def _top_k_from_blocks(blocks, n, k):
    """CSR of each row's ``k`` largest off-diagonal entries from dense row blocks.

    ``blocks`` yields ``(first_row, block)`` with ``block`` of shape (b, n),
    writable (its diagonal entries are overwritten).
    """
    rows, cols, vals = [], [], []
    for lo, S in blocks:
        S[np.arange(S.shape[0]), np.arange(lo, lo + S.shape[0])] = -np.inf
        sel = np.argpartition(-S, k - 1, axis=1)[:, :k]
        rows.append(np.repeat(np.arange(lo, lo + S.shape[0]), k))
        cols.append(sel.ravel())
        vals.append(np.take_along_axis(S, sel, axis=1).ravel())
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))


def top_k_rows(M, k, block=1024):
    """Keep each row's ``k`` largest off-diagonal entries (CSR), for large learned matrices."""
    n = M.shape[0]
    k = min(k, n - 1)
    if not sp.issparse(M):
        M = np.asarray(M)
        return _top_k_from_blocks(((lo, M[lo:lo + block].copy()) for lo in range(0, n, block)), n, k)
    M = sp.csr_matrix(M)
    rows, cols, vals = [], [], []
    for i in range(n):
        start, end = M.indptr[i], M.indptr[i + 1]
        d, c = M.data[start:end], M.indices[start:end]
        keep = c != i
        d, c = d[keep], c[keep]
        if d.size > k:
            sel = np.argpartition(-d, k - 1)[:k]
            d, c = d[sel], c[sel]
        rows.append(np.full(d.size, i))
        cols.append(c)
        vals.append(d)
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))


def top_k_rows_from_factor(E, k, block=1024):
    """Each row's ``k`` largest off-diagonal entries of ``E E^T`` (CSR), blockwise.

    Never holds more than ``block x n`` entries, so a 20000-row kernel costs
    about 160 MB at a time instead of 3.2 GB.
    """
    n = E.shape[0]
    return _top_k_from_blocks(((lo, E[lo:lo + block] @ E.T) for lo in range(0, n, block)), n, min(k, n - 1))


#: Above this many rows the stored kernel of a factor (CCSKL's ``E E^T``) keeps each row's entries
#: over its affinity graph's neighbours (:func:`top_k_on_pattern`): every row against every other
#: would be n^2 products, 10^12 at 1 000 000 rows (and a block of 1024 rows 8 GB); at 100 000 rows
#: x 20 columns it took 245 s of a 291 s job, more than the whole job at 250 000 rows (162 s).
FACTOR_PATTERN_ROWS = 50_000


def top_k_on_pattern(E, pattern, k, block=65536):
    """Each row's ``k`` largest off-diagonal entries of ``E E^T`` among the non-zeros of ``pattern`` (CSR).

    Parameters
    ----------
    E : ndarray of shape (n, m)
    pattern : sparse matrix of shape (n, n)
        Which entries to score, e.g. the method's kNN affinity graph (about 2 k_graph per row).
    k : int
    block : int, default=65536
        Rows scored at a time (their pattern's entries times ``m`` floats).

    Returns
    -------
    csr_matrix of shape (n, n), float64
        At most ``k`` entries per row; ``O(nnz(pattern) m)`` work.
    """
    P = sp.csr_matrix(pattern)
    n = E.shape[0]
    rows, cols, vals = [], [], []
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        c = P.indices[P.indptr[lo]:P.indptr[hi]].astype(np.int64)
        r = np.repeat(np.arange(lo, hi), np.diff(P.indptr[lo:hi + 1]))
        keep = r != c
        r, c = r[keep], c[keep]
        rows.append(r)
        cols.append(c)
        vals.append(np.einsum("ij,ij->i", E[r], E[c]))
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    order = np.lexsort((-v, r))
    r, c, v = r[order], c[order], v[order]
    first = np.searchsorted(r, r, side="left")
    keep = np.arange(r.size) - first < k
    return sp.csr_matrix((v[keep], (r[keep], c[keep])), shape=(n, n))


def zscore_stats(X):
    """Column means and standard deviations of ``X``, computed without overflow.

    Each column is divided by its largest magnitude first, so squaring the
    deviations cannot overflow even for values near float64's limit (``np.std``
    of ``normal * 1e300`` is inf, and z-scoring by it made every value 0).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
        Finite values.

    Returns
    -------
    mean : ndarray of shape (n_features,), float64
    std : ndarray of shape (n_features,), float64
        Positive; 1.0 for a constant column (which then z-scores to 0).
    """
    peak = np.abs(X).max(axis=0, initial=0.0)
    peak = np.where(peak > 0, peak, 1.0)
    scaled = X / peak
    mean, std = scaled.mean(axis=0) * peak, scaled.std(axis=0) * peak
    return mean, np.where(std > 0, std, 1.0)


def zscore(X, mean=None, std=None):
    """Standardise columns (constant columns become 0); returns a new array.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    mean, std : array-like of shape (n_features,) or None
        A training set's statistics (:func:`zscore_stats`) to reuse, as for
        predict; None: those of ``X``.

    Returns
    -------
    ndarray of shape (n_samples, n_features), float64
    """
    if mean is None:
        mean, std = zscore_stats(X)
    return (X - np.asarray(mean)) / np.asarray(std)


def _label_codes(labels):
    _, codes = np.unique(np.asarray([str(v) for v in labels]), return_inverse=True)
    return codes


def build_result(job, spec, estimator, X, labels_true, item_ids, fit_seconds, queued_seconds):
    """The result document for ``GET /v1/jobs/{id}/result``."""
    method = job["method"]
    labels = np.asarray(estimator.labels_, dtype=np.int64)
    constraints = spec.get("constraints") or {}
    pairs, kind, _ = registry.pairwise_arrays(constraints)
    sat = constraint_satisfaction(labels, pairs, kind)
    violated = None
    if len(pairs):
        violated = registry.positions_by_kind(violated_constraints(labels, pairs, kind), constraints)
    conflicts = spec.get("conflicts") or []
    if item_ids is not None:
        for c in conflicts:
            c["cannot_link_item_ids"] = [item_ids[i] for i in c["cannot_link"]]
            c["must_link_chain_item_ids"] = [item_ids[i] for i in c["must_link_chain"]]
    n_clusters = int(getattr(estimator, "n_clusters_", len(np.unique(labels))))
    result = {
        "job_id": job["id"],
        "method": method,
        "labels": labels.tolist(),
        "item_ids": item_ids,
        "n_clusters": n_clusters,
        # one count per cluster, 0 for an empty one (k-means on fewer distinct rows than K leaves some)
        "cluster_sizes": np.bincount(labels, minlength=n_clusters).tolist(),
        "constraint_satisfaction": sat,
        "violated_constraints": violated,
        "conflicts": conflicts,
        "n_conflicts": job.get("n_conflicts", len(conflicts)),
        "metrics": clustering_scores(_label_codes(labels_true), labels) if labels_true is not None else None,
        "timings": {"fit_seconds": fit_seconds, "queued_seconds": queued_seconds},
        "diagnostics": registry.diagnostics(method, estimator, constraints),
        "extras": registry.extras(method, estimator, constraints),
    }
    if getattr(estimator, "auto_", None) is not None:
        result["auto"] = estimator.auto_
    return result


def result_map(owner, X, embedding, random_state):
    """The 2-D map of a result's rows for its page (:func:`workers.projection.project`), or None.

    A map that cannot be made (logged) leaves the page without one; it never fails the job or pass.

    Parameters
    ----------
    owner : str
        The job or session id (for the log).
    X : ndarray of shape (n_samples, n_features)
    embedding : ndarray of shape (n_samples, n_components) or None
        The method's learned embedding, mapped instead of ``X`` when given.
    random_state : int
    """
    try:
        return projection.project(X, embedding=embedding, random_state=random_state)
    except SoftTimeLimitExceeded:
        raise
    except Exception:  # noqa: BLE001 - a picture never fails the work it shows
        log.exception("%s: no 2-D map of the result", owner)
        return None


def time_limit_error(settings):
    """The problem object of a job that ran past its soft time limit.

    Parameters
    ----------
    settings : workers.config.Settings

    Returns
    -------
    dict
    """
    return problem("time_limit", "Time limit exceeded", 500,
                   f"the job ran longer than {settings.soft_time_limit} s")


def _end_job_at_hard_limit(task, exc, task_id, args, kwargs, einfo):
    """``on_failure`` of :func:`run_job`: a job whose process the hard time limit killed is FAILED.

    Celery calls it in the worker's main process after killing the pool
    process (a call deaf to the soft limit's exception ran past the hard
    limit, or the soft limit's handling did, or the task waited for Redis
    past it), and acknowledges the message. Nothing else ended the job: it
    stayed RUNNING, its live worker naming it, until a read failed it as
    ``worker_lost`` (``visibility_timeout`` after). Only the task the record
    dispatches to ends it; its ``job.failed`` event is queued
    (:meth:`Store.announce_end`). Redis not answering, a thread of the main
    process ends it once Redis answers (:func:`_end_at_hard_limit_when_back`;
    the job stayed RUNNING, or QUEUED with no task when the limit came
    before its start, for good). Other failures are the task's own to
    report (it ends every job it runs).

    Parameters
    ----------
    task : celery.Task
    exc : Exception
    task_id : str
    args : list
        ``[job_id]``.
    kwargs, einfo
        Unused.
    """
    if not isinstance(exc, TimeLimitExceeded):
        return
    try:
        store = get_store()
        try:
            store.announce_end(store.finish_job(args[0], "FAILED", error=time_limit_error(store.settings),
                                                task_id=task_id))
        except REDIS_DOWN as down:
            log.warning("job %s: Redis unreachable (%s): ended after its hard time limit once it answers",
                        args[0], down)
            threading.Thread(target=_end_at_hard_limit_when_back, args=(store, args[0], task_id),
                             name=f"shoal-hard-limit-{args[0]}", daemon=True).start()
    except Exception:  # noqa: BLE001 - never into the pool's timeout handling
        log.exception("job %s: not ended after its hard time limit", args[0] if args else None)


def _end_at_hard_limit_when_back(store, job_id, task_id):
    """End job ``job_id``, whose task ``task_id`` the hard time limit killed, FAILED (``time_limit``)
    once Redis answers, and queue its event; run in a thread of the worker's main process by
    :func:`_end_job_at_hard_limit` (a lost reply is found by :func:`end_job`)."""
    try:
        store.announce_end(end_job(store, job_id, "FAILED", error=time_limit_error(store.settings),
                                   task_id=task_id))
    except Exception:  # noqa: BLE001 - a thread of its own: logged
        log.exception("job %s: not ended after its hard time limit", job_id)


@app.task(name="shoal.run_job", bind=True, acks_late=True, reject_on_worker_lost=True,
          on_failure=_end_job_at_hard_limit)
def run_job(self, job_id):
    """Run one clustering job by id; the job record ends in a terminal state."""
    store = get_store()
    fair.taken(store, job_id)  # its tenant may send its next held job (workers.fair)
    try:
        # a retry after a lost reply finds the job started under this token, and runs it (no second attempt counted)
        job = through_outage(store.start_job, job_id, task_id=self.request.id,
                             worker=liveness.current_worker_name(), token=uuid.uuid4().hex)
    except SoftTimeLimitExceeded:
        # reached waiting for Redis: the job, QUEUED (its task's message acknowledged with this failure, and
        # off jobs:unsent) or started by a call whose reply was lost, must not wait for a task that never comes
        job = end_job(store, job_id, "FAILED", error=time_limit_error(store.settings), task_id=self.request.id)
        if job is not None and job.get("callback_url"):
            deliver_webhook.delay(job_id, job["callback_url"], job_event(job))
        return
    if job is None:
        return  # unknown, finished, cancelled, attempts exhausted, or re-dispatched to another task
    callback_url = job.get("callback_url")
    if job.get("kind") == "predict":
        final = run_predict(store, job)
        if final is not None and callback_url:
            deliver_webhook.delay(job_id, callback_url, job_event(final))
        return
    state, error = "SUCCEEDED", None
    try:
        data = through_outage(store.load_dataset, job["dataset_id"])
        if data is None:
            raise LookupError(f"dataset {job['dataset_id']} no longer exists")
        X_raw, labels_true, item_ids = data
        X = zscore(X_raw) if job.get("scale") == "zscore" else X_raw
        spec = through_outage(store.get_job_spec, job_id) or {}
        callback = make_callback(store, job_id, store.settings.progress_interval)
        params = job["params"]
        if CARDS[job["method"]].default_scale == "auto":
            # a method that chooses the scaling (scale unset) searches in at most half the time limit, then refits
            params = {**params, "scale": "auto" if job.get("scale") == "auto" else "none",
                      "max_seconds": store.settings.soft_time_limit / 2}
        estimator = registry.build(job["method"], n_clusters=job["n_clusters"], params=params,
                                   random_state=job["random_state"], callback=callback,
                                   on_conflict=job.get("on_conflict", "keep"))
        kwargs = registry.fit_kwargs(job["method"], spec.get("constraints"))
        report_progress(store, job_id, 0.05, "fitting")
        t0 = time.perf_counter()
        estimator.fit(X, **kwargs)
        fit_seconds = time.perf_counter() - t0
        if through_outage(store.cancel_requested, job_id):
            raise JobCancelled(job_id)
        report_progress(store, job_id, 0.97, "saving")
        queued = job["started_ts"] - job["created_ts"]
        result = build_result(job, spec, estimator, X, labels_true, item_ids, fit_seconds, queued)
        matrix, factor = registry.learned_matrix(job["method"], estimator)
        mapped = result_map(job_id, X, registry.learned_embedding(job["method"], estimator), job["random_state"])
        if matrix is not None and matrix.shape[0] > FULL_AFFINITY_LIMIT:
            matrix = top_k_rows(matrix, STORED_TOP_K)
        elif factor is not None:
            pattern = getattr(estimator, "affinity_matrix_", None)
            if factor.shape[0] > FACTOR_PATTERN_ROWS and pattern is not None:
                matrix = top_k_on_pattern(factor, pattern, STORED_TOP_K)
            else:
                matrix = top_k_rows_from_factor(factor, STORED_TOP_K)
        through_outage(store.save_result, job_id, result, matrix, projection=mapped)
        model = registry.model_state(job["method"], estimator)
        if model is not None:
            if job.get("scale") == "zscore":
                mean, std = zscore_stats(X_raw)
                model["_scale"] = {"mean": mean.tolist(), "std": std.tolist()}
            through_outage(store.save_model_state, job_id, model)
    except JobCancelled:
        state = "CANCELLED"
    except SoftTimeLimitExceeded:
        state, error = "FAILED", time_limit_error(store.settings)
    except InfeasibleConstraintsError as exc:
        state, error = "FAILED", problem("infeasible_constraints", "Constraints cannot be satisfied", 422,
                                         str(exc), conflicts=exc.conflicts)
    except (InvalidInputError, LookupError) as exc:
        state, error = "FAILED", problem("invalid_job", "Job input is not usable", 422, str(exc))
    except Exception as exc:  # noqa: BLE001 - every failure must end the job
        log.exception("job %s failed", job_id)
        state, error = "FAILED", problem("internal_error", "The method failed", 500, f"{type(exc).__name__}: {exc}")
    final = end_job_past_soft_limit(store, job_id, state, error=error)
    if final is not None and callback_url:
        deliver_webhook.delay(job_id, callback_url, job_event(final))


def run_predict(store, job):
    """Assign new rows with a parent job's inductive model (e.g. DCRC's logistic model).

    The model is the predict job's own copy, taken when the prediction was
    requested (``Store.create_job(model=...)``): deleting the parent job
    does not fail predictions still queued. A prediction past the soft time
    limit ends FAILED with ``time_limit``, as a clustering job does.

    Parameters
    ----------
    store : workers.store.Store
    job : dict
        The predict job's record, as :meth:`Store.start_job` returned it.

    Returns
    -------
    dict or None
        The ended record (:func:`end_job_past_soft_limit`); None if the job
        was unknown or another end stands.
    """
    job_id = job["id"]
    try:
        model = through_outage(store.get_model_state, job_id)
        data = through_outage(store.load_dataset, job["dataset_id"])
        if model is None or data is None:
            raise LookupError("the model or the rows to predict have expired")
        X = data[0]
        scale = model.pop("_scale", None)
        if scale is not None:
            X = zscore(X, scale["mean"], scale["std"])
        est = registry.restore(job["method"], job["params"], model)
        t0 = time.perf_counter()
        proba = est.predict_proba(X)
        bad = ~np.isfinite(proba).all(axis=1)
        if bad.any():  # never report NaN probabilities (as null) with a label picked from them
            raise InvalidInputError(f"the model gives no probabilities for row {int(np.flatnonzero(bad)[0])}: its "
                                    "values lie too far outside those the model was fitted on", field="data")
        labels = proba.argmax(axis=1)
        result = {"job_id": job_id, "method": job["method"], "parent_job_id": job["parent_job_id"],
                  "labels": labels.tolist(), "item_ids": data[2], "n_clusters": int(proba.shape[1]),
                  "cluster_sizes": np.bincount(labels, minlength=proba.shape[1]).tolist(),
                  "constraint_satisfaction": None, "violated_constraints": None, "conflicts": [],
                  "n_conflicts": 0, "metrics": None,
                  "timings": {"fit_seconds": time.perf_counter() - t0,
                              "queued_seconds": job["started_ts"] - job["created_ts"]},
                  "diagnostics": {}, "extras": {"probabilities": np.round(proba, 6).tolist()}}
        through_outage(store.save_result, job_id, result)
        state, error = "SUCCEEDED", None
    except SoftTimeLimitExceeded:  # as run_job says it (it was predict_failed, "SoftTimeLimitExceeded: ")
        state, error = "FAILED", time_limit_error(store.settings)
    except InvalidInputError as exc:  # rows the model cannot score (e.g. inf once z-scored)
        state, error = "FAILED", problem("invalid_job", "Job input is not usable", 422, str(exc))
    except Exception as exc:  # noqa: BLE001
        log.exception("predict job %s failed", job_id)
        state, error = "FAILED", problem("predict_failed", "Prediction failed", 500, f"{type(exc).__name__}: {exc}")
    return end_job_past_soft_limit(store, job_id, state, error=error)


@app.task(name="shoal.deliver_webhook", bind=True, max_retries=5, acks_late=True)
def deliver_webhook(self, job_id, url, event=None):
    """POST a thin event to the job's ``callback_url``; retried with backoff.

    Parameters
    ----------
    job_id : str
    url : str
        The job's ``callback_url``.
    event : dict, optional
        The event (:func:`workers.records.job_event` of the ended record), sent
        as it is on every attempt, whatever became of the job since (deleted
        or expired: the task read the job and dropped the event of one
        deleted before an attempt). None (a message queued by a release that
        sent no event): built from the job as read now, waiting for Redis if
        it is away (:func:`through_outage`), and dropped if the job is gone.
    """
    if event is None:
        job = through_outage(get_store().get_job, job_id)
        if job is None:
            return
        event = job_event(job)
    _send_event(self, url, event, f"job {job_id}")


@app.task(name="shoal.deliver_session_webhook", bind=True, max_retries=5, acks_late=True)
def deliver_session_webhook(self, session_id, url, event):
    """POST a session event (built by the pass that ended) to the session's
    ``callback_url``; retried with backoff."""
    _send_event(self, url, event, f"session {session_id}")


def _send_event(task, url, event, what):
    """Standard Webhooks POST of ``event`` (JSON) from inside ``task``.

    The host is resolved and checked at every attempt (it may resolve elsewhere
    by now) and the POST goes to the checked address (no second lookup). A
    refused target or a URL the HTTP client cannot use (ValueError) is logged
    and dropped; a network error or non-2xx answer
    retries with exponential backoff (5 s doubling, at most 600 s) under the
    same ``webhook-id``; the timestamp and signature are those of each attempt.
    """
    store = get_store()
    body = json.dumps(event, separators=(",", ":"))
    # Standard Webhooks: the id is the same on every attempt of one message, so a receiver that got
    # an attempt whose answer was lost can drop the retry. Celery keeps the task id across retries.
    msg_id = f"msg_{(task.request.id or uuid.uuid4().hex).replace('-', '')}"
    ts = str(int(time.time()))
    headers = {"content-type": "application/json", "webhook-id": msg_id, "webhook-timestamp": ts}
    if store.settings.webhook_secret:
        headers["webhook-signature"] = sign_webhook(store.settings.webhook_secret, msg_id, ts, body)
    try:
        address = pinned_address(url, allow_private=store.settings.callback_allow_private)
        status = post_pinned(url, address, body, headers, timeout=10)
        if status >= 300:
            raise RuntimeError(f"callback answered {status}")
    except CallbackRefused as exc:
        log.warning("%s: callback to %s not sent: %s", what, url, exc)
        return
    except ValueError as exc:  # a URL the HTTP client cannot use: retrying would not change it
        log.warning("%s: callback to %s not sent: unusable URL: %s", what, url, exc)
        return
    except Exception as exc:  # noqa: BLE001 - DNS, connection or TLS failure, or a non-2xx answer
        raise task.retry(exc=exc, countdown=min(2 ** task.request.retries * 5, 600))
