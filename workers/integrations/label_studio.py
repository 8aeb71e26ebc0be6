"""Label Studio connector: a project per session, leased questions as tasks, annotations as answers.

Uses the official ``label-studio-sdk`` (2.x, ``LabelStudio`` client). Label
Studio decides which annotator gets a task, so the connector leases questions
under its own holder id (:func:`workers.integrations.holder`), holds them open
until they are answered, and sets the project's ``maximum_annotations`` to the
session's ``answers_per_question``; each annotation's ``completed_by`` becomes the
``worker_id`` (``ls-<user id>``) and its ``id`` the ``assignment_id``
(``ls-<project>-<annotation id>``), so a webhook delivered twice records one
answer. Label Studio signs no webhook: the connector registers its webhook
with a per-integration secret in the header :data:`SECRET_HEADER`.
Sources: docs/crowd-platforms.md (Label Studio 1.23, SDK 2.1).
"""

import logging
from xml.sax.saxutils import quoteattr

import numpy as np

from ..session_store import OPEN_STATES, SessionStore
from . import IntegrationError, IntegrationStore, holder, platform_token

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Shoal-Integration-Secret"
ACTIONS = ("ANNOTATION_CREATED", "ANNOTATION_UPDATED")
#: question type -> (Choices name, {choice value shown: Shoal answer})
CHOICES = {
    "pairwise": ("same_group", {"Same group": "must_link", "Different groups": "cannot_link",
                                "Can't tell": "dont_know"}),
    "triplet": ("closer", {"Closer to B": "yes", "Closer to C": "no", "Can't tell": "dont_know"}),
}
HEADERS = {"pairwise": "Do these two items belong in the same group?",
           "triplet": "Is item A closer to item B or to item C?"}
_LETTERS = "abc"


def labeling_config(question_type, kind="text"):
    """The labeling config (XML) of a session's questions.

    Parameters
    ----------
    question_type : {"pairwise", "triplet"}
    kind : {"text", "image"}
        How items show: ``Text`` of ``$a_text``... or ``Image`` of ``$a_image``...

    Returns
    -------
    str
        A ``View`` with a header, the items (A above B and C for triplets) and
        single-choice ``Choices`` on hotkeys 1-3 (:data:`CHOICES`).
    """
    n = 3 if question_type == "triplet" else 2
    tag = "Image" if kind == "image" else "Text"
    name, choices = CHOICES[question_type]
    items = "".join(f'<View><Header value="{c.upper()}" size="6"/><{tag} name="{c}" value="${c}_{kind}"/></View>'
                    for c in _LETTERS[:n])
    buttons = "".join(f"<Choice value={quoteattr(v)} hotkey=\"{i + 1}\"/>" for i, v in enumerate(choices))
    return (f"<View><Header value={quoteattr(HEADERS[question_type])}/>"
            f'<View style="display:flex; gap:1em">{items}</View>'
            f'<Choices name="{name}" toName="a" choice="single-radio" required="true" showInline="true">'
            f"{buttons}</Choices></View>")


def client(url, token):
    """A ``label_studio_sdk.LabelStudio`` client of the server at ``url``."""
    from label_studio_sdk import LabelStudio

    return LabelStudio(base_url=url.rstrip("/"), api_key=token, timeout=30)


def _feature_texts(store, session, rows):
    """Each row's features as one line of text (``name = value``), when the dataset has no content."""
    data = store.load_dataset(session["dataset_id"])
    if data is None:
        return {r: f"row {r}" for r in rows}
    X = np.asarray(data[0])
    meta = store.get_dataset_meta(session["dataset_id"]) or {}
    names = meta.get("feature_names") or [f"x{j}" for j in range(X.shape[1])]
    return {r: ", ".join(f"{n} = {X[r, j]:.4g}" for j, n in enumerate(names)) for r in rows}


def _item_content(store, session, rows):
    """``{row: (kind, value)}``: the rows' own content where the dataset has it (``text`` or
    ``image_url``), their features as text otherwise."""
    content = {}
    get_items = getattr(store, "get_items", None)  # item content per row, where the store keeps it
    if get_items is not None:
        for r, item in zip(rows, get_items(session["dataset_id"], rows)):
            if item and item.get("text"):
                content[r] = ("text", item["text"])
            elif item and item.get("image_url"):
                content[r] = ("image", item["image_url"])
    missing = [r for r in rows if r not in content]
    if missing:
        content.update({r: ("text", t) for r, t in _feature_texts(store, session, missing).items()})
    return content


