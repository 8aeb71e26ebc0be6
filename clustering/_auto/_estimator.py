"""``AutoClustering``: method, settings and K chosen by held-out constraints (``specs/auto.md``)."""

import numbers
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from threadpoolctl import threadpool_limits

from .._constraints import MUST_LINK, check_pairwise
from .._params import Interval, Options, validate_params
from ..exceptions import InvalidInputError
from ..validation import check_data, check_magnitude, check_n_clusters
from ._candidates import DEFAULT_ID, DEFAULT_PRIOR, LARGE_N, LARGE_PRIOR, ccskl_r, default_candidates, eigengaps, prior_rank
from ._folds import assign_folds, constraint_units, fixed_by_training
from ._race import FIT_FAILURES, CandidateFailed, Race, budget_seconds
from ._scoring import UnitCounts, balanced_accuracy, bootstrap_weights, resampled_ba, satisfied

__all__ = ["AutoClustering"]

MIN_CONSTRAINTS = 10
#: Below this many distinct constraints the search uses at most 3 folds: each fold fit costs the same
#: whatever the count, and 5 folds of 20 constraints test 4 each.
FEW_CONSTRAINTS = 60
#: Least budget in CPU seconds: below it fixed costs (folds, bootstrap, imports) would end every search.
MIN_BUDGET = 1.0


def _seed(random_state, *key):
    """A fit seed keyed by (repeat, fold): the same for every candidate, whatever the candidate list."""
    return int(np.random.SeedSequence([int(random_state), *key]).generate_state(1)[0] % (2**31 - 1))


def _zscore(X):
    mean, std = X.mean(axis=0), X.std(axis=0)
    return (X - mean) / np.where(std > 0, std, 1.0)


def greedy_clique(units, n_samples):
    """Size of a clique, found greedily, of the cannot-link graph over must-link components.

    Components holding a contradiction are left out (spec §4.1).

    Returns
    -------
    int
    """
    comp = units.component
    bad = set(comp[units.pairs[units.contradiction, 0]].tolist())
    cl = units.pairs[(units.kind != MUST_LINK) & ~units.contradiction]
    adj = {}
    for a, b in zip(comp[cl[:, 0]].tolist(), comp[cl[:, 1]].tolist()):
        if a in bad or b in bad or a == b:
            continue
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    best = 1 if len(units) else 0
    for start in sorted(adj, key=lambda v: -len(adj[v])):
        clique = [start]
        for v in sorted(adj[start], key=lambda v: -len(adj[v])):
            if all(v in adj[u] for u in clique):
                clique.append(v)
        best = max(best, len(clique))
    return best


