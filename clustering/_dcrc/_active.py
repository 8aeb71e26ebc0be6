"""Active relative-constraint clustering: DCRC with triplet question selection.

DCRC (``shared/specs/dcrc.md``; Pei, Fern, Tjahja & Rosales, "Discriminative
Clustering with Relative Constraints") learns a clustering from answered
triplets "is a closer to b than to c?" (yes / no / don't know) but says
nothing about which triplets to ask. This module adds the asking, for
sessions with people and crowds, in the ask/tell shape of :class:`URASC`
(``suggest_queries`` then ``tell`` then ``update``; state as plain JSON).

The question strategy is ours (no paper specifies one):

* ``"uncertainty"``: each sample a is asked against one confident member of
  each of its two most probable clusters (probabilities p1 >= p2 under
  ``P(y | x)``, DC-6), in random order; a "yes" or "no" then says which of
  the two a joins. Samples go first by the information such an answer
  carries, ``(p1 + p2) * H(p1 / (p1 + p2))`` (the chance of a yes / no rather
  than a "don't know" times the binary entropy between the two clusters; for
  K = 2 the entropy of ``P(y | x)``). Within one batch no sample
  is asked about when it is among the ``diversity_neighbors`` nearest
  neighbours of a sample already asked about. When a sample's randomly drawn
  anchor pair was asked before (or a cluster has no other confident member)
  and the batch comes out short, such samples, best first, get another unasked
  pair from their two likeliest clusters (any member if the confident ones are
  used up), and random unasked triplets fill the rest; a full batch of first
  choices is never changed.
* ``"random"``: uniformly random distinct triples (the protocol of the DCRC
  paper's experiments, where about a third of the answers are "don't know").
"""

import numbers

import numpy as np
from scipy.special import entr
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import NotFittedError
from sklearn.neighbors import NearestNeighbors

from ._estimator import DCRC, check_start_weights
from .._params import Interval, Options, validate_params
from ..exceptions import InvalidInputError
from ..validation import check_data, check_n_clusters, check_triplets

STATE_VERSION = 2  # 2 adds the warm-start weights; 1 is still read


def _key(a, b, c):
    """Triplet identity: "a closer to b than to c" is "a closer to c than to b" negated."""
    return int(a), min(int(b), int(c)), max(int(b), int(c))


