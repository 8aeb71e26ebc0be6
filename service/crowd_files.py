"""Questions out and answers in as files, for crowd platforms that work in files (Toloka, spreadsheets).

``GET /v1/sessions/{id}/questions/export?format=toloka|csv`` writes a batch of
the session's open questions as the platform's task file;
``POST /v1/sessions/{id}/answers/import?format=toloka|csv`` reads its results
file and records each row as ``POST .../answers`` would, reporting per row
what happened. Formats: docs/crowd-platforms.md; Toloka's columns follow its
task and results files (Toloka docs, ``pool_csv.md`` and ``result-of-eval.md``).
"""

import csv
import io

from flask import Response, request
from flask_smorest import Blueprint
from marshmallow import ValidationError

from schemas.crowd_files import ExportArgsSchema, ImportArgsSchema, ImportResultSchema
from schemas.sessions import DEFAULT_LEASE_SECONDS, AnswerSchema
from workers.session_store import SessionStore

from . import get_store
from .errors import ApiError, problem_docs
from .sessions import committed, record_answers, session_or_404

blp = Blueprint("crowd_files", __name__, url_prefix="/v1/sessions",
                description="Questions and answers as crowd platforms' files")

#: ``format`` -> (field delimiter, media type of the file)
FORMATS = {"toloka": ("\t", "text/tab-separated-values"), "csv": (",", "text/csv")}
#: Media types an import body may carry (either delimiter is chosen by ``format``, not by the type).
IMPORT_MEDIA_TYPES = ("text/csv", "text/tab-separated-values")
#: Toloka results columns Shoal reads, and those it requires.
TOLOKA_QUESTION, TOLOKA_OUTPUT, TOLOKA_GOLDEN = "INPUT:question_id", "OUTPUT:result", "GOLDEN:result"
TOLOKA_WORKER, TOLOKA_ASSIGNMENT, TOLOKA_STATUS = "ASSIGNMENT:worker_id", "ASSIGNMENT:assignment_id", \
    "ASSIGNMENT:status"
TOLOKA_REQUIRED = (TOLOKA_QUESTION, TOLOKA_OUTPUT, TOLOKA_WORKER, TOLOKA_ASSIGNMENT)
#: Toloka assignment statuses whose answers are not taken (the platform refused or never got them).
TOLOKA_SKIPPED = {"REJECTED", "SKIPPED", "EXPIRED"}
CSV_COLUMNS = ("question_id", "items", "worker_id", "assignment_id", "answer")
CSV_REQUIRED = ("question_id", "worker_id", "assignment_id", "answer")
BATCH = 1000  # answers per atomic store step, as POST .../answers takes at most
_LETTERS = "abc"


def _item_names(q, item_ids):
    return [str(item_ids[i]) if item_ids else str(i) for i in q["items"]]


def export_rows(questions, question_type, fmt, item_ids):
    """The header and rows of an export.

    Parameters
    ----------
    questions : list of dict
        Question documents (``question_id``, ``items``).
    question_type : {"pairwise", "triplet"}
    fmt : {"toloka", "csv"}
    item_ids : list or None
        The dataset's item ids (the rows' indices when None).

    Returns
    -------
    list of list of str
        Toloka: ``INPUT:question_id``, ``INPUT:items`` (row indices, space separated),
        ``INPUT:a``, ``INPUT:b`` (and ``INPUT:c`` for triplets: is a closer to b than to c?),
        ``GOLDEN:result`` (empty: an ordinary task). CSV: ``question_id``, ``type``,
        ``items``, ``item_ids`` and the empty answer columns ``worker_id``,
        ``assignment_id``, ``answer`` (the file fills in and imports as it is).
    """
    n = 3 if question_type == "triplet" else 2
    if fmt == "toloka":
        header = [TOLOKA_QUESTION, "INPUT:items"] + [f"INPUT:{c}" for c in _LETTERS[:n]] + [TOLOKA_GOLDEN]
        rows = [[q["question_id"], " ".join(map(str, q["items"])), *_item_names(q, item_ids), ""] for q in questions]
    else:
        header = ["question_id", "type", "items", "item_ids", "worker_id", "assignment_id", "answer"]
        rows = [[q["question_id"], question_type, " ".join(map(str, q["items"])), " ".join(_item_names(q, item_ids)),
                 "", "", ""] for q in questions]
    return [header] + rows


