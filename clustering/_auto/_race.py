"""Successive halving over folds with a racing stop and the one-standard-error choice.

``specs/auto.md`` §2.4 and §3.3, independent of the constraint kind: the
caller supplies the rungs (lists of fold tasks) and a function scoring one
candidate on one task; this module prunes, times and chooses.
"""

import math
import time

import numpy as np

from ..exceptions import InfeasibleConstraintsError, InvalidInputError
from ._scoring import UnitCounts, bootstrap_weights, resampled_ba

__all__ = ["Race", "CandidateFailed", "budget_seconds"]

#: What a failing fold fit may raise without ending the search (anything else, such as a cancel
#: or a time limit, propagates).
FIT_FAILURES = (InfeasibleConstraintsError, InvalidInputError, ValueError, ArithmeticError,
                np.linalg.LinAlgError, MemoryError)


def budget_seconds(est, unit_seconds, floor=0.0):
    """The search's budget in CPU seconds, search and refit together.

    Parameters
    ----------
    est : AutoClustering
        Its ``budget_factor`` and ``max_seconds``.
    unit_seconds : float
        CPU seconds of the fit the budget is a multiple of (the default
        ``cop_rf`` job's for pairwise constraints, spec §2.3).
    floor : float, default=0
        Least budget in seconds (before the ``max_seconds`` cap).

    Returns
    -------
    float
    """
    b = max(float(floor), float(est.budget_factor) * float(unit_seconds))
    return b if est.max_seconds is None else min(b, float(est.max_seconds))


class CandidateFailed(Exception):
    """A fold fit of one candidate failed (the candidate leaves the race)."""


