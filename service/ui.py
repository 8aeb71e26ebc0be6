"""Pictures of a result: ``GET /ui/jobs/{id}`` and ``GET /ui/sessions/{id}`` (server-rendered HTML).

Each page embeds its data as one ``<script type="application/json">`` block (Jinja's ``tojson``:
``<``, ``>``, ``&`` and ``'`` escaped) read by ``static/ui/result.js``, which draws it with
plotly.js, served by Shoal from the ``plotly`` package (no CDN, no build step). No client string
is ever written into the page as HTML: templates autoescape and the script sets ``textContent``.
Every answer carries a Content-Security-Policy without inline script (:data:`CSP`). The pages sit
behind the same API key as the API (``Authorization: Bearer``, :mod:`service.auth`); their static
files are open, as ``/docs``'s are.
"""

import hashlib
import os

import numpy as np
import plotly
from flask import Blueprint, abort, current_app, render_template, send_from_directory, url_for

from workers.projection import MAX_POINTS
from workers.session_store import SessionStore

from . import get_store, ui_data
from .errors import ApiError
from .jobs import job_or_404
from .page_headers import page_headers
from .sessions import session_or_404

blp = Blueprint("ui", __name__, url_prefix="/ui", template_folder="templates")

STATIC_URL = "/ui/static/"
_OWN = os.path.join(os.path.dirname(__file__), "static", "ui")
_PLOTLY = os.path.join(os.path.dirname(plotly.__file__), "package_data")
#: Files served under :data:`STATIC_URL`: name -> directory.
ASSETS = {"plotly.min.js": _PLOTLY, "result.js": _OWN, "result.css": _OWN, "waiting.js": _OWN}
#: Headers of every ``/ui`` answer (:mod:`service.page_headers`): plotly.js styles its SVG inline.
HEADERS = page_headers(inline_styles=True)
CSP = HEADERS["Content-Security-Policy"]
#: A year: every asset URL names its version (``?v=``), so a new one is a new URL.
ASSET_MAX_AGE = 365 * 24 * 3600