def _read_table(text, delimiter):
    """(header, [(line, row), ...]) of a delimited file; ``line`` is where the row starts (1-based)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    rows, line = [], 1
    try:
        for row in reader:
            rows.append((line, row))
            line = reader.line_num + 1
    except csv.Error as exc:  # e.g. a quote left open at the end: everything after it is one field
        rows.append((line, exc))
    while rows and not isinstance(rows[0][1], csv.Error) and not any(c.strip() for c in rows[0][1]):
        rows.pop(0)
    if not rows or isinstance(rows[0][1], csv.Error):
        raise ApiError(422, "invalid_file", "the file has no header row", errors={"/body": ["no header row"]})
    (_, header), body = rows[0], rows[1:]
    return [h.strip() for h in header], body


def parse_answers(text, fmt):
    """Answers and per-row reports of a results file.

    Parameters
    ----------
    text : str
        The file (UTF-8, a byte-order mark dropped).
    fmt : {"toloka", "csv"}
        Toloka results TSV (``INPUT:question_id``, ``OUTPUT:result``,
        ``ASSIGNMENT:worker_id``, ``ASSIGNMENT:assignment_id``; optionally
        ``GOLDEN:result``, ``ASSIGNMENT:status``) or plain CSV
        (``question_id``, ``worker_id``, ``assignment_id``, ``answer``;
        optionally ``items``, checked against the question's).

    Returns
    -------
    answers : list of (int, dict)
        Line and answer (``question_id``, ``answer``, ``worker_id``,
        ``assignment_id``). A Toloka assignment is one page of tasks, so its
        ``assignment_id`` is ``<ASSIGNMENT:assignment_id>:<question_id>``.
    reports : list of dict
        One per row not answered: ``line``, ``outcome`` (``malformed``: the
        row cannot be read, ``reason`` says why; ``skipped``: a control task or
        an assignment the platform rejected, skipped or let expire) and what
        could be read of ``question_id``, ``worker_id``, ``assignment_id``.

    Raises
    ------
    ApiError
        422 ``invalid_file`` when the header lacks a required column.
    """
    header, body = _read_table(text, FORMATS[fmt][0])
    required = TOLOKA_REQUIRED if fmt == "toloka" else CSV_REQUIRED
    missing = [c for c in required if c not in header]
    if missing:
        raise ApiError(422, "invalid_file", f"the header lacks the column(s) {', '.join(missing)}",
                       errors={"/body": [f"missing column {c!r}" for c in missing]})
    col = {name: header.index(name) for name in header if name}
    answers, reports = [], []
    for line, row in body:
        if isinstance(row, csv.Error):
            reports.append({"line": line, "outcome": "malformed", "reason": f"unreadable from here on: {row}"})
            continue
        if not any(c.strip() for c in row):
            continue  # a blank line
        get = (lambda name, row=row: row[col[name]].strip() if name in col and col[name] < len(row) else "")
        if fmt == "toloka":
            qid, worker, word = get(TOLOKA_QUESTION), get(TOLOKA_WORKER), get(TOLOKA_OUTPUT)
            platform_assignment = get(TOLOKA_ASSIGNMENT)
            assignment = f"{platform_assignment}:{qid}" if platform_assignment and qid else platform_assignment
        else:
            qid, worker, word, assignment = get("question_id"), get("worker_id"), get("answer"), get("assignment_id")
        report = {"line": line, "question_id": qid or None, "worker_id": worker or None,
                  "assignment_id": assignment or None}
        reason = None
        if len(row) != len(header):
            reason = f"{len(row)} fields where the header has {len(header)}"
        elif fmt == "toloka" and get(TOLOKA_GOLDEN):
            reports.append({**report, "outcome": "skipped",
                            "reason": "a control task (GOLDEN:result): scored on the platform, never an answer"})
            continue
        elif fmt == "toloka" and get(TOLOKA_STATUS).upper() in TOLOKA_SKIPPED:
            reports.append({**report, "outcome": "skipped",
                            "reason": f"the assignment is {get(TOLOKA_STATUS).upper()} on the platform"})
            continue
        else:
            empty = [name for name, v in (("question id", qid), ("worker id", worker), ("assignment id", assignment),
                                          ("answer", word)) if not v]
            if empty:
                reason = f"no {', no '.join(empty)}"
        if reason is None:
            try:
                answer = AnswerSchema().load({"question_id": qid, "answer": word, "worker_id": worker,
                                              "assignment_id": assignment})
            except ValidationError as exc:
                reason = "; ".join(f"{k}: {' '.join(v)}" for k, v in sorted(exc.messages.items()))
        if reason is not None:
            reports.append({**report, "outcome": "malformed", "reason": reason})
            continue
        if fmt == "csv" and get("items"):
            answer["_items"] = get("items")
        answers.append((line, answer))
    return answers, reports


def _check_items(ss, sid, answers, reports):
    """Move CSV rows whose ``items`` differ from their question's items to the malformed reports."""
    wanted = [(line, a) for line, a in answers if "_items" in a]
    known = {}
    if wanted:
        for qid in {a["question_id"] for _, a in wanted}:
            q = ss.question(sid, qid)
            known[qid] = None if q is None else q["items"]
    kept = []
    for line, a in answers:
        items = a.pop("_items", None)
        expected = known.get(a["question_id"])
        if items is not None and expected is not None and items.split() != [str(i) for i in expected]:
            reports.append({"line": line, "question_id": a["question_id"], "worker_id": a["worker_id"],
                            "assignment_id": a["assignment_id"], "outcome": "malformed",
                            "reason": f"items {items!r} are not the question's ({' '.join(map(str, expected))})"})
        else:
            kept.append((line, a))
    return kept


@blp.route("/<string:session_id>/questions/export", methods=["GET"])
@blp.arguments(ExportArgsSchema, location="query")
@blp.response(200, description="The task file: Toloka TSV or CSV (docs/crowd-platforms.md)",
              content_type="text/csv")
@problem_docs(blp, (404, "Unknown session"))
def export_questions(args, session_id):
    """A batch of open questions as a platform's task file (one row per question).

    The batch is what a lease without ``worker_id`` hands out: the pool's first
    open questions, holding no slot (the platform decides who answers; set its
    overlap to the session's ``answers_per_question``). Empty (header only)
    while no question is open.
    """
    store = get_store()
    ss = SessionStore(store)
    rec = session_or_404(ss, session_id)
    questions = ss.lease(session_id, args["count"], None, answers_per_question=rec["answers_per_question"],
                         lease_seconds=rec.get("lease_seconds", DEFAULT_LEASE_SECONDS)) \
        if committed(rec) < rec["budget"] else []
    item_ids = ss.item_ids(rec) if questions else None
    delimiter, media = FORMATS[args["format"]]
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(
        export_rows(questions, rec["question_type"], args["format"], item_ids))
    ext = "tsv" if args["format"] == "toloka" else "csv"
    return Response(out.getvalue(), mimetype=media, headers={
        "Content-Disposition": f'attachment; filename="{session_id}-questions.{ext}"'})


@blp.route("/<string:session_id>/answers/import", methods=["POST"])
@blp.arguments(ImportArgsSchema, location="query")
@blp.response(200, ImportResultSchema)
@problem_docs(blp, (404, "Unknown session"), (415, "Not text/csv or text/tab-separated-values"),
              (422, "No header row, a required column missing, or not UTF-8"))
def import_answers(args, session_id):
    """Record the answers of a platform's results file; every row gets an outcome.

    The body is the file (``Content-Type: text/csv`` or
    ``text/tab-separated-values``). Rows are recorded in file order, as
    ``POST .../answers`` records them (``accepted``, ``duplicate``, ``late``,
    ``rejected`` with a reason); a row that cannot be read is ``malformed``
    with its line number and the rest are still imported; Toloka control tasks
    and rejected, skipped or expired assignments are ``skipped``. Importing
    the same file again gives ``duplicate`` for every answer it recorded.
    """
    ss = SessionStore(get_store())
    rec = session_or_404(ss, session_id)
    if request.mimetype not in IMPORT_MEDIA_TYPES:
        raise ApiError(415, "unsupported_media_type",
                       f"send the file as {' or '.join(IMPORT_MEDIA_TYPES)}, not {request.mimetype or 'no type'}")
    try:
        text = request.get_data().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ApiError(422, "invalid_file", f"the file is not UTF-8 (byte {exc.start})",
                       errors={"/body": [f"not UTF-8 at byte {exc.start}"]}) from exc
    if "\x00" in text:
        raise ApiError(422, "invalid_file", "the file holds a NUL byte", errors={"/body": ["NUL byte"]})
    answers, reports = parse_answers(text, args["format"])
    answers = _check_items(ss, session_id, answers, reports)
    revision = rec["revision"]
    for start in range(0, len(answers), BATCH):
        chunk = answers[start:start + BATCH]
        done = record_answers(ss, ss.get(session_id) or rec, [a for _, a in chunk])
        revision = done["revision"]
        for (line, a), r in zip(chunk, done["results"]):
            reports.append({"line": line, "question_id": a["question_id"], "worker_id": a["worker_id"],
                            "assignment_id": a["assignment_id"], "outcome": r["outcome"], "reason": r["reason"]})
    reports.sort(key=lambda r: r["line"])
    counts = dict.fromkeys(("accepted", "duplicate", "late", "rejected", "skipped", "malformed"), 0)
    for r in reports:
        counts[r["outcome"]] += 1
    return {"format": args["format"], "rows": len(reports), "counts": counts, "results": reports,
            "revision": revision}
