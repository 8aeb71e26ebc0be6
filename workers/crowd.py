"""Crowd answers in a session: aggregate several answers per question, and measure each worker.

Majority vote per question; once two workers have answered two common
questions, one-coin Dawid-Skene (:func:`clustering._crowd.one_coin_em`) over
every answer of the session, so a worker who disagrees with the consensus
elsewhere weighs less (a session's ``aggregation: "majority"`` keeps the
vote). "dont_know" votes are left out of both. Answers without a worker id
count in both, each as the one answer of an unknown worker (which one-coin
Dawid-Skene weighs as the crowd's average worker); they are left out of the
workers' agreement (:func:`worker_reliability`). Sessions used crowd-kit's
full ``DawidSkene`` before; ``bench/crowd_aggregation.py`` measured it below
majority vote in most simulated crowds (bench/README.md, "Crowd
aggregation"). Workers whose gold accuracy is low are flagged (:func:`gold_flags`); a session
with ``worker_quality.exclude_flagged`` leaves their answers out of its passes, hands them no
more questions and rejects their later answers (:func:`flag_reason`).
"""

from collections import Counter, defaultdict

from clustering._crowd import majority_vote as _majority
from clustering._crowd import one_coin_em
from clustering._crowd_quality import flagged_workers


def _informative(all_answers):
    return [(qid, a) for qid, a in all_answers if a["answer"] != "dont_know"]


def disagree(votes):
    """Whether a question's answers disagree: two different informative answers.

    "dont_know" is an abstention, not an answer that contradicts another
    (the aggregation and the workers' agreement leave it out too): must_link,
    must_link and dont_know agree.

    Parameters
    ----------
    votes : sequence of str
        The question's answer words.

    Returns
    -------
    bool
    """
    return len(set(votes) - {"dont_know"}) > 1


def _workers_overlap(answers):
    """True when at least two workers answered at least two common questions.

    Counts worker pairs question by question (three answers per question: three
    pairs), so a crowd of thousands costs what its answers cost.
    """
    by_question = defaultdict(set)
    for qid, a in answers:
        by_question[qid].add(a["worker_id"])
    shared = Counter()
    for workers in by_question.values():
        ordered = sorted(workers)
        for x in range(len(ordered)):
            for y in range(x + 1, len(ordered)):
                shared[ordered[x], ordered[y]] += 1
                if shared[ordered[x], ordered[y]] >= 2:
                    return True
    return False


def fit_dawid_skene(all_answers):
    """One-coin Dawid-Skene (:func:`one_coin_em`) over the session's answers, or None
    when no two workers overlap.

    Each answer without a worker id is the one answer of a worker of its own,
    whose accuracy :func:`one_coin_em` shrinks to the crowd's pooled one: it
    weighs as an average worker's. Left out (as they were before), two
    anonymous cannot_link answers lost to one trusted worker's must_link,
    where the majority vote took them.

    Parameters
    ----------
    all_answers : list of (str, dict)
        ``(question_id, answer)`` with the answer's ``answer`` word and
        ``worker_id`` (None: anonymous; :meth:`SessionStore.all_answers`).

    Returns
    -------
    (labels, accuracy) or None
        ``labels``: question_id -> the model's answer (questions with at
        least one informative answer and no exact tie; :func:`aggregate`
        keeps the majority vote for the others); ``accuracy``: worker_id ->
        the estimated probability that the worker's answer is the true one
        (named workers only).
    """
    informative = _informative(all_answers)
    if not _workers_overlap([(q, a) for q, a in informative if a.get("worker_id")]):
        return None
    # "w:" + id for a named worker, "a:" + position for each anonymous answer: no id can collide
    workers = [f"w:{a['worker_id']}" if a.get("worker_id") else f"a:{k}" for k, (_, a) in enumerate(informative)]
    labels, accuracy = one_coin_em([q for q, _ in informative], workers, [a["answer"] for _, a in informative])
    return labels, {w[2:]: s for w, s in accuracy.items() if w.startswith("w:")}


def fit_crowdkit(all_answers, model, random_state=0):
    """crowd-kit's ``model`` (dawid_skene, glad or mace) over the session's informative answers.

    Answers without a worker id are each a worker of their own, as in
    :func:`fit_dawid_skene`. Returns ``(labels, skills)`` in the form
    :func:`aggregate` takes (:func:`clustering._crowd_quality.crowdkit_aggregate`),
    or None when there is no informative answer.
    """
    from clustering._crowd_quality import crowdkit_aggregate

    informative = _informative(all_answers)
    if not informative:
        return None
    workers = [f"w:{a['worker_id']}" if a.get("worker_id") else f"a:{k}" for k, (_, a) in enumerate(informative)]
    labels, skills = crowdkit_aggregate([q for q, _ in informative], workers, [a["answer"] for _, a in informative],
                                        model, random_state=random_state)
    return labels, {w[2:]: s for w, s in skills.items() if w.startswith("w:")}


def aggregate(all_answers, ready, dawid_skene=None):
    """Aggregated answer for each ready question.

    Parameters
    ----------
    all_answers : list of (str, dict)
        Every answer of the session (see :func:`fit_dawid_skene`).
    ready : list of str
        The question ids to aggregate.
    dawid_skene : tuple or None
        :func:`fit_dawid_skene` of ``all_answers``; when given, its answer
        replaces the majority vote.

    Returns
    -------
    dict question_id -> (aggregated answer, list of votes)
    """
    votes = defaultdict(list)
    for qid, a in all_answers:
        votes[qid].append(a["answer"])
    out = {qid: (_majority(votes[qid]), votes[qid]) for qid in ready}
    if dawid_skene is not None:
        labels = dawid_skene[0]
        for qid in ready:
            if qid in labels:
                out[qid] = (labels[qid], votes[qid])
    return out


