"""ActiveDCRC: triplet questions for people, DCRC re-clustering (ask/tell)."""

import json

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.metrics import adjusted_rand_score

from clustering import ActiveDCRC, InvalidInputError
from clustering._metrics import violated_triplet_answers


def _answer(y, a, b, c):
    if y[a] == y[b] != y[c]:
        return "yes"
    if y[a] == y[c] != y[b]:
        return "no"
    return "dont_know"


def _blobs(n=90, k=3, seed=0, std=2.5):
    return make_blobs(n_samples=n, centers=k, cluster_std=std, random_state=seed)


def _drive(est, y, rounds, batch=10):
    for _ in range(rounds):
        qs = est.suggest_queries(batch)
        if not qs:
            break
        assert est.tell([(*q["items"], _answer(y, *q["items"])) for q in qs]) == ["accepted"] * len(qs)
    return est.update()


def test_uncertainty_asks_the_samples_torn_between_two_clusters_against_both():
    X, y = _blobs()
    est = ActiveDCRC(3, random_state=0, diversity_neighbors=0).fit(X)
    qs = est.suggest_queries(10)
    P = est.proba_
    p1, p2 = np.sort(P, axis=1)[:, -1], np.sort(P, axis=1)[:, -2]
    r = p1 / (p1 + p2)
    info = (p1 + p2) * -(r * np.log(r) + (1 - r) * np.log(np.clip(1 - r, 1e-300, 1)))
    samples = [q["sample"] for q in qs]
    assert len(set(samples)) == 10 and [q["items"][0] for q in qs] == samples
    # the ten samples asked about carry the most information (ties aside), best first
    assert np.isclose(sorted(info[samples])[0], np.sort(info)[-10])
    np.testing.assert_allclose([q["score"] for q in qs], info[samples])
    assert [q["score"] for q in qs] == sorted((q["score"] for q in qs), reverse=True)
    for q in qs:
        a, b, c = q["items"]
        top2 = set(np.argsort(-P[a])[:2])
        assert {est.labels_[b], est.labels_[c]} == top2  # one anchor from each of a's two likeliest clusters


def test_diversity_keeps_neighbours_out_of_one_batch():
    X, y = _blobs()
    est = ActiveDCRC(3, random_state=0, diversity_neighbors=5).fit(X)
    samples = [q["sample"] for q in est.suggest_queries(10)]
    nn = est._diversity_neighbors()
    for i, s in enumerate(samples):
        assert not set(nn[s]) & set(samples[i + 1:]), "a later sample sits among an earlier one's neighbours"


def test_answers_improve_the_clustering_and_are_never_asked_twice():
    X, y = _blobs(std=2.0, seed=3)  # unconstrained DCRC: ARI .42
    for strategy in ("uncertainty", "random"):
        est = ActiveDCRC(3, strategy=strategy, budget=60, random_state=1).fit(X)
        before = adjusted_rand_score(y, est.labels_)
        _drive(est, y, 10)
        assert est.n_questions_ == 60 and est.suggest_queries(5) == []
        keys = {(a, min(b, c), max(b, c)) for a, b, c in est.triplets_.tolist()}
        assert len(keys) == 60
        assert adjusted_rand_score(y, est.labels_) > max(before + 0.3, 0.9)
        # the model agrees with (nearly) all of the correct answers it was given
        assert violated_triplet_answers(est.labels_, est.triplets_, est.triplet_answer_).mean() < 0.05


def test_tell_outcomes_and_validation():
    X, y = _blobs(30)
    est = ActiveDCRC(3, budget=2, random_state=0).fit(X)
    assert est.tell([(0, 1, 2, "yes"), (0, 2, 1, "no")]) == ["accepted", "duplicate"]  # same question
    assert est.tell([(3, 4, 5, None), (6, 7, 8, -1)]) == ["accepted", "over_budget"]
    assert est.triplet_answer_.tolist() == [1, 0]
    with pytest.raises(InvalidInputError, match="repeats"):
        est.tell([(1, 1, 2, "yes")])
    with pytest.raises(InvalidInputError, match="out of range"):
        est.tell([(1, 2, 30, "yes")])
    with pytest.raises(InvalidInputError, match="yes/no/dont_know"):
        est.tell([(1, 2, 3, "maybe")])
    with pytest.raises(InvalidInputError, match=r"answers\[0\]"):
        est.tell([(1, 2, 3)])
    with pytest.raises(InvalidInputError, match="n_queries"):
        est.suggest_queries(0)
    with pytest.raises(InvalidInputError):
        ActiveDCRC(3, strategy="greedy").fit(X)
    with pytest.raises(NotFittedError, match="fit"):  # as URASC, scikit-learn's error
        ActiveDCRC(3).suggest_queries(1)


def test_state_round_trip_gives_the_same_model_and_questions():
    X, y = _blobs(60, seed=5)
    est = _drive(ActiveDCRC(3, random_state=2).fit(X), y, 2)
    clone = ActiveDCRC.from_state(X, json.loads(json.dumps(est.get_state())))
    assert clone.suggest_queries(5) == est.suggest_queries(5)
    np.testing.assert_array_equal(clone.labels_, est.labels_)
    np.testing.assert_array_equal(clone.triplets_, est.triplets_)
    with pytest.raises(InvalidInputError, match="rows"):
        ActiveDCRC.from_state(X[:50], est.get_state())
    with pytest.raises(InvalidInputError, match="version"):
        ActiveDCRC.from_state(X, {"version": 0})


def test_max_iter_bounds_every_refit():
    X, y = _blobs(60, seed=5)
    est = _drive(ActiveDCRC(3, max_iter=2, random_state=0).fit(X), y, 1)
    assert est.n_questions_ == 10 and est.model_.n_iter_ <= 2


