"""Gold scores, flagged workers and crowd-kit's models as a session's aggregation."""

import numpy as np
import pytest

from clustering._crowd_quality import CROWDKIT_MODELS, crowdkit_aggregate, flagged_workers, gold_scores
from workers.crowd import aggregate, fit_crowdkit


def test_gold_scores_leave_dont_know_out_and_flag_only_with_evidence():
    gold = {f"g{k}": "must_link" for k in range(6)}
    given = [("good", f"g{k}", "must_link") for k in range(6)]
    given += [("bad", f"g{k}", "cannot_link" if k % 2 else "must_link") for k in range(6)]
    given += [("shy", "g0", "cannot_link"), ("shy", "g1", "dont_know"), ("bad", "unknown", "must_link")]
    scores = gold_scores(given, gold)
    assert scores["good"] == {"gold_answered": 6, "gold_correct": 6, "gold_accuracy": 1.0}
    assert scores["bad"]["gold_accuracy"] == 0.5 and scores["shy"]["gold_answered"] == 1
    assert flagged_workers(scores, 0.7, 5) == {"bad"}  # "shy" is wrong once, too little to flag


def _crowd(seed):
    """40 questions, three honest workers and two who answer at random."""
    rng = np.random.default_rng(seed)
    truth = {f"q{k}": ("must_link", "cannot_link")[k % 2] for k in range(40)}
    answers = []
    for q, t in truth.items():
        for w in ("h0", "h1", "h2"):
            answers.append((q, {"answer": t if rng.random() > 0.1 else ("must_link", "cannot_link")[t == "must_link"],
                                "worker_id": w}))
        for w in ("r0", "r1"):
            answers.append((q, {"answer": str(rng.choice(["must_link", "cannot_link"])), "worker_id": w}))
    return truth, answers


@pytest.mark.parametrize("model", CROWDKIT_MODELS)
def test_crowdkit_models_aggregate_a_session(model):
    truth, answers = _crowd(0)
    fitted = fit_crowdkit(answers + [("q0", {"answer": "dont_know", "worker_id": "h0"})], model)
    agg = aggregate(answers, list(truth), fitted)
    right = np.mean([agg[q][0] == t for q, t in truth.items()])
    assert right >= 0.9, right


def test_an_unknown_model_is_refused():
    with pytest.raises(ValueError, match="dawid_skene"):
        crowdkit_aggregate(["q"], ["w"], ["must_link"], "wawa")


def test_gold_flags_follow_the_session_thresholds():
    from workers.crowd import gold_flags, with_gold

    stats = {"good": {"gold_answered": 6, "gold_correct": 6}, "bad": {"gold_answered": 6, "gold_correct": 3},
             "new": {"gold_answered": 2, "gold_correct": 0}, "none": {"gold_answered": 0, "gold_correct": 0}}
    flags = gold_flags(stats, {"min_gold_accuracy": 0.7, "min_gold_answered": 5, "exclude_flagged": True})
    assert flags == {"good": {"gold_answered": 6, "gold_accuracy": 1.0, "flagged": False},
                     "bad": {"gold_answered": 6, "gold_accuracy": 0.5, "flagged": True},
                     "new": {"gold_answered": 2, "gold_accuracy": 0.0, "flagged": False}}  # too little evidence
    assert gold_flags(stats, {"min_gold_accuracy": 0.4, "min_gold_answered": 2})["new"]["flagged"]
    rows = with_gold([{"worker_id": "bad"}, {"worker_id": "api"}], flags, {"bad"})
    assert rows == [{"worker_id": "bad", "gold_answered": 6, "gold_accuracy": 0.5, "flagged": True, "excluded": True},
                    {"worker_id": "api", "gold_answered": 0, "gold_accuracy": None, "flagged": False,
                     "excluded": False}]


def test_flag_reason_only_with_exclude_flagged_and_names_the_flag():
    from workers.crowd import flag_reason

    quality = {"min_gold_accuracy": 0.7, "min_gold_answered": 5, "exclude_flagged": True}
    reason = flag_reason({"gold_answered": 6, "gold_correct": 3}, quality)
    assert "flagged by gold questions" in reason and "gold accuracy 0.5 after 6" in reason
    assert "min_gold_accuracy 0.7" in reason and "exclude_flagged" in reason
    assert flag_reason({"gold_answered": 6, "gold_correct": 3}, {**quality, "exclude_flagged": False}) is None
    assert flag_reason({"gold_answered": 4, "gold_correct": 0}, quality) is None  # too little evidence
    assert flag_reason({"gold_answered": 0, "gold_correct": 0}, quality) is None
    assert flag_reason({"gold_answered": 10, "gold_correct": 7}, quality) is None  # 0.7 is not below 0.7
