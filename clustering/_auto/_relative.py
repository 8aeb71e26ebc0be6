"""``auto`` for relative constraints: DCRC or ReCon and their key settings (``specs/auto.md`` §4.3).

Folds over triplets (repeats of one ab|c together), scored by held-out
yes / no accuracy against the answer a flat partition implies (DCRC's ideal
answer, Eq. DC-1, the measure its paper tunes its weights with by 5-fold CV
over triplets): yes when a and b share a cluster that c is not in, no when a
and c do, don't know otherwise (never a match). "Don't know" answers are
not scored. The spec's RC-3 (:func:`rc3_satisfied`) is kept for reference:
it holds for any partition that separates c from both a and b, so a
partition splitting a from b scores as well as one keeping them together
(on iris with n triplets it chose ReCon cut by height, ARI .47, over DCRC,
.96).
"""

import time
import warnings

import numpy as np

from .._constraints import check_triplet_constraints
from .._metrics import violated_triplet_answers
from ..validation import check_n_clusters
from ._candidates import Candidate, eigengaps, prior_rank
from ._race import FIT_FAILURES, CandidateFailed, Race, budget_seconds

__all__ = ["relative_candidates", "rc3_satisfied", "fit_relative", "RELATIVE_PRIOR"]


def _dcrc(k, rs, p):
    from .._dcrc import DCRC

    return DCRC(n_clusters=k, random_state=rs, **p)


def _recon(k, rs, p):
    from .._recon import ReCon

    return ReCon(n_clusters=k, random_state=rs, on_inconsistent="repair", **p)


def relative_candidates():
    """DCRC ``epsilon`` in {0.05, 0.2}, ReCon ``cut`` in {constraint_guided, height}."""
    return [Candidate(f"dcrc-{e:g}", "dcrc", "dcrc", {"epsilon": e}, _dcrc, (2.0, 1.0)) for e in (0.05, 0.2)] + \
        [Candidate(f"recon-{c}", "recon", "recon", {"cut": c}, _recon, (1.0, 2.0)) for c in ("constraint_guided",
                                                                                               "height")]


#: Least budget of the relative search in CPU seconds: DCRC's and ReCon's predicted times are rough.
RELATIVE_FLOOR = 10.0

#: DCRC's default first: its paper tunes by held-out triplets (dcrc.md §4.5).
RELATIVE_PRIOR = ("dcrc-0.05", "recon-constraint_guided", "dcrc-0.2", "recon-height")


def rc3_satisfied(labels, triplets, answer):
    """RC-3 satisfaction of answered triplets (yes: ab|c, no: ac|b).

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
    triplets : ndarray of shape (t, 3), int
    answer : ndarray of shape (t,), {+1, -1}

    Returns
    -------
    ndarray of shape (t,), bool
    """
    g = np.asarray(labels)
    a, b, c = g[triplets[:, 0]], g[triplets[:, 1]], g[triplets[:, 2]]
    b, c = np.where(answer > 0, b, c), np.where(answer > 0, c, b)
    touches = (c == a) | (c == b)
    return ~touches | ((a == b) & (b == c))