def create_project(store, session, integ, token):
    """Create the session's project and its webhook; returns the project id.

    Parameters
    ----------
    store : workers.store.Store
    session : dict
        The session's record.
    integ : dict
        The integration's record (``url``, ``webhook_url``, ``webhook_secret``).
    token : str
        The Label Studio API token.

    Raises
    ------
    IntegrationError
        Label Studio refused or could not be reached.
    """
    ls = client(integ["url"], token)
    kind = "image" if integ.get("content_kind") == "image" else "text"
    try:
        project = ls.projects.create(
            title=f"Shoal {session['id']}"[:50], label_config=labeling_config(session["question_type"], kind),
            maximum_annotations=session["answers_per_question"], show_skip_button=False,
            expert_instruction=HEADERS[session["question_type"]], show_instruction=True)
        ls.webhooks.create(url=integ["webhook_url"], project=project.id, actions=list(ACTIONS), send_payload=True,
                           send_for_all_actions=False, headers={SECRET_HEADER: integ["webhook_secret"]},
                           is_active=True)
    except Exception as exc:  # noqa: BLE001 - the SDK's HTTP and API errors, named in the message
        raise IntegrationError(f"Label Studio at {integ['url']}: {type(exc).__name__}: {exc}") from exc
    return project.id


def task_of(session, question, content):
    """The Label Studio task of one question: the items' content in ``data``, Shoal's ids in ``meta``."""
    data = {"question_id": question["question_id"]}
    for c, row in zip(_LETTERS, question["items"]):
        kind, value = content[row]
        data[f"{c}_{kind}"] = value
    return {"data": data, "meta": {"shoal_session": session["id"], "shoal_question": question["question_id"],
                                   "items": question["items"]}}


def push_batch(store, sid, integ):
    """Keep the integration's project supplied with the session's questions.

    At most ``batch_size`` of the questions sent are open at a time: new ones
    are leased (in the pool's order, within the budget) only as those close,
    and each is held open for the integration until it gets its answers
    (:meth:`workers.session_store.SessionStore.hold`), so a pass never
    withdraws a question whose task annotators may be working on. A question
    still open whose task got ``answers_per_question`` annotations (Label
    Studio's ``maximum_annotations``: it hands the task to nobody else) goes
    out again as a new task, at most ``answers_per_question`` times: its votes
    tied and it waits for a tie-breaker, or an annotation did not reach Shoal.

    Parameters
    ----------
    store : workers.store.Store
    sid : str
    integ : dict
        The integration's record.

    Returns
    -------
    int
        Tasks created (0 when the session is not open or nothing is to be sent).

    Raises
    ------
    IntegrationError
        Label Studio refused the tasks (they are sent again by the next push).
    """
    ss, integrations = SessionStore(store), IntegrationStore(store)
    session = ss.get(sid)
    if session is None or session["state"] not in OPEN_STATES or not integ.get("project_id"):
        return 0
    apq, who = session["answers_per_question"], holder(integ)
    pushed = sorted(integrations.pushed(integ))
    docs = dict(zip(pushed, ss.questions(sid, pushed)))
    waiting = [q for q in pushed if docs[q] is not None and docs[q]["status"] == "open"]
    withdrawn = [q for q in pushed if docs[q] is not None and docs[q]["status"] == "withdrawn"]
    tids = integrations.task_ids(integ, waiting)
    again = [q for q, t, n, k in zip(waiting, tids, integrations.annotation_counts(integ, tids),
                                     integrations.resent(integ, waiting)) if t is not None and n >= apq and k < apq]
    room = max(0, int(integ.get("batch_size", 20)) - len(waiting))
    fresh = []
    if room and session.get("budget_committed", session["budget_used"]) < session["budget"]:
        leased = ss.lease(sid, room, who, answers_per_question=apq, lease_seconds=session.get("lease_seconds"))
        ss.hold(sid, [q["question_id"] for q in leased], who)
        new = set(integrations.mark_pushed(integ, [q["question_id"] for q in leased]))
        fresh = [q for q in leased if q["question_id"] in new]
    if not (again or fresh or withdrawn):
        return 0
    ls = client(integ["url"], platform_token(store.settings, integ))
    _take_back_withdrawn(ss, integrations, ls, sid, integ, withdrawn)
    batch = [docs[q] for q in again] + fresh
    if not batch:
        return 0
    content = _item_content(store, session, sorted({r for q in batch for r in q["items"]}))
    try:
        done = ls.projects.import_tasks(id=integ["project_id"], request=[task_of(session, q, content) for q in batch],
                                        return_task_ids=True)
    except Exception as exc:  # noqa: BLE001
        integrations.unmark_pushed(integ, [q["question_id"] for q in fresh])
        ss.release(sid, [q["question_id"] for q in fresh], who)
        raise IntegrationError(f"Label Studio at {integ['url']}: {type(exc).__name__}: {exc}") from exc
    ids = list(getattr(done, "task_ids", None) or [])
    if len(ids) == len(batch):  # the latest task of each question: its annotations are counted against it
        integrations.set_task_ids(integ, {q["question_id"]: t for q, t in zip(batch, ids)})
    else:
        log.warning("session %s: Label Studio returned %d task ids for %d tasks", sid, len(ids), len(batch))
    integrations.count_resent(integ, again)
    return len(batch)


