"""Worker quality from gold questions, and crowd-kit's aggregation models beside Shoal's one-coin EM.

A gold question is a question with a known answer (``items``, ``answer``),
shown to workers like any other and never told to the model; each worker's
gold accuracy is the fraction of its informative gold answers that match.
Workers below a threshold (after enough gold answers) are flagged; a session
may drop their answers before aggregation.

crowd-kit (Toloka, ``crowdkit.aggregation``) supplies Dawid-Skene, GLAD and
MACE; Shoal's own model is :func:`clustering._crowd.one_coin_em`.
"""

from collections import defaultdict

#: crowd-kit aggregation models a session or a benchmark may name.
CROWDKIT_MODELS = ("dawid_skene", "glad", "mace")


def gold_scores(gold_answers, gold):
    """Each worker's answers to gold questions and how many were right.

    Parameters
    ----------
    gold_answers : iterable of (str, str, str)
        ``(worker_id, gold_key, answer)``; ``dont_know`` answers are left out
        (an abstention is not wrong).
    gold : dict of str to str
        ``gold_key`` -> the known answer.

    Returns
    -------
    dict of str to dict
        ``worker_id`` -> ``{"gold_answered", "gold_correct", "gold_accuracy"}``
        (accuracy None when nothing was answered).
    """
    answered, correct = defaultdict(int), defaultdict(int)
    for worker, key, answer in gold_answers:
        if answer == "dont_know" or key not in gold:
            continue
        answered[worker] += 1
        correct[worker] += answer == gold[key]
    return {w: {"gold_answered": n, "gold_correct": correct[w], "gold_accuracy": correct[w] / n if n else None}
            for w, n in answered.items()}


def flagged_workers(scores, min_accuracy=0.7, min_answered=5):
    """Workers whose gold accuracy is below ``min_accuracy`` after at least ``min_answered`` gold answers.

    Parameters
    ----------
    scores : dict
        :func:`gold_scores`.
    min_accuracy : float in [0, 1], default=0.7
        A worker answering two-way questions at random scores about 0.5.
    min_answered : int >= 1, default=5
        Fewer gold answers flag nobody (too little evidence).

    Returns
    -------
    set of str
    """
    return {w for w, s in scores.items()
            if s["gold_answered"] >= min_answered and s["gold_accuracy"] < min_accuracy}


def crowdkit_aggregate(tasks, workers, labels, model="dawid_skene", random_state=0):
    """Aggregate answers with one of crowd-kit's models.

    Parameters
    ----------
    tasks, workers, labels : sequence of str, same length
        One entry per informative answer (leave ``dont_know`` out: crowd-kit
        would take it for a class).
    model : {"dawid_skene", "glad", "mace"}
        ``DawidSkene(n_iter=100)``, ``GLAD(n_iter=100)`` or
        ``MACE(n_restarts=10, n_iter=50, random_state=random_state)``.
    random_state : int, default=0
        MACE's seed.

    Returns
    -------
    labels : dict of str to str
        task -> aggregated answer.
    skills : dict of str to float
        worker -> GLAD's ability (``alphas_``); empty for Dawid-Skene (its
        workers are confusion matrices) and MACE (its ``spamming_`` array is
        not indexed by worker).

    Raises
    ------
    ValueError
        An unknown ``model``.
    """
    import warnings

    import pandas as pd
    from crowdkit.aggregation import GLAD, MACE, DawidSkene

    if model not in CROWDKIT_MODELS:
        raise ValueError(f"model must be one of {', '.join(CROWDKIT_MODELS)}, got {model!r}")
    df = pd.DataFrame({"task": list(tasks), "worker": list(workers), "label": list(labels)})
    if df.empty:
        return {}, {}
    est = {"dawid_skene": lambda: DawidSkene(n_iter=100),
           "glad": lambda: GLAD(n_iter=100, silent=True),
           "mace": lambda: MACE(n_restarts=10, n_iter=50, random_state=random_state)}[model]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = est.fit_predict(df)
    skills = {}
    if model == "glad":
        skills = {str(w): float(a) for w, a in est.alphas_.items()}
    return {str(t): str(v) for t, v in out.items()}, skills
