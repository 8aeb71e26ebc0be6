"""URASC: active spectral clustering by uncertainty reduction.

Implements ``shared/specs/urasc.md`` (Xiong, Johnson & Corso, "Active
Clustering with Model-Based Uncertainty Reduction", TPAMI 2017): certain-sample
sets, spectral learning with the answers (generalized embedding, U2-U4), the
uncertainty-reduction score G(x) * H(x) (U5-U13), the fast top-m approximation
(U13'), query generation by similarity to each certain set's representative
(U15) and an unknown number of clusters that grows with the certain sets (U14).

The loop is a state machine (spec §4.3) so that a service never blocks on a
human: :meth:`URASC.suggest_queries` proposes questions, :meth:`URASC.tell`
records answers, :meth:`URASC.get_state` / :meth:`URASC.from_state` persist a
session as plain JSON (lists of ints / floats / strings, no pickle).
:meth:`URASC.fit` runs the whole loop against a callable oracle.

This module holds the estimator, its ask/tell loop and its outputs; the
certain-sample sets live in ``_certain_sets.py``, the question selection
(uncertainty-reduction score, exploration) in ``_selection.py``, the
spectral learning with the answers (constrained graph, eigenpairs, labels) in
``_spectral_learning.py``, the base graph W0 in ``_base_graph.py`` and the
session state (initialisation, save / restore) in ``_state.py``, as
mixins of :class:`URASC`.
"""

import math
import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from ._certain_sets import _DK, _NO, _PARALLEL_CHECKS, _YES, CertainSetsMixin
from .._graph import n_connected_components
from .._params import Interval, Options
from ._base_graph import BaseGraphMixin
from ._selection import QuerySelectionMixin, eigenvector_derivative
from ._spectral_learning import SpectralLearningMixin
from ._state import SessionStateMixin
from ..exceptions import InvalidInputError

__all__ = ["URASC", "eigenvector_derivative"]

_ANSWER_WORDS = {
    "must_link": _YES, "yes": _YES, "true": _YES, "same": _YES,
    "cannot_link": _NO, "no": _NO, "false": _NO, "different": _NO,
    "dont_know": _DK, "don't know": _DK, "unknown": _DK, "none": _DK,
}


_ACCEPTED_ANSWERS = ("True / 'must_link' (same cluster), False / 'cannot_link' (different) or "
                     "None / 'dont_know' (don't know)")


def _as_answer(value, pos):
    """One told answer as URASC's internal code (_YES, _NO, _DK); see :meth:`URASC.tell`.

    Integers are refused: the package's pair kinds and triplet answers read
    -1 as "no" (+1 / -1 / 0), while ``answers_`` and saved states store
    1 / 0 / -1 with -1 = "don't know", so a -1 or a 0 could mean either.
    """
    if value is None:
        return _DK
    if isinstance(value, (bool, np.bool_)):
        return _YES if value else _NO
    if isinstance(value, numbers.Integral):
        raise InvalidInputError(
            f"answers[{pos}][2] == {value!r}: integer answers are ambiguous (pair kinds read -1 as "
            f"cannot-link, answers_ stores -1 for don't know); pass {_ACCEPTED_ANSWERS}",
            field="answers", index=(pos, 2),
        )
    if isinstance(value, str) and value.strip().lower() in _ANSWER_WORDS:
        return _ANSWER_WORDS[value.strip().lower()]
    raise InvalidInputError(f"answers[{pos}][2] == {value!r}, must be {_ACCEPTED_ANSWERS}",
                            field="answers", index=(pos, 2))


# --------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------


