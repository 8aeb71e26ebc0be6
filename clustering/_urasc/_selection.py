"""URASC's question selection: the uncertainty-reduction score and exploration.

The selection half of :class:`clustering._urasc.URASC` (``shared/specs/urasc.md``):
eigenvector perturbation (U5 / U5'), the gradient model (U7), the step scale
H(x), non-parametric (U8-U10) or GMM (U11-U12), their product and the fast
top-m approximation (U13 / U13'), farthest-first exploration of uncertain
samples, batch diversity, and the random-pairs baseline. A mixin: it reads the
estimator's parameters and the session state that ``URASC._initialize``
creates (``_V``, ``_lam``, ``_sets``, ``_set_of``, ``_pending``, ...).
"""

import warnings

import numpy as np
from sklearn.metrics import euclidean_distances, pairwise_distances_argmin_min
from sklearn.mixture import GaussianMixture

from ._certain_sets import _seed
from .._graph import degrees, knn_distances

# explore="auto" under "verify": every round from this many clusters once answers contradict the sets
_EXPLORE_ALL_FROM_K = 4
_EXPLORE_PERIOD = 3  # explore="auto": every third round (K known: once n_clusters sets exist)


# --------------------------------------------------------------------------------------
# Numeric kernels (unchecked)
# --------------------------------------------------------------------------------------


def eigenvector_derivative(V, eigenvalues, i, j, k, *, perturbation="exact", gap_floor=1e-9):
    """Coefficients of ``d v_k / d w_ij`` in the eigenbasis (U5 / U5').

    Parameters
    ----------
    V : ndarray of shape (n, q), float64
        Eigenvectors (orthonormal for ``"standard"``, D-orthonormal for
        ``"exact"`` / ``"paper"``), columns in ascending eigenvalue order.
    eigenvalues : ndarray of shape (q,), float64
    i, j : int
        The pair whose symmetric weight ``w_ij = w_ji`` changes.
    k : int
        0-based index of the eigenvector.
    perturbation : {"exact", "paper", "standard"}
        ``"exact"``: U5' for ``L v = lambda D v`` (self term included);
        ``"paper"`` / ``"standard"``: U5 (Eq. 6 as printed, no self term).
    gap_floor : float
        Terms with ``|lambda_k - lambda_p| < gap_floor`` are dropped (§7.1).

    Returns
    -------
    c : ndarray of shape (q,), float64
        ``d v_k / d w_ij = sum_p c[p] v_p`` (projected onto the q vectors).
    dlambda : float
        ``d lambda_k / d w_ij``.
    """
    lam = np.asarray(eigenvalues, dtype=float)
    dv = V[i] - V[j]
    gap = lam[k] - lam
    ok = np.abs(gap) >= gap_floor
    ok[k] = False
    c = np.zeros(V.shape[1])
    if perturbation == "exact":
        num = dv * dv[k] - lam[k] * (V[i] * V[i, k] + V[j] * V[j, k])
        c[ok] = num[ok] / gap[ok]
        c[k] = -0.5 * (V[i, k] ** 2 + V[j, k] ** 2)
        dlam = dv[k] ** 2 - lam[k] * (V[i, k] ** 2 + V[j, k] ** 2)
    else:
        num = dv * dv[k]
        c[ok] = num[ok] / gap[ok]
        dlam = dv[k] ** 2
    return c, float(dlam)


# Entries of the eigenvectors above this are scaled down in _gradient_norms (their fourth powers overflow
# near 1e77); far above what a graph whose degrees are not tiny gives.
_V_RESCALE = 1e50


