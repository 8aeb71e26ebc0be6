"""Gold questions and aggregation against a crowd with workers who answer at random.

A URASC session (K known, 60 questions) runs on KEEL iris, wine and wdbc with
five workers: three honest (wrong 10% of the time), two answering at random.
Aggregations: majority vote, Shoal's one-coin Dawid-Skene
(``clustering._crowd.one_coin_em``, the session default), crowd-kit's
DawidSkene, GLAD and MACE. Two protocols:

``served`` (the session as the service runs it): a pool of 20 questions, three
answers per question (``answers_per_question``); workers arrive in random
order and each is handed one question as the annotator page hands it: its
first ``GOLD_FIRST`` (20) questions are gold (pairs with a known answer,
half same-class, never told to the model), then one in every ``GOLD_EVERY``
(5); otherwise the first pool question it has not answered with a free slot,
a fresh one only while the questions committed and in flight are fewer than
the budget. A worker is flagged (``clustering._crowd_quality.gold_scores``
and ``flagged_workers``, as ``workers.crowd.gold_flags``) once it has
``min_gold_answered`` (20: judged on the whole qualification) gold answers
with accuracy below ``min_gold_accuracy`` (0.7, the session default);
``worker_quality.exclude_flagged``: a flagged worker is handed nothing more,
and a pass leaves its earlier answers out. A question closes when its slots
fill, a flagged worker's earlier answers included, and is aggregated from the
answers that count (none: told as don't know). A pass runs once five
questions are ready (the service coalesces the questions that close while a
pass runs; a crowd-kit fit takes 0.2-2.5 s), or when no arriving worker can be
handed anything; it aggregates over every answer that counts, tells the ready
questions, sets the committed count to the questions the model used, and
refills the pool (questions no longer suggested stay open while they have
answers). Reference: five honest workers, three answers per
question, no gold, majority vote: the same 60 questions' budget of 180
counted answers. Rows without ``+gold``: no gold, every answer counts.
Answers use common random numbers: the k-th honest answer to a pair is wrong
under the same draw in every run of a trial, whichever honest worker gives
it, so the rows differ from the reference by the protocol, not by luck.

``every`` (every worker answers every question): the questions in batches of
20, each answered by all five workers; each worker first answers 20 gold
questions, flagged below 0.75 after 10, and in ``+gold`` rows its answers are
dropped. Reference: five honest workers answering every question.

Reported: mean ARI over 5 trials, its ratio to the reference ("kept"), gold
answers asked per session (``served``), and sessions that could not complete
(an honest worker flagged leaves too few workers for three answers a question).

    python -m bench.crowd_quality --out bench/results/crowd_quality.json
"""

import argparse
import json
import time
import warnings
from collections import Counter

import numpy as np

from clustering._crowd import majority_vote, one_coin_em
from clustering._crowd_quality import crowdkit_aggregate, flagged_workers, gold_scores
from clustering._metrics import clustering_scores
from clustering._urasc import URASC

from .datasets import load

WORDS = ("must_link", "cannot_link")
HONEST_ERROR = 0.1
CROWD = {"h0": HONEST_ERROR, "h1": HONEST_ERROR, "h2": HONEST_ERROR, "r0": None, "r1": None}  # None: at random
HONEST = {f"h{k}": HONEST_ERROR for k in range(5)}
AGGREGATIONS = ("majority", "one_coin", "dawid_skene", "glad", "mace")
BUDGET, POOL, ANSWERS_PER_QUESTION, PASS_READY = 60, 20, 3, 5
#: served protocol: gold first, then one in every; the session's worker_quality
GOLD_FIRST, GOLD_EVERY, N_GOLD = 20, 5, 40
QUALITY = {"min_gold_accuracy": 0.7, "min_gold_answered": 20, "exclude_flagged": True}
#: every-question protocol: each worker answers 20 gold questions, then every question
EVERY_GOLD, EVERY_THRESHOLD, EVERY_MIN_ANSWERED = 20, 0.75, 10


def _answer(truth, error, rng):
    if error is None:
        return WORDS[int(rng.integers(2))]
    return WORDS[1 - WORDS.index(truth)] if rng.random() < error else truth


def _draw(*key):
    """A uniform number in [0, 1) fixed by ``key`` (common random numbers across runs)."""
    return float(np.random.default_rng([int(k) for k in key]).random())