def _take_back_withdrawn(ss, integrations, ls, sid, integ, withdrawn):
    """Take back the tasks of questions the session withdrew: forget them as sent and held (a
    question suggested again goes out as a new task) and delete those nobody annotated yet.

    Held questions are withdrawn only by the pass that completes the session
    (after which nothing is sent); annotations on a withdrawn question come
    back ``late``. A task with annotations stays.
    """
    if not withdrawn:
        return
    integrations.unmark_pushed(integ, withdrawn)
    ss.release(sid, withdrawn, holder(integ))
    for task_id in integrations.pop_task_ids(integ, withdrawn):
        if task_id is None:
            continue
        try:
            if not ls.tasks.get(id=str(task_id)).total_annotations:
                ls.tasks.delete(id=str(task_id))
        except Exception as exc:  # noqa: BLE001 - a task left behind: its annotations come back late
            log.info("session %s: task %s not taken back: %s", sid, task_id, exc)


def annotation_answer(payload, question_type):
    """The session answer of a Label Studio annotation webhook, or why there is none.

    Parameters
    ----------
    payload : dict
        The webhook body (``action``, ``annotation``, ``task``, ``project``).
    question_type : {"pairwise", "triplet"}

    Returns
    -------
    answer : dict or None
        ``question_id`` (the task's ``meta.shoal_question``, else ``data.question_id``),
        ``answer``, ``worker_id`` (``ls-<completed_by>``), ``assignment_id``
        (``ls-<project>-<annotation id>``).
    reason : str or None
        Why ``answer`` is None: a cancelled (skipped) annotation, no choice, a
        choice outside the config, or no Shoal question id on the task.
    """
    ann, task = payload.get("annotation") or {}, payload.get("task") or {}
    project = (payload.get("project") or {}).get("id", ann.get("project"))
    qid = (task.get("meta") or {}).get("shoal_question") or (task.get("data") or {}).get("question_id")
    if not qid:
        return None, "the task carries no Shoal question id (meta.shoal_question)"
    if ann.get("was_cancelled"):
        return None, "the annotation was cancelled (skipped)"
    name, choices = CHOICES[question_type]
    picked = [r.get("value", {}).get("choices", []) for r in ann.get("result") or [] if r.get("from_name") == name]
    if not picked or not picked[0]:
        return None, f"the annotation has no {name} choice"
    if picked[0][0] not in choices:
        return None, f"choice {picked[0][0]!r} is not one of {', '.join(choices)}"
    worker = ann.get("completed_by")
    if isinstance(worker, dict):
        worker = worker.get("id")
    return {"question_id": str(qid), "answer": choices[picked[0][0]], "worker_id": f"ls-{worker}",
            "assignment_id": f"ls-{project}-{ann.get('id')}"}, None