def test_warm_start_adds_the_last_fit_as_a_start_after_new_answers_only():
    X, y = _blobs(60, seed=5)
    warm = _drive(ActiveDCRC(3, n_init=2, random_state=0).fit(X), y, 1)
    cold = _drive(ActiveDCRC(3, n_init=2, warm_start=False, random_state=0).fit(X), y, 1)
    assert len(warm.model_.diagnostics_["restart_lower_bounds"]) == 3
    assert len(cold.model_.diagnostics_["restart_lower_bounds"]) == 2
    # a version-1 state (before warm starts) still loads, as a cold session
    old = {k: v for k, v in cold.get_state().items() if k != "fit"}
    old["version"] = 1
    old["params"].pop("warm_start")
    restored = ActiveDCRC.from_state(X, old).update()
    assert restored.warm_start is False and np.array_equal(restored.labels_, cold.labels_)
    state = warm.get_state()
    state["fit"]["W"] = [[0.0]]
    with pytest.raises(InvalidInputError, match="weights"):
        ActiveDCRC.from_state(X, state)
    state["fit"]["W"] = [[0.0], [1.0, 2.0]]  # ragged
    with pytest.raises(InvalidInputError, match="weights"):
        ActiveDCRC.from_state(X, state)


@pytest.mark.parametrize("n, k, batch, strategy", [
    (6, 3, 1, "uncertainty"), (8, 2, 4, "uncertainty"), (9, 3, 7, "uncertainty"), (7, 3, 3, "random"),
])
def test_suggest_queries_comes_back_short_only_when_the_unasked_triplets_run_out(n, k, batch, strategy):
    """Non-regression: the uncertainty strategy drew one anchor pair per sample and skipped the
    sample when that pair was asked before, so it returned [] (read as "session finished") after
    3 of 60 triplets (n=6, K=3) while budget and unasked triplets remained."""
    from math import comb

    X, y = make_blobs(n_samples=n, centers=k, random_state=0)
    est = ActiveDCRC(k, strategy=strategy, random_state=0, n_init=1, max_iter=5).fit(X)
    total = n * comb(n - 1, 2)  # a, then the unordered pair {b, c}
    while True:
        qs = est.suggest_queries(batch)
        assert len(qs) == min(batch, total - est.n_questions_)
        if not qs:
            break
        keys = {(q["items"][0], *sorted(q["items"][1:])) for q in qs}
        assert len(keys) == len(qs)
        assert est.tell([(*q["items"], _answer(y, *q["items"])) for q in qs]) == ["accepted"] * len(qs)
    assert est.n_questions_ == total
    assert len({(a, min(b, c), max(b, c)) for a, b, c in est.triplets_.tolist()}) == total


def test_a_short_batch_keeps_the_first_choices_and_adds_other_anchors():
    """When some samples' first anchor pair was asked already, the questions of the samples whose
    first choice is free stay the same; the others get another pair of their two likeliest clusters."""
    X, y = _blobs(30, seed=4)
    est = ActiveDCRC(3, random_state=0, diversity_neighbors=0).fit(X)
    first = est.suggest_queries(30)
    assert len(first) == 30
    # the ten best samples' first choices become asked pairs; without a new answer the next call
    # draws the same first choices (its random stream depends on the answers so far)
    est._asked |= {(q["items"][0], *sorted(q["items"][1:])) for q in first[:10]}
    again = est.suggest_queries(30)
    assert len(again) == 30
    taken = {(q["items"][0], *sorted(q["items"][1:])) for q in first[:10]}
    assert not taken & {(q["items"][0], *sorted(q["items"][1:])) for q in again}
    assert [q for q in again if q["sample"] not in {f["sample"] for f in first[:10]}] == first[10:]
    P = est.proba_
    for q in again:
        a, b, c = q["items"]
        assert {est.labels_[b], est.labels_[c]} == set(np.argsort(-P[a])[:2])
    assert [q["score"] for q in again] == sorted((q["score"] for q in again), reverse=True)


def test_random_state_none_draws_a_seed_per_session_and_keeps_it_in_the_state():
    """Non-regression: random_state=None seeded the question choice with 0 in every session."""
    X, y = _blobs(60, seed=5)
    sessions = [ActiveDCRC(3, n_init=1, max_iter=10).fit(X) for _ in range(2)]
    asked = [[q["items"] for q in s.suggest_queries(10)] for s in sessions]
    assert asked[0] != asked[1]
    est = _drive(sessions[0], y, 2)
    state = json.loads(json.dumps(est.get_state()))
    assert state["params"]["random_state"] is None and isinstance(state["seed"], int)
    clone = ActiveDCRC.from_state(X, state)
    assert clone.suggest_queries(5) == est.suggest_queries(5)
    np.testing.assert_array_equal(clone.labels_, est.labels_)
    # an integer seed is the session's seed: sessions repeat
    a, b = (ActiveDCRC(3, random_state=7, n_init=1, max_iter=10).fit(X) for _ in range(2))
    assert a.suggest_queries(10) == b.suggest_queries(10) and a.get_state()["seed"] == 7
    # a state saved before the seed was part of it asks as it did (seed 0 for random_state=None)
    old = dict(state)
    del old["seed"]
    r1, r2 = ActiveDCRC.from_state(X, old), ActiveDCRC.from_state(X, json.loads(json.dumps(old)))
    assert r1.suggest_queries(5) == r2.suggest_queries(5) and r1.get_state()["seed"] == 0
    with pytest.raises(InvalidInputError, match="seed"):
        ActiveDCRC.from_state(X, {**state, "seed": "x"})