def worker_reliability(all_answers, dawid_skene=None):
    """How far each worker agrees with the others, for a crowd client to act on.

    Parameters
    ----------
    all_answers : list of (str, dict)
        Every answer of the session (see :func:`fit_dawid_skene`).
    dawid_skene : tuple or None
        :func:`fit_dawid_skene` of ``all_answers``.

    Returns
    -------
    list of dict
        One per worker, least agreeing first (then by worker id):
        ``worker_id``; ``answers`` (all, "dont_know" included);
        ``dont_know``; ``compared``: informative answers on questions where
        the other workers' informative answers have a strict majority;
        ``agreement``: the fraction of those that match it (null when
        ``compared`` is 0); ``estimated_accuracy``: the one-coin
        Dawid-Skene estimate (:func:`one_coin_em`; null when no two workers
        overlap), rounded to 3 decimals.

    Notes
    -----
    Answers without a worker id are nobody's to measure, and are not among
    the "other workers" either: nothing stops a worker from also answering
    a question anonymously, and its own answer would count as agreement.
    They do count in the aggregated answer (:func:`aggregate`).
    """
    by_question = defaultdict(list)
    stats = defaultdict(Counter)
    for qid, a in all_answers:
        w = a.get("worker_id")
        if not w:
            continue
        stats[w]["answers"] += 1
        stats[w]["dont_know"] += a["answer"] == "dont_know"
        if a["answer"] != "dont_know":
            by_question[qid].append((w, a["answer"]))
    for given in by_question.values():
        for k, (w, answer) in enumerate(given):
            others = _majority([x for j, (_, x) in enumerate(given) if j != k])
            if others != "dont_know":
                stats[w]["compared"] += 1
                stats[w]["agreed"] += answer == others
    accuracy = dawid_skene[1] if dawid_skene is not None else {}
    out = []
    for w, s in stats.items():
        agreement = round(s["agreed"] / s["compared"], 3) if s["compared"] else None
        est = accuracy.get(w)
        out.append({"worker_id": w, "answers": s["answers"], "dont_know": s["dont_know"],
                    "compared": s["compared"], "agreement": agreement,
                    "estimated_accuracy": None if est is None else round(est, 3)})
    out.sort(key=lambda r: (r["agreement"] is None, r["agreement"] or 0.0, r["worker_id"]))
    return out


def gold_flags(stats, quality):
    """Each worker's gold score and whether it is flagged.

    Parameters
    ----------
    stats : dict of str to dict
        ``worker_id`` -> ``{"gold_answered", "gold_correct", ...}`` as the annotator page
        tallies them (:meth:`workers.annotator_store.AnnotatorStore.stats`).
    quality : dict
        The session's ``worker_quality`` (:func:`workers.session_store.worker_quality_of`).

    Returns
    -------
    dict of str to dict
        ``worker_id`` -> ``{"gold_answered", "gold_accuracy", "flagged"}`` for every worker
        with gold answers (:func:`clustering._crowd_quality.flagged_workers` decides the flag).
    """
    scores = {w: {"gold_answered": s["gold_answered"], "gold_correct": s["gold_correct"],
                  "gold_accuracy": s["gold_correct"] / s["gold_answered"]}
              for w, s in stats.items() if s.get("gold_answered")}
    flagged = flagged_workers(scores, quality["min_gold_accuracy"], quality["min_gold_answered"])
    return {w: {"gold_answered": s["gold_answered"], "gold_accuracy": round(s["gold_accuracy"], 4),
                "flagged": w in flagged} for w, s in scores.items()}


def flag_reason(stats, quality):
    """Why a worker's answers no longer count in a session, or None when they do.

    Parameters
    ----------
    stats : dict
        The worker's tallies, ``gold_answered`` and ``gold_correct`` among them
        (:meth:`workers.annotator_store.AnnotatorStore.stats` of one worker).
    quality : dict
        The session's ``worker_quality`` (:func:`workers.session_store.worker_quality_of`).

    Returns
    -------
    str or None
        A sentence naming the flag (gold accuracy, the threshold, the gold answers it is over)
        when ``quality["exclude_flagged"]`` is set and :func:`gold_flags` flags the worker; None
        otherwise (a flag without ``exclude_flagged`` only reports).
    """
    if not quality["exclude_flagged"]:
        return None
    g = gold_flags({"worker": stats}, quality).get("worker")
    if not g or not g["flagged"]:
        return None
    return (f"worker flagged by gold questions: gold accuracy {g['gold_accuracy']:g} after {g['gold_answered']} "
            f"gold answers, below worker_quality.min_gold_accuracy {quality['min_gold_accuracy']:g}; "
            "with worker_quality.exclude_flagged its answers no longer count")


def with_gold(reliability, flags, excluded):
    """:func:`worker_reliability`'s rows with each worker's ``gold_answered``, ``gold_accuracy``,
    ``flagged`` (from :func:`gold_flags`) and ``excluded`` (in the set ``excluded``)."""
    for row in reliability:
        g = flags.get(row["worker_id"], {})
        row.update(gold_answered=g.get("gold_answered", 0), gold_accuracy=g.get("gold_accuracy"),
                   flagged=bool(g.get("flagged")), excluded=row["worker_id"] in excluded)
    return reliability
