"""A whole active-clustering session through the client, answers from the ground truth."""

import pytest
from sklearn.metrics import adjusted_rand_score

pytestmark = pytest.mark.integration


def test_a_pairwise_session_runs_until_its_budget_is_used(shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X, y, item_ids=[f"iris-{i}" for i in range(len(y))],
                               items=[f"flower {i}" for i in range(len(y))])
    session = shoal.sessions.create(dataset=ds, n_clusters=3, budget=20, kind="pairwise", pool_size=10)
    assert session.state in ("INITIALIZING", "ACTIVE") and session.kind == "pairwise"
    outcomes = []
    for q in session.questions(worker_id="w1", batch=10, timeout=120):
        a, b = q.items
        assert q.type == "pairwise" and set(q.answers) == {"must_link", "cannot_link", "dont_know"}
        assert q.item_ids == (f"iris-{a}", f"iris-{b}") and q.objects == (f"flower {a}", f"flower {b}")
        if not outcomes:
            with pytest.raises(ValueError, match="pairwise questions take"):
                session.answer(q, "maybe")
        outcomes.append(session.answer(q, "same" if y[a] == y[b] else "different").outcome)
    session.refresh()
    assert session.budget_used == session.budget == 20 and session.budget_remaining == 0
    assert len(outcomes) >= 20 and set(outcomes) == {"accepted"}
    model = session.model(timeout=120)
    assert model.labels.shape == (150,) and model.observed_revision == session.revision
    assert adjusted_rand_score(y, model.labels) > 0.5
    assert len(model.must_link) + len(model.cannot_link) == model.n_questions_used == 20
    assert [w["worker_id"] for w in model.workers] == ["w1"]
    session.delete()
    assert session.id not in [s.id for s in shoal.sessions.list(dataset=ds)]


def truth_of(y, a, b, c):
    """Is a closer to b than to c, by the ground truth: True, False, or "dont_know"."""
    if y[a] == y[b] != y[c]:
        return True
    if y[a] == y[c] != y[b]:
        return False
    return "dont_know"


def test_a_triplet_session_takes_the_answer_values_of_triplets(shoal, iris):
    X, y = iris
    ds = shoal.datasets.create(X, y)
    session = shoal.sessions.create(ds, n_clusters=3, budget=10, kind="triplet", pool_size=10,
                                    params={"n_init": 1, "max_iter": 30})
    answered = []
    for q in session.questions(worker_id="w1", batch=10, timeout=120):
        assert q.type == "triplet" and set(q.answers) == {"yes", "no", "dont_know"}
        answered.append(session.answer(q, truth_of(y, *q.items)).outcome)
    assert session.refresh().budget_used == 10 and set(answered) == {"accepted"}
    model = session.model(timeout=120)
    assert model.labels.shape == (150,) and len(model.triplets) == model.n_questions_used
    assert {t[3] for t in model.triplets} <= {"yes", "no", "dont_know"}