def _gradient_norms(V, lam, cand, reps, K, *, perturbation, terms, gap_floor, chunk=4_000_000):
    """Sum over k < K of ``||d v_k / d w_{cand, rep}||`` for many pairs (U6, §6.2).

    Returns ndarray of shape (len(cand),).

    Each norm is homogeneous of degree 2 in the rows of ``V`` (fixed ``lam``). A sample of
    nearly no degree (a far outlier under the Gaussian kernel: 3e-183) has D-normalised
    entries near 1 / sqrt(degree) (2e91) whose fourth powers overflow, so a pair whose two
    rows hold an entry ``s`` above ``_V_RESCALE`` is computed on those rows divided by ``s``
    and multiplied by ``s**2`` (each pair by its own ``s``: the other pairs stay as they are).
    """
    cand = np.asarray(cand, dtype=np.int64)
    reps = np.asarray(reps, dtype=np.int64)
    q = V.shape[1]
    K = min(K, q)
    gap = lam[None, :K] - lam[:, None]  # (q, K): lambda_k - lambda_p
    inv = np.zeros_like(gap)
    ok = np.abs(gap) >= gap_floor
    inv[ok] = 1.0 / gap[ok]
    inv[np.arange(K), np.arange(K)] = 0.0
    if terms == "complement":
        inv[:K, :] = 0.0
    out = np.empty(cand.size)
    step = max(1, chunk // max(1, q * K))
    for s in range(0, cand.size, step):
        a, b = cand[s:s + step], reps[s:s + step]
        Va, Vb = V[a], V[b]  # (P, q)
        # per pair: one scale for the chunk (the outlier's) made the other pairs' norms underflow to 0
        scale = np.maximum(np.abs(Va).max(axis=1, initial=0.0), np.abs(Vb).max(axis=1, initial=0.0))
        scale = np.where(scale > _V_RESCALE, scale, 1.0)
        if np.any(scale != 1.0):
            Va, Vb = Va / scale[:, None], Vb / scale[:, None]
        dv = Va - Vb
        num = dv[:, :, None] * dv[:, None, :K]  # (P, q, K)
        if perturbation == "exact":
            num -= lam[None, None, :K] * (Va[:, :, None] * Va[:, None, :K] + Vb[:, :, None] * Vb[:, None, :K])
        c2 = np.einsum("pqk,pqk->pk", num * inv[None], num * inv[None])
        if perturbation == "exact" and terms != "complement":
            c2 += 0.25 * (Va[:, :K] ** 2 + Vb[:, :K] ** 2) ** 2
        out[s:s + step] = np.sqrt(c2).sum(axis=1) * scale**2
    return out


def _entropy(P):
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0)
    return np.maximum(-t.sum(axis=1), 0.0)


def _nonparametric_entropy(weights, neighbor_labels, K):
    """U9 + U12. weights, neighbor_labels: (m, k_H). Returns (H, isolated_mask)."""
    m = weights.shape[0]
    P = np.zeros((m, K))
    rows = np.repeat(np.arange(m), weights.shape[1])
    np.add.at(P, (rows, neighbor_labels.ravel()), weights.ravel())
    tot = P.sum(axis=1)
    iso = tot <= 0
    P[~iso] /= tot[~iso, None]
    H = _entropy(P)
    H[iso] = 0.0
    return H, iso


# --------------------------------------------------------------------------------------
# Selection (a mixin of URASC)
# --------------------------------------------------------------------------------------


