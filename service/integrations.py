"""Connectors from a session to an annotation platform, and the platform's annotation webhook.

``POST /v1/sessions/{id}/integrations`` creates the platform's project (its
labeling config for the session's question type) and registers a webhook
that carries a per-integration secret; a worker sends the open questions as
tasks after every re-clustering pass. ``POST /v1/integrations/{id}/label-studio``
receives Label Studio's annotation events (no API key: the secret header
authenticates them) and records each annotation as an answer.
"""

import os

from flask import request, url_for
from flask_smorest import Blueprint

from schemas.integrations import IntegrationCreateSchema, IntegrationListSchema, IntegrationSchema, \
    WebhookResultSchema
from workers.callbacks import callback_target_error
from workers.integrations import IntegrationError, IntegrationStore, encrypt_token, holder, public_view, secret_ok
from workers.integrations.label_studio import ACTIONS, SECRET_HEADER, annotation_answer, create_project
from workers.session_store import SessionStore
from workers.submit import send_integration_push

from . import get_store
from .errors import ApiError, problem_docs
from .sessions import record_answers, session_or_404

blp = Blueprint("integrations", __name__, url_prefix="/v1",
                description="Connectors to annotation platforms (Label Studio)")

def _view(istore, rec):
    view = public_view(rec)
    view["tasks_sent"] = istore.pushed_count(rec)
    view["changed_answers"] = istore.changed(rec)
    return view


def _send_push(settings, sid):
    try:
        send_integration_push(settings, sid)
    except Exception:  # noqa: BLE001 - the next pass sends the batch
        pass


def _task_done_question_open(ss, istore, rec, integ, payload, qid):
    """Count the event's annotation against its task; True when that task (the question's latest)
    has all the annotations Label Studio gives it while the question is still open."""
    task_id, ann_id = (payload.get("task") or {}).get("id"), (payload.get("annotation") or {}).get("id")
    if not isinstance(task_id, int) or ann_id is None:
        return False
    n = istore.add_annotation(integ, task_id, ann_id)
    if n < rec["answers_per_question"] or istore.task_ids(integ, [qid]) != [task_id]:
        return False
    doc = ss.question(rec["id"], qid)
    return doc is not None and doc["status"] == "open"


@blp.route("/sessions/<string:session_id>/integrations", methods=["POST"])
@blp.arguments(IntegrationCreateSchema)
@blp.response(201, IntegrationSchema)
@problem_docs(blp, (404, "Unknown session"), (422, "Invalid URL or token"), (502, "The platform refused"))
def create_integration(body, session_id):
    """Connect the session to a platform: its project, its webhook, then tasks after every pass.

    The token is stored encrypted (``SHOAL_INTEGRATION_KEY``) or read from the
    named environment variable; no view shows it. Label Studio: the project's
    ``maximum_annotations`` is the session's ``answers_per_question``; each
    annotation becomes an answer (``worker_id`` ``ls-<user id>``,
    ``assignment_id`` ``ls-<project>-<annotation id>``).
    """
    store = get_store()
    ss, istore = SessionStore(store), IntegrationStore(store)
    rec = session_or_404(ss, session_id)
    settings = store.settings
    reason = callback_target_error(body["url"], allow_private=settings.callback_allow_private)
    if reason:
        raise ApiError(422, "invalid_url", f"url: {reason}", errors={"/url": [reason]})
    if body["token"]:
        if not settings.integration_key:
            detail = "SHOAL_INTEGRATION_KEY is not set, so no token can be stored: set it or use token_env"
            raise ApiError(422, "token_not_storable", detail, errors={"/token": [detail]})
        token, secret_fields = body["token"], {"token_source": "encrypted",
                                               "token_encrypted": encrypt_token(settings.integration_key,
                                                                                body["token"])}
    else:
        token = os.environ.get(body["token_env"])
        if not token:
            detail = f"{body['token_env']} is not set in the service's environment"
            raise ApiError(422, "token_env_unset", detail, errors={"/token_env": [detail]})
        secret_fields = {"token_source": "environment", "token_env": body["token_env"]}
    integ = istore.create(session_id, platform=body["platform"], url=body["url"].rstrip("/"),
                          batch_size=body["batch_size"], content_kind=body["content_kind"], project_id=None,
                          **secret_fields)
    base = (body["webhook_base_url"] or request.host_url).rstrip("/")
    integ["webhook_url"] = base + url_for("integrations.label_studio_event", integration_id=integ["id"])
    try:
        integ["project_id"] = create_project(store, rec, integ, token)
    except IntegrationError as exc:
        istore.delete(session_id, integ["id"])
        raise ApiError(502, "platform_error", str(exc)) from exc
    istore.update(integ)
    _send_push(settings, session_id)
    return _view(istore, integ), 201


