"""Session model outputs computed on the worker (no Redis needed)."""

import numpy as np

from workers.session_tasks import contradicted_answers, question_id


def _closed(i, j, aggregated, votes=None):
    return {"question_id": question_id(i, j), "items": [i, j], "status": "closed", "aggregated": aggregated,
            "votes": votes or [aggregated]}


def test_contradicted_answers_lists_the_aggregated_answers_the_labels_go_against():
    labels = np.array([0, 0, 1, 1, 2])
    closed = [
        _closed(3, 4, "cannot_link"),                       # apart: kept
        _closed(2, 3, "cannot_link", ["cannot_link", "must_link", "cannot_link"]),  # together: against
        _closed(0, 2, "must_link"),                         # apart: against
        _closed(0, 1, "must_link"),                         # together: kept
        _closed(1, 4, "dont_know", ["must_link", "cannot_link"]),  # never listed
    ]
    out = contradicted_answers(labels, closed)
    assert out == [
        {"question_id": "q_0_2", "items": [0, 2], "answer": "must_link", "votes": ["must_link"]},
        {"question_id": "q_2_3", "items": [2, 3], "answer": "cannot_link",
         "votes": ["cannot_link", "must_link", "cannot_link"]},
    ]
    assert contradicted_answers(np.zeros(5, dtype=int), closed) == [
        {"question_id": q, "items": it, "answer": "cannot_link", "votes": v}
        for q, it, v in (("q_2_3", [2, 3], closed[1]["votes"]), ("q_3_4", [3, 4], ["cannot_link"]))]


def test_no_closed_questions_no_contradictions():
    assert contradicted_answers(np.array([0, 1, 1]), []) == []
    assert contradicted_answers(np.array([0, 1, 1]), [_closed(0, 1, "dont_know")]) == []
