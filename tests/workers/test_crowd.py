"""Crowd aggregation and per-worker reliability (workers.crowd), on simulated crowds."""

import numpy as np

from workers.crowd import aggregate, fit_dawid_skene, worker_reliability

WORDS = ("must_link", "cannot_link")


def _crowd(p_wrong, n_questions=60, seed=0, dont_know=None):
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


def test_majority_vote_ignores_dont_know_and_a_tie_is_dont_know():
    answers = [("a", {"answer": "must_link", "worker_id": "w1"}), ("a", {"answer": "dont_know", "worker_id": "w2"}),
               ("b", {"answer": "must_link", "worker_id": "w1"}), ("b", {"answer": "cannot_link", "worker_id": "w2"}),
               ("c", {"answer": "dont_know", "worker_id": "w1"})]
    out = aggregate(answers, ["a", "b", "c"])
    assert {q: a for q, (a, _) in out.items()} == {"a": "must_link", "b": "dont_know", "c": "dont_know"}
    assert out["b"][1] == ["must_link", "cannot_link"]
    assert fit_dawid_skene(answers) is None  # no two workers share two informative answers


def test_dawid_skene_weighs_workers_by_their_agreement_with_the_consensus():
    truth, answers = _crowd({"good": 0.0, "fair": 0.2, "random": 0.5}, n_questions=100, seed=2)
    ds = fit_dawid_skene(answers)
    assert ds is not None
    labels, accuracy = ds
    assert min(accuracy["good"], accuracy["fair"]) > 0.75 > 0.65 > accuracy["random"]
    by_vote = aggregate(answers, list(truth))
    with_ds = aggregate(answers, list(truth), ds)
    assert all(with_ds[q][0] == labels[q] and with_ds[q][1] == by_vote[q][1] for q in truth)
    right = [sum(out[q][0] == truth[q] for q in truth) for out in (by_vote, with_ds)]
    assert right[1] > right[0], right  # where "fair" and "random" outvote "good", Dawid-Skene sides with "good"


def test_worker_reliability_puts_the_unreliable_worker_first():
    truth, answers = _crowd({"good-1": 0.0, "good-2": 0.05, "sloppy": 0.3}, dont_know={"good-2": 0.1}, seed=2)
    rows = worker_reliability(answers, fit_dawid_skene(answers))
    assert [r["worker_id"] for r in rows][0] == "sloppy"
    by_id = {r["worker_id"]: r for r in rows}
    assert all(r["answers"] == len(truth) for r in rows)
    given = sum(a["answer"] == "dont_know" for _, a in answers if a["worker_id"] == "good-2")
    assert by_id["good-2"]["dont_know"] == given > 0 and by_id["sloppy"]["dont_know"] == 0
    wrong = sum(a["answer"] != truth[q] for q, a in answers if a["worker_id"] == "sloppy")
    # the two others agree on every question but the few good-2 got wrong or skipped
    assert abs(by_id["sloppy"]["agreement"] - (1 - wrong / len(truth))) < 0.1
    assert by_id["sloppy"]["agreement"] < 0.8 < by_id["good-1"]["agreement"]
    assert by_id["sloppy"]["estimated_accuracy"] < 0.8 < by_id["good-1"]["estimated_accuracy"] <= 1.0


def test_without_overlap_there_is_no_estimate_and_nothing_to_compare():
    answers = [(f"q{k}", {"answer": "must_link", "worker_id": f"w{k}"}) for k in range(4)]
    answers.append(("q9", {"answer": "cannot_link"}))  # no worker id: not a worker's answer
    rows = worker_reliability(answers, fit_dawid_skene(answers))
    assert [r["worker_id"] for r in rows] == ["w0", "w1", "w2", "w3"]
    assert all(r["compared"] == 0 and r["agreement"] is None and r["estimated_accuracy"] is None for r in rows)
