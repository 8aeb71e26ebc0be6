"""URASC's spectral learning with the answers (``shared/specs/urasc.md`` U2-U4, U16).

The constrained graph W^t (the base graph with must-link entries set to 1 and
cannot-link entries to 0), its generalized eigenpairs, and the labels: k-means
on the embedding, or label spreading from the certain sets (extension,
``assign="propagate"``). A mixin of :class:`clustering.URASC`, which holds the
state it reads (``_W0``, ``_sets``, ``_set_of``, ``_answers`` ...); Xiong,
Johnson & Corso, TPAMI 2017.
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, cg, eigsh, spsolve
from threadpoolctl import threadpool_limits

from ._certain_sets import _DK, _NO, _YES, _seed
from .._graph import discriminant_knn_graph, normalized_adjacency
from .._spectral import AMG_ROWS, amg_top_eigenvectors, full_generalized_embedding, generalized_embedding, kmeans_labels

_DENSE_FULL_EIG_LIMIT = 1000  # all eigenpairs (exact U6) up to this n by default
_SPREAD_DIRECT_LIMIT = 5000  # label spreading: sparse direct solve up to this n, CG above
# discriminant_weight="auto" by k_growth, once there are three or more certain
# sets (bench/history.md: "verify" in "second spreading graph", "sets" in
# "discriminant graph under the paper's rule"); "robust" was never measured with it and keeps W^t alone.
_AUTO_DISCRIMINANT_WEIGHT = {"verify": 0.5, "sets": 0.3}


def _spread_labels(W, sets, alpha):
    """Label spreading from the certain sets (extension, ``assign="propagate"``).

    ``F = (I - alpha D^{-1/2} W D^{-1/2})^{-1} Y`` with ``Y[i, l] = 1`` for i in
    set l (Zhou et al. 2004), then class-mass normalisation (Zhu, Ghahramani and
    Lafferty 2003, §4) with a uniform class prior: each column is divided by its
    sum before the argmax; certain samples keep their set. Without it, with
    alpha near 1 every column is dominated by the same ``sqrt(degree)``
    direction scaled by the set's size, so the set with the most (or best
    connected) members takes nearly every sample: segment, k_growth="verify",
    K unknown, 10% wrong answers, trial 0 gave 1933 of 2310 samples to one set
    (ARI .10). Segment, K known, 5 trials, ARI at 50/100/150/200: plain
    .49/.62/.70/.72, prior = set sizes .51/.66/.73/.75, uniform
    .58/.67/.76/.79; iris, wine, ionosphere and wdbc (K unknown) within .02.

    Parameters
    ----------
    W : ndarray or csr_matrix of shape (n, n), float64
        The constrained similarity W^t of U2 (symmetric, non-negative).
    sets : list of list of int
        The certain sets (row indices).
    alpha : float in (0, 1)
        Spreading strength.

    Returns
    -------
    labels : ndarray of shape (n,), int64 in [0, len(sets))
    """
    n, L = W.shape[0], len(sets)
    M, _ = normalized_adjacency(W)  # isolated samples keep their row of Y
    Y = np.zeros((n, L))
    for l, members in enumerate(sets):
        Y[members, l] = 1.0
    if sp.issparse(W) and n > _SPREAD_DIRECT_LIMIT:
        # I - alpha M is symmetric positive definite (M's spectrum lies in
        # [-1, 1]): conjugate gradients per set, no fill-in. SuperLU took
        # 14.5 s on letter's 20000-row kNN graph; CG about a second.
        A = sp.csr_matrix(sp.identity(n) - alpha * M)
        F = np.empty((n, L))
        for l in range(L):
            F[:, l], _ = cg(A, Y[:, l], x0=Y[:, l].copy(), rtol=1e-6, maxiter=10 * n)
    elif sp.issparse(W):
        F = spsolve(sp.identity(n, format="csc") - alpha * sp.csc_matrix(M), Y)
    else:
        A = np.eye(n) - alpha * M
        with threadpool_limits(limits=1):
            F = np.linalg.solve(A, Y)
    F = np.asarray(F).reshape(n, L)
    # (I - alpha M)^-1 = sum_k alpha^k M^k is entrywise non-negative and each
    # column of Y has a 1, so every column sum is positive.
    F = F / F.sum(axis=0)
    labels = np.argmax(F, axis=1).astype(np.int64)
    for l, members in enumerate(sets):
        labels[members] = l
    return labels


def _set_agreement(labels, sets):
    """Fraction of certain samples whose label matches their set under the best
    one-to-one matching of sets to labels (Hungarian)."""
    from scipy.optimize import linear_sum_assignment

    K = int(labels.max()) + 1
    C = np.zeros((len(sets), K))
    for l, members in enumerate(sets):
        np.add.at(C[l], labels[members], 1.0)
    r, c = linear_sum_assignment(-C)
    total = C.sum()
    return float(C[r, c].sum() / total) if total > 0 else 1.0


class SpectralLearningMixin:
    """Re-clustering with the answers so far (spec §4.1 steps 3.1-3.2)."""

    def _constraint_entries(self, n_answers=None):
        """Pairs (m, 2) and values (m,) overwriting W0 (U2, U16)."""
        rows, cols, vals = [], [], []
        cert = np.flatnonzero(self._set_of >= 0)
        if cert.size > 1:
            sid = self._set_of[cert]
            a, b = np.triu_indices(cert.size, 1)
            same = sid[a] == sid[b]
            if self.k_growth in ("robust", "verify"):  # must-links within sets only; CL from answers below
                a, b = a[same], b[same]
                same = same[same]
            rows.append(cert[a])
            cols.append(cert[b])
            vals.append(same.astype(float))
        ans = self._answers if n_answers is None else self._answers[:n_answers]
        robust = self.k_growth in ("robust", "verify")
        so = self._set_of
        extra = [(i, j, 1.0 if v == _YES else 0.0) for i, j, v in ans
                 if v != _DK and (so[i] < 0 or so[j] < 0 or (robust and v == _NO and so[i] != so[j]))]
        if extra:
            e = np.asarray(extra)
            rows.append(e[:, 0].astype(np.int64))
            cols.append(e[:, 1].astype(np.int64))
            vals.append(e[:, 2])
        if not rows:
            return np.empty((0, 2), dtype=np.int64), np.empty(0)
        pairs = np.column_stack([np.concatenate(rows), np.concatenate(cols)]).astype(np.int64)
        return pairs, np.concatenate(vals)

    def _changed_entries(self, pairs, vals):
        """The entries of :meth:`_constraint_entries` that change the sparse base graph.

        A cannot-link (value 0) between samples that share no edge of the kNN
        graph changes nothing; under the paper's rule those are nearly all of
        the O(c^2) pairs across c certain samples (segment after 1400 answers:
        527 000 pairs; building W on them took 83 ms, 24 ms without, and the
        kNN lookups of the next selection sorted them all again). Dense graphs:
        every entry, unchanged.
        """
        zero = vals == 0.0
        if not self._sparse or not zero.any():
            return pairs, vals
        edge = np.asarray(self._W0[pairs[zero, 0], pairs[zero, 1]]).ravel() != 0
        keep = ~zero
        keep[np.flatnonzero(zero)[edge]] = True
        return pairs[keep], vals[keep]

    def _constrained_W(self, pairs, vals):
        if not self._sparse:
            W = self._W0.copy()
            if pairs.shape[0]:
                W[pairs[:, 0], pairs[:, 1]] = vals
                W[pairs[:, 1], pairs[:, 0]] = vals
            return W
        if not pairs.shape[0]:
            return self._W0.copy()
        n = self._n
        r = np.concatenate([pairs[:, 0], pairs[:, 1]])
        c = np.concatenate([pairs[:, 1], pairs[:, 0]])
        mask = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n, n))
        mask.data[:] = 1.0
        setv = sp.csr_matrix((np.concatenate([vals, vals]), (r, c)), shape=(n, n))
        setv.sum_duplicates()
        W = self._W0 - self._W0.multiply(mask) + setv.minimum(1.0)
        W = sp.csr_matrix(W)
        W.eliminate_zeros()
        return W

    def _n_eig(self):
        n, K = self._n, self._K
        if self.n_eig is not None:
            q = self.n_eig
        elif n <= _DENSE_FULL_EIG_LIMIT:
            q = n
        elif n <= 5000:
            q = K + 50
        elif n <= AMG_ROWS:
            q = K + 20
        else:
            # LOBPCG's cost per iteration grows with its block (one multigrid cycle per vector and
            # Rayleigh-Ritz on 3q columns); U6's truncated sum keeps the K + 10 nearest terms,
            # whose gaps to the first K are the smallest and so weigh most (spec §6 [choice])
            q = K + 10
        return int(max(min(q, n), min(K + 1, n)))

    def _eigenpairs(self, W, q, seed):
        """q smallest eigenpairs of the chosen Laplacian problem (ascending)."""
        n = self._n
        if self.laplacian == "unnormalized":
            from .._spectral import additive_embedding

            Vv, mu = additive_embedding(W, q, random_state=seed)
            d = np.asarray(W.sum(axis=1)).ravel()
            dmax = float(d.max()) if d.max() > 0 else 1.0
            lam = (1.0 - mu) * dmax
            order = np.argsort(lam, kind="stable")
            return Vv[:, order], lam[order]
        if q >= n - 1 or (not self._sparse and n <= _DENSE_FULL_EIG_LIMIT):
            try:
                # URASC counts its own fallback (same full solver as the shared one)
                V, lam = generalized_embedding(W, q, random_state=seed, dense_fallback=False)
            except np.linalg.LinAlgError:
                # LAPACK's subset driver (evr) can fail with "Internal Error" on
                # kNN graphs with many repeated eigenvalues; the full
                # divide-and-conquer solver does not.
                self._counters["eigh_fallbacks"] = self._counters.get("eigh_fallbacks", 0) + 1
                V, lam = full_generalized_embedding(W, q)
            order = np.argsort(lam, kind="stable")
            return V[:, order], lam[order]
        d = np.asarray(W.sum(axis=1)).ravel()
        d = d + 1e-10 * max(float(d.mean()), 1e-300)  # §7.4: epsilon in D only
        inv = 1.0 / np.sqrt(d)
        if self._sparse:
            Dm = sp.diags(inv)
            M = sp.csr_matrix(Dm @ W @ Dm)
        else:
            M = W * inv[:, None] * inv[None, :]
        if self._sparse and n > AMG_ROWS:  # only there: LOBPCG with a multigrid preconditioner
            mu, U = amg_top_eigenvectors(M, q, np.random.RandomState(seed % (2**32)))
            return U * inv[:, None], 1.0 - mu
        v0 = self._eig_v0 if self._eig_v0 is not None else \
            np.random.default_rng(seed).uniform(-1, 1, n)
        try:
            mu, U = eigsh(M, k=q, which="LA", v0=v0, tol=1e-6, maxiter=max(1000, 20 * n))
        except ArpackNoConvergence:
            V, lam = generalized_embedding(W, q, random_state=seed)
            order = np.argsort(lam, kind="stable")
            return V[:, order], lam[order]
        order = np.argsort(-mu, kind="stable")
        mu, U = mu[order], U[:, order]
        return U * inv[:, None], 1.0 - mu

    def _recluster(self, n_answers=None):
        """Spec §4.1 steps 3.1-3.2 with the answers so far (or the first ``n_answers``)."""
        q_used = self._q if n_answers is None else int(n_answers)
        self._grow_k()
        if self.strategy == "random" and self.n_clusters is None:
            self._K = max(self._K, self._random_k_lower_bound(q_used))
        K = int(min(self._K, self._n - 1))
        pairs, vals = self._changed_entries(*self._constraint_entries(q_used))
        W = self._constrained_W(pairs, vals)
        seed = _seed(self._seed_base, 3, q_used)
        q = self._n_eig()
        V, lam = self._eigenpairs(W, q, seed)
        self._V, self._lam = V, lam
        E = V[:, :K]
        # OpenMP threads of k-means on a few hundred rows cost more than they
        # save (8x slower on a shared 2-core machine): one thread.
        assign = "propagate" if self.assign == "auto" and self.k_growth == "verify" else self.assign
        spread = assign != "kmeans" and len(self._sets) == K and K >= 2
        self._discriminant_weight_used = None  # labels from k-means
        if not (spread and assign == "propagate"):
            with threadpool_limits(limits=1, user_api="openmp"):
                self.labels_ = kmeans_labels(E, K, n_init=self.n_init, random_state=seed)
        if spread and (assign == "propagate" or _set_agreement(self.labels_, self._sets) < self.agreement):
            G, self._discriminant_weight_used = self._spreading_graph(W)
            self.labels_ = _spread_labels(G, self._sets, self.propagation_alpha)
        if np.unique(self.labels_).size < K:
            # k-means found fewer than K clusters: the embedding has fewer than K distinct rows
            # (a graph left without edges, e.g. every answer "no"); never on ordinary runs
            self.labels_ = self._separated_labels(W, K, q_used, self.labels_)
            self._counters["separated_labels"] = self._counters.get("separated_labels", 0) + 1
        self._W = W
        self._pairs_W = (pairs, vals)
        self._stale = False
        self._clustered_at = q_used
        self._kseed = seed
        self._counters["reclusters"] += 1
        self._publish()

    def _label_groups(self, q_used):
        """Groups of samples known to belong together: the certain sets, or for the
        random strategy (no sets) the must-link components of the answered samples."""
        if self._sets:
            return [np.asarray(s, dtype=np.int64) for s in self._sets]
        ans, ds = self._yes_components(q_used)
        seen = list(dict.fromkeys(v for i, j, _ in ans for v in (i, j)))
        roots = list(dict.fromkeys(ds[v] for v in seen))
        return [np.asarray(sorted(ds.subset(r)), dtype=np.int64) for r in roots]

    def _yes_components(self, q_used):
        """The first ``q_used`` answers without the don't-knows, as (i, j, a), and a
        ``scipy.cluster.hierarchy.DisjointSet`` over all samples joined by their "yes"s."""
        from scipy.cluster.hierarchy import DisjointSet

        ans = [(i, j, v) for i, j, v in self._answers[:q_used] if v != _DK]
        ds = DisjointSet(range(self._n))
        for i, j, v in ans:
            if v == _YES:
                ds.merge(i, j)
        return ans, ds

    def _separated_labels(self, W, K, q_used, fallback):
        """Labels when the embedding cannot give K clusters (degenerate case of U4).

        With every answer "no" (or a base graph without edges) W^t has no edges
        left, the embedding is zero and k-means puts every sample in one cluster,
        against the answers. Here the groups of :meth:`_label_groups` get labels
        greedily, in order: a label not yet used and not held by a group they are
        cannot-linked to; once all K are used (more sets than K = n - 1 clusters,
        or a fixed n_clusters), the allowed label whose samples are most similar
        under w0 (any label if none is allowed). Each other sample takes the
        label of its most similar group member under W^t, else under w0 among
        members it is not cannot-linked to, else keeps its k-means label.

        Parameters
        ----------
        W : ndarray or csr_matrix of shape (n, n), float64
            The constrained similarity W^t.
        K : int
            Number of clusters, ``2 <= K <= n - 1``.
        q_used : int
            Number of answers the clustering uses.
        fallback : ndarray of shape (n,), int64
            The k-means labels.

        Returns
        -------
        labels : ndarray of shape (n,), int64 in [0, K)
            Samples of one group share a label; groups take distinct labels
            while fewer than K are used, so ``min(K, number of groups)``
            distinct labels at least.
        """
        n = self._n
        pairs, vals = self._constraint_entries(q_used)
        cannot = {}
        for a, b in pairs[vals == 0.0].tolist():
            cannot.setdefault(a, set()).add(b)
            cannot.setdefault(b, set()).add(a)
        labels = np.full(n, -1, dtype=np.int64)
        for g in self._label_groups(q_used):
            blocked = {int(labels[v]) for u in g.tolist() for v in cannot.get(u, ()) if labels[v] >= 0}
            used = set(labels[labels >= 0].tolist())
            allowed = [c for c in range(K) if c not in blocked] or list(range(K))
            fresh = [c for c in allowed if c not in used]
            if fresh:
                labels[g] = fresh[0]
                continue
            sims = [float(self._similarity_block(g, np.flatnonzero(labels == c)).max()) for c in allowed]
            labels[g] = allowed[int(np.argmax(sims))]
        members = np.flatnonzero(labels >= 0)
        if members.size == 0:
            return np.asarray(fallback, dtype=np.int64)
        for x in np.flatnonzero(labels < 0).tolist():
            w = W[x, members].toarray().ravel() if sp.issparse(W) else W[x, members]
            if w.max() > 0:
                labels[x] = labels[members[int(np.argmax(w))]]
                continue
            ok = np.array([m not in cannot.get(x, ()) for m in members.tolist()])
            w0 = self._similarity_block(np.array([x]), members[ok]).ravel() if ok.any() else np.zeros(0)
            labels[x] = labels[members[ok][int(np.argmax(w0))]] if w0.size and w0.max() > 0 else fallback[x]
        return labels

    def _spreading_graph(self, W):
        """The graph label spreading runs on: W^t, or ``(1 - w) W^t + w G`` with G
        the kNN graph in the discriminant space of the certain sets
        (:func:`clustering._graph.discriminant_knn_graph`) and w the
        ``discriminant_weight``. W^t alone without X (precomputed affinity)
        or when G cannot be learned yet. Returns the graph and the weight w
        used (0.0 for W^t alone), published as
        ``diagnostics_["discriminant_weight"]``."""
        w = self.discriminant_weight
        if w == "auto":  # two sets give a one-dimensional discriminant space: no mixing
            w = _AUTO_DISCRIMINANT_WEIGHT.get(self.k_growth, 0.0) if len(self._sets) >= 3 else 0.0
        if w == 0 or self._X is None:
            return W, 0.0
        G = discriminant_knn_graph(self._X, self._sets, self.n_neighbors)
        if G is None:
            return W, 0.0
        if not sp.issparse(W):
            G = G.toarray()
        return (1.0 - w) * W + w * G, float(w)

    def _update(self):
        if self._stale or self._clustered_at != self._q:
            self._recluster()

    def _random_k_lower_bound(self, q_used):
        """Unknown K with random pairs: size of a greedy clique of cannot-linked must-link groups."""
        ans, ds = self._yes_components(q_used)
        if not ans:
            return 2
        cl = {}
        for i, j, v in ans:
            if v == _NO:
                a, b = ds[i], ds[j]
                if a != b:
                    cl.setdefault(a, set()).add(b)
                    cl.setdefault(b, set()).add(a)
        if not cl:
            return 2
        best = 2
        for start in sorted(cl, key=lambda c: (-len(cl[c]), c))[:20]:
            clique = [start]
            for c in sorted(cl[start], key=lambda c: (-len(cl[c]), c)):
                if all(c in cl[m] for m in clique):
                    clique.append(c)
            best = max(best, len(clique))
        return best
