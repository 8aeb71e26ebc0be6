"""Shoal's HTTP service: ``create_app()`` (served by gunicorn: ``service:create_app()``)."""

from flask import Flask, Response, current_app, redirect, request
from flask.json.provider import DefaultJSONProvider
from flask_smorest import Api

from workers.records import is_record_id

from . import auth, body, docs, errors, request_id, spec, strict_json
from .config import Config

strict_json.install()  # before the views' modules are imported: their @blp.arguments bind the parser


class StrictJSONProvider(DefaultJSONProvider):
    """Never emit NaN or Infinity (they are not JSON)."""

    def dumps(self, obj, **kwargs):
        kwargs.setdefault("allow_nan", False)
        return super().dumps(obj, **kwargs)


class ShoalApi(Api):
    """flask-smorest ``Api`` whose documented error responses are RFC 9457
    ``application/problem+json`` bodies (what :mod:`service.errors` sends)."""

    def _register_responses(self):
        import http

        from flask_smorest.utils import prepare_response

        from schemas.problems import ProblemSchema

        for status in http.HTTPStatus:
            response = {"description": status.phrase}
            if status >= 400:
                response["schema"] = ProblemSchema
                prepare_response(response, self.spec, errors.PROBLEM_JSON)
            elif not (100 <= status < 200) and status not in (204, 304):
                response["schema"] = ProblemSchema
                prepare_response(response, self.spec, self.DEFAULT_RESPONSE_CONTENT_TYPE)
            self.spec.components.response(status.name, response, lazy=True)
        response = {"description": "Default error response", "schema": ProblemSchema}
        prepare_response(response, self.spec, errors.PROBLEM_JSON)
        self.spec.components.response("DEFAULT_ERROR", response, lazy=True)

    def _openapi_json(self):
        """``/openapi.json``: the finished document (:func:`service.spec.document`), as ``/openapi.yaml``."""
        return current_app.response_class(current_app.json.dumps(spec.document(self), indent=2, sort_keys=False),
                                          mimetype="application/json")


def create_app(config=None):
    """Application factory.

    Parameters
    ----------
    config : dict or class, optional
        Overrides on top of :class:`service.config.Config` (tests pass
        ``{"TESTING": True, "SHOAL_STORE": store}``).
    """
    app = Flask(__name__)
    app.json = StrictJSONProvider(app)
    app.config.from_object(Config)
    if isinstance(config, dict):
        app.config.update(config)
    elif config is not None:
        app.config.from_object(config)

    from . import audit, limits

    request_id.register(app)
    limits.register(app)  # before the key check: a flood of bad keys is limited per client address
    auth.register(app)
    api = ShoalApi(app)
    auth.document(api, required=app.config["SHOAL_TENANCY"])
    from . import (annotate, annotators, constraints, datasets, health, idempotency, jobs, keys, methods, metrics,
                   sessions, uploads)

    for bp in (datasets.blp, uploads.blp, jobs.blp, sessions.blp, annotators.blp, constraints.blp, methods.blp,
               health.blp, metrics.blp, keys.blp):
        # flask-smorest's etag decorator only sets the ETag; _not_modified answers every conditional GET
        # (its own check, a strong comparison answered without the ETag, would come first).
        bp._check_not_modified = _etag_checked_after_request
        api.register_blueprint(bp)
    _register_session_params(api)
    from . import crowd_files, integrations

    for bp in (crowd_files.blp, integrations.blp):  # crowd platforms: files in and out, connectors
        bp._check_not_modified = _etag_checked_after_request
        api.register_blueprint(bp)
    _document_429(api)
    for component, header in HEADERS.values():
        api.spec.components.header(component, header)
    errors.register(app)
    app.before_request(body.size_chunked_body)  # after the API-key check: an unauthorised body is not read
    app.before_request(strict_json.check_constraint_body_size)
    app.before_request(_require_json)
    app.before_request(body.check_json_depth)
    app.before_request(body.check_unicode)
    app.before_request(body.check_long_integers)
    app.before_request(_check_path_ids)
    app.after_request(_without_content_no_type)  # runs after _not_modified (reverse order of registration)
    app.after_request(_not_modified)
    idempotency.register(app)
    audit.register(app)

    app.register_blueprint(docs.blp)
    from . import ui

    app.register_blueprint(ui.blp)
    app.register_blueprint(annotate.blp)  # the page and its JSON, outside the API (and its spec)

    @app.get("/openapi.yaml")
    def openapi_yaml():
        return Response(spec.to_yaml(api), mimetype="application/yaml")

    @app.get("/docs/")
    def docs_slash():
        """``/docs/`` -> ``/docs`` (relative, so right behind a proxy that adds a path prefix)."""
        return redirect("../docs", 308)

    app.extensions["shoal_api"] = api
    if app.config.get("SHOAL_RATE_LIMITS", True):
        from .concurrency import ConcurrencyGate

        app.wsgi_app = ConcurrencyGate(app.wsgi_app)
    return app


def _document_429(api):
    """Every operation but the probes and the docs may answer 429 (rate limits, quotas: :mod:`service.limits`)."""
    ref = api.spec.components.get_ref("response", "TOO_MANY_REQUESTS")  # a lazy component: included once referenced here
    for path, ops in api.spec._paths.items():
        if path in auth.OPEN_PATHS or path.startswith(auth.OPEN_PREFIXES):
            continue
        for method, op in ops.items():
            if isinstance(op, dict) and "responses" in op:
                op["responses"].setdefault("429", ref)


def _register_session_params(api):
    """Document the per-question-type ``params`` of ``POST /v1/sessions``
    (validated in :mod:`service.sessions`, not referenced by any route)."""
    from schemas.sessions import TripletParamsSchema, URASCParamsSchema

    api.spec.components.schema("URASCParams", schema=URASCParamsSchema)
    api.spec.components.schema("TripletParams", schema=TripletParamsSchema)