def _version(name):
    if name == "plotly.min.js":
        return plotly.__version__
    with open(os.path.join(_OWN, name), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()[:12]


@blp.app_template_global()
def ui_asset(name):
    """The versioned URL of a static file of the pages."""
    return f"{STATIC_URL}{name}?v={_version(name)}"


@blp.get("/static/<path:filename>")
def asset(filename):
    """One of :data:`ASSETS`, cached for :data:`ASSET_MAX_AGE` (its URL changes with its content)."""
    if filename not in ASSETS:
        abort(404)
    response = send_from_directory(ASSETS[filename], filename, max_age=ASSET_MAX_AGE)
    response.headers["Cache-Control"] = f"public, max-age={ASSET_MAX_AGE}, immutable"
    return response


@blp.after_request
def _headers(response):
    response.headers.update(HEADERS)
    return response


def _page(template, data, **context):
    return render_template(template, data=data, max_points=MAX_POINTS, **context)


def _waiting(what, rec_id, state, detail):
    """The page of a job or session with nothing to draw (yet: ``Retry-After`` while it may come)."""
    waiting = state in ("QUEUED", "RUNNING", "INITIALIZING", "ACTIVE")
    retry_after = current_app.config["SHOAL_RETRY_AFTER"]
    headers = {"Retry-After": str(retry_after)} if waiting else {}
    return render_template("ui/waiting.html", what=what, rec_id=rec_id, state=state, detail=detail,
                           waiting=waiting, retry_after=retry_after), 200, headers


# ------------------------------------------------------------------------------------------ jobs
@blp.get("/jobs/<string:job_id>")
def job_page(job_id):
    """A job's result: the map of its rows by cluster, its constraints, a few items per cluster."""
    store = get_store()
    rec = job_or_404(store, job_id)
    if rec["state"] != "SUCCEEDED":
        return _waiting("job", job_id, rec["state"], (rec.get("error") or {}).get("detail"))
    result = store.get_result(job_id)
    if result is None:
        raise ApiError(404, "not_found", f"the result of job {job_id} has expired")
    meta = store.get_dataset_meta(rec["dataset_id"]) or {}
    spec = store.get_job_spec(job_id) or {}
    projection = store.get_projection(job_id)
    labels, item_ids = result["labels"], result.get("item_ids")
    content = lambda rows: ui_data.item_content(store, rec["dataset_id"], rows)  # noqa: E731
    title = f"{rec['method']} on {meta.get('name') or rec['dataset_id']}: {result['n_clusters']} clusters"
    data = {"kind": "job", "id": job_id, "title": title, "method": rec["method"], "n_samples": len(labels),
            "n_clusters": result["n_clusters"], "cluster_sizes": result["cluster_sizes"],
            "rows_url": url_for("ui.job_row", job_id=job_id, row=0)[:-1], "map": None, "constraints": None}
    if projection is not None:
        constraints = spec.get("constraints") or {}
        violated = result.get("violated_constraints") or {}
        data["map"] = _map(projection, labels, item_ids)
        data["constraints"] = ui_data.constraint_lines(
            set(projection["rows"]), constraints.get("must_link"), constraints.get("cannot_link"),
            [(k, p) for k in ("must_link", "cannot_link") for p in violated.get(k) or []],
            [("cannot_link", c["cannot_link"]) for c in result.get("conflicts") or []])
    samples = ui_data.cluster_samples(labels, result["n_clusters"], item_ids, content, rec["random_state"])
    return _page("ui/job.html", data, rec=rec, result=result, dataset=meta, samples=samples)


def _map(projection, labels, item_ids):
    return {"source": projection["source"], "sampled": projection["sampled"],
            "explained_variance_ratio": projection["explained_variance_ratio"],
            "points": ui_data.points(projection, labels, item_ids)}


@blp.get("/jobs/<string:job_id>/rows/<int:row>")
def job_row(job_id, row):
    """One row of a job's result (JSON): features, content, cluster, neighbours on the map."""
    store = get_store()
    rec = job_or_404(store, job_id)
    result = store.get_result(job_id) if rec["state"] == "SUCCEEDED" else None
    if result is None:
        raise ApiError(404, "not_found", f"job {job_id} has no result")
    return _row(store, rec["dataset_id"], row, result["labels"], store.get_projection(job_id))


def _row(store, dataset_id, row, labels, projection):
    data = store.load_dataset(dataset_id)
    if data is None:
        raise ApiError(404, "not_found", f"dataset {dataset_id} no longer exists")
    X, _, item_ids = data
    if not 0 <= row < min(len(labels), X.shape[0]):
        raise ApiError(404, "not_found", f"row {row} is not in the result (it has {len(labels)} rows)")
    return ui_data.row_detail(X, row, labels, item_ids, projection, ui_data.item_content(store, dataset_id, [row]))


# -------------------------------------------------------------------------------------- sessions
@blp.get("/sessions/<string:session_id>")
def session_page(session_id):
    """A session's model: the map by cluster, the answered pairs, ARI and agreement per pass,
    answers per worker, the questions in flight."""
    store = get_store()
    ss = SessionStore(store)
    rec = session_or_404(ss, session_id)
    model = ss.get_model(session_id)
    if model is None:
        return _waiting("session", session_id, rec["state"], (rec.get("error") or {}).get("detail"))
    projection = ss.get_projection(session_id)
    item_ids = ss.item_ids(rec)
    labels = model["labels"]
    content = lambda rows: ui_data.item_content(store, rec["dataset_id"], rows)  # noqa: E731
    sizes = np.bincount(np.asarray(labels, dtype=np.int64), minlength=model["n_clusters"]).tolist()
    meta = store.get_dataset_meta(rec["dataset_id"]) or {}
    title = (f"Session on {meta.get('name') or rec['dataset_id']}: {model['n_clusters']} clusters after "
             f"{model['n_questions_used']} questions")
    data = {"kind": "session", "id": session_id, "title": title, "method": rec["question_type"],
            "n_samples": len(labels),
            "n_clusters": model["n_clusters"], "cluster_sizes": sizes,
            "rows_url": url_for("ui.session_row", session_id=session_id, row=0)[:-1], "map": None,
            "constraints": None, "passes": ss.passes(session_id)}
    if projection is not None:
        contradicted = {tuple(sorted(a["items"])) for a in model.get("contradicted_answers") or []
                        if len(a["items"]) == 2}
        ml, cl = model.get("must_link") or [], model.get("cannot_link") or []
        violated = [(k, p) for k, pairs in (("must_link", ml), ("cannot_link", cl))
                    for p, pair in enumerate(pairs) if tuple(sorted(pair)) in contradicted]
        # answers refused as contradicting earlier ones are not among the model's pairs: drawn as well
        conflicts = [(c["answer"], c["items"]) for c in ss.reports(session_id, "conflicts", 1000)
                     if c.get("answer") in ("must_link", "cannot_link")]
        ml = ml + [p for k, p in conflicts if k == "must_link"]
        cl = cl + [p for k, p in conflicts if k == "cannot_link"]
        data["map"] = _map(projection, labels, item_ids)
        data["constraints"] = ui_data.constraint_lines(set(projection["rows"]), ml, cl, violated, conflicts)
    samples = ui_data.cluster_samples(labels, model["n_clusters"], item_ids, content, rec["random_state"])
    return _page("ui/session.html", data, rec=rec, model=model, dataset=meta, samples=samples,
                 passes=data["passes"], workers=model.get("workers") or [], in_flight=ss.in_flight(session_id),
                 item_ids=item_ids)


@blp.get("/sessions/<string:session_id>/rows/<int:row>")
def session_row(session_id, row):
    """One row of a session's model (JSON): features, content, cluster, neighbours on the map."""
    store = get_store()
    ss = SessionStore(store)
    rec = session_or_404(ss, session_id)
    model = ss.get_model(session_id)
    if model is None:
        raise ApiError(404, "not_found", f"session {session_id} has no model yet")
    return _row(store, rec["dataset_id"], row, model["labels"], ss.get_projection(session_id))
