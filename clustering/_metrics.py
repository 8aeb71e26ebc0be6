"""Clustering quality and constraint satisfaction (``specs/baselines.md`` §0.5).

Thin wrappers over scikit-learn's metrics so every caller (results, bench,
tests) computes the same numbers the same way.
"""

import numpy as np
from sklearn.metrics import (
    adjusted_rand_score,
    normalized_mutual_info_score,
    v_measure_score,
)
from sklearn.metrics.cluster import pair_confusion_matrix

from ._dcrc._em import _ideal_answer

__all__ = ["clustering_scores", "constraint_satisfaction", "pairwise_f_measure", "pairwise_jaccard"]


def _pair_counts(labels_true, labels_pred):
    # pair_confusion_matrix counts ordered pairs: [[TN, FP], [FN, TP]] x 2.
    (tn, fp), (fn, tp) = pair_confusion_matrix(labels_true, labels_pred)
    return tp / 2.0, fp / 2.0, fn / 2.0


def pairwise_f_measure(labels_true, labels_pred):
    """Pairwise F-measure: harmonic mean of pair precision and recall.

    Parameters
    ----------
    labels_true, labels_pred : array-like of shape (n_samples,)

    Returns
    -------
    f : float in [0, 1]; 1.0 when neither labelling puts two items together.
    """
    tp, fp, fn = _pair_counts(labels_true, labels_pred)
    denom = 2 * tp + fp + fn
    return 1.0 if denom == 0 else float(2 * tp / denom)


def pairwise_jaccard(labels_true, labels_pred):
    """Jaccard coefficient over pairs, SS / (SS + SD + DS) (URASC's metric)."""
    tp, fp, fn = _pair_counts(labels_true, labels_pred)
    denom = tp + fp + fn
    return 1.0 if denom == 0 else float(tp / denom)


def clustering_scores(labels_true, labels_pred):
    """ARI, NMI, pairwise F-measure, V-measure and pairwise Jaccard.

    Returns
    -------
    scores : dict of str to float
        Keys ``ari``, ``nmi``, ``f_measure``, ``v_measure``, ``jaccard``.
    """
    return {
        "ari": float(adjusted_rand_score(labels_true, labels_pred)),
        "nmi": float(normalized_mutual_info_score(labels_true, labels_pred)),
        "f_measure": pairwise_f_measure(labels_true, labels_pred),
        "v_measure": float(v_measure_score(labels_true, labels_pred)),
        "jaccard": pairwise_jaccard(labels_true, labels_pred),
    }


def violated_constraints(labels, pairs, kind):
    """Which pairwise constraints a labelling violates.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
    pairs : array-like of shape (m, 2), int
        Row indices into ``labels``.
    kind : array-like of shape (m,)
        +1 must-link (violated when the labels differ), -1 cannot-link
        (violated when they are equal).

    Returns
    -------
    violated : ndarray of shape (m,), bool
        True for a must-link across two clusters or a cannot-link inside one.

    Raises
    ------
    IndexError
        A pair index outside ``[0, n_samples)`` (callers validate pairs first,
        e.g. :func:`clustering._constraints.check_pairwise`).

    Notes
    -----
    The satisfaction rule of COP-KMeans (Wagstaff et al., ICML 2001, the
    violate-constraints test of Table 1); no learning involved.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    labels = np.asarray(labels)
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    return same != (np.asarray(kind).reshape(-1) > 0)


def constraint_satisfaction(labels, pairs, kind):
    """Fraction of pairwise constraints a labelling satisfies.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
    pairs : ndarray of shape (m, 2), int
    kind : ndarray of shape (m,)
        +1 must-link (satisfied when both labels are equal), -1 cannot-link.

    Returns
    -------
    rate : float in [0, 1], or None when there are no constraints.
    """
    violated = violated_constraints(labels, pairs, kind)
    if violated.size == 0:
        return None
    return float(1.0 - violated.mean())


def violated_triplet_answers(labels, triplets, answers):
    """Which answered triplets a labelling contradicts.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
    triplets : array-like of shape (t, 3), int
        Rows (a, b, c): "is a closer to b than to c?"; row indices into
        ``labels``.
    answers : array-like of shape (t,)
        +1 yes, -1 no, 0 don't know.

    Returns
    -------
    violated : ndarray of shape (t,), bool
        True for a "yes" or "no" that differs from the answer the labels
        imply; "don't know" answers are never violated.

    Raises
    ------
    IndexError
        An index outside ``[0, n_samples)`` (callers validate first).

    Notes
    -----
    The implied answer is DCRC's ideal answer (Pei et al., Eq. DC-1): yes
    when a and b share a cluster that c is not in, no when a and c do, don't
    know otherwise.
    """
    t = np.asarray(triplets, dtype=np.int64).reshape(-1, 3)
    g = np.asarray(labels)
    answers = np.asarray(answers).reshape(-1)
    implied = _ideal_answer(g[t[:, 0]], g[t[:, 1]], g[t[:, 2]])
    return (answers != 0) & (implied != answers)
