"""Majority vote and one-coin Dawid-Skene (clustering._crowd) on simulated crowds."""

import numpy as np
import pytest

from clustering._crowd import majority_vote, one_coin_em

WORDS = ("must_link", "cannot_link")


def crowd_answers(p_wrong, n_questions=60, seed=0, dont_know=None):
    """Every worker answers every question; worker w is wrong with probability p_wrong[w]."""
    rng = np.random.default_rng(seed)
    truth = {f"q{k}": WORDS[rng.integers(2)] for k in range(n_questions)}
    answers = []
    for qid, right in truth.items():
        for w, p in p_wrong.items():
            word = WORDS[1 - WORDS.index(right)] if rng.random() < p else right
            if dont_know and rng.random() < dont_know.get(w, 0.0):
                word = "dont_know"
            answers.append((qid, {"answer": word, "worker_id": w}))
    return truth, answers


def _columns(answers):
    return [q for q, _ in answers], [a["worker_id"] for _, a in answers], [a["answer"] for _, a in answers]


def test_one_coin_em_recovers_each_workers_accuracy():
    errors = {"a": 0.05, "b": 0.2, "c": 0.3, "d": 0.4}
    truth, answers = crowd_answers(errors, n_questions=400, seed=0)
    labels, accuracy = one_coin_em(*_columns(answers), shrinkage=0.0)
    for w, e in errors.items():
        wrong = sum(a["answer"] != truth[q] for q, a in answers if a["worker_id"] == w) / len(truth)
        assert abs(accuracy[w] - (1 - wrong)) < 0.03, (w, accuracy[w], 1 - wrong)
    votes = {}
    for q, a in answers:
        votes.setdefault(q, []).append(a["answer"])
    right = [sum(x == truth[q] for q, x in out.items())
             for out in ({q: majority_vote(v) for q, v in votes.items()}, labels)]
    assert right[1] > right[0], right


def test_shrinkage_keeps_workers_with_few_answers_near_the_crowd():
    rng = np.random.default_rng(4)
    errors = {f"w{k}": float(rng.uniform(0.05, 0.35)) for k in range(20)}
    answers = []
    for q in range(30):  # three of the 20 workers per question: about 4.5 answers each
        right = WORDS[rng.integers(2)]
        for w in rng.choice(list(errors), size=3, replace=False):
            answers.append((f"q{q}", {"worker_id": str(w), "answer": WORDS[1 - WORDS.index(right)]
                                      if rng.random() < errors[w] else right}))
    spread = {}
    for shrinkage in (0.0, 20.0):
        skill = one_coin_em(*_columns(answers), shrinkage=shrinkage)[1]
        spread[shrinkage] = max(skill.values()) - min(skill.values())
    assert spread[20.0] < 0.5 * spread[0.0], spread
    labels, skill = one_coin_em(*_columns(answers), shrinkage=1e9)  # every worker alike: a majority vote
    votes = {}
    for q, a in answers:
        votes.setdefault(q, []).append(a["answer"])
    assert max(skill.values()) - min(skill.values()) < 1e-6
    assert all(labels[q] == majority_vote(v) for q, v in votes.items())


def test_an_exact_tie_is_left_undecided():
    # two equally reliable workers who disagree on both questions: nothing favours either answer
    labels, skill = one_coin_em(["a", "a", "b", "b"], ["w1", "w2", "w1", "w2"], ["yes", "no", "no", "yes"])
    assert labels == {} and skill == {"w1": 0.5, "w2": 0.5}
    labels, _ = one_coin_em(["a", "a", "b", "b"], ["w1", "w2", "w1", "w2"], ["yes"] * 4)
    assert labels == {"a": "yes", "b": "yes"} and all(type(q) is str for q in labels)


@pytest.mark.parametrize("tasks, workers, labels", [([], [], []), (["a", "b"], ["w1"], ["yes", "no"])])
def test_no_answers_or_ragged_columns_raise(tasks, workers, labels):
    with pytest.raises(ValueError, match="as many tasks, workers and labels"):
        one_coin_em(tasks, workers, labels)