def fit_relative(est, X, triplets, triplet_answer):
    """Search among the relative candidates for ``AutoClustering.fit`` (fills its fitted attributes)."""
    t_start, c_start = time.perf_counter(), time.process_time()
    n = X.shape[0]
    tc = check_triplet_constraints(triplets, triplet_answer, n)
    trip = np.asarray(tc.triplets, dtype=np.int64)
    ans = np.asarray(tc.answer, dtype=np.int8)
    warns = []
    if est.n_clusters is None:
        lam = eigengaps(X, 10)
        gaps = {K: float(lam[K] - lam[K - 1]) for K in range(2, min(11, len(lam)))}
        K = max(gaps, key=gaps.get)
        warns.append({"code": "k_from_prior", "detail": "K by the eigengap (relative constraints)"})
        k_report = {"range": [2, max(gaps)], "eigengaps": gaps, "chosen": int(K), "rule": "eigengap"}
    else:
        K, k_report = check_n_clusters(est.n_clusters, n), None
    key = np.stack([np.minimum(trip[:, 0], trip[:, 1]), np.maximum(trip[:, 0], trip[:, 1]), trip[:, 2]], axis=1)
    _, unit = np.unique(key, axis=0, return_inverse=True)
    unit = unit.ravel()
    n_units = int(unit.max()) + 1 if len(unit) else 0
    answered = ans != 0
    F = int(est.n_folds)
    rs = int(est.random_state or 0)
    thin = int(answered.sum()) < 10 or n_units < 2 * F
    cands = relative_candidates()
    if est.candidates is not None:
        wanted = set(c if isinstance(c, str) else c.id for c in est.candidates)
        cands = [c for c in cands if c.id in wanted] or cands
    rank = prior_rank(RELATIVE_PRIOR, [c.id for c in cands])
    for c in cands:
        c.search_predicted = c.predicted_seconds(n)
    t_ref = max(c.predicted_seconds(n) for c in cands)
    budget = budget_seconds(est, t_ref, floor=RELATIVE_FLOOR)
    folds = []
    if not thin:
        for rep in range(int(est.max_repeats)):
            rng = np.random.default_rng([rs, rep])
            fold_of_unit = rng.permutation(np.arange(n_units) % F)
            folds.append(fold_of_unit[unit])
    else:
        warns.append({"code": "too_few_constraints", "detail": f"{int(answered.sum())} answered triplets"})

    def score(cand, task):
        rep, f = task
        tr, te = folds[rep] != f, (folds[rep] == f) & answered
        m = cand.build(K, int(np.random.SeedSequence([rs, rep, f]).generate_state(1)[0] % (2**31 - 1)), {},
                       search=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit(X, triplets=trip[tr], triplet_answer=ans[tr])
        except FIT_FAILURES as exc:
            raise CandidateFailed(f"{type(exc).__name__}: {exc}") from exc
        lab = np.asarray(m.labels_)
        sat = ~violated_triplet_answers(lab, trip[te], ans[te])
        return unit[te], np.ones(int(te.sum()), np.int8), np.ones(int(te.sum())), sat, lab.astype(np.int32)

    rungs = [] if thin else est._rungs(F, len(folds))
    race = Race(cands, rank, n_units, (0,), rungs, score, lambda: budget,
                lambda c: race.fit_seconds.get(c.id, c.predicted_seconds(n)), np.random.default_rng([rs, 99]),
                lambda s, fr: est._progress(s, 0.9 * fr), minimum_survivors=(2, 2))
    finalists = race.run() if rungs else []
    table = {}
    if finalists:
        chosen, rule, table, near = race.choose(finalists, "prior")
        if len(near) > 1:
            warns.append({"code": "near_tie", "detail": ", ".join(near)})
    else:
        chosen, rule = min(cands, key=lambda c: rank[c.id]).id, "prior_only"
    search_s = race.elapsed()
    cand = {c.id: c for c in cands}[chosen]
    est._progress(f"refit: {chosen}", 0.9)
    t1, c1 = time.perf_counter(), time.process_time()
    best = cand.build(K, rs, {}, search=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best.fit(X, triplets=trip, triplet_answer=ans)
    refit_s, refit_cpu = time.perf_counter() - t1, time.process_time() - c1
    total, total_cpu = time.perf_counter() - t_start, time.process_time() - c_start
    est.best_estimator_, est.best_method_ = best, cand.method
    est.labels_ = np.asarray(best.labels_, dtype=np.int64)
    est.n_clusters_ = int(getattr(best, "n_clusters_", K))
    rows = []
    for c in cands:
        row = {"id": c.id, "method": c.method, "params": dict(c.params), "status": race.status[c.id],
               "reason": race.reason.get(c.id), "folds_scored": race.tasks_done[c.id],
               "seconds": round(race.seconds[c.id], 4)}
        row.update(race.scores(c.id, table))
        rows.append(row)
    est.auto_ = {
        "chosen": {"id": chosen, "method": cand.method, "preset": None, "params": dict(cand.params),
                   "n_clusters": int(K), "k_selected": est.n_clusters is None, "scale": est.scale},
        "rule": rule, "candidates": rows, "k": k_report, "scale": None,
        "folds": {"n_folds": F if folds else 0, "repeats": len(folds), "units": n_units,
                  "n_constraints": int(len(trip)), "scored_by_kind": {"triplets": int(answered.sum())},
                  "dropped_closure": 0, "dropped_parity": 0},
        "timing": {"total_s": total, "cpu_s": total_cpu, "search_s": search_s, "refit_s": refit_s,
                   "refit_cpu_s": refit_cpu, "budget_s": budget, "t_ref_s": t_ref, "ratio_to_t_ref": total_cpu / t_ref,
                   "t_default_s": None, "ratio_to_default": None, "budget_exhausted": bool(race.budget_exhausted)},
        "noise": {"contradictions": 0, "winner_violation_rate": None},
        "warnings": warns,
    }
    est._progress("done", 1.0)
    return est