class Race:
    """State of one search.

    Parameters
    ----------
    candidates : list
        Objects with ``id``, ``family`` and ``predicted_seconds(n)``.
    rank : dict
        Candidate id -> position in the prior order.
    n_units : int
    kinds : tuple of int
        Constraint kinds that count in BA (one kind: that kind's rate).
    rungs : list of list
        Fold tasks per rung.
    score : callable
        ``score(candidate, task) -> (unit, kind, weight, sat, labels)``.
    budget : callable
        ``budget() -> seconds`` for the search and the refit (it may grow as
        measured fit times replace predictions).
    refit_seconds : callable
        ``refit_seconds(candidate) -> predicted seconds of its full fit``.
    rng : numpy.random.Generator
        For the bootstrap.
    progress : callable
        ``progress(stage, fraction)``.
    n_resamples : int, default=200
    """

    def __init__(self, candidates, rank, n_units, kinds, rungs, score, budget, refit_seconds, rng,
                 progress, n_resamples=200, minimum_survivors=(3, 2)):
        self.candidates = {c.id: c for c in candidates}
        self.rank, self.kinds, self.rungs, self.score = rank, kinds, rungs, score
        self.budget, self.refit_seconds, self.progress = budget, refit_seconds, progress
        self.counts = {c.id: UnitCounts(n_units) for c in candidates}
        self.labels = {c.id: {} for c in candidates}
        self.seconds = {c.id: 0.0 for c in candidates}
        # id -> the fastest of its measured fold fits in CPU seconds: other load on the machine only adds
        # time (cache, memory bandwidth), and a refit predicted from one slow fold fit x 1000 / 100 trees
        # would drop a COP-RF setting for nothing
        self.fit_seconds = {}  # id -> predicted CPU seconds of its next fold fit (0: labels shared by every fold)
        self.fastest_fit = {}  # id -> the fastest of its fits (a shared fit: its one fit)
        self.status = {c.id: "finalist" for c in candidates}
        self.reason = {}
        self.tasks_done = {c.id: 0 for c in candidates}
        self.boot = bootstrap_weights(n_units, n_resamples, rng)
        self.minimum_survivors = minimum_survivors
        self.budget_exhausted = False
        self.stopped_by_race = False
        self.t0 = time.process_time()

    def elapsed(self):
        """CPU seconds of this process since the start: the machine's other load does not cut the search."""
        return time.process_time() - self.t0

    def predicted(self, cid):
        return self.fit_seconds.get(cid, self.candidates[cid].search_predicted)

    # -- scores

    def ba(self, cid):
        from ._scoring import balanced_accuracy

        c = self.counts[cid]
        return float(balanced_accuracy(c.sat.sum(axis=0), c.tot.sum(axis=0), kinds=self.kinds))

    def resampled(self, cid):
        return resampled_ba(self.counts[cid], self.boot, self.kinds)

    def table(self, ids):
        """BA, its SE, and each one's difference to the best with the paired SE."""
        ba = {i: self.ba(i) for i in ids}
        rs = {i: self.resampled(i) for i in ids}
        best = max(ids, key=lambda i: (ba[i], -self.rank[i]))
        out = {}
        for i in ids:
            d = rs[best] - rs[i]
            out[i] = {"ba": ba[i], "ba_se": float(np.std(rs[i])), "diff_to_best": ba[best] - ba[i],
                      "diff_se": float(np.std(d))}
        return best, out

    def scores(self, cid, table):
        """One candidate's scores for the report (empty when it scored no fold).

        Parameters
        ----------
        cid : str
        table : dict
            :meth:`table` of the finalists (their BA, SE and paired differences).

        Returns
        -------
        dict
            ``ba``, ``ba_se`` (bootstrap over units), ``diff_to_best``,
            ``diff_se`` (None for a candidate outside the table) and
            ``n_scored``.
        """
        if not self.tasks_done.get(cid):
            return {}
        info = table.get(cid)
        if info is None:
            info = {"ba": self.ba(cid), "ba_se": float(np.std(self.resampled(cid))), "diff_to_best": None,
                    "diff_se": None}
        return {**info, "n_scored": self.counts[cid].n_scored}

    # -- the race

    def run(self):
        """Run the rungs; returns the ids that completed the last complete rung.

        A rung the budget cuts short is undone for every candidate (its
        scores would compare candidates on different folds); the race then
        ends at the rung before (``budget_exhausted``).
        """
        alive = [i for i, s in self.status.items() if s == "finalist"]
        for r, tasks in enumerate(self.rungs):
            if not tasks or not alive:
                continue
            if r > 0:
                alive = self._promote(alive, r)
                if self.stopped_by_race or len(alive) < 2:
                    break
                alive = self._fit_to_budget(alive, tasks, r)
                if alive is None:  # not even two survivors fit: end at the last complete rung
                    self.budget_exhausted = True
                    return [i for i, s in self.status.items() if s == "finalist"]
            saved = {i: (self.counts[i].sat.copy(), self.counts[i].tot.copy(), self.counts[i].n_scored,
                         self.tasks_done[i]) for i in alive}
            done = []
            # cheapest first: a budget that ends rung 0 early still leaves every cheap family scored
            for cid in sorted(alive, key=lambda i: (self.predicted(i), self.rank[i])):
                ok = self._run_candidate(cid, tasks, r)
                if ok is None:
                    self.budget_exhausted = True
                    if r == 0:  # a setting whose fits or refit do not fit leaves; cheaper ones still run
                        self.status[cid], self.reason[cid] = "pruned_rung_0", "budget"
                        self._restore(cid, saved[cid])
                        continue
                    for i in alive:
                        self._restore(i, saved[i])
                    return [i for i in alive if self.status[i] == "finalist"]
                if ok:
                    done.append(cid)
            alive = done
        return alive

    def _fit_to_budget(self, alive, tasks, r):
        """Survivors whose rung and the dearest refit among them fit in the budget, dropping the lowest BA.

        Returns None when two survivors do not fit (the rung is not started,
        so no fit is spent on scores that would be undone).
        """
        _, tab = self.table(alive)
        keep = sorted(alive, key=lambda i: (-tab[i]["ba"], self.rank[i]))

        def cost(ids):
            return (self.elapsed() + sum(self.predicted(i) for i in ids) * len(tasks)
                    + max(self.refit_seconds(self.candidates[i]) for i in ids))

        while len(keep) > 2 and cost(keep) > self.budget():
            i = keep.pop()
            self.status[i], self.reason[i] = f"pruned_rung_{r - 1}", "budget: the next rung would not fit"
            self.budget_exhausted = True
        return keep if cost(keep) <= self.budget() else None

    def _restore(self, cid, saved):
        sat, tot, n_scored, n_done = saved
        self.counts[cid].sat, self.counts[cid].tot, self.counts[cid].n_scored = sat, tot, n_scored
        self.tasks_done[cid] = n_done

    def _run_candidate(self, cid, tasks, r):
        """Score one candidate on a rung's tasks: True, False (failed) or None (the budget ends the rung)."""
        cand = self.candidates[cid]
        for k, t in enumerate(tasks):
            # rung 0 decides once per candidate, for all its folds: undoing a started candidate wastes its fits
            ahead = self.predicted(cid) * (len(tasks) if r == 0 else 1)
            if (r > 0 or k == 0) and self.elapsed() + ahead + self.refit_seconds(cand) > self.budget():
                return None
            self.progress(f"rung {r}: {cid}", min(1.0, self.elapsed() / max(self.budget(), 1e-9)))
            t1 = time.process_time()
            try:
                unit, kind, weight, sat, labels = self.score(cand, t)
            except CandidateFailed as exc:
                self.status[cid], self.reason[cid] = "failed", str(exc)[:300]
                self.seconds[cid] += time.process_time() - t1
                return False
            dt = time.process_time() - t1
            self.seconds[cid] += dt
            if getattr(cand, "uses_constraints", True):
                self.fit_seconds[cid] = self.fastest_fit[cid] = min(dt, self.fit_seconds.get(cid, dt))
            else:  # a setting that ignores the constraints fits once, shared by every fold
                self.fit_seconds[cid] = 0.0
                self.fastest_fit.setdefault(cid, dt)
            self.counts[cid].add(unit, kind, weight, sat)
            self.labels[cid][t] = labels
            self.tasks_done[cid] += 1
        return True

    def _promote(self, alive, r):
        """Survivors of rung ``r - 1``: the best ceil(C/3), at least the minimum, the best of the two best
        families kept; a leader ahead of every other by >= 3 paired SE ends the race."""
        best, tab = self.table(alive)
        others = [i for i in alive if i != best]
        if others and all(tab[i]["diff_to_best"] >= 3 * max(tab[i]["diff_se"], 1e-12) for i in others):
            self.stopped_by_race = True
            for i in others:
                self.status[i] = f"pruned_rung_{r - 1}"
                self.reason[i] = "racing stop: the leader is ahead by >= 3 paired SE"
            return [best]
        order = sorted(alive, key=lambda i: (-tab[i]["ba"], self.rank[i]))
        lo = self.minimum_survivors[min(r - 1, len(self.minimum_survivors) - 1)]
        keep = order[:max(lo, math.ceil(len(alive) / 3))]
        fam_best = {}
        for i in order:
            fam_best.setdefault(self.candidates[i].family, i)
        for i in list(fam_best.values())[:2]:
            if i not in keep:
                keep.append(i)
        for i in alive:
            if i not in keep:
                self.status[i] = f"pruned_rung_{r - 1}"
                self.reason[i] = "successive halving"
        return keep

    def choose(self, finalists, tie_break="prior", consensus=None):
        """The one-standard-error rule (spec §3.3).

        Returns
        -------
        chosen : str
        rule : str
        table : dict
        near : list of str
        """
        best, tab = self.table(finalists)
        near = [i for i in finalists if tab[i]["diff_to_best"] <= tab[i]["diff_se"]]
        if len(near) == 1:
            return best, "best", tab, near
        fams = {self.candidates[i].family for i in near}
        if tie_break == "consensus" and len(fams) >= 3 and consensus is not None:
            return consensus(near, tab), "one_se_consensus", tab, near
        chosen = min(near, key=lambda i: (self.rank[i], self.candidates[i].search_predicted, i))
        return chosen, "one_se_prior", tab, near
