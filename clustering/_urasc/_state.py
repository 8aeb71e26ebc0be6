"""URASC's session state: initialisation, and saving / restoring a session as plain JSON.

A mixin of :class:`clustering.URASC` (``shared/specs/urasc.md`` §4.3: the loop is a
state machine so that a service never blocks on a human). :meth:`get_state` writes
lists of ints, floats and strings (no arrays, no pickle); :meth:`from_state` rebuilds
the session on the same ``X``, optionally reusing the base graph of an earlier
estimator. ``_initialize`` sets up a fresh session for ``fit`` and ``from_state``.
"""

import copy
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ._certain_sets import _seed
from .._params import Interval, validate_params
from ._base_graph import _read_only
from ..exceptions import InvalidInputError
from ..validation import ACTIVE_MIN_SAMPLES, check_data, check_urasc_n_clusters

STATE_VERSION = 1


class SessionStateMixin:
    """Initialisation, :meth:`get_state` and :meth:`from_state` of :class:`clustering.URASC`."""

    def get_state(self):
        """The whole session as JSON-serialisable plain data (no arrays, no pickle).

        Returns
        -------
        state : dict
            ``version`` (``STATE_VERSION``), ``params`` (``get_params`` without
            ``callback``; an integer or None ``random_state``), ``n_samples``,
            ``budget`` (``budget_``: the session's budget, which ``fit`` may
            have set apart from the ``budget`` parameter), the seeds, ``K``,
            ``certain_sets`` (lists of row indices), ``answers`` ([i, j, a],
            a = 1 same, 0 different, -1 don't know),
            pending queues, set-check pairs, the query log and counters, and
            ``labels`` (n_samples ints, or None before the first clustering).
            :meth:`from_state` rebuilds the session from it and the same X.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit`` (or ``from_state``).
        """
        self._check_initialized()
        params = {k: v for k, v in self.get_params(deep=False).items() if k != "callback"}
        params["random_state"] = None if not isinstance(self.random_state, numbers.Integral) else int(
            self.random_state)
        return {
            "version": STATE_VERSION,
            "params": params,
            "n_samples": int(self._n),
            "budget": self.budget_,
            "seed": int(self._seed_base),
            "first_sample": int(self._first),
            "K": int(self._K),
            "certain_sets": [[int(v) for v in s] for s in self._sets],
            "answers": [[int(i), int(j), int(a)] for i, j, a in self._answers],
            "pending": [[int(x), [[int(l), int(r)] for l, r in q]] for x, q in self._pending.items()],
            "check_pairs": sorted([int(i), int(j)] for i, j in self._check_pairs),
            "stale": bool(self._stale),
            "clustered_at": int(self._clustered_at),
            "query_log": copy.deepcopy(self._log),  # a snapshot: later answers must not change it
            "log_index": [[int(x), int(v)] for x, v in self._log_index.items()],
            "rejected": copy.deepcopy(self._rejected),
            "counters": dict(self._counters),
            "labels": None if getattr(self, "labels_", None) is None else [int(v) for v in self.labels_],
        }

    @classmethod
    def from_state(cls, X, state, *, callback=None, defer_recluster=False, base_graph=None):
        """Rebuild a session from :meth:`get_state` and the same ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data the session was built on.
        state : dict
            :meth:`get_state`'s output.
        callback : callable or None
        defer_recluster : bool, default=False
            False: the spectral step is recomputed at once, so every fitted
            attribute (``labels_``, ``embedding_``, ``affinity_matrix_``,
            ...) exists. For a state saved after its last clustering (the
            usual case: after :meth:`update` or :meth:`suggest_queries`) each
            is as it was when the state was saved. A state saved between
            :meth:`tell` and the next clustering (``state["stale"]``, e.g.
            always after a ``tell`` with ``strategy="random"``) is
            re-clustered with every answer, i.e. the attributes are those the
            saved estimator would have after :meth:`update` (its own
            ``labels_`` were computed before the last answers, with certain
            sets that have changed since, so they cannot be reproduced
            exactly). True: only ``labels_`` is restored, as saved (what
            :meth:`tell` reads), and the spectral step waits for the next
            :meth:`update` or :meth:`suggest_queries`, which then re-cluster
            with every answer. Use it when answers are told next: the
            outcome is the same as the saved estimator's, and one
            eigendecomposition per session pass is saved (segment, 2310 rows:
            about 0.1 s of 0.3 s). States saved before ``labels`` was part of
            them are re-clustered as with False.
        base_graph : dict or None
            The ``base_graph_`` of an earlier estimator on the same ``X`` with
            the same graph parameters: the base graph and neighbour lists are
            taken from it instead of rebuilt (letter, 20000 rows: 2.4 s of a
            session pass). It is used only when its fingerprint (a hash of
            ``X`` and of those parameters) matches; otherwise it is ignored.

        Returns
        -------
        estimator : URASC
            The restored session (``n_features_in_``, ``labels_``, answers
            and budget as saved).

        Raises
        ------
        InvalidInputError
            Unknown state version or ``X`` with a different number of rows.
        """
        if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
            raise InvalidInputError("state: unknown or missing version", field="state")
        params = dict(state["params"])
        params.setdefault("kernel", "gaussian")  # states saved before the kernel option existed
        params.setdefault("discriminant_weight", 0.0)  # ... and before discriminant_weight: labels as then
        est = cls(**params, callback=callback)
        # States saved before "budget" was part of them kept the session's budget in params
        # (fit overwrote the parameter then).
        est._initialize(X, seed_base=state["seed"], first=state["first_sample"], base_graph=base_graph,
                        budget=state["budget"] if "budget" in state else "default")
        if est._n != state["n_samples"]:
            raise InvalidInputError(f"X has {est._n} rows, the session was built on {state['n_samples']}",
                                    field="X")
        est._K = int(state["K"])
        est._sets = [list(map(int, s)) for s in state["certain_sets"]]
        est._set_of[:] = -1
        for l, s in enumerate(est._sets):
            est._set_of[s] = l
        est._answers = []
        est._asked = {}
        est._pairs = set()
        for i, j, a in state["answers"]:
            est._record(int(i), int(j), int(a))
        est._pending = {int(x): [(int(l), int(r)) for l, r in q] for x, q in state["pending"]}
        est._check_pairs = {(int(i), int(j)) for i, j in state.get("check_pairs", [])}
        est._log = copy.deepcopy(list(state["query_log"]))
        est._log_index = {int(x): int(v) for x, v in state["log_index"]}
        est._rejected = copy.deepcopy(list(state["rejected"]))
        est._counters = dict(state["counters"])
        if defer_recluster and state.get("labels") is not None:
            # the labels the saved estimator had (also when answers arrived after them)
            est.labels_ = np.asarray(state["labels"], dtype=np.int64)
            est._stale = True
            est._publish_answers()  # answers_ and the sets as saved: a seeded session's pass reads them first
        elif state["stale"]:
            # answers arrived after the last clustering: the spectral step of that clustering
            # used sets that have changed since, so bring it up to date (as update() would)
            est._recluster()
        else:
            est._recluster(n_answers=int(state["clustered_at"]))
        return est

    # ------------------------------------------------------------------ initialisation

    def _initialize(self, X, seed_base=None, first=None, base_graph=None, budget="default"):
        validate_params(self, self._PARAMS)
        if isinstance(budget, str) and budget == "default":
            budget = self.budget
        elif budget is not None and not Interval(numbers.Integral, 0, None).accepts(budget):
            raise InvalidInputError(f"{type(self).__name__}: budget == {budget!r}, must be an integer >= 0 or None",
                                    field="budget")
        self.budget_ = None if budget is None else int(budget)
        self._n_bridges = 0
        fingerprint = None
        if self.affinity == "precomputed":
            W0 = self._check_affinity(X)
            self._X = None
            self._sigma = None
            n = W0.shape[0]
            self.n_features_in_ = n
        else:
            Xc = check_data(X, min_samples=ACTIVE_MIN_SAMPLES)
            n = Xc.shape[0]
            self.n_features_in_ = Xc.shape[1]
            self._X = Xc
            fingerprint = self._graph_fingerprint(Xc)
            if base_graph is not None and base_graph.get("fingerprint") == fingerprint:
                W0, self._sigma, self._n_bridges = base_graph["W0"], base_graph["sigma"], base_graph["n_bridges"]
            else:
                base_graph = None
                W0 = self._build_graph(Xc)
        check_urasc_n_clusters(self.n_clusters, n)
        if self.seed_sample is not None and self.seed_sample >= n:
            raise InvalidInputError(f"seed_sample == {self.seed_sample}, must be < n_samples = {n}",
                                    field="seed_sample")
        self._n = n
        self._W0 = W0
        self._sparse = sp.issparse(W0)
        if seed_base is None:
            rs = self.random_state
            if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
                seed_base = int(rs)
            else:
                seed_base = int(check_random_state(rs).randint(0, 2**31 - 1))
        self._seed_base = int(seed_base)
        if base_graph is not None:
            self._nbr, self._nbr_w = base_graph["nbr"], base_graph["nbr_w"]
            self.base_graph_ = base_graph
        else:
            self._knn_setup()
            self.base_graph_ = None if fingerprint is None else _read_only({
                "fingerprint": fingerprint, "W0": self._W0, "sigma": self._sigma, "n_bridges": self._n_bridges,
                "nbr": self._nbr, "nbr_w": self._nbr_w})
        if first is None:
            first = (self.seed_sample if self.seed_sample is not None
                     else int(np.random.default_rng(_seed(self._seed_base, 1)).integers(n)))
        self._first = int(first)
        self._K = int(self.n_clusters) if self.n_clusters is not None else 2
        self._set_of = np.full(n, -1, dtype=np.int64)
        if self.strategy == "urasc":
            self._sets = [[self._first]]
            self._set_of[self._first] = 0
        else:
            self._sets = []
        self._answers = []
        self._asked = {}
        self._pairs = set()
        self._pending = {}
        self._check_pairs = set()
        self._log = []
        self._log_index = {}
        self._rejected = []
        self._counters = {"dropped_gap_terms": 0, "entropy_isolated": 0, "gmm_fallbacks": 0,
                          "all_zero_entropy_rounds": 0, "reclusters": 0, "undetermined_samples": 0,
                          "k_grew_beyond_n_clusters": 0, "merged_sets": 0}
        self._stale = True
        self._sparsity = None
        self._clustered_at = 0
        self._V = None
        self._eig_v0 = None
        self.step_scale_ = np.full(n, np.nan)
        self.gradient_ = np.full(n, np.nan)