class URASC(SessionStateMixin, CertainSetsMixin, QuerySelectionMixin, SpectralLearningMixin, BaseGraphMixin,
            ClusterMixin, BaseEstimator):
    """Uncertainty-Reducing Active Spectral Clustering (ask/tell and batch).

    Parameters
    ----------
    n_clusters : int >= 2 or None, default=None
        K if known; None starts at K = 2 and grows with the certain sets (U14).
    budget : int >= 0 or None, default=100
        Maximum number of pairwise questions (one question = one pair; a
        "don't know" answer also uses one). 0 = no questions (the result is
        the unconstrained spectral clustering); None = no limit (until every
        sample is certain).
    strategy : {"urasc", "random"}, default="urasc"
        "random" is the baseline of ``baselines.md`` §5: uniformly random
        unasked pairs, answers fed to the same spectral learning.
    step_model : {"nonparametric", "parametric"}, default="nonparametric"
        H from k_H-nearest-neighbour label weights (U9, URASC+N) or from a
        diagonal GMM on the embedding (U10-U11, URASC+P).
    score : {"product", "gradient", "entropy"}, default="product"
        G*H (U13); "gradient" = URASC-GO; "entropy" = URASC-NO / -PO.
    laplacian : {"rw", "unnormalized"}, default="rw"
        Generalized problem ``L v = lambda D v`` (U4) or Kamvar's additive
        normalisation (eigenvectors of ``L``).
    perturbation : {"exact", "paper"}, default="exact"
        U5' (exact derivative of the generalized problem) or U5 as printed.
    perturbation_terms : {"all", "complement"}, default="all"
        Every p != k, or only p > K (§7.2).
    n_eig : int >= 2 or None, default=None
        Eigenpairs used in U6. None: all of them for n <= 1000, else
        min(n - 1, K + 50) up to 5000 rows, K + 20 up to 100 000 and K + 10
        above (truncated mode, §6; LOBPCG's block costs per vector there).
    n_neighbors : int >= 1, default=10
        k of the local kernel's kNN lists; with ``kernel="gaussian"``, k of
        the bandwidth rule (U1) and of the kNN graph (n > 5000). [deviation:
        the spec's U1 uses 20; pass n_neighbors=20 for fidelity runs.] 10
        because it finds segment's classes earlier and costs little
        elsewhere. Evidence (URASC+N, local kernel, 5 trials, ARI at
        50/100/150/200, k = 20 -> 10): segment K unknown .42/.56/.66/.68 ->
        .49/.62/.66/.71, K known at 50/100 .46/.57 -> .49/.62; iris K unknown
        .90/1/1/1 -> .93/1/1/1; wdbc .85/.95/.97/.99 -> .90/.95/.98/.99;
        wine 1.00 -> .98 at 50 (1 from 100); ionosphere .65/.75/.85/.93 ->
        .58/.72/.81/.91.
    n_neighbors_entropy : int >= 1, default=20
        k_H of U9.
    graph : {"auto", "dense", "knn"}, default="auto"
        Base similarity storage: dense for n <= 5000 under "auto".
    kernel : {"local", "gaussian"}, default="local"
        Base similarity W0 built from ``X``. "gaussian" is the paper's U1 (dense
        Gaussian, sigma = mean distance to the n_neighbors-th neighbour).
        "local" [deviation from U1]: self-tuning kNN graph, ``w_ij =
        exp(-d_ij^2 / (s_i s_j))`` on the union of the n_neighbors-NN lists,
        s_i = distance to the 7th neighbour, components bridged (§7.5); stored
        dense for n <= 1000. Because the dense Gaussian graph fails on wdbc
        (unconstrained K=2 ARI 0.005 vs 0.77 with this graph; URASC+N, K
        unknown, ARI at 50/100 questions 0.13/0.30 -> 0.87/0.95) and matches it
        elsewhere (bench/active.py).
    assign : {"auto", "kmeans", "propagate"}, default="auto"
        Final labelling. "kmeans" is the paper's (U4: k-means on the first K
        generalized eigenvectors). "propagate" [deviation from U4]: once there
        are exactly K certain sets, labels come from label spreading of the
        sets over the constrained graph W^t (Zhou et al. 2004, ``F = (I -
        alpha D^-1/2 W D^-1/2)^-1 Y``, each column divided by its sum: class-mass
        normalisation with a uniform prior); before that, k-means as in U4. "auto"
        [deviation from U4]: k-means, replaced by label spreading when fewer
        than ``agreement`` of the certain samples fall in the k-means cluster
        matched to their set (Hungarian matching), i.e. when the embedding
        contradicts the answers. Evidence (K unknown, local kernel, 1-2
        trials, ARI at 50/100/150/200): segment kmeans .31/.29/.25/.25,
        propagate .37/.38/.54/.54, auto .27/.53/.49/.55; ionosphere kmeans
        .00/.58/.88/.94, propagate .56/.43/.85/.93, auto .28/.68/.87/.91;
        wine at 50 kmeans .73, propagate .59, auto .54 (all 1.0 from 100 on).
        Under ``k_growth="verify"``, "auto" means "propagate" (measured, not
        derived: ionosphere, K unknown, 10 trials, ARI at 200 with k-means ->
        with spreading: noise-free .93 -> .95, 10% wrong answers .76 -> .81;
        iris, wine and wdbc within .01 (5 trials), segment .73 -> .73
        noise-free and .49 -> .48 noisy).
    agreement : float in [0, 1], default=0.9
        Threshold of ``assign="auto"``.
    propagation_alpha : float in (0, 1), default=0.99
        alpha of the label spreading.
    discriminant_weight : "auto" or float in [0, 1], default="auto"
        [Extension, not in the paper.] Label spreading (``assign``) runs on
        ``(1 - w) W^t + w G``: G is the self-tuning kNN graph in the space of
        a linear discriminant analysis of the certain sets (Ledoit-Wolf
        shrinkage; :func:`clustering._graph.discriminant_knn_graph`),
        rebuilt at every re-clustering; w = 0 is W^t alone. Neighbours in G
        differ along what separates the sets, so a member placed by a wrong
        "yes" pulls fewer of its neighbours along, and columns that do not
        separate the answered classes stop deciding who is whose neighbour.
        Needs X (with ``affinity="precomputed"`` W^t alone) and at least
        ``K + 2`` certain samples. "auto": once there are three or more
        certain sets, 0.5 under ``k_growth="verify"`` and 0.3 under the
        paper's ``"sets"`` (where labels spread only when k-means on the
        embedding disagrees with the sets; segment, K known, ARI at 50
        questions .575 -> .62 over the protocol's 5 trials), 0 under
        ``"robust"`` (not measured) and with two sets (a one-dimensional
        discriminant space: with it ionosphere's noisy ARI at 200 fell .81 ->
        .75). Evidence: bench/history.md.
    explore : "auto" or float in [0, 1], default="auto"
        Exploration rounds (extension, not in the paper): a round that
        explores questions the uncertain sample farthest (in X; in the
        embedding with a precomputed affinity) from every certain sample,
        among the denser half of its current cluster (distance to the 7th
        neighbour at most the cluster's median; degree in W0 at least the
        cluster's median when precomputed), so that outliers are not founded
        as sets. A float is the fraction of rounds that explore. "auto": with
        ``n_clusters`` known, every round explores until there are
        ``n_clusters`` certain sets, then every third round (farthest-first
        discovery as in Explore-Consolidate, and members spread over each
        class for the label spreading of ``assign``); with K unknown, every
        third round, except under "robust" (never: it cost robustness there);
        under "verify", also every round once K >= 4 (``n_clusters``, or the
        counted sets) and a recorded answer contradicts the sets (a "yes"
        across two sets or a "no" inside one, which a noise-free oracle never
        gives): the farthest dense sample's first question is mostly about
        its own set, where an uncertain sample's is often about a wrong one,
        a chance of a wrong "yes". A batch of B questions explores as often
        as B sequential rounds (farthest-first traversal within the batch;
        the samples still being placed count as explored), and under
        ``k_growth="sets"`` a waiting sample's next question re-ranks its
        sets by similarity, so a set founded since its queue was built comes
        first when it is the most similar (sequentially both are no-ops).
        Evidence, K known, segment, ARI at 50/100 questions (5 trials):
        .31/.31 without exploration, .46/.57 with it; the other measurements
        are in bench/history.md, "URASC's defaults: the evidence".
    affinity : {"rbf", "precomputed"}, default="rbf"
        "precomputed": ``X`` is the (n, n) base similarity W0 itself
        (symmetric, entries in [0, 1]).
    representative : {"most_similar", "random", "founder"}, default="most_similar"
        How one member of each certain set is chosen (U7, U15). "founder"
        (extension for noisy oracles) asks the set's first member, so one wrong
        "yes" cannot pull later samples of its class into the wrong set; sets
        are still ordered by their most similar member.
    fast : bool, default=True
        Top-m approximation (U13').
    n_candidates : int >= 1, default=50
        m of U13'.
    batch_size : int >= 1, default=1
        Questions requested per step by :meth:`fit` (1 = the paper's
        sequential loop; > 1 = crowd batches with a diversity penalty).
    diversity : float in [0, 1], default=1.0
        Strength of the distance penalty when several new samples are
        chosen at once (0 = pure top-B by score); distances in X, or in the
        spectral embedding with a precomputed affinity.
    gap_floor : float > 0, default=1e-9
        tau of §7.1.
    n_init : int >= 1, default=10
        k-means restarts.
    k_growth : {"sets", "robust", "verify"}, default="sets"
        "sets": K = max(K, number of certain sets) (U14, §7.11); every answer
        is a hard fact (the paper). "robust" (extension for noisy oracles): a
        given n_clusters stays fixed, and with n_clusters=None only sets with
        at least 2 members count. "verify" (extension, issue #4; use it with
        ``representative="founder"``): the answers about one sample x are
        votes per set instead of facts. x is asked first about the sets
        whose members the current clustering mostly puts in x's cluster, then
        by w0 as above; a repeated question about set l goes to the unasked
        member of l most similar to l's founder (not to x). x joins set l as
        soon as its "yes" answers to members of l outnumber its "no" answers;
        a "yes" that only ties earlier "no"s asks another member of l first
        (with no member left the tie joins); an outvoted "yes" is kept as an answer but does not
        join. Before x founds a new set, every set with a one-vote "no" margin
        is asked again with another member, and the set most similar to x
        (max w0) a third time if it answered "no" twice, so one or two wrong
        "no"s cannot split a class (the paper's U15 step 4 founds a set after
        one "no" per set). A given n_clusters stays fixed; with
        n_clusters=None a set counts towards K once it has 2 members or its
        founder's "no"s were confirmed (margin >= 2 against every older set;
        a set that was a singleton when the founder was asked gives a margin
        of 1, so once it has grown, a still-singleton set's founder is asked
        about its unasked member most similar to its founder, before any other
        question); with every one of a given n_clusters sets present, a
        sample that would found another stays uncertain instead. Set
        checks (n_clusters=None only): a second wrong "no" can still found a
        spurious set, which then grows with the samples near its founder, so
        later members of every younger set are asked about each of the two
        older sets most similar to its founder ("check" questions,
        pairs of two certain samples, asked before new samples). The set is
        settled against that older set once the check "no"s outnumber the
        check "yes"s by 2, or by 1 when no later member is left to ask; it
        is merged into the older set (K then shrinks) when
        check "yes"s from >= 2 different samples (later members, or the
        founder itself) lead the check "no"s by more than its founder's "no"
        margin against that set; until then another later member is asked
        and, once all have answered with the "yes"s at most 2 short, the
        founder is asked again about an unasked member of the older set.
        Must-links come from the sets, cannot-links from the "no" answers
        between different sets or with an uncertain sample. Cost: a first-ask "yes" costs nothing extra;
        each new set costs 1 + (number of sets) extra questions plus two
        checks against each of at most two older sets (noise-free about
        K^2 / 2 + 4 K per session). In a batch (``suggest_queries(n)``,
        n > 1) a pending sample refused by >= 3 sets is asked about up to 3
        more sets of its queue at once, so founding a set does not take one
        batch per question. [deviation
        from U14, U15 and §7.10 / §8.2 invariant 9: a recorded answer can
        disagree with the sets (it was outvoted), and sets can merge.]
        Evidence: bench/history.md.
    seed_sample : int or None, default=None
        First certain sample; None = drawn from ``random_state``.
    random_state : int, RandomState or None, default=None
    callback : callable or None, default=None
        ``callback(stage, fraction)``, called a few times by :meth:`fit`;
        exceptions it raises propagate (cancellation).

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit`` or :meth:`from_state`
        (n_samples for a precomputed affinity).
    labels_ : ndarray of shape (n_samples,), int64
        Clustering after the answers (last spectral-learning pass).
    n_clusters_ : int
    certain_sets_ : list of list of int
        Disjoint certain-sample sets N_1..N_L.
    answers_ : ndarray of shape (q, 3), int64
        (i, j, a) in the order told; a = 1 same, 0 different, -1 don't know
        (URASC's stored codes, as in saved states; :meth:`tell` takes bools
        or words, not these integers).
    must_link_, cannot_link_ : ndarray of shape (m, 2), int64
        Derived constraints (U16), i < j, deduplicated.
    query_log_ : list of dict
        One entry per chosen sample (score, G, H, questions, outcome).
    embedding_ : ndarray of shape (n_samples, K), float64
    eigenvalues_ : ndarray of shape (q_eig,), float64, ascending
    step_scale_ : ndarray of shape (n_samples,), float64
        H of the last selection (NaN for certain / unevaluated samples).
    gradient_ : ndarray of shape (n_samples,), float64
        G of the last selection (NaN where not evaluated).
    affinity_matrix_ : ndarray (n, n) or csr_matrix
        Constrained similarity W^t of the last clustering.
    n_questions_ : int
    budget_ : int or None
        The question budget of this session: ``fit``'s ``budget`` argument
        if given, else the ``budget`` parameter (None = no limit).
    diagnostics_ : dict
        JSON-serialisable counters (rounds, fallbacks, dropped gaps, ...);
        ``answers_contradict_sets`` (bool: a recorded answer goes against the
        certain sets, evidence of wrong answers) and ``discriminant_weight``
        (float, the w of the last label spreading, 0 for W^t alone; None when
        the labels came from k-means); ``separated_labels`` (present once it
        happened: re-clusterings whose embedding gave k-means fewer than K
        clusters, see Notes).
    base_graph_ : dict or None
        The base graph W0 (U1) and the U9 neighbour lists, read-only, with a
        fingerprint of ``X`` and the graph parameters: pass it to
        :meth:`from_state` to restore a session on the same data without
        rebuilding them (once the exploration step has needed them, also each
        sample's distance to its 7th neighbour). None with
        ``affinity="precomputed"``.

    Raises
    ------
    InvalidInputError
        Invalid parameters, data, affinity, seed sample or answers.

    Notes
    -----
    Xiong et al. (2017): spectral learning §3.1 (Eq. 1, U2-U4), eigenvector
    perturbation Eq. 6 (U5/U5'), gradient model Eq. 7 (U7), step scale
    Eqs. 8-12 (U8-U12), selection Eqs. 2-4 (U13), queries §3.3 (U15).
    Deviations from the spec are listed in its §3 and in the module report:
    the default number of eigenpairs is truncated above n = 1000 (spec: 3000)
    so a question batch stays below 0.5 s; "don't know" answers, batch
    selection and the random strategy are extensions. With ``X``, a set's
    "most similar" member (U7, U15 step 1) is its nearest member in X (the
    order of the global Gaussian of U1), also under ``kernel="local"``,
    whose w0 is 0 beyond the kNN lists.

    Degenerate graphs: when W^t has too few edges left for K clusters (every
    answer "no": each sample its own certain set, W^t = 0, a zero embedding)
    k-means finds fewer than K clusters. The labels then come from the
    certain sets (the random strategy: the must-link groups of its answers):
    each set one label, distinct labels while fewer than K are used, then the
    allowed label most similar under w0; other samples follow their most
    similar set member (W^t, else w0). K stays at most n - 1 (spec §7.12),
    so with n singleton sets the two most similar share a label. This never
    happens when the embedding separates K clusters (ordinary sessions).

    Noisy oracles (issue #4): with 10% wrong answers ``k_growth="verify",
    representative="founder"`` keeps 0.90 (iris), 0.94 (wine), 0.96 (wdbc)
    and 0.85 (ionosphere) of the noise-free ARI at 200 questions with K
    unknown (20 trials; the default "sets": 0.35-0.66 over 5), and in
    batches of 10 iris 0.87, wine 0.86, ionosphere 0.86 and wdbc 0.91 (20
    trials). It falls short of 0.85 on segment (0.83 sequentially over 20
    trials, 0.82 over 40; 0.73 in batches of 10, 20 trials). An answer that
    is wrong 10% of the time carries at most 0.53 of a bit, so 200 of them
    are worth at most about 106 noise-free answers; a session that lost
    exactly that would keep 0.85 on segment (a guide, not a proof). Its noise-free cost is at 50
    questions on segment (.29 against .61), so "sets" stays the default.
    The numbers: bench/README.md, "Active questions"; every rule tried,
    kept or dropped, with its measurements: bench/history.md.

    References
    ----------
    C. Xiong, D. M. Johnson, J. J. Corso. Active Clustering with Model-Based
    Uncertainty Reduction. IEEE TPAMI 39(1), 2017. arXiv:1402.1783.
    S. D. Kamvar, D. Klein, C. D. Manning. Spectral Learning. IJCAI 2003.

    Examples
    --------
    >>> import numpy as np
    >>> from clustering._urasc import URASC
    >>> X = np.array([[0., 0.], [0.1, 0.], [0., 0.1], [5., 5.], [5.1, 5.], [5., 5.1]])
    >>> y = np.array([0, 0, 0, 1, 1, 1])
    >>> est = URASC(budget=10, random_state=0).fit(X, oracle=lambda i, j: y[i] == y[j])
    >>> est.n_clusters_
    2
    >>> bool((est.labels_[:3] == est.labels_[0]).all() and est.labels_[3] != est.labels_[0])
    True
    """

    def __init__(self, n_clusters=None, *, budget=100, strategy="urasc", step_model="nonparametric",
                 score="product", laplacian="rw", perturbation="exact", perturbation_terms="all",
                 n_eig=None, n_neighbors=10, n_neighbors_entropy=20, graph="auto", affinity="rbf",
                 representative="most_similar", fast=True, n_candidates=50, batch_size=1, diversity=1.0,
                 gap_floor=1e-9, n_init=10, k_growth="sets", seed_sample=None, random_state=None, callback=None,
                 kernel="local", assign="auto", propagation_alpha=0.99, explore="auto", agreement=0.9,
                 discriminant_weight="auto"):
        self.n_clusters = n_clusters
        self.budget = budget
        self.strategy = strategy
        self.step_model = step_model
        self.score = score
        self.laplacian = laplacian
        self.perturbation = perturbation
        self.perturbation_terms = perturbation_terms
        self.n_eig = n_eig
        self.n_neighbors = n_neighbors
        self.n_neighbors_entropy = n_neighbors_entropy
        self.graph = graph
        self.kernel = kernel
        self.assign = assign
        self.explore = explore
        self.agreement = agreement
        self.propagation_alpha = propagation_alpha
        self.discriminant_weight = discriminant_weight
        self.affinity = affinity
        self.representative = representative
        self.fast = fast
        self.n_candidates = n_candidates
        self.batch_size = batch_size
        self.diversity = diversity
        self.gap_floor = gap_floor
        self.n_init = n_init
        self.k_growth = k_growth
        self.seed_sample = seed_sample
        self.random_state = random_state
        self.callback = callback

    _PARAMS = {
        "n_clusters": [Interval(numbers.Integral, 2, None), None],
        "budget": [Interval(numbers.Integral, 0, None), None],
        "strategy": [Options("urasc", "random")],
        "step_model": [Options("nonparametric", "parametric")],
        "score": [Options("product", "gradient", "entropy")],
        "laplacian": [Options("rw", "unnormalized")],
        "perturbation": [Options("exact", "paper")],
        "perturbation_terms": [Options("all", "complement")],
        "n_eig": [Interval(numbers.Integral, 2, None), None],
        "n_neighbors": [Interval(numbers.Integral, 1, None)],
        "n_neighbors_entropy": [Interval(numbers.Integral, 1, None)],
        "graph": [Options("auto", "dense", "knn")],
        "kernel": [Options("local", "gaussian")],
        "assign": [Options("auto", "kmeans", "propagate")],
        "explore": [Options("auto"), Interval(numbers.Real, 0, 1)],
        "agreement": [Interval(numbers.Real, 0, 1)],
        "propagation_alpha": [Interval(numbers.Real, 0, 1, closed="neither")],
        "discriminant_weight": [Options("auto"), Interval(numbers.Real, 0, 1)],
        "affinity": [Options("rbf", "precomputed")],
        "representative": [Options("most_similar", "random", "founder")],
        "fast": [bool],
        "n_candidates": [Interval(numbers.Integral, 1, None)],
        "batch_size": [Interval(numbers.Integral, 1, None)],
        "diversity": [Interval(numbers.Real, 0, 1)],
        "gap_floor": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "k_growth": [Options("sets", "robust", "verify")],
        "seed_sample": [Interval(numbers.Integral, 0, None), None],
    }

    # ------------------------------------------------------------------ public API

    def fit(self, X, y=None, *, oracle=None, budget="default"):
        """Start a session on ``X`` and, with an oracle, run the whole loop.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or (n, n) similarity
            when ``affinity="precomputed"``.
        y : ignored
        oracle : callable ``(i, j) -> bool or None`` or None
            True = same cluster, False = different, None = don't know (or
            the words :meth:`tell` accepts; integers are refused there).
            Without an oracle the session is only initialised (unconstrained
            clustering); continue with :meth:`suggest_queries` / :meth:`tell`.
        budget : int >= 0 or None, optional
            The budget of this session (``budget_``) instead of the
            ``budget`` parameter, which stays as it is (``get_params`` and
            ``clone`` keep the constructor's value).

        Returns
        -------
        self

        Raises
        ------
        InvalidInputError
            Invalid parameters, ``budget`` or data (see the class).
        """
        self._initialize(X, budget=budget)
        cb = self.callback
        if cb is not None:
            cb("initialize", 0.0)
        self._update()
        if oracle is not None:
            last = time.monotonic()
            total = self._budget_value
            while True:
                qs = self.suggest_queries(self.batch_size)
                if not qs:
                    break
                self.tell([(d["i"], d["j"], oracle(d["i"], d["j"])) for d in qs])
                if cb is not None and time.monotonic() - last > 0.5:
                    last = time.monotonic()
                    frac = self._q / total if total else 0.5
                    cb("querying", float(min(0.99, frac)))
            self._update()
        if cb is not None:
            cb("done", 1.0)
        return self

    def suggest_queries(self, n_queries=1):
        """The next questions, without blocking (ask part of ask/tell).

        Calling it again before :meth:`tell` returns the same questions.

        Parameters
        ----------
        n_queries : int >= 1
            Wanted number of questions; at most one per uncertain sample (plus
            the set-check questions of ``k_growth="verify"``, which pair two
            certain samples and come first), and never more than the
            remaining budget. Under ``k_growth="verify"`` a sample that at
            least 3 sets have refused may get up to 4, each about a different
            set.

        Returns
        -------
        queries : list of dict
            ``{"i": sample to place, "j": representative, "pair": [i, j],
            "certain_set": index of j's set, "sample": i, "score": G*H, "G",
            "H"}`` (scores None for the random strategy). Empty when the budget
            is spent or every sample is certain.

        Raises
        ------
        InvalidInputError
            ``n_queries`` is not an integer >= 1.
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        self._check_initialized()
        if not isinstance(n_queries, numbers.Integral) or isinstance(n_queries, bool) or n_queries < 1:
            raise InvalidInputError(f"n_queries == {n_queries!r}, must be an integer >= 1", field="n_queries")
        remaining = self._remaining()
        n = int(min(n_queries, remaining))
        if n <= 0:
            return []
        if self.strategy == "random":
            return self._random_queries(n)
        checks = self._set_checks(_PARALLEL_CHECKS if n > 1 else 1)
        if self._stale:
            self._recluster()
        out = [self._question(m, (int(self._set_of[r]), r)) for m, r in checks[:n]]
        for x, queue in self._pending.items():
            if len(out) >= n:
                break
            if self.k_growth == "sets":
                # batch mode: sets founded or grown since x's queue was built
                # are re-ranked by similarity (sequentially nothing changes)
                left = {l for l, _ in queue}
                fresh = [e for e in self._build_queue(x)
                         if e[0] in left or self._set_status(x, e[0]) == (False, 0)]
                if fresh:
                    queue = self._pending[x] = fresh
            out.append(self._question(x, queue[0]))
        if self.k_growth == "verify" and len(out) < n:
            out.extend(self._fan_out(n - len(out)))
        need = n - len(out)
        if need > 0:
            for x, info in self._select(need):
                queue = self._build_queue(x)
                if not queue:
                    continue
                self._pending[x] = queue
                self._log.append({"round": len(self._log), "sample": int(x), "n_answers_before": int(self._q),
                                  "score": info["score"], "G": info["G"], "H": info["H"],
                                  "fallback": info["fallback"],
                                  "representatives": [int(r) for _, r in queue], "answers": [],
                                  "outcome": "pending"})
                self._log_index[x] = len(self._log) - 1
                out.append(self._question(x, queue[0]))
        return out

    def tell(self, answers):
        """Record answers (tell part of ask/tell).

        Parameters
        ----------
        answers : iterable of (i, j, answer)
            answer True / "must_link" = same cluster, False / "cannot_link" =
            different, None / "dont_know" = don't know (``numpy.bool_`` as
            bool; also "yes" / "same" / "true", "no" / "different" /
            "false", "unknown" / "none", any case). Integers are refused,
            because the package uses two conventions for them: pair kinds and
            triplet answers read -1 as "no" (+1 / -1 / 0), while ``answers_``
            and saved states store 1 same / 0 different / -1 don't know.

        Returns
        -------
        outcomes : list of str
            Per answer: "accepted", "duplicate" (pair already answered),
            "implied" (both samples already certain: not needed, not
            recorded; under the set checks of ``k_growth="verify"`` with
            n_clusters=None, a pair from two different sets is "accepted"
            as evidence instead),
            "conflict" (contradicts an earlier answer: not recorded; never
            with k_growth="verify", where it is a vote),
            "rejected" (URASC only asks pairs with one certain sample),
            "over_budget".

        Raises
        ------
        InvalidInputError
            Malformed item: index out of range, self-pair, unknown or integer
            answer; nothing of the batch is recorded then.
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        self._check_initialized()
        answers = list(answers)
        parsed = []
        for pos, item in enumerate(answers):
            try:
                i, j, a = item
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"answers[{pos}] must be (i, j, answer)", field="answers",
                                        index=(pos,)) from exc
            for c, v in ((0, i), (1, j)):
                if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= int(v) < self._n:
                    raise InvalidInputError(f"answers[{pos}][{c}] == {v!r}, must be a row index in "
                                            f"[0, {self._n})", field="answers", index=(pos, c))
            if int(i) == int(j):
                raise InvalidInputError(f"answers[{pos}] pairs sample {int(i)} with itself", field="answers",
                                        index=(pos,))
            parsed.append((int(i), int(j), _as_answer(a, pos)))
        outcomes = [self._tell_one(i, j, a) for i, j, a in parsed]
        self._set_checks()
        self._publish_answers()
        return outcomes

    def tell_known(self, answers):
        """Record constraints known before asking (a session's seed constraints) as answers.

        As :meth:`tell`; in addition a row that a known cannot-link leaves
        with a "no" from every certain set and no question pending founds a
        set of its own, as when its pending questions run out (U15 step 4),
        so that known constraints chained through it can be taken next (a
        row with sets left to ask about is queued for them instead). The
        answers count against ``budget_`` as any answer does: a caller that
        keeps them apart gives the room (``fit(X, budget=...)``).

        Parameters
        ----------
        answers : iterable of (i, j, answer)
            As :meth:`tell`.

        Returns
        -------
        outcomes : list of str
            As :meth:`tell`.

        Raises
        ------
        InvalidInputError
            As :meth:`tell`.
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        answers = list(answers)
        outcomes = self.tell(answers)
        founded = False
        for (i, j, a), outcome in zip(answers, outcomes):
            if outcome != "accepted" or _as_answer(a, 0) != _NO:
                continue
            for x in (int(i), int(j)):
                if self._set_of[x] < 0 and x not in self._pending:
                    self._resolve(x)
                    founded = True
        if founded:
            self._set_checks()
            self._publish_answers()
        return outcomes

    def update(self):
        """Recluster with every answer so far if needed.

        Returns
        -------
        self : URASC

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        self._check_initialized()
        self._update()
        return self

    # ------------------------------------------------------------------ bookkeeping

    @property
    def _q(self):
        return len(self._answers)

    @property
    def _budget_value(self):
        return None if self.budget_ is None else int(self.budget_)

    def _remaining(self):
        return math.inf if self.budget_ is None else max(0, int(self.budget_) - self._q)

    def _check_initialized(self):
        if not hasattr(self, "_sets"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("call fit(X) (or from_state) before asking for queries")

    # ------------------------------------------------------------------ outputs

    def _publish_answers(self):
        self.certain_sets_ = [[int(v) for v in s] for s in self._sets]
        self.answers_ = np.asarray(self._answers, dtype=np.int64).reshape(-1, 3)
        self.n_questions_ = int(self._q)
        self.query_log_ = self._log

    @property
    def must_link_(self):
        """ndarray of shape (m, 2), int64: the must-links derived from the
        certain sets and answers (U16), i < j, sorted, deduplicated.

        Computed on access from the current certain sets: with K sets of c
        samples in all that is O(c^2 / K) pairs (segment after 1400 answers:
        about 90 000), too many to rebuild after every re-clustering.
        """
        return self._derived_constraints(1.0)

    @property
    def cannot_link_(self):
        """ndarray of shape (m, 2), int64: the cannot-links derived from the
        certain sets and answers (U16), i < j, sorted, deduplicated; computed
        on access (under ``k_growth="sets"`` every pair of certain samples in
        two sets: O(c^2) pairs, about 530 000 on segment after 1400 answers)."""
        return self._derived_constraints(0.0)

    def _derived_constraints(self, value):
        if getattr(self, "_set_of", None) is None:
            raise AttributeError("URASC is not fitted: call fit(X) (or from_state) first")
        pairs, vals = self._constraint_entries()
        p = pairs[vals == value]
        lo, hi = np.minimum(p[:, 0], p[:, 1]), np.maximum(p[:, 0], p[:, 1])
        keys = np.unique(lo * np.int64(self._n) + hi)  # 1-D keys: lexicographic (i, j) order
        return np.column_stack([keys // self._n, keys % self._n]).astype(np.int64)

    def _publish(self):
        self.n_clusters_ = int(min(self._K, self._n - 1))
        self._publish_answers()
        self.query_log_ = self._log
        self.embedding_ = self._V[:, :self.n_clusters_]
        self.eigenvalues_ = self._lam
        self.affinity_matrix_ = self._W
        self.n_questions_ = int(self._q)
        self.diagnostics_ = {
            "n_questions": int(self._q),
            "n_rounds": len(self._log),
            "n_certain_sets": len(self._sets),
            "n_certain_samples": int((self._set_of >= 0).sum()),
            "n_pending_samples": len(self._pending),
            "clustered_at": int(self._clustered_at),
            "n_eig": int(self._lam.size),
            "sigma": None if self._sigma is None else float(self._sigma),
            "graph": "knn" if self._sparse else "dense",
            "n_graph_components": int(n_connected_components(self._W)) if self._n <= 1000 else None,
            "kmeans_seed": int(self._kseed),
            "seed": int(self._seed_base),
            "n_rejected_answers": len(self._rejected),
            "n_bridge_edges": int(self._n_bridges),
            "answers_contradict_sets": bool(self._answers_contradict_sets()),
            "discriminant_weight": self._discriminant_weight_used,
            **{k: int(v) for k, v in self._counters.items()},
        }
