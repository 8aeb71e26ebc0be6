"""Aggregating several people's answers to one question (crowd answers).

Majority vote, and one-coin Dawid-Skene by EM (A. P. Dawid and A. M. Skene,
"Maximum likelihood estimation of observer error-rates using the EM
algorithm", Applied Statistics 28(1):20-28, 1979; one accuracy per worker
instead of its confusion matrix), each worker's accuracy shrunk towards the
crowd's pooled accuracy by ``SHRINKAGE`` pseudo-answers so a worker with
three answers is not trusted on them alone. Not from the five papers: the
sessions of issue #4 aggregate crowd answers with it, and
``bench/crowd_aggregation.py`` measures it against majority vote and
crowd-kit's models.
"""

from collections import Counter

import numpy as np


def majority_vote(votes):
    """Most frequent answer; a tie between the top answers, or no answer but "dont_know", is "dont_know".

    Parameters
    ----------
    votes : sequence of str
        Answer words ("must_link", "cannot_link", "yes", "no", "dont_know").

    Returns
    -------
    str
    """
    counts = Counter(v for v in votes if v != "dont_know")
    if not counts:
        return "dont_know"
    (top, n), *rest = counts.most_common()
    if rest and rest[0][1] == n:
        return "dont_know"
    return top


def _codes(values):
    """Distinct ``str(value)`` in sorted order, and each value's position among them.

    Not numpy's ``astype(str)``: its fixed-width strings drop trailing NUL
    characters, so worker ids "w" and "w\\x00" (both valid JSON strings)
    became one worker.
    """
    keys = [str(v) for v in values]
    distinct = sorted(set(keys))
    index = {k: i for i, k in enumerate(distinct)}
    return distinct, np.fromiter((index[k] for k in keys), dtype=np.int64, count=len(keys))


#: Pseudo-answers at the pooled accuracy added to every worker's own (bench/crowd_aggregation.py).
SHRINKAGE = 20.0


def one_coin_em(tasks, workers, labels, *, shrinkage=SHRINKAGE, n_iter=100, tol=1e-7):
    """One-coin Dawid-Skene by EM, each worker's accuracy shrunk towards the pooled one.

    Model: question q has a true answer c with prior probability pi_c; worker
    w gives the true answer with probability s_w, each other answer with
    (1 - s_w) / (K - 1) (Dawid & Skene 1979, one "coin" per worker). EM
    starts from the vote shares. M-step: s_w = (a_w + shrinkage x s) /
    (n_w + shrinkage), a_w the expected number of w's n_w answers that are
    right and s = sum a_w / sum n_w; pi_c = (expected count of c + 1) / (Q + K).

    Parameters
    ----------
    tasks, workers, labels : sequences of length n_answers
        Question id, worker id and answer of each answer (hashable values).
    shrinkage : float >= 0, default=SHRINKAGE
        0 is plain one-coin EM.
    n_iter : int, default=100
    tol : float, default=1e-7
        Stop when no posterior moves more than this.

    Returns
    -------
    answers : dict
        question id (str) -> its most probable answer (str); questions whose
        top two answers are equally probable are left out.
    accuracy : dict
        worker id -> s_w, in (0, 1).

    Raises
    ------
    ValueError
        No answers, or ``tasks``, ``workers`` and ``labels`` of different lengths.
    """
    if not len(tasks) or not len(tasks) == len(workers) == len(labels):
        raise ValueError(f"one_coin_em needs as many tasks, workers and labels (>= 1), got {len(tasks)}, "
                         f"{len(workers)} and {len(labels)}")
    task_ids, t = _codes(tasks)
    worker_ids, w = _codes(workers)
    label_ids, c = _codes(labels)
    n_q, n_w, n_k = len(task_ids), len(worker_ids), len(label_ids)
    post = np.zeros((n_q, n_k))
    np.add.at(post, (t, c), 1.0)
    post /= post.sum(axis=1, keepdims=True)
    given = np.bincount(w, minlength=n_w)
    for _ in range(n_iter):
        right = np.bincount(w, weights=post[t, c], minlength=n_w)
        skill = (right + shrinkage * right.sum() / given.sum()) / (given + shrinkage)
        skill = np.clip(skill, 1e-6, 1 - 1e-6)
        prior = (post.sum(axis=0) + 1.0) / (n_q + n_k)
        log_right, log_wrong = np.log(skill), np.log((1 - skill) / max(n_k - 1, 1))
        log_post = np.tile(np.log(prior), (n_q, 1))
        np.add.at(log_post, t, log_wrong[w][:, None])  # every answer: "wrong" for every label ...
        np.add.at(log_post, (t, c), (log_right - log_wrong)[w])  # ... but "right" for its own
        log_post -= log_post.max(axis=1, keepdims=True)
        new = np.exp(log_post)
        new /= new.sum(axis=1, keepdims=True)
        moved = np.abs(new - post).max()
        post = new
        if moved < tol:
            break
    best = post.argmax(axis=1)
    runner_up = np.sort(post, axis=1)[:, -2] if n_k > 1 else np.zeros(n_q)
    decided = post[np.arange(n_q), best] - runner_up > 1e-9
    answers = {str(q): str(label_ids[k]) for q, k, ok in zip(task_ids, best, decided) if ok}
    return answers, {str(x): float(v) for x, v in zip(worker_ids, skill)}