class AutoClustering(ClusterMixin, BaseEstimator):
    """Choose the method, its settings (and K) by held-out constraints, then refit on all.

    Pairwise constraints: every candidate setting is scored by the balanced
    accuracy with which it predicts held-out constraints, over folds of
    leakage units (a held-out constraint is never implied by the training
    constraints' closure), with successive halving over folds under a time
    budget; the one-standard-error rule with a fixed prior order picks the
    setting, which is refitted on all constraints. Relative constraints
    (triplets): DCRC and ReCon settings, scored by held-out triplet accuracy.

    Parameters
    ----------
    n_clusters : int or None, default=None
        K; None: chosen in ``[K_lo, K_hi]`` (spec §4), K_lo from the
        cannot-link cliques.
    candidates : list of Candidate or list of str or None, default=None
        Settings to choose from (objects from
        :func:`clustering._auto.default_candidates` or their ids); None: all.
    budget_factor : float, default=5
        Budget, search and refit together, in CPU seconds = budget_factor x
        the time of the default ``cop_rf`` job's fit (``rf-def`` at its
        catalogue 1000 trees: predicted, then from its measured fold fit;
        the slowest eligible candidate when ``rf-def`` cannot run), at least
        ``MIN_BUDGET`` (1 s), capped by ``max_seconds``.
    n_folds : int, default=5
        Folds per repeat; 3 when fewer than ``FEW_CONSTRAINTS`` distinct
        constraints are given (each fold still tests a few units).
    max_repeats : int, default=2
        Fold assignments (repeat 2 is the last rung).
    k_min, k_max : int or None
        Bounds of the K search (``n_clusters=None``).
    tie_break : {"prior", "consensus"}, default="prior"
    scale : {"none", "zscore", "auto"}, default="none"
        "auto": raw or z-scored features, chosen by the same held-out score.
    prior : sequence of str or None
        Prior order of candidate ids (ties and thin evidence); None: the
        committed one (:data:`clustering._auto._candidates.DEFAULT_PRIOR`).
    max_seconds : float or None
        Cap of the budget (a worker's time limit less the refit).
    random_state : int or None, default=None
    callback : callable or None
        ``callback(stage, fraction)``; may raise to cancel.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
    n_clusters_ : int
    best_estimator_ : estimator
        The chosen setting refitted on all constraints.
    best_method_ : str
        Its catalogue method id.
    auto_ : dict
        The report of spec §5 (chosen, rule, candidates, k, folds, timing,
        noise, warnings).

    References
    ----------
    Pourrajabi et al. Model selection for semi-supervised clustering. EDBT 2014.
    Van Craenendonck, Blockeel. Constraint-based clustering selection. Machine Learning 106, 2017.
    """

    def __init__(self, n_clusters=None, *, candidates=None, budget_factor=5.0, n_folds=5, max_repeats=2,
                 k_min=None, k_max=None, tie_break="prior", scale="none", prior=None, max_seconds=None,
                 random_state=None, callback=None):
        self.n_clusters = n_clusters
        self.candidates = candidates
        self.budget_factor = budget_factor
        self.n_folds = n_folds
        self.max_repeats = max_repeats
        self.k_min = k_min
        self.k_max = k_max
        self.tie_break = tie_break
        self.scale = scale
        self.prior = prior
        self.max_seconds = max_seconds
        self.random_state = random_state
        self.callback = callback

    _parameter_constraints = {
        "budget_factor": [Interval(numbers.Real, 1, 20)],
        "n_folds": [Interval(numbers.Integral, 2, 10)],
        "max_repeats": [Interval(numbers.Integral, 1, 3)],
        "tie_break": [Options("prior", "consensus")],
        "scale": [Options("none", "zscore", "auto")],
    }

    # -- helpers

    def _progress(self, stage, fraction):
        if self.callback is not None:
            self.callback(stage, float(fraction))

    def _candidate_list(self):
        pool = default_candidates()
        if self.candidates is None:
            return pool
        by_id = {c.id: c for c in pool}
        out = []
        for c in self.candidates:
            if isinstance(c, str):
                if c not in by_id:
                    raise InvalidInputError(f"unknown candidate {c!r}; known: {', '.join(sorted(by_id))}",
                                            field="candidates")
                out.append(by_id[c])
            else:
                out.append(c)
        if not out:
            raise InvalidInputError("candidates is empty", field="candidates")
        return out

    def _fit_labels(self, cand, X, K, seed, ctx, pairs, kind, weight, *, search, callback=None):
        est = cand.build(K, seed, ctx, search=search)
        if callback is not None and "callback" in est.get_params(deep=False):
            est.set_params(callback=callback)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if cand.uses_constraints:
                    est.fit(X, pairs=pairs, pair_kind=kind, pair_weight=weight)
                else:
                    est.fit(X)
        except FIT_FAILURES as exc:
            raise CandidateFailed(f"{type(exc).__name__}: {exc}") from exc
        return est

    # -- fit

    def fit(self, X, y=None, *, pairs=None, pair_kind=None, pair_weight=None, triplets=None, triplet_answer=None):
        """Search, choose and refit.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        pairs, pair_kind, pair_weight : pairwise constraints (see :mod:`clustering`)
        triplets, triplet_answer : relative constraints (see :mod:`clustering`)

        Returns
        -------
        self

        Raises
        ------
        InvalidInputError
            Bad data or parameters; pairwise and relative constraints together
            (``auto_mixed_constraints``); ``n_clusters=None`` with relative
            constraints.
        """
        validate_params(self, self._parameter_constraints)
        # One thread per BLAS / OpenMP pool: on a shared 2-core worker k-means and eigensolvers on
        # a few hundred rows spin-wait (5x the CPU seconds of one thread), and the budget counts CPU.
        with threadpool_limits(limits=1):
            return self._fit(X, pairs, pair_kind, pair_weight, triplets, triplet_answer)

    def _fit(self, X, pairs, pair_kind, pair_weight, triplets, triplet_answer):
        X = check_data(X)
        check_magnitude(X)
        n = X.shape[0]
        self.n_features_in_ = X.shape[1]
        has_pairs = pairs is not None and len(np.asarray(pairs).reshape(-1)) > 0
        has_trip = triplets is not None and len(np.asarray(triplets).reshape(-1)) > 0
        if has_pairs and has_trip:
            raise InvalidInputError("auto chooses among pairwise methods or among relative ones, not both: "
                                    "send pairwise or relative constraints", field="constraints")
        if has_trip:
            from ._relative import fit_relative

            return fit_relative(self, X, triplets, triplet_answer)
        t_start, c_start = time.perf_counter(), time.process_time()
        cons = check_pairwise(pairs, pair_kind, pair_weight, n)
        units = constraint_units(cons.pairs, cons.kind, cons.weight, n)
        warns = []
        n_contra = int(units.contradiction.sum())
        if n_contra:
            warns.append({"code": "contradictory_constraints",
                          "detail": f"{n_contra} cannot-link(s) inside a must-link component"})
        kinds_present = tuple(c for c, k in ((0, MUST_LINK), (1, -1)) if np.any(units.kind == k))
        rs = 0 if self.random_state is None else int(np.random.RandomState(self.random_state).randint(2**31 - 1)) \
            if not isinstance(self.random_state, numbers.Integral) else int(self.random_state)
        m = len(units)
        F = int(self.n_folds) if m >= FEW_CONSTRAINTS else min(int(self.n_folds), 3)
        thin = m < MIN_CONSTRAINTS or units.n_units < 2 * F
        if thin:
            warns.append({"code": "too_few_constraints",
                          "detail": f"{m} distinct constraints in {units.n_units} units: no cross-validation"})
        elif len(kinds_present) == 1:
            warns.append({"code": "single_kind", "detail": "only " + ("must-links" if kinds_present == (0,)
                                                                      else "cannot-links") + " given"})
        cands = self._candidate_list()
        prior = tuple(self.prior) if self.prior is not None else (LARGE_PRIOR if n > LARGE_N else DEFAULT_PRIOR)
        rank = prior_rank(prior, [c.id for c in cands])
        n_constrained = len(np.unique(units.pairs)) if m else 0
        status, reasons = {}, {}
        for c in cands:
            why = c.ineligible(n, n_constrained=n_constrained, contradictions=n_contra)
            if why:
                status[c.id], reasons[c.id] = "ineligible", why
        eligible = [c for c in cands if c.id not in status]
        if not eligible:
            raise InvalidInputError("no candidate setting can run on this dataset", field="candidates")
        for c in eligible:
            c.search_predicted = c.predicted_seconds(n) * c.search_ratio

        def full_fit_seconds(c):
            """Predicted CPU seconds of a full fit, from the fastest measured fold fit once there is one."""
            measured = race.fastest_fit.get(c.id) if race is not None else None
            return c.predicted_seconds(n) if measured is None else measured / c.search_ratio

        def t_ref_now():
            return max(full_fit_seconds(c) for c in eligible)

        default = next((c for c in eligible if c.id == DEFAULT_ID), None)

        def t_default_now():
            """CPU seconds of the default cop_rf job's fit (the slowest eligible candidate without it)."""
            return full_fit_seconds(default) if default is not None else t_ref_now()

        def budget_now():
            return budget_seconds(self, t_default_now(), floor=MIN_BUDGET)

        race = None

        # folds (shared by every candidate, seeds keyed by repeat and fold)
        repeats = [] if thin else self._folds(units, n, F, rs, warns)
        X_raw = X
        scale_report = None
        if self.scale == "zscore":
            X = _zscore(X_raw)
        elif self.scale == "auto":
            X, scale_report = self._choose_scale(X_raw, units, repeats, rs, rank, eligible, kinds_present, thin)
        ctx = {"r": ccskl_r(X)}

        # K
        k_report = None
        if self.n_clusters is None:
            K, k_report = self._choose_k(X, units, repeats, rs, ctx, kinds_present, thin, warns)
        else:
            K = check_n_clusters(self.n_clusters, n)
        self._progress("search", 0.0)

        def score(cand, task):
            rep, f = task
            R = repeats[rep]
            tr, te = R["train"][f], R["test"][f]
            seed = _seed(rs, 0, 0) if not cand.uses_constraints else _seed(rs, rep, f)
            if not cand.uses_constraints and (cand.id, K) in shared:
                labels = shared[(cand.id, K)]
            else:
                est = self._fit_labels(cand, X, K, seed, ctx, units.pairs[tr], units.kind[tr], units.weight[tr],
                                       search=True, callback=lambda s, fr: self._progress(f"fold fit: {cand.id}",
                                                                                        race.elapsed() / budget_now()))
                labels = np.asarray(est.labels_)
                if not cand.uses_constraints:
                    shared[(cand.id, K)] = labels
            sat = satisfied(labels, units.pairs[te], units.kind[te])
            return units.unit[te], units.kind[te], units.weight[te], sat, labels.astype(np.int32)

        shared = {}
        rungs = [] if thin else self._rungs(F, len(repeats))
        race = Race(eligible, rank, units.n_units, kinds_present or (0, 1), rungs, score, budget_now,
                    full_fit_seconds, np.random.default_rng([rs, 99]),
                    lambda s, fr: self._progress(s, 0.9 * fr))
        finalists = race.run() if rungs else []
        for i, s in race.status.items():
            status.setdefault(i, s)
            if i in race.reason:
                reasons[i] = race.reason[i]
        search_s = race.elapsed()
        budget, t_ref, t_default = budget_now(), t_ref_now(), t_default_now()
        if race.budget_exhausted:
            warns.append({"code": "budget_exhausted", "detail": f"search ended at the last complete rung "
                                                                 f"within {budget:.1f} s"})
        failed = [i for i, s in race.status.items() if s == "failed"]
        if failed:
            warns.append({"code": "candidate_failed", "detail": ", ".join(failed)})
        table, near = {}, []
        if finalists:
            chosen, rule, table, near = race.choose(finalists, self.tie_break, self._consensus(race))
            if len(near) > 1:
                warns.append({"code": "near_tie", "detail": "within one paired SE of the best: " + ", ".join(near)})
            fam_other = [i for i in finalists if race.candidates[i].family != race.candidates[chosen].family]
            n_scored = race.counts[chosen].n_scored
            if n_scored < 30 or table[chosen]["ba"] < 0.6 or (fam_other and min(
                    table[chosen]["ba"] - table[i]["ba"] for i in fam_other) < table[chosen]["diff_se"] + min(
                    table[i]["diff_se"] for i in fam_other)):
                warns.append({"code": "thin_evidence", "detail": f"{n_scored} scored constraints, BA "
                                                                 f"{table[chosen]['ba']:.3f}"})
            for c in (0, 1):
                tot = race.counts[chosen].tot[:, c].sum()
                if c in kinds_present and tot < 5:
                    warns.append({"code": "kind_imbalance", "detail": f"{int(tot)} scored "
                                                                       f"{'must' if c == 0 else 'cannot'}-links"})
        else:
            alive = [c for c in eligible if race.status.get(c.id) != "failed"] or eligible
            chosen, rule = min(alive, key=lambda c: rank[c.id]).id, "prior_only"
        cand = {c.id: c for c in cands}[chosen]

        # refit on all constraints at full resources
        self._progress(f"refit: {chosen}", 0.9)
        t1, c1 = time.perf_counter(), time.process_time()
        est = cand.build(K, rs, ctx, search=False)
        if "callback" in est.get_params(deep=False):
            est.set_params(callback=lambda s, fr: self._progress(f"refit: {chosen}", 0.9 + 0.1 * fr))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if cand.uses_constraints:
                est.fit(X, pairs=units.pairs, pair_kind=units.kind, pair_weight=np.minimum(units.weight, 1.0))
            else:
                est.fit(X)
        refit_s, refit_cpu = time.perf_counter() - t1, time.process_time() - c1
        total, total_cpu = time.perf_counter() - t_start, time.process_time() - c_start
        self.best_estimator_ = est
        self.best_method_ = cand.method
        self.labels_ = np.asarray(est.labels_, dtype=np.int64)
        self.n_clusters_ = int(getattr(est, "n_clusters_", K))
        rows = []
        for c in cands:
            i = c.id
            row = {"id": i, "method": c.method, "params": c.resolved_params(ctx) if i not in status or
                   status[i] != "ineligible" else dict(c.params), "status": status.get(i, "finalist"),
                   "reason": reasons.get(i), "folds_scored": race.tasks_done.get(i, 0),
                   "seconds": round(race.seconds.get(i, 0.0), 4)}
            row.update(race.scores(i, table))
            if "ba" in row:
                ml, cl, acc, fm = race.counts[i].rates()
                row.update({"f_measure": fm, "ml_rate": ml, "cl_rate": cl, "accuracy": acc})
            rows.append(row)
        viol = None
        if chosen in table:
            ml, cl, acc, _ = race.counts[chosen].rates()
            viol = None if acc is None else 1.0 - acc
        self.auto_ = {
            "chosen": {"id": chosen, "method": cand.method, "preset": cand.preset,
                       "params": cand.resolved_params(ctx), "n_clusters": int(K),
                       "k_selected": self.n_clusters is None, "scale": (scale_report or {}).get("chosen",
                                                                                            self.scale)},
            "rule": rule,
            "candidates": rows,
            "k": k_report,
            "scale": scale_report,
            "folds": self._fold_report(units, repeats, F),
            "timing": {"total_s": total, "cpu_s": total_cpu, "search_s": search_s, "refit_s": refit_s,
                       "refit_cpu_s": refit_cpu, "budget_s": budget, "t_ref_s": t_ref,
                       "ratio_to_t_ref": total_cpu / t_ref if t_ref > 0 else None,
                       "t_default_s": t_default, "ratio_to_default": total_cpu / t_default if t_default > 0 else None,
                       "budget_exhausted": bool(race.budget_exhausted)},
            "noise": {"contradictions": n_contra, "winner_violation_rate": viol},
            "warnings": warns,
        }
        self._progress("done", 1.0)
        return self

    # -- pieces

    def _folds(self, units, n, F, rs, warns):
        repeats = []
        for rep in range(int(self.max_repeats)):
            fold, split = assign_folds(units, F, np.random.default_rng([rs, rep]))
            if split and rep == 0:
                warns.append({"code": "thin_evidence", "detail": "one unit holds more than half of the "
                                                                 "constraints: split by edge"})
            train, test, d_cl, d_par = [], [], 0, 0
            parity = self.n_clusters == 2
            for f in range(F):
                tr, te = fold != f, fold == f
                closure, by_par = fixed_by_training(units, tr, te, n, parity=parity)
                d_cl += int(closure.sum())
                d_par += int(by_par.sum())
                train.append(tr)
                test.append(te & ~closure & ~by_par)
            repeats.append({"fold": fold, "train": train, "test": test, "dropped_closure": d_cl,
                            "dropped_parity": d_par})
        if repeats and repeats[0]["dropped_parity"]:
            warns.append({"code": "parity_filtered", "detail": f"{repeats[0]['dropped_parity']} held-out "
                                                               "constraints fixed by the 2-colouring not scored"})
        return repeats

    @staticmethod
    def _rungs(F, n_repeats):
        first = [(0, f) for f in range(min(2, F))]
        second = [(0, f) for f in range(2, F)]
        third = [(1, f) for f in range(F)] if n_repeats > 1 else []
        return [first, second, third]

    def _fold_report(self, units, repeats, F):
        scored = {"must_link": 0, "cannot_link": 0}
        if repeats:
            te = np.any(repeats[0]["test"], axis=0)
            scored = {"must_link": int((te & (units.kind == MUST_LINK)).sum()),
                      "cannot_link": int((te & (units.kind != MUST_LINK)).sum())}
        return {"n_folds": F if repeats else 0, "repeats": len(repeats), "units": units.n_units,
                "n_constraints": len(units), "scored_by_kind": scored,
                "dropped_closure": sum(r["dropped_closure"] for r in repeats),
                "dropped_parity": sum(r["dropped_parity"] for r in repeats)}

    def _proxy_ba(self, X, units, repeats, rs, ctx, cand, K, kinds, boot, folds=None):
        """A proxy setting's pooled held-out counts at K on repeat 1 (None if it fails)."""
        counts = UnitCounts(units.n_units)
        R = repeats[0]
        labels_once = None
        for f in (range(len(R["train"])) if folds is None else folds):
            tr, te = R["train"][f], R["test"][f]
            try:
                if not cand.uses_constraints:
                    if labels_once is None:
                        labels_once = self._fit_labels(cand, X, K, _seed(rs, 0, 0), ctx, None, None, None,
                                                       search=True).labels_
                    lab = labels_once
                else:
                    lab = self._fit_labels(cand, X, K, _seed(rs, 0, f), ctx, units.pairs[tr], units.kind[tr],
                                           units.weight[tr], search=True).labels_
            except CandidateFailed:
                return None
            counts.add(units.unit[te], units.kind[te], units.weight[te], satisfied(lab, units.pairs[te],
                                                                                 units.kind[te]))
        return counts

    def _choose_scale(self, X_raw, units, repeats, rs, rank, eligible, kinds, thin):
        """Raw or z-scored features, by the held-out BA of the two first eligible settings of the prior."""
        Xz = _zscore(X_raw)
        if np.allclose(X_raw, Xz, atol=1e-6) or thin:
            return Xz, {"chosen": "zscore", "rule": "prior" if thin else "already_standardised", "ba": None}
        K = self.n_clusters if self.n_clusters is not None else 2
        cheap = sorted(eligible, key=lambda c: rank[c.id])[:2]
        boot = bootstrap_weights(units.n_units, 200, np.random.default_rng([rs, 98]))
        res = {}
        for name, Xs in (("zscore", Xz), ("none", X_raw)):
            self._progress(f"scale: {name}", 0.0)
            ctx = {"r": ccskl_r(Xs)}
            tot = UnitCounts(units.n_units)
            for c in cheap:
                cnt = self._proxy_ba(Xs, units, repeats, rs, ctx, c, K, kinds, boot, folds=(0, 1))
                if cnt is not None:
                    tot.sat += cnt.sat
                    tot.tot += cnt.tot
            res[name] = tot
        ks = kinds or (0, 1)
        ba = {k: float(balanced_accuracy(v.sat.sum(0), v.tot.sum(0), kinds=ks)) for k, v in res.items()}
        d = resampled_ba(res["none"], boot, ks) - resampled_ba(res["zscore"], boot, ks)
        chosen = "none" if ba["none"] - ba["zscore"] > float(np.std(d)) else "zscore"
        return (X_raw if chosen == "none" else Xz), {"chosen": chosen, "rule": "one_se_prior_zscore", "ba": ba,
                                                     "diff_se": float(np.std(d)),
                                                     "settings": [c.id for c in cheap]}

    def _choose_k(self, X, units, repeats, rs, ctx, kinds, thin, warns):
        """K in [K_lo, K_hi] by the proxies' held-out BA, the eigengap breaking near-ties (spec §4).

        The proxies are scored on the first two folds of repeat 1 (rung 0's), which keeps the sweep
        at 4 fits per K.
        """
        n = X.shape[0]
        w = greedy_clique(units, n)
        k_lo = max(2, w, int(self.k_min or 2))
        k_hi = min(int(self.k_max) if self.k_max else max(10, k_lo + 4), n // 5, 50)
        k_hi = max(k_hi, k_lo)
        lam = eigengaps(X, k_hi)
        gaps = {K: float(lam[K] - lam[K - 1]) for K in range(k_lo, k_hi + 1) if K < len(lam)}
        report = {"range": [k_lo, k_hi], "cl_clique_bound": int(w), "eigengaps": gaps, "ba": None, "ba_se": None}
        if thin or len(kinds) < 2 or not gaps:
            K = max(gaps, key=gaps.get) if gaps else k_lo
            warns.append({"code": "k_from_prior", "detail": "K by the eigengap alone (too few constraints or "
                                                            "one kind only)"})
            report.update(chosen=int(K), rule="eigengap")
            return K, report
        from ._candidates import default_candidates

        proxies = [c for c in default_candidates() if c.id in ("ccskl-1", "sc-rbf")]
        boot = bootstrap_weights(units.n_units, 200, np.random.default_rng([rs, 97]))
        best_counts = {}
        for i, K in enumerate(range(k_lo, k_hi + 1)):
            self._progress(f"k_selection: K={K}", 0.0)
            best = None
            for c in proxies:
                cnt = self._proxy_ba(X, units, repeats, rs, ctx, c, K, kinds, boot, folds=(0, 1))
                if cnt is None:
                    continue
                ba = float(balanced_accuracy(cnt.sat.sum(0), cnt.tot.sum(0)))
                if best is None or ba > best[0]:
                    best = (ba, cnt)
            if best is not None:
                best_counts[K] = best[1]
        if not best_counts:
            K = max(gaps, key=gaps.get)
            report.update(chosen=int(K), rule="eigengap")
            return K, report
        rsm = {K: resampled_ba(c, boot, (0, 1)) for K, c in best_counts.items()}
        ba = {K: float(balanced_accuracy(c.sat.sum(0), c.tot.sum(0))) for K, c in best_counts.items()}
        kb = max(ba, key=lambda K: (ba[K], -K))
        near = [K for K in ba if ba[kb] - ba[K] <= float(np.std(rsm[kb] - rsm[K]))]
        K = max(near, key=lambda K: (gaps.get(K, -np.inf), -K))
        report.update(ba={int(k): v for k, v in ba.items()}, ba_se={int(k): float(np.std(v)) for k, v in rsm.items()},
                      near=[int(k) for k in near], chosen=int(K), rule="one_se_eigengap" if len(near) > 1 else "best")
        return K, report

    def _consensus(self, race):
        """Consensus tie-break (spec §3.3): the member agreeing most with the best of each other family."""
        from sklearn.metrics import adjusted_rand_score

        def pick(near, tab):
            fam_best = {}
            for i in sorted(near, key=lambda i: -tab[i]["ba"]):
                fam_best.setdefault(race.candidates[i].family, i)
            score = {}
            for i in near:
                votes = []
                for fam, j in fam_best.items():
                    if fam == race.candidates[i].family:
                        continue
                    common = set(race.labels[i]) & set(race.labels[j])
                    if common:
                        votes.append(np.mean([adjusted_rand_score(race.labels[i][t], race.labels[j][t])
                                              for t in common]))
                score[i] = float(np.mean(votes)) if votes else -1.0
            return max(near, key=lambda i: (score[i], -race.rank[i]))

        return pick