class ActiveDCRC(ClusterMixin, BaseEstimator):
    """DCRC driven by suggested triplet questions (ask/tell).

    Parameters
    ----------
    n_clusters : int >= 2, default=2
        Number of clusters K (required: DCRC does not grow K).
    strategy : {"uncertainty", "random"}, default="uncertainty"
        How :meth:`suggest_queries` picks triplets (see the module docstring).
    budget : int >= 1 or None, default=None
        Maximum number of answers recorded (``None``: unlimited).
    epsilon : float in [0, 2/3], default=0.1
        DCRC's answer-noise rate (crowd answers: 0.1-0.2).
    n_init : int >= 1, default=4
        DCRC's EM starts per fit.
    max_iter : int >= 1, default=100
        DCRC's EM iterations per fit. Each answer batch refits, so this
        bounds a session pass: on 20000 rows and 26 clusters EM runs all 100
        (31-34 s per refit on one core). 30 takes 14-18 s there (segment:
        1.0 s per pass instead of 1.8 s) and costs little ARI on the
        benchmark sets (``bench/README.md``, Active triplets).
    warm_start : bool, default=True
        Each refit after new answers also starts EM from the previous fit's
        weights W, screened with DCRC's fresh starts (k-means and random):
        the model moves on from where the earlier answers left it unless a
        fresh start explains all answers better (a larger lower bound).
        False: fresh starts only, the spec's DCRC fit on all answers.
        (Benchmark: ``bench/README.md``, Active triplets.)
    diversity_neighbors : int >= 0, default=5
        Batch diversity: a sample among this many nearest neighbours (in the
        standardised feature space) of a sample already in the batch is not
        asked about in the same batch. 0 switches it off.
    random_state : int or None, default=None
        Seeds DCRC's starts and the question choice. None: a random seed
        drawn once per session (by ``fit``; a restored session keeps its
        own), so sessions differ but a state round trip does not change
        the questions or the model.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit`` or :meth:`from_state`.
    labels_ : ndarray of shape (n_samples,), int64
        Clustering after the answers so far.
    proba_ : ndarray of shape (n_samples, n_clusters), float64
        DCRC's P(y = k | x) (Eq. DC-6); rows sum to 1.
    n_clusters_ : int
    triplets_ : ndarray of shape (q, 3), int64
        Answered triplets (a, b, c) in the order told.
    triplet_answer_ : ndarray of shape (q,), int8
        +1 yes, -1 no, 0 don't know.
    n_questions_ : int
        Answers recorded (don't know included), against ``budget``.
    model_ : DCRC
        The last fit.
    n_iter_ : int
        EM iterations of the last fit (``model_.n_iter_``, at most ``max_iter``).

    Raises
    ------
    InvalidInputError
        Invalid parameters, data, answers or state (``fit``, ``tell``,
        ``from_state``).
    sklearn.exceptions.NotFittedError
        ``suggest_queries``, ``tell``, ``update`` or ``get_state`` before
        ``fit`` (or ``from_state``).

    Notes
    -----
    Each :meth:`update` refits DCRC from its k-means start with every answer
    (Pei et al., EM of §3 with the mean-field E-step); an incremental refit
    would depend on the order of the answers.
    """

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 2, None)],
        "strategy": [Options("uncertainty", "random")],
        "budget": [None, Interval(numbers.Integral, 1, None)],
        "epsilon": [Interval(numbers.Real, 0, 2.0 / 3.0, closed="both")],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "warm_start": [bool],
        "diversity_neighbors": [Interval(numbers.Integral, 0, None)],
        "random_state": [None, numbers.Integral],
    }

    def __init__(self, n_clusters=2, *, strategy="uncertainty", budget=None, epsilon=0.1, n_init=4, max_iter=100,
                 warm_start=True, diversity_neighbors=5, random_state=None):
        self.n_clusters = n_clusters
        self.strategy = strategy
        self.budget = budget
        self.epsilon = epsilon
        self.n_init = n_init
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.diversity_neighbors = diversity_neighbors
        self.random_state = random_state

    # ------------------------------------------------------------------ set-up
    def fit(self, X, y=None):
        """Start a session: fit DCRC without answers.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite values; DCRC standardises them.
        y : ignored

        Returns
        -------
        self : ActiveDCRC

        Raises
        ------
        InvalidInputError
            Invalid parameters or data (fewer than 3 rows, NaN, ...), or
            ``n_clusters`` > n_samples.
        """
        self._initialize(X, [], [])
        self._refit()
        return self

    def _initialize(self, X, triplets, answers, seed=None):
        validate_params(self, self._parameter_constraints)
        if seed is None:
            # random_state=None: a fresh seed per session (random, as in scikit-learn), kept in the
            # state so that a restored session asks and refits as the saved one would
            seed = (int(self.random_state) if self.random_state is not None
                    else int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0] >> 1))
        self._seed = int(seed)
        self._X = check_data(X, min_samples=3)
        self.n_features_in_ = self._X.shape[1]
        check_n_clusters(self.n_clusters, self._X.shape[0])
        self._tri = [tuple(int(v) for v in t) for t in triplets]
        self._ans = [int(a) for a in answers]
        self._asked = {_key(*t) for t in self._tri}
        self._stale = True
        self._neighbors = None
        # the last fit: its number of answers, its W and the warm start it used
        self._fit_n, self._fit_W, self._fit_start = None, None, None
        self._publish_answers()

    def _refit(self):
        tri = np.asarray(self._tri, dtype=np.int64).reshape(-1, 3)
        # new answers: warm start from the last fit; the same answers (a
        # restored state): the last fit's own start, which reproduces it
        start = self._fit_W if self._fit_n != len(self._ans) else self._fit_start
        extra = start[None] if self.warm_start and start is not None else None
        dcrc = DCRC(n_clusters=self.n_clusters, epsilon=self.epsilon, n_init=self.n_init, max_iter=self.max_iter,
                    extra_starts=extra, random_state=self._seed)
        self.model_ = dcrc.fit(self._X, triplets=tri, triplet_answer=np.asarray(self._ans, dtype=np.int8))
        self._fit_n, self._fit_start = len(self._ans), start
        self._fit_W = np.hstack([self.model_.coef_, self.model_.intercept_[:, None]])
        self.labels_ = np.asarray(self.model_.labels_, dtype=np.int64)
        self.proba_ = self.model_.proba_
        self.n_clusters_ = int(self.n_clusters)
        self.n_iter_ = int(self.model_.n_iter_)
        self._stale = False

    def _publish_answers(self):
        self.triplets_ = np.asarray(self._tri, dtype=np.int64).reshape(-1, 3)
        self.triplet_answer_ = np.asarray(self._ans, dtype=np.int8)
        self.n_questions_ = len(self._ans)

    def _check_initialized(self):
        if not hasattr(self, "_X"):
            raise NotFittedError(
                "This ActiveDCRC instance is not fitted yet: call fit(X) or from_state(X, state) first")

    def _rng(self):
        # a function of the session's seed and the answers so far: the same
        # suggestions after a state round trip, new ones after every answer
        return np.random.default_rng([self._seed, len(self._ans)])

    # ------------------------------------------------------------------ ask
    def suggest_queries(self, n_queries=1):
        """The next triplets to ask, best first.

        Parameters
        ----------
        n_queries : int >= 1
            Batch size; fewer come back only when the budget or the unasked
            triplets run out (an empty list: nothing left to ask).

        Returns
        -------
        list of dict
            ``{"items": (a, b, c), "sample": a, "score": float}``: "is a closer
            to b than to c?". ``score`` is that information in nats (see the
            module docstring; NaN for ``"random"`` and for the random
            triplets that fill a short uncertainty batch, which come last).
            Never a triplet already answered, in either order of b and c,
            nor twice in one batch.

        Raises
        ------
        InvalidInputError
            ``n_queries`` < 1.
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        self._check_initialized()
        if isinstance(n_queries, bool) or not isinstance(n_queries, numbers.Integral) or n_queries < 1:
            raise InvalidInputError(f"n_queries == {n_queries!r}, must be an integer >= 1", field="n_queries")
        self.update()
        room = n_queries if self.budget is None else min(n_queries, self.budget - self.n_questions_)
        if room <= 0:
            return []
        rng = self._rng()
        if self.strategy == "random":
            return self._random_queries(room, rng)
        return self._uncertain_queries(room, rng)

    def _random_queries(self, n, rng, seen=None):
        """Up to ``n`` uniformly random unasked triplets (not in ``seen``, default the asked ones).

        Rejection sampling first; when that comes back short (nearly every
        triplet asked), the rest is drawn from an exhaustive list of the
        unasked ones, so fewer than ``n`` come back only when fewer remain.
        ``seen`` is updated with the triplets returned.
        """
        N = self._X.shape[0]
        out, seen = [], set(self._asked) if seen is None else seen
        for _ in range(50 * n):
            if len(out) >= n:
                break
            a, b, c = (int(v) for v in rng.choice(N, 3, replace=False))
            if _key(a, b, c) not in seen:
                seen.add(_key(a, b, c))
                out.append({"items": (a, b, c), "sample": a, "score": float("nan")})
        if len(out) < n:
            out.extend(self._exhaustive_queries(n - len(out), rng, seen))
        return out

    def _exhaustive_queries(self, n, rng, seen):
        """Up to ``n`` triplets not in ``seen`` (updated), found by listing each
        sample's unasked pairs: samples in random order, pairs at random."""
        N = self._X.shape[0]
        per_sample = (N - 1) * (N - 2) // 2
        taken = {}
        for a, b, c in seen:
            taken.setdefault(a, set()).add((b, c))
        out = []
        for a in rng.permutation(N).tolist():
            if len(out) >= n:
                break
            done = taken.get(a, set())
            if len(done) >= per_sample:
                continue
            if per_sample > 2_000_000:  # large N: few of a's pairs can be taken, sample them
                free = []
                while len(free) < min(n - len(out), per_sample - len(done)):
                    b, c = sorted(int(v) for v in rng.choice(np.delete(np.arange(N), a), 2, replace=False))
                    if (b, c) not in done and (b, c) not in free:
                        free.append((b, c))
            else:
                others = np.delete(np.arange(N), a)
                i, j = np.triu_indices(N - 1, 1)
                free = [(b, c) for b, c in zip(others[i].tolist(), others[j].tolist()) if (b, c) not in done]
                pick = rng.permutation(len(free))[: n - len(out)]
                free = [free[k] for k in pick.tolist()]
            for b, c in free:
                seen.add((a, b, c))
                done.add((b, c))
                b, c = (b, c) if rng.random() < 0.5 else (c, b)
                out.append({"items": (a, b, c), "sample": a, "score": float("nan")})
        return out

    def _diversity_neighbors(self):
        if self._neighbors is None:
            k = min(self.diversity_neighbors, self._X.shape[0] - 1)
            Z = (self._X - self._X.mean(0)) / np.where(self._X.std(0) > 0, self._X.std(0), 1.0)
            self._neighbors = NearestNeighbors(n_neighbors=k + 1).fit(Z).kneighbors(
                Z, return_distance=False)[:, 1:] if k > 0 else np.empty((len(Z), 0), dtype=np.int64)
        return self._neighbors

    def _uncertain_queries(self, n, rng):
        P = self.proba_
        score = _two_cluster_information(P)
        confidence = P.max(axis=1)
        members = {}
        for k in range(P.shape[1]):
            idx = np.flatnonzero(self.labels_ == k)
            if idx.size:
                members[k] = idx[confidence[idx] >= np.median(confidence[idx])]
        if len(members) < 2:  # the model sees one cluster: nothing to compare against
            return self._random_queries(n, rng)
        neighbors = self._diversity_neighbors()
        blocked, out, missed = np.zeros(len(P), dtype=bool), [], []
        for a in np.lexsort((rng.random(len(P)), -score)):
            if len(out) >= n:
                break
            if blocked[a]:
                continue
            k1, k2 = [k for k in np.argsort(-P[a], kind="stable") if k in members][:2]
            anchors = []
            for k in (k1, k2):
                cand = members[k][members[k] != a]
                anchors.append(int(rng.choice(cand)) if cand.size else None)
            if None in anchors:
                missed.append((int(a), k1, k2))
                continue
            b, c = anchors if rng.random() < 0.5 else anchors[::-1]
            if _key(a, b, c) in self._asked:
                missed.append((int(a), k1, k2))
                continue
            out.append({"items": (int(a), b, c), "sample": int(a), "score": float(score[a])})
            blocked[a] = True
            blocked[neighbors[a]] = True
        if len(out) >= n:
            return out
        # Short batch: the first anchor pair drawn for some samples was asked before (or a
        # cluster had no other confident member). Up to here the questions are those of
        # the first choices; now each such sample, best first, gets another unasked pair
        # from its two likeliest clusters (confident members, then any member), and what
        # is still missing is filled with random unasked triplets, so that a short or
        # empty list means that the budget or the unasked triplets ran out.
        seen = set(self._asked) | {_key(*q["items"]) for q in out}
        for a, k1, k2 in missed:
            if len(out) >= n:
                break
            if blocked[a]:
                continue
            pair = self._unasked_anchor_pair(a, k1, k2, members, seen, rng)
            if pair is None:
                continue
            b, c = pair if rng.random() < 0.5 else pair[::-1]
            seen.add(_key(a, b, c))
            out.append({"items": (a, b, c), "sample": a, "score": float(score[a])})
            blocked[a] = True
            blocked[neighbors[a]] = True
        if len(out) < n:
            out.extend(self._random_queries(n - len(out), rng, seen))
        order = np.argsort([-q["score"] if np.isfinite(q["score"]) else np.inf for q in out], kind="stable")
        return [out[k] for k in order]

    def _unasked_anchor_pair(self, a, k1, k2, members, seen, rng):
        """One random (b, c), b in cluster k1 and c in k2 (confident members
        first, then all members; never a), with (a, b, c) not in ``seen``; or None."""
        for pool in (members, None):
            B = (members[k1] if pool is not None else np.flatnonzero(self.labels_ == k1))
            C = (members[k2] if pool is not None else np.flatnonzero(self.labels_ == k2))
            B, C = B[B != a], C[C != a]
            if not (B.size and C.size):
                continue
            for _ in range(20):  # usually one draw suffices
                b, c = int(rng.choice(B)), int(rng.choice(C))
                if _key(a, b, c) not in seen:
                    return b, c
            free = [(b, c) for b in B.tolist() for c in C.tolist() if _key(a, b, c) not in seen]
            if free:
                return free[int(rng.integers(len(free)))]
        return None

    # ------------------------------------------------------------------ tell
    def tell(self, answers):
        """Record answers.

        Parameters
        ----------
        answers : iterable of (a, b, c, answer)
            answer "yes" / +1 (a is closer to b), "no" / -1 (closer to c),
            "dont_know" / 0 / None.

        Returns
        -------
        outcomes : list of str
            Per answer: "accepted", "duplicate" (the triplet, in either
            order of b and c, was answered before) or "over_budget".

        Raises
        ------
        InvalidInputError
            Malformed item (not four values), index out of range, repeated
            index in a triplet, unknown answer; nothing is recorded then.
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        self._check_initialized()
        items = list(answers)
        for pos, item in enumerate(items):
            if not isinstance(item, (tuple, list)) or len(item) != 4:
                raise InvalidInputError(f"answers[{pos}] must be (a, b, c, answer)", field="answers",
                                        index=(pos,))
        tri, codes = check_triplets([list(t[:3]) for t in items], self._X.shape[0],
                                    [0 if t[3] is None else t[3] for t in items], name="answers")
        outcomes = []
        for (a, b, c), code in zip(tri.tolist(), codes.tolist()):
            if _key(a, b, c) in self._asked:
                outcomes.append("duplicate")
            elif self.budget is not None and len(self._ans) >= self.budget:
                outcomes.append("over_budget")
            else:
                self._asked.add(_key(a, b, c))
                self._tri.append((a, b, c))
                self._ans.append(code)
                self._stale = True
                outcomes.append("accepted")
        self._publish_answers()
        return outcomes

    def update(self):
        """Refit DCRC with every answer so far if any arrived.

        Returns
        -------
        self : ActiveDCRC

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        self._check_initialized()
        if self._stale:
            self._refit()
        return self

    # ------------------------------------------------------------------ state
    def get_state(self):
        """The session as JSON-serialisable plain data (no arrays, no pickle).

        Returns
        -------
        state : dict
            ``version``, ``params`` (``get_params``), ``n_samples``, ``seed``
            (the session's seed: ``random_state``, or the one drawn for
            ``random_state=None``), ``triplets`` and ``answers`` (+1 / -1 /
            0) in the order told, and ``fit`` (the last fit's number of
            answers, weights and warm start).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        self._check_initialized()

        def rows(W):
            return None if W is None else W.tolist()  # floats round-trip JSON exactly

        return {"version": STATE_VERSION, "params": self.get_params(deep=False),
                "n_samples": int(self._X.shape[0]), "seed": int(self._seed),
                "triplets": [list(t) for t in self._tri], "answers": list(self._ans),
                "fit": {"n_answers": self._fit_n, "W": rows(self._fit_W), "start": rows(self._fit_start)}}

    @classmethod
    def from_state(cls, X, state):
        """Rebuild a session from :meth:`get_state` and the same ``X``.

        DCRC is refitted by the next :meth:`update` or :meth:`suggest_queries`
        (``labels_`` and ``proba_`` exist only after it).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data the session was built on.
        state : dict
            :meth:`get_state`'s output. States saved before ``seed`` was part
            of them keep the seed they used: ``random_state``, or 0 for
            ``random_state=None``.

        Returns
        -------
        est : ActiveDCRC

        Raises
        ------
        InvalidInputError
            Unknown state version, ``X`` with a different number of rows,
            saved weights of the wrong shape, or an invalid seed.
        """
        if not isinstance(state, dict) or state.get("version") not in (1, STATE_VERSION):
            raise InvalidInputError("state: unknown or missing version", field="state")
        est = cls(**{"warm_start": False, **state["params"]})  # version 1 sessions had no warm start
        seed = state.get("seed")
        if seed is None:  # saved before the seed was: random_state None seeded the questions with 0
            seed = 0 if est.random_state is None else int(est.random_state)
        elif isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise InvalidInputError(f"state: seed == {seed!r}, must be an integer >= 0", field="state")
        est._initialize(X, state["triplets"], state["answers"], seed=seed)
        if est._X.shape[0] != state["n_samples"]:
            raise InvalidInputError(f"state was saved for {state['n_samples']} rows, X has {est._X.shape[0]}",
                                    field="X")
        fit = state.get("fit") or {}
        est._fit_n = fit.get("n_answers")
        shape = (int(est.n_clusters), est._X.shape[1] + 1)
        est._fit_W, est._fit_start = (None if fit.get(k) is None else
                                      check_start_weights(fit[k], shape, "state", "state: saved weights")
                                      for k in ("W", "start"))
        return est


def _two_cluster_information(P):
    """``(p1 + p2) * H(p1 / (p1 + p2))`` per row of ``P`` (n, K), in nats:
    p1 >= p2 the two largest probabilities, H the binary entropy. Returns (n,)."""
    top = -np.partition(-P, 1, axis=1)[:, :2]
    s = top.sum(axis=1)
    r = top[:, 0] / np.maximum(s, 1e-300)
    return s * (entr(r) + entr(1.0 - r))