#: Endpoints whose body is a file, not JSON (each checks its own media types).
TEXT_BODY_ENDPOINTS = {"crowd_files.import_answers"}


def _require_json():
    """before_request: 415 for a body that is not JSON, or that is sent in a content coding.

    No content coding is decoded (RFC 9110 15.5.16): a gzip body was parsed as it came (a 400 "Invalid
    JSON body") and a plain body labelled gzip was taken as if unlabelled. Its 415
    ``unsupported_content_encoding`` names ``identity`` in ``Accept-Encoding``.
    """
    from schemas.uploads import BINARY_TYPES

    from .uploads import binary_request

    if request.method in ("POST", "PUT", "PATCH") and request.content_length:
        content = body.codings(request.headers.get("Content-Encoding"))
        if any(c != "identity" for c in content):
            raise errors.ApiError(415, "unsupported_content_encoding",
                                  f"send the body without a content coding, not {', '.join(content)}",
                                  headers={"Accept-Encoding": "identity"})
        if not request.is_json and not binary_request() and request.endpoint not in TEXT_BODY_ENDPOINTS:
            also = (", " + ", ".join(BINARY_TYPES)) if request.endpoint == "datasets.create_dataset" else ""
            raise errors.ApiError(415, "unsupported_media_type",
                                  f"send the body as application/json{also}, not {request.mimetype or 'no type'}")


#: Path arguments that are record ids: the prefix of the ids the API makes, and what they name.
_PATH_IDS = {"dataset_id": ("ds", "dataset"), "job_id": ("job", "job"), "session_id": ("ses", "session"),
             "link_id": ("lnk", "link"), "upload_id": ("up", "upload")}


def _check_path_ids():
    """before_request: 404 for a record id in the path that is not of the form the API makes.

    The store builds Redis keys from ids: ``DELETE /v1/sessions/*`` deleted every session's keys
    (``shoal:session:*:*``), ``DELETE /v1/datasets/{id}:aux`` the dataset's labels and item ids, and
    ``GET`` of such ids was a 503 or 500. Registered after the body checks, so a malformed body
    still gets its own answer.
    """
    for arg, (prefix, what) in _PATH_IDS.items():
        value = (request.view_args or {}).get(arg)
        if value is not None and not is_record_id(value, prefix):
            raise errors.ApiError(404, "not_found", f"{what} {value!r} does not exist or has expired")


def _etag_checked_after_request(etag):
    """Stands in for flask-smorest's ``Blueprint._check_not_modified``: :func:`_not_modified` decides."""


def _not_modified(response):
    """after_request: 304 when ``If-None-Match`` matches the response's ETag by weak comparison.

    RFC 9110 13.1.2: If-None-Match compares weakly, so ``W/"x"`` matches ``"x"``,
    and ``*`` matches any current representation. flask-smorest's ``etag``
    decorator (jobs, results, sessions, models) computes and sets the ETag but
    would answer 304 only for a strong match and without the ETag header, so
    its own check is replaced in :func:`create_app` and every conditional GET
    is answered here. The 304 keeps the headers (``ETag``, ``Retry-After``,
    ..., as RFC 9110 15.4.5 asks) and drops the body (and, in
    :func:`_without_content_no_type`, its ``Content-Type``).
    """
    if request.method in ("GET", "HEAD") and response.status_code == 200 and request.if_none_match:
        etag, _ = response.get_etag()
        if etag and request.if_none_match.contains_weak(etag):
            response.status_code = 304
            response.set_data(b"")
    return response


def _without_content_no_type(response):
    """after_request: a 204 or 304 has no body, so no ``Content-Type`` claims one.

    flask-smorest builds a ``@blp.response(204)`` view's answer with ``jsonify``: the ``DELETE``s of
    datasets, jobs and sessions answered ``Content-Type: application/json`` with an empty body (which
    is not JSON). Werkzeug drops the body of both, and the type of a 304 only; this drops the type of both.
    """
    if response.status_code in (204, 304):
        response.headers.pop("Content-Type", None)
    return response


def get_store():
    """The request's store (tests may inject one through ``SHOAL_STORE``)."""
    store = current_app.config.get("SHOAL_STORE")
    if store is None:
        from workers.store import Store

        store = Store.from_settings()
        current_app.config["SHOAL_STORE"] = store
    return store


#: Response headers the views document (``doc_headers``): name -> (spec component, OpenAPI header object).
HEADERS = {
    "Location": ("LOCATION", {
        "description": "the created resource (a path on this API): what to poll", "schema": {"type": "string"}}),
    "Retry-After": ("RETRY_AFTER", {
        "description": "seconds to wait before asking again (SHOAL_RETRY_AFTER, 1 by default), sent while waiting "
                       "can change the answer: a job not done, a session whose model is behind, an empty lease "
                       "that questions can still come to (see the operation)",
        "schema": {"type": "integer", "minimum": 0}}),
}


def doc_headers(*names):
    """The ``headers`` argument of ``blp.response``: the named :data:`HEADERS` as component references.

    A new dict per call: flask-smorest's ``etag`` adds ``ETag`` to the dict of the view it documents.
    """
    return {name: HEADERS[name][0] for name in names}


def retry_after():
    """The ``Retry-After`` header of a poll whose answer is not final yet.

    Returns
    -------
    dict of str to str
        ``{"Retry-After": seconds}`` with ``SHOAL_RETRY_AFTER`` (default 1 s).
    """
    return {"Retry-After": str(current_app.config["SHOAL_RETRY_AFTER"])}