def _word(truth, error, u):
    """The answer of a worker wrong with probability ``error`` (None: at random) given the draw ``u``."""
    if error is None:
        return WORDS[int(u < 0.5)]
    return WORDS[1 - WORDS.index(truth)] if u < error else truth


def _gold(y, rng, n):
    """``n`` gold pairs, half same-class: ``[(key, (i, j), answer)]``."""
    pairs = []
    for same in [True] * (n // 2) + [False] * (n - n // 2):
        while True:
            i, j = (int(v) for v in rng.choice(len(y), size=2, replace=False))
            if (y[i] == y[j]) == same:
                pairs.append((f"g{len(pairs)}", (i, j), WORDS[0] if same else WORDS[1]))
                break
    return pairs


def _aggregate(answers, method, seed):
    """question -> must_link / cannot_link / dont_know from ``answers`` [(question, worker, word)]."""
    if not answers:
        return {}
    tasks, workers, labels = zip(*answers)
    if method == "majority":
        votes = {}
        for t, w in zip(tasks, labels):
            votes.setdefault(t, []).append(w)
        return {t: majority_vote(v) for t, v in votes.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "one_coin":
            return one_coin_em(list(tasks), list(workers), list(labels))[0]
        return crowdkit_aggregate(tasks, workers, labels, method, random_state=seed)[0]


def _truth(y, i, j):
    return WORDS[0] if y[i] == y[j] else WORDS[1]


class _Served:
    """One session as the service runs it (see the module docstring): pool, slots, gold, flags, passes."""

    def __init__(self, X, y, crowd, method, trial, use_gold):
        self.y, self.crowd, self.method, self.trial = y, crowd, method, trial
        self.arrivals = np.random.default_rng(4000 + trial)
        self.index = {w: k for k, w in enumerate(crowd)}
        self.golds = _gold(y, np.random.default_rng(2000 + trial), N_GOLD) if use_gold else []
        self.gold_answer = {key: a for key, _, a in self.golds}
        self.est = URASC(n_clusters=int(np.unique(y).size), budget=BUDGET, random_state=trial).fit(X)
        self.docs, self.pool, self.log, self.ready = {}, [], [], []
        self.committed, self.gold_log, self.flagged = 0, [], set()
        self.served, self.gold_served = Counter(), Counter()
        self.completed = False
        self._refill()

    def _refill(self):
        """The pass's new pool: suggested questions first, then open ones with answers (replace_pool)."""
        suggested = []
        for q in self.est.suggest_queries(POOL):
            qid = f"{q['i']}_{q['j']}"
            doc = self.docs.setdefault(qid, {"items": (q["i"], q["j"]), "answers": [], "status": "open"})
            if doc["status"] == "withdrawn":
                doc["status"] = "open"
            if doc["status"] == "open":
                suggested.append(qid)
        keep = set(suggested)
        for qid, doc in self.docs.items():
            if doc["status"] == "open" and qid not in keep and not doc["answers"]:
                doc["status"] = "withdrawn"
        rest = [qid for qid in self.pool if qid not in keep and self.docs[qid]["status"] == "open"]
        self.pool = suggested + rest
        return bool(suggested)

    def _flag(self, worker):
        """Flag ``worker`` on its gold answers so far (the service's rule: flagged_workers of gold_scores)."""
        mine = [g for g in self.gold_log if g[0] == worker]
        if flagged_workers(gold_scores(mine, self.gold_answer), QUALITY["min_gold_accuracy"],
                           QUALITY["min_gold_answered"]):
            self.flagged.add(worker)

    def _lease(self, worker):
        in_flight = sum(1 for qid in self.pool if self.docs[qid]["status"] == "open" and self.docs[qid]["answers"])
        for qid in self.pool:
            doc = self.docs[qid]
            if doc["status"] != "open" or worker in (w for w, _ in doc["answers"]):
                continue
            if len(doc["answers"]) >= ANSWERS_PER_QUESTION:
                continue
            if not doc["answers"] and self.committed + in_flight >= BUDGET:
                continue
            return qid
        return None

    def arrive(self, worker):
        """One worker asks for a question and answers it; False when it was handed nothing."""
        if worker in self.flagged:
            return False
        err, served = self.crowd[worker], self.served[worker]
        idx = self.gold_served[worker]
        due = served < GOLD_FIRST or (served - GOLD_FIRST) % GOLD_EVERY == GOLD_EVERY - 1
        if self.golds and due and idx < len(self.golds):
            key, _, truth = self.golds[idx]
            self.served[worker] += 1
            self.gold_served[worker] += 1
            word = _word(truth, err, _draw(3000 + self.trial, 1, self.index[worker], idx))
            self.gold_log.append((worker, key, word))
            self._flag(worker)
            return True
        if self.committed >= BUDGET:
            return False
        qid = self._lease(worker)
        if qid is None:
            return False
        self.served[worker] += 1
        doc = self.docs[qid]
        i, j = doc["items"]
        if err is None:
            u = _draw(3000 + self.trial, 2, self.index[worker], i, j)
        else:  # the k-th honest answer to a pair draws the same in every run of the trial
            u = _draw(3000 + self.trial, 3, i, j, sum(self.crowd[w] is not None for w, _ in doc["answers"]))
        word = _word(_truth(self.y, i, j), err, u)
        doc["answers"].append((worker, word))
        self.log.append((qid, worker, word))
        if len(doc["answers"]) == ANSWERS_PER_QUESTION:
            doc["status"] = "ready"
            self.ready.append(qid)
            self.committed += 1
        return True

    def run_pass(self):
        """Aggregate over the answers that count, tell the ready questions, refill the pool."""
        counted = [a for a in self.log if a[1] not in self.flagged]
        agg = _aggregate(counted, self.method, self.trial) if self.ready else {}
        told = []
        for qid in self.ready:
            doc = self.docs[qid]
            doc["status"] = "closed"
            word = agg.get(qid, "dont_know")
            told.append((*doc["items"], None if word == "dont_know" else word == WORDS[0]))
        self.ready = []
        if told:
            self.est.tell(told)
            self.est.update()
        self.committed = self.est.n_questions_  # finish_pass: budget_committed = used + ready (none left)
        if self.est.n_questions_ >= BUDGET or not self._refill():
            self.completed = True

    def run(self):
        workers = list(self.crowd)
        while not self.completed:
            moved = False
            for k in self.arrivals.permutation(len(workers)):
                moved |= self.arrive(workers[k])
                if len(self.ready) >= PASS_READY:
                    self.run_pass()
                    if self.completed:
                        break
            if not moved and not self.completed:
                if not self.ready:
                    break  # nobody can be handed anything and no pass is due: the session cannot complete
                self.run_pass()
        self.est.update()
        counted = sum(1 for a in self.log if a[1] not in self.flagged)
        return {"ari": clustering_scores(self.y, self.est.labels_)["ari"], "flagged": sorted(self.flagged),
                "gold_answers": int(sum(self.gold_served.values())), "counted_answers": counted,
                "answers": len(self.log), "completed": self.completed}


def served_session(X, y, crowd, method, trial, use_gold=True):
    """One session as the service runs it (see the module docstring).

    Returns
    -------
    dict
        ``ari``, ``flagged`` (worker ids), ``gold_answers`` (gold questions asked),
        ``counted_answers`` (answers left after dropping flagged workers'), ``answers``,
        ``completed`` (False: too few workers left to give the questions their answers).
    """
    return _Served(X, y, crowd, method, trial, use_gold).run()


def every_session(X, y, crowd, method, use_gold, trial, budget=BUDGET, batch=20):
    """ARI of one session in which every worker answers every question, and the workers flagged by gold."""
    rng, gold_rng = np.random.default_rng(1000 + trial), np.random.default_rng(2000 + trial)
    flagged = set()
    if use_gold:
        gold = {key: a for key, _, a in _gold(y, gold_rng, EVERY_GOLD)}
        given = [(w, key, _answer(truth, err, gold_rng)) for w, err in crowd.items() for key, truth in gold.items()]
        flagged = flagged_workers(gold_scores(given, gold), EVERY_THRESHOLD, EVERY_MIN_ANSWERED)
    est = URASC(n_clusters=int(np.unique(y).size), budget=budget, random_state=trial).fit(X)
    answers = []
    while True:
        qs = est.suggest_queries(batch)
        if not qs:
            break
        for q in qs:
            truth = _truth(y, q["i"], q["j"])
            for w, err in crowd.items():
                word = _answer(truth, err, rng)
                if w not in flagged:
                    answers.append((f"{q['i']}_{q['j']}", w, word))
        agg = _aggregate(answers, method, trial)
        told = []
        for q in qs:
            word = agg.get(f"{q['i']}_{q['j']}", "dont_know")
            if word != "dont_know":
                told.append((q["i"], q["j"], word == WORDS[0]))
        est.tell(told)
    est.update()
    return clustering_scores(y, est.labels_)["ari"], sorted(flagged)


def _served_rows(X, y, trials):
    ref = [served_session(X, y, HONEST, "majority", t, use_gold=False) for t in range(trials)]
    rows = {}
    for m, g in [("majority", False), ("one_coin", False)] + [(m, True) for m in AGGREGATIONS]:
        rows[m + ("+gold" if g else "")] = [served_session(X, y, CROWD, m, t, use_gold=g) for t in range(trials)]
    return {"reference": ref, "rows": rows}


def _every_rows(X, y, trials):
    ref = [every_session(X, y, HONEST, "majority", False, t)[0] for t in range(trials)]
    rows = {}
    for m, g in [("majority", False), ("one_coin", False)] + [(m, True) for m in AGGREGATIONS]:
        runs = [every_session(X, y, CROWD, m, g, t) for t in range(trials)]
        rows[m + ("+gold" if g else "")] = [{"ari": a, "flagged": f} for a, f in runs]
    return {"reference": [{"ari": a} for a in ref], "rows": rows}


def _table(out, protocol, title):
    names = list(out["datasets"])
    print(f"\n{title}")
    print(f"{'aggregation':18s}" + "".join(f"{n:>15s}" for n in names) + f"{'mean kept':>11s}"
          + ("  gold asked  not completed" if protocol == "served" else ""))
    first = out["datasets"][names[0]][protocol]
    for key in ["reference"] + list(first["rows"]):
        cells, kept, gold, stalled = "", [], [], 0
        for n in names:
            d = out["datasets"][n][protocol]
            runs = d["reference"] if key == "reference" else d["rows"][key]
            a, r = np.mean([x["ari"] for x in runs]), np.mean([x["ari"] for x in d["reference"]])
            kept.append(a / r)
            cells += f"{a:>8.3f} ({a / r:.2f})"
            gold += [x.get("gold_answers", 0) for x in runs]
            stalled += sum(not x.get("completed", True) for x in runs)
        extra = f"{np.mean(gold):>12.1f}{stalled:>15d}" if protocol == "served" else ""
        print(f"{key:18s}{cells}{np.mean(kept):>11.3f}{extra}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="iris,wine,wdbc")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--protocols", default="served,every")
    ap.add_argument("--out", default="bench/results/crowd_quality.json")
    args = ap.parse_args(argv)
    protocols = args.protocols.split(",")
    out = {"trials": args.trials, "honest_error": HONEST_ERROR, "budget": BUDGET,
           "served": {"answers_per_question": ANSWERS_PER_QUESTION, "pool": POOL, "gold_first": GOLD_FIRST,
                      "gold_every": GOLD_EVERY, "gold_questions": N_GOLD, "worker_quality": QUALITY,
                      "pass_ready": PASS_READY,
                      "reference": "5 honest workers, answers_per_question 3, no gold, majority"},
           "every": {"gold_questions": EVERY_GOLD, "min_gold_accuracy": EVERY_THRESHOLD,
                     "min_gold_answered": EVERY_MIN_ANSWERED,
                     "reference": "5 honest workers answering every question, majority"},
           "datasets": {}}
    t0 = time.perf_counter()
    for name in args.datasets.split(","):
        X, y = load(name)
        out["datasets"][name] = {}
        if "served" in protocols:
            out["datasets"][name]["served"] = _served_rows(X, y, args.trials)
        if "every" in protocols:
            out["datasets"][name]["every"] = _every_rows(X, y, args.trials)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)
        print(f"{name} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    crowd = "3 honest workers (10% wrong) + 2 at random"
    if "served" in protocols:
        _table(out, "served", f"served: the session as the service runs it, {crowd}, 3 answers a question; "
                              f"mean ARI over {args.trials} trials (kept = ARI / reference); gold asked per session")
    if "every" in protocols:
        _table(out, "every", f"every: every worker answers every question, {crowd}; mean ARI over "
                             f"{args.trials} trials (kept = ARI / reference)")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