class QuerySelectionMixin:
    """Which uncertain samples to ask about next (U5-U13, exploration, random pairs)."""

    def _current_knn_weights(self):
        """w^t_il for l in kNN(i) (W0 weights patched by the constraints)."""
        w = self._nbr_w.copy()
        pairs, vals = self._pairs_W
        if pairs.shape[0]:
            n = self._n
            keys = np.concatenate([pairs[:, 0] * n + pairs[:, 1], pairs[:, 1] * n + pairs[:, 0]])
            kv = np.concatenate([vals, vals])
            order = np.argsort(keys, kind="stable")
            keys, kv = keys[order], kv[order]
            nk = (np.arange(n)[:, None] * n + self._nbr).ravel()
            pos = np.searchsorted(keys, nk)
            pos = np.minimum(pos, keys.size - 1)
            hit = keys[pos] == nk
            flat = w.ravel()
            flat[hit] = kv[pos[hit]]
            w = flat.reshape(w.shape)
        return w

    def _step_scales(self, U):
        """H(x_i) for i in U (U9 or U10-U12)."""
        K = int(min(self._K, self._n - 1))
        labels = self.labels_
        if self.step_model == "parametric":
            H = self._gmm_entropy(U, K)
            if H is not None:
                return H
            self._counters["gmm_fallbacks"] += 1
        w = self._current_knn_weights()[U]
        H, iso = _nonparametric_entropy(w, labels[self._nbr[U]], K)
        self._counters["entropy_isolated"] += int(iso.sum())
        return H

    def _gmm_entropy(self, U, K):
        E = self._V[:, :K]
        keep = E.var(axis=0) >= 1e-12 * max(float((E**2).mean()), 1e-300)
        if not keep.any():
            return None
        Z = E[:, keep]
        Z = (Z - Z.mean(axis=0)) / Z.std(axis=0)  # [choice] unit scale so reg_covar is meaningful
        labels = self.labels_
        if np.unique(labels).size < K:
            return None
        means = np.vstack([Z[labels == c].mean(axis=0) for c in range(K)])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gm = GaussianMixture(n_components=K, covariance_type="diag", reg_covar=1e-6, means_init=means,
                                     n_init=1, random_state=self._kseed).fit(Z)
                P = gm.predict_proba(Z[U])
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            return None
        if not np.all(np.isfinite(P)):
            return None
        return _entropy(P)

    def _representatives_for(self, x):
        queue = self._build_queue(x)
        return [r for _, r in queue]

    def _candidate_pairs(self, cand):
        """(candidate, representative, owner) triples for U7, vectorised per set
        for candidates that were never asked (the common case)."""
        xs, rs, owner = [], [], []
        fresh = np.array([int(x) not in self._asked for x in cand], dtype=bool)
        fi = np.flatnonzero(fresh)
        if fi.size:
            cx = np.asarray(cand, dtype=np.int64)[fi]
            for l, members in enumerate(self._sets):
                mem = np.asarray(members, dtype=np.int64)
                if self.representative == "random":
                    rng = np.random.default_rng(_seed(self._seed_base, 5, l, len(members)))
                    best = mem[rng.integers(mem.size, size=cx.size)]
                elif self.representative == "founder":
                    best = np.full(cx.size, mem[0], dtype=np.int64)
                else:
                    best = np.empty(cx.size, dtype=np.int64)
                    for s in range(0, cx.size, 2048):
                        sims = self._similarity_block(cx[s:s + 2048], mem)
                        best[s:s + 2048] = mem[np.argmax(sims, axis=1)]
                xs.append(cx)
                rs.append(best)
                owner.append(fi)
        for t in np.flatnonzero(~fresh):
            reps = self._representatives_for(int(cand[t]))
            xs.append(np.full(len(reps), int(cand[t]), dtype=np.int64))
            rs.append(np.asarray(reps, dtype=np.int64))
            owner.append(np.full(len(reps), t, dtype=np.int64))
        if not xs:
            return [], [], []
        return np.concatenate(xs), np.concatenate(rs), np.concatenate(owner)

    def _similarity_block(self, xs, members):
        if self._X is not None:
            from sklearn.metrics import pairwise_distances

            d2 = pairwise_distances(self._X[xs], self._X[members], metric="sqeuclidean")
            return np.exp(-d2 / (2.0 * self._sigma**2))
        if self._sparse:
            return np.asarray(self._W0[xs][:, members].todense())
        return self._W0[np.ix_(xs, members)]

    def _gradients(self, cand):
        """G(x_i) for the candidates (U7); candidates without representatives get 0."""
        K = int(min(self._K, self._n - 1))
        xs, rs, owner = self._candidate_pairs(cand)
        G = np.zeros(len(cand))
        if len(xs):
            norms = _gradient_norms(self._V, self._lam, xs, rs, K, perturbation=self.perturbation,
                                    terms=self.perturbation_terms, gap_floor=self.gap_floor)
            np.add.at(G, np.asarray(owner), norms)
        lam = self._lam
        gap = np.abs(lam[None, :K] - lam[:, None])
        self._counters["dropped_gap_terms"] = int(((gap < self.gap_floor).sum() - K))
        return G

    def _select(self, need):
        """Choose up to ``need`` new samples to question (U13 / U13', batch diversity)."""
        n = self._n
        blocked = self._set_of >= 0
        for x in self._pending:
            blocked[x] = True
        U = np.flatnonzero(~blocked)
        # drop samples with nothing left to ask (undetermined after don't-knows)
        U = np.array([x for x in U if self._askable(int(x))], dtype=np.int64)
        if U.size == 0:
            return []
        self.step_scale_ = np.full(n, np.nan)
        self.gradient_ = np.full(n, np.nan)
        fallback = None
        need_H = self.score in ("product", "entropy")
        H = self._step_scales(U) if need_H else np.zeros(U.size)
        self.step_scale_[U] = H
        if self.score == "entropy":
            T, HT = U, H
            score = H.copy()
            GT = np.full(U.size, np.nan)
        else:
            if self.score == "gradient" or not self.fast:
                sel = np.arange(U.size)
            elif np.all(H <= 0):
                sel = np.arange(U.size)
                fallback = "all_zero_entropy"
                self._counters["all_zero_entropy_rounds"] += 1
            else:
                m = max(self.n_candidates, need * 5)
                sel = np.lexsort((U, -H))[:m]
            T, HT = U[sel], H[sel]
            GT = self._gradients(T)
            self.gradient_[T] = GT
            score = GT * HT if (self.score == "product" and fallback is None) else GT.copy()
        order = np.lexsort((T, -score))
        picks = [int(order[0])]
        if need > 1:
            keep = order[:max(self.n_candidates, 5 * need)]
            T, score, GT, HT = T[keep], score[keep], GT[keep], HT[keep]
            picks = [0]
            Z = self._spread_space()
            ZT = Z[T]
            d2all = euclidean_distances(ZT, squared=True)
            h2 = float(np.median(d2all[d2all > 0])) if np.any(d2all > 0) else 1.0
            # the first pick and the samples still pending repel the candidates
            d2ref = d2all[:1]
            if self._pending:
                pend = np.fromiter(self._pending, dtype=np.int64)
                d2ref = np.vstack([d2ref, euclidean_distances(Z[pend], ZT, squared=True)])
            pen = np.prod(1.0 - self.diversity * np.exp(-d2ref / h2), axis=0)
            base = score - score.min() + 1e-12
            while len(picks) < min(need, T.size):
                s = base * pen
                s[picks] = -np.inf
                nxt = int(np.lexsort((T, -s))[0])
                picks.append(nxt)
                pen *= 1.0 - self.diversity * np.exp(-d2all[nxt] / h2)
        out = []
        period, first = self._explore_period(), len(self._log)
        n_far = 0 if period == 0 else sum((first + r) % period == 0 for r in range(need))
        if n_far:
            far = self._farthest_uncertain(U, n_far)
            out += [(f, {"score": None, "G": None, "H": None, "fallback": "explore"}) for f in far]
            picks = [t for t in picks if int(T[t]) not in set(far)][:max(0, need - len(far))]
        for t in picks:
            out.append((int(T[t]), {"score": float(score[t]),
                                    "G": None if not np.isfinite(GT[t]) else float(GT[t]),
                                    "H": None if not need_H else float(HT[t]), "fallback": fallback}))
        return out

    def _explore_period(self):
        """Every how many rounds a round questions a farthest dense uncertain
        sample (see ``explore``): a round explores when its 0-based index into
        the selection log is a multiple of the period; 0 means never.

        "auto" with K known: every round (1) until there are n_clusters sets,
        then every third round; with K unknown every third round, but never
        under k_growth="robust"; under "verify" every round once K
        (n_clusters, or the counted sets) is at least 4 and a recorded answer
        contradicts the sets (``_answers_contradict_sets``: noise seen). A
        float f: round(1/f), 0 for f = 0. Depends on the session state only,
        so a batch of B questions evaluates it once; it covers B rounds and so
        explores as often as B sequential rounds would."""
        if self.explore == "auto":
            if self.n_clusters is not None and len(self._sets) < int(self.n_clusters):
                return 1
            if self.n_clusters is None and self.k_growth == "robust":
                return 0
            if (self.k_growth == "verify" and self._K >= _EXPLORE_ALL_FROM_K
                    and self._answers_contradict_sets()):
                return 1
            return _EXPLORE_PERIOD
        if self.explore <= 0:
            return 0
        return max(1, int(round(1.0 / self.explore)))

    def _dense_mask(self):
        """Samples in the denser half of their current cluster (``labels_``):
        distance to the 7th neighbour in X at most the cluster's median, or,
        with a precomputed affinity, degree in W0 at least the cluster's
        median. Per cluster, so that a small cluster has dense members too.

        The distances are kept with ``base_graph_`` (data-only, like the
        graph), so a session pass restored on the cached graph does not query
        the neighbours again (53 ms of a segment pass)."""
        if self._sparsity is None:
            cached = getattr(self, "base_graph_", None)
            if cached is not None and "sparsity" in cached:
                self._sparsity = cached["sparsity"]
            elif self._X is not None:
                dist, _ = knn_distances(self._X, int(min(7, self._n - 1)))
                self._sparsity = dist[:, -1]
                if cached is not None:
                    self._sparsity.flags.writeable = False
                    cached["sparsity"] = self._sparsity
            else:
                self._sparsity = -degrees(self._W0)
        s, lab = self._sparsity, np.asarray(self.labels_)
        dense = np.zeros(self._n, dtype=bool)
        for c in np.unique(lab):
            members = lab == c
            dense[members] = s[members] <= np.median(s[members])
        return dense

    def _spread_space(self):
        """(n_samples, d) float64: where exploration and batch diversity measure
        distance. The feature matrix X as the session scaled it, or with a
        precomputed affinity the spectral embedding (first K eigenvectors).

        Batch diversity used the embedding before: early in a session K is 2,
        and the 2-dimensional embedding puts samples of several classes on
        one point, so the top-scored candidates of a batch all came from one
        region (segment, trial 0, "verify": the first batch's six scored
        picks were all of one class). Measured in X (``bench/history.md``,
        "batch diversity in X"): segment, K unknown, B = 10, "verify", 20 trials,
        noise-free ARI at 200 .728 -> .757, ionosphere .879 -> .915; the
        embedding with 10 or 20 eigenvectors had not helped (.705 / .708,
        "fresh-trial check")."""
        if self._X is not None:
            return self._X
        return self._V[:, :int(min(self._K, self._n - 1))]

    def _farthest_uncertain(self, U, k=1):
        """Up to ``k`` uncertain samples (of ``U``, restricted to the denser half
        when any of ``U`` is in it) by farthest-first traversal: each is the
        farthest from every certain sample and every earlier pick, in X (or in
        the embedding with a precomputed affinity). Empty without a certain
        sample."""
        cert = np.flatnonzero(self._set_of >= 0)
        if cert.size == 0 or U.size == 0:
            return []
        if self._pending:  # batch mode: samples still being placed count as explored
            cert = np.union1d(cert, np.fromiter(self._pending, dtype=np.int64))
        dense = U[self._dense_mask()[U]]
        if dense.size:
            U = dense
        Z = self._spread_space()
        ZU = Z[U]
        _, dmin = pairwise_distances_argmin_min(ZU, Z[cert])
        out = []
        for _ in range(int(min(k, U.size))):
            t = int(np.argmax(dmin))
            out.append(int(U[t]))
            dmin = np.minimum(dmin, np.sqrt(((ZU - ZU[t]) ** 2).sum(1)))
            dmin[t] = -np.inf
        return out

    def _askable(self, x):
        asked = self._asked.get(x)
        if not asked:
            return True
        return bool(self._build_queue(x))

    def _random_queries(self, n):
        rng = np.random.default_rng(_seed(self._seed_base, 4, self._q))
        out, seen = [], set()
        total = self._n * (self._n - 1) // 2
        while len(out) < n and len(self._pairs) + len(seen) < total:
            i, j = (int(v) for v in rng.integers(0, self._n, size=2))
            if i == j:
                continue
            key = (min(i, j), max(i, j))
            if key in self._pairs or key in seen:
                continue
            seen.add(key)
            out.append({"i": key[0], "j": key[1], "pair": [key[0], key[1]], "sample": None,
                        "certain_set": None, "score": None, "G": None, "H": None})
        return out
