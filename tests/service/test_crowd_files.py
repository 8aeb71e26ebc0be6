"""Reading crowd platforms' results files (fixtures in tests/fixtures/crowd) and writing task files."""

from pathlib import Path

import pytest

from service.crowd_files import export_rows, parse_answers
from service.errors import ApiError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "crowd"


def _outcomes(reports):
    return {r["line"]: (r["outcome"], r["reason"]) for r in reports}


def test_toloka_results_fixture():
    answers, reports = parse_answers((FIXTURES / "toloka_results.tsv").read_text(), "toloka")
    assert [line for line, _ in answers] == [2, 3, 4]
    assert answers[0][1] == {"question_id": "q_3_77", "answer": "cannot_link", "worker_id": "5e6a1b2c3d4e5f60",
                             "assignment_id": "00000ae5c9--6523e5f1b0a4c8:q_3_77"}
    assert answers[1][1]["assignment_id"] == "00000ae5c9--6523e5f1b0a4c8:q_12_140"  # one suite, two questions
    got = _outcomes(reports)
    assert sorted(got) == [5, 6, 7, 8]
    assert got[5] == ("malformed", "4 fields where the header has 12")
    assert got[6][0] == "skipped" and "control task" in got[6][1]
    assert got[7] == ("skipped", "the assignment is REJECTED on the platform")
    assert got[8] == ("malformed", "no answer")


def test_csv_fixture():
    answers, reports = parse_answers((FIXTURES / "answers.csv").read_text(), "csv")
    assert [line for line, _ in answers] == [2, 3, 4, 5, 7]
    assert answers[3][1]["_items"] == "0 1"  # checked against the question once the session is known
    assert answers[-1][1] == {"question_id": "q_12_140", "answer": "cannot_link", "worker_id": "dave",
                              "assignment_id": "dave/q_12_140", "_items": "12 140"}
    assert _outcomes(reports) == {6: ("malformed", "no worker id")}


def test_task_fixture_is_what_the_export_writes():
    rows = export_rows([{"question_id": "q_3_77", "items": [3, 77]}, {"question_id": "q_12_140", "items": [12, 140]}],
                       "pairwise", "toloka", [f"iris-{i}" for i in range(150)])
    text = "".join("\t".join(r) + "\n" for r in rows)
    assert text == (FIXTURES / "toloka_tasks.tsv").read_text()


def test_triplet_export_has_three_items():
    rows = export_rows([{"question_id": "t_1_2_3", "items": [1, 2, 3]}], "triplet", "csv", None)
    assert rows == [["question_id", "type", "items", "item_ids", "worker_id", "assignment_id", "answer"],
                    ["t_1_2_3", "triplet", "1 2 3", "1 2 3", "", "", ""]]


@pytest.mark.parametrize("text, fmt, where", [
    ("", "csv", "no header row"),
    ("question_id,answer\nq_0_1,must_link\n", "csv", "worker_id"),
    ("INPUT:question_id\tOUTPUT:result\n", "toloka", "ASSIGNMENT:assignment_id"),
])
def test_a_file_without_its_columns_is_refused_whole(text, fmt, where):
    with pytest.raises(ApiError) as err:
        parse_answers(text, fmt)
    assert err.value.status == 422 and where in str(err.value.__dict__)


def test_an_open_quote_reports_its_line_and_keeps_the_rows_before():
    text = 'question_id,worker_id,assignment_id,answer\nq_0_1,w,a1,must_link\nq_0_2,w,"a2,must_link\nq_0_3,w,a3,no\n'
    answers, reports = parse_answers(text, "csv")
    assert [line for line, _ in answers] == [2]
    assert reports[0]["line"] == 3 and reports[0]["outcome"] == "malformed"


def test_too_long_ids_are_malformed_not_cut():
    text = f"question_id,worker_id,assignment_id,answer\nq_0_1,{'w' * 201},a1,must_link\n"
    answers, reports = parse_answers(text, "csv")
    assert answers == [] and reports[0]["outcome"] == "malformed" and "worker_id" in reports[0]["reason"]
