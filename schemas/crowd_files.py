"""Crowd platforms' files: export and import arguments, the import report."""

from marshmallow import RAISE, Schema, fields, validate

from .fields import one_of

FILE_FORMATS = ["toloka", "csv"]
ROW_OUTCOMES = ["accepted", "duplicate", "late", "rejected", "skipped", "malformed"]


class ExportArgsSchema(Schema):
    class Meta:
        unknown = RAISE

    format = one_of("csv", FILE_FORMATS, "toloka: Toloka's task TSV (INPUT:question_id, INPUT:items, INPUT:a, "
                                         "INPUT:b[, INPUT:c], GOLDEN:result); csv: question_id, type, items, "
                                         "item_ids and empty worker_id, assignment_id, answer columns")
    count = fields.Integer(strict=False, load_default=100, validate=validate.Range(min=1, max=1000),
                          metadata={"description": "most questions in the file"})


class ImportArgsSchema(Schema):
    class Meta:
        unknown = RAISE

    format = one_of("csv", FILE_FORMATS, "toloka: Toloka's results TSV (INPUT:question_id, OUTPUT:result, "
                                         "ASSIGNMENT:worker_id, ASSIGNMENT:assignment_id; GOLDEN:result and "
                                         "ASSIGNMENT:status read when present); csv: question_id, worker_id, "
                                         "assignment_id, answer (items checked when present)")


class ImportRowSchema(Schema):
    line = fields.Integer(metadata={"description": "line of the file where the row starts (the header is line 1)"})
    question_id = fields.String(allow_none=True)
    worker_id = fields.String(allow_none=True)
    assignment_id = fields.String(allow_none=True, metadata={
        "description": "as recorded; Toloka: <ASSIGNMENT:assignment_id>:<question_id> (an assignment is a page "
                       "of tasks)"})
    outcome = fields.String(validate=validate.OneOf(ROW_OUTCOMES), metadata={
        "description": "accepted, duplicate, late, rejected: as POST .../answers; malformed: the row could not be "
                       "read (nothing recorded); skipped: a control task or an assignment the platform rejected, "
                       "skipped or let expire"})
    reason = fields.String(allow_none=True)


class ImportResultSchema(Schema):
    format = fields.String(validate=validate.OneOf(FILE_FORMATS))
    rows = fields.Integer(metadata={"description": "rows read (blank lines left out) = the sum of counts"})
    counts = fields.Dict(keys=fields.String(validate=validate.OneOf(ROW_OUTCOMES)), values=fields.Integer())
    results = fields.List(fields.Nested(ImportRowSchema), metadata={"description": "one per row, in file order"})
    revision = fields.Integer()