@blp.route("/sessions/<string:session_id>/integrations", methods=["GET"])
@blp.response(200, IntegrationListSchema)
@problem_docs(blp, (404, "Unknown session"))
def list_integrations(session_id):
    """The session's integrations, with the tasks sent and the answers changed on the platform."""
    store = get_store()
    session_or_404(SessionStore(store), session_id)
    istore = IntegrationStore(store)
    return {"integrations": [_view(istore, r) for r in istore.of_session(session_id)]}


@blp.route("/sessions/<string:session_id>/integrations/<string:integration_id>", methods=["DELETE"])
@blp.response(204)
@problem_docs(blp, (404, "Unknown session or integration"))
def delete_integration(session_id, integration_id):
    """Stop sending tasks and taking events (the platform's project stays).

    The questions the integration held open are let go: a later pass may withdraw them.
    """
    store = get_store()
    ss, istore = SessionStore(store), IntegrationStore(store)
    session_or_404(ss, session_id)
    rec = next((r for r in istore.of_session(session_id) if r["id"] == integration_id), None)
    held = sorted(istore.pushed(rec)) if rec is not None else []
    if rec is None or not istore.delete(session_id, integration_id):
        raise ApiError(404, "not_found", f"integration {integration_id!r} does not exist")
    ss.release(session_id, held, holder(rec))
    return ""


@blp.route("/integrations/<string:integration_id>/label-studio", methods=["POST"])
@blp.response(200, WebhookResultSchema)
@problem_docs(blp, (400, "Not a webhook body"), (401, "Wrong or missing secret"), (404, "Unknown integration"))
def label_studio_event(integration_id):
    """Label Studio's annotation webhook: the annotation becomes a session answer.

    Authenticated by the header ``X-Shoal-Integration-Secret`` that the
    integration registered with Label Studio (no API key). A re-sent event is a
    ``duplicate``; an edited annotation (``ANNOTATION_UPDATED``) whose choice
    differs from the recorded answer is a ``duplicate`` with ``changed`` true,
    listed in the integration's ``changed_answers`` (the recorded answer
    stands). A ``late`` answer's question is sent again as a new task if a
    later pass opens it anew; so is a question still open once its task has
    ``answers_per_question`` annotations (its votes tied: it needs a
    tie-breaker). Cancelled annotations are ``skipped``; other actions
    ``ignored``.
    """
    store = get_store()
    istore = IntegrationStore(store)
    integ = istore.get(integration_id)
    if integ is None:
        raise ApiError(404, "not_found", f"integration {integration_id!r} does not exist or has expired")
    if not secret_ok(integ, request.headers.get(SECRET_HEADER, "")):
        raise ApiError(401, "unauthorized", f"the {SECRET_HEADER} header is missing or wrong")
    payload = request.get_json(silent=True)
    if not isinstance(payload, dict):
        raise ApiError(400, "bad_request", "the body is not a JSON object", errors={"/body": ["not an object"]})
    action = payload.get("action")
    if action not in ACTIONS:
        return {"outcome": "ignored", "reason": f"action {str(action)[:50]!r} carries no answer", "changed": False}
    ss = SessionStore(store)
    rec = session_or_404(ss, integ["session_id"])
    answer, reason = annotation_answer(payload, rec["question_type"])
    if answer is None:
        return {"outcome": "skipped", "reason": reason, "changed": False}
    result = record_answers(ss, rec, [answer])["results"][0]
    out = {**result, "changed": False}
    qid = answer["question_id"]
    if result["outcome"] == "late":
        # The question may be open again later (a pass suggests it anew) while its task is done: send it
        # again then as a new task (a late answer was not recorded, so its worker may answer it again).
        istore.unmark_pushed(integ, [qid])
        ss.release(rec["id"], [qid], holder(integ))
        _send_push(store.settings, rec["id"])
    elif _task_done_question_open(ss, istore, rec, integ, payload, qid):
        _send_push(store.settings, rec["id"])  # a tie-breaker (or a lost answer) is needed: a new task
    if result["outcome"] == "duplicate":
        given = ss.answers(rec["id"], [answer["question_id"]])[0]
        before = next((a for a in given if a.get("assignment_id") == answer["assignment_id"]), None)
        if before is not None and before["answer"] != answer["answer"]:
            out["changed"] = True
            out["reason"] = (f"the annotation now says {answer['answer']}, recorded as {before['answer']}: the "
                             "recorded answer stands (listed in the integration's changed_answers)")
            istore.add_changed(integ, {"question_id": answer["question_id"], "worker_id": answer["worker_id"],
                                       "assignment_id": answer["assignment_id"], "recorded": before["answer"],
                                       "now": answer["answer"], "action": action})
    return out
