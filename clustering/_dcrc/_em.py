"""DCRC's numeric kernels: the variational E-step and the M-step objective.

Private to :class:`clustering.DCRC` (``shared/specs/dcrc.md``, DC-1 ... DC-18):
answer probabilities of a triplet under the noise channel, the compatibility
coefficients and the blocked E-step over a greedy colouring of the triplets,
the negative lower bound with its gradient for L-BFGS, the k-means + logistic
start and the triplet conflict report. No input validation here.
"""

import warnings

import numpy as np
from scipy import sparse

YES, NO, DNK = 1, -1, 0
_HARD_EPS = 1e-12
_TIE_TOL = 1e-9


# --------------------------------------------------------------------------
# private numeric kernels (no input validation)
# --------------------------------------------------------------------------


def _log_softmax(z, axis=1):
    """Log-softmax along ``axis``: ``z - logsumexp(z)``, max-shifted.

    Used for the cluster model's log-probabilities p(y | x, W) (DC-6, in the
    M-step objective DC-15) and the E-step's updates (DC-13 and DC-14,
    per colour block). Same values as
    :func:`scipy.special.log_softmax` (max difference 0.0 on a 600 x 3
    draw) and faster on the E-step's small blocks: 9 us against 52 us on
    20 x 3, 68 against 103 us on 600 x 3 (this machine, 2026-11-26).

    Parameters
    ----------
    z : ndarray of shape (m, K), float64
        Logits.
    axis : int, default=1
        Axis to normalise over.

    Returns
    -------
    ndarray of shape (m, K), float64
        Log-probabilities; ``exp`` of each row sums to 1.
    """
    z = z - z.max(axis=axis, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=axis, keepdims=True))


def _ideal_answer(ya, yb, yc):
    """DC-1 on integer label arrays: +1 yes, -1 no, 0 don't know."""
    ya, yb, yc = np.asarray(ya), np.asarray(yb), np.asarray(yc)
    out = np.zeros(np.broadcast(ya, yb, yc).shape, dtype=np.int8)
    out[(ya == yb) & (ya != yc)] = YES
    out[(ya == yc) & (ya != yb)] = NO
    return out


def _answer_proba(qa, qb, qc):
    """DC-10b / DC-17: probabilities of yes, no, dnk for independent label
    distributions ``qa, qb, qc`` (each (m, K)). Returns (m, 3)."""
    p_yes = np.einsum("ik,ik->i", qa * qb, 1.0 - qc)
    p_no = np.einsum("ik,ik->i", qa * qc, 1.0 - qb)
    out = np.empty((qa.shape[0], 3))
    out[:, 0] = np.clip(p_yes, 0.0, 1.0)
    out[:, 1] = np.clip(p_no, 0.0, 1.0)
    out[:, 2] = np.clip(1.0 - out[:, 0] - out[:, 1], 0.0, 1.0)
    return out


def _compat_coefficients(position, answer):
    """Coefficients (c0, c1, c2, c3) of Table II written as
    ``M = c0 + c1 (A - P) + c2 (B - P) + c3 (A.B - P)``.

    ``A`` and ``B`` are the label distributions of the other two members of
    the triplet in their original order (for ``i = a``: ``A = q_b``, ``B =
    q_c``; for ``i = b``: ``A = q_a``, ``B = q_c``; for ``i = c``: ``A =
    q_a``, ``B = q_b``), ``P = A * B`` (elementwise, over k) and ``A.B`` their
    dot product. Vectorised over arrays of positions (0, 1, 2) and answers.
    """
    position = np.asarray(position)
    answer = np.asarray(answer)
    m = position.shape[0]
    c = np.zeros((m, 4))
    yes, no, dnk = answer == YES, answer == NO, answer == DNK
    p0, p1, p2 = position == 0, position == 1, position == 2
    # yes: a -> q_b(1 - q_c) = A - P; b -> q_a(1 - q_c) = A - P; c -> q_a.q_b - q_a q_b
    c[yes & (p0 | p1), 1] = 1.0
    c[yes & p2, 3] = 1.0
    # no: a -> q_c(1 - q_b) = B - P; b -> q_a.q_c - q_a q_c; c -> q_a(1 - q_b) = A - P
    c[no & p0, 2] = 1.0
    c[no & p1, 3] = 1.0
    c[no & p2, 1] = 1.0
    # dnk = 1 - yes - no of the same row
    c[dnk, 0] = 1.0
    c[dnk, 1] = -1.0
    c[dnk & p0, 2] = -1.0
    c[dnk & (p1 | p2), 3] = -1.0
    return c


def _compatibility(A, B, coef):
    """Table II: M (m, K) from the other members' distributions A, B (m, K)
    and the per-incidence coefficients of :func:`_compat_coefficients`."""
    P = A * B
    dot = P.sum(axis=1, keepdims=True)
    c0, c1, c2, c3 = (coef[:, j : j + 1] for j in range(4))
    return c0 + c1 * (A - P) + c2 * (B - P) + c3 * (dot - P)


def _greedy_colouring(tri_loc, n_c):
    """Greedy colouring (largest degree first) of the graph on constrained
    instances where i ~ j iff they share a triplet. Returns int array (n_c,)."""
    if n_c == 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.concatenate([tri_loc[:, 0], tri_loc[:, 0], tri_loc[:, 1]])
    cols = np.concatenate([tri_loc[:, 1], tri_loc[:, 2], tri_loc[:, 2]])
    g = sparse.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n_c, n_c)).tocsr()
    g = ((g + g.T) > 0).tocsr()
    indptr, indices = g.indptr, g.indices
    degree = np.diff(indptr)
    order = np.argsort(-degree, kind="stable")
    colour = np.full(n_c, -1, dtype=np.int64)
    for u in order.tolist():
        used = set(colour[indices[indptr[u] : indptr[u + 1]]].tolist())
        c = 0
        while c in used:
            c += 1
        colour[u] = c
    return colour


class _EStepPlan:
    """Pre-computed colour blocks for the Gauss-Seidel mean-field sweep (4.3)."""

    def __init__(self, tri_loc, answer, weight, n_c):
        self.n_c = n_c
        colour = _greedy_colouring(tri_loc, n_c)
        self.n_colours = int(colour.max()) + 1 if n_c else 0
        m = tri_loc.shape[0]
        t_idx = np.repeat(np.arange(m), 3)
        pos = np.tile(np.arange(3), m)
        node = tri_loc.ravel()
        others = np.array([[1, 2], [0, 2], [0, 1]])
        o1 = tri_loc[t_idx, others[pos, 0]]
        o2 = tri_loc[t_idx, others[pos, 1]]
        coef = _compat_coefficients(pos, answer[t_idx]) * weight[t_idx, None]
        inc_colour = colour[node]
        self.blocks = []
        for c in range(self.n_colours):
            members = np.flatnonzero(colour == c)
            sel = np.flatnonzero(inc_colour == c)
            row = np.searchsorted(members, node[sel])
            S = sparse.csr_matrix(
                (np.ones(sel.size), (row, np.arange(sel.size))), shape=(members.size, sel.size)
            )
            self.blocks.append((members, o1[sel], o2[sel], coef[sel], S))

    def compatibility_sums(self, q, block):
        """s_i(k) (DC-13) for the members of one colour block."""
        members, o1, o2, coef, S = block
        return S @ _compatibility(q[o1], q[o2], coef)


def _e_step(q, lp_c, plan, log_gamma, hard, max_sweeps, tol):
    """Mean-field E-step (DC-11..14) in place on q (n_C, K); returns sweeps."""
    prev2 = None
    for sweep in range(1, max_sweeps + 1):
        q_old = q.copy()
        for block in plan.blocks:
            members = block[0]
            s = plan.compatibility_sums(q, block)
            if hard:
                allowed = s >= s.max(axis=1, keepdims=True) - _TIE_TOL
                logits = np.where(allowed, lp_c[members], -np.inf)
            else:
                logits = lp_c[members] + log_gamma * s
            q[members] = np.exp(_log_softmax(logits, axis=1))
        delta = np.abs(q - q_old).max() if q.size else 0.0
        if delta < tol:
            return sweep
        if hard and prev2 is not None and np.abs(q - prev2).max() < tol:
            return sweep  # 2-cycle of the max-product style update (7.5)
        prev2 = q_old
    return max_sweeps


def _entropy_rows(lp):
    """Row entropies from log-probabilities (0 log 0 = 0)."""
    p = np.exp(lp)
    return -np.einsum("ik,ik->i", p, np.where(p > 0, lp, 0.0))


def _neg_objective(w_flat, Xa, c_idx, q, u_idx, lam, tau, balance, n_clusters, work=None):
    """Negative M-step objective -F(W) (DC-15) and its gradient (DC-16).

    Parameters
    ----------
    w_flat : ndarray of shape (K * (d + 1),)
        Row-major W (K, d + 1), last column = bias.
    Xa : ndarray of shape (N, d + 1)
        Standardised data with a trailing column of ones.
    c_idx, u_idx : int arrays
        Constrained / unconstrained instances.
    q : ndarray of shape (len(c_idx), K)
        Mean-field posteriors of the constrained instances (fixed).
    work : dict or None
        Scratch arrays ``"lp"``, ``"p"``, ``"G"`` of shape (K, N), float64, reused
        across calls (:func:`_workspace`). The arithmetic is the same with or
        without; fresh (K, N) arrays on every call cost page faults: on letter
        (20000 x 16, K = 26) 11.1 ms per call against 4.0 ms.
    """
    K = n_clusters
    N, D = Xa.shape
    W = w_flat.reshape(K, D)
    # (K, N) layout: the per-sample reductions over K run across contiguous rows
    if work is None:
        work = _workspace(K, N)
    lp = np.matmul(W, Xa.T, out=work["lp"])
    lp -= lp.max(axis=0)
    p = np.exp(lp, out=work["p"])
    s = p.sum(axis=0)
    p /= s
    lp -= np.log(s)
    Wt = W[:, :-1]
    F = -lam * float(np.sum(Wt * Wt))
    use_u = u_idx.size > 0 and tau > 0
    use_b = balance and tau > 0
    if use_u or use_b:
        # dF/dz_i = p_i * (a_i (lp_i + H_i) - b (lphat - p_i . lphat)),  a_i = tau/|U| on U, b = tau/N
        G = work["G"]
        if use_u:
            a = np.zeros(N)
            a[u_idx] = tau / u_idx.size
            np.multiply(p, lp, out=G)
            H = -G.sum(axis=0)
            F -= float(a @ H)
            np.add(lp, H, out=G)
            G *= a
        else:
            G.fill(0.0)
        if use_b:
            phat = p.mean(axis=1)
            lphat = np.log(np.maximum(phat, 1e-300))
            F -= tau * float(phat @ lphat)
            b = tau / N
            G += b * (lphat @ p)
            G -= (b * lphat)[:, None]
        G *= p
    else:
        G = np.zeros_like(p)
    if c_idx.size:
        F += float(np.sum(q.T * lp[:, c_idx]))
        G[:, c_idx] += q.T - p[:, c_idx]
    grad = G @ Xa
    grad[:, :-1] -= 2.0 * lam * Wt
    return -F, -grad.ravel()


def _workspace(K, N):
    """Scratch arrays for :func:`_neg_objective` (see its ``work``)."""
    return {"lp": np.empty((K, N)), "p": np.empty((K, N)), "G": np.empty((K, N))}


def _q_entropy_term(q):
    return -float(np.sum(np.where(q > 0, q * np.log(np.where(q > 0, q, 1.0)), 0.0)))


def _lower_bound(W, Xa, c_idx, u_idx, q, tri_loc, answer, weight, eps, hard, lam, tau, balance, work=None):
    """DC-10b. In hard mode (eps = 0) the constraint term is 0 when every
    triplet is satisfied under Q and -inf otherwise; we report it as 0 and
    the rest of the bound (documented in ``lower_bound_``)."""
    K = W.shape[0]
    negF, _ = _neg_objective(W.ravel(), Xa, c_idx, q, u_idx, lam, tau, balance, K, work)
    lb = -negF + _q_entropy_term(q)
    if tri_loc.shape[0] and not hard:
        probs = _answer_proba(q[tri_loc[:, 0]], q[tri_loc[:, 1]], q[tri_loc[:, 2]])
        col = np.where(answer == YES, 0, np.where(answer == NO, 1, 2))
        pi = probs[np.arange(answer.size), col]
        lb += float(np.sum(weight * (pi * np.log1p(-eps) + (1.0 - pi) * np.log(eps / 2.0))))
    return lb


def _kmeans_logistic_init(Xs, K, lam, n_init, rng):
    """Initial W (K, d + 1): k-means, then L2 multinomial logistic regression
    on the k-means labels with the penalty lambda R(W) of DC-7a (paper IV-C,
    spec 4.2: C = 1 / (2 lambda); with two clusters C = 1 / lambda, since the
    binary row w becomes (-w/2, w/2) and R = ||w||^2 / 2)."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    d = Xs.shape[1]
    seed = int(rng.randint(np.iinfo(np.int32).max))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = KMeans(n_clusters=K, n_init=n_init, random_state=seed).fit(Xs)
        labels = km.labels_
        present = np.unique(labels)
        W = np.zeros((K, d + 1))
        if present.size < 2:
            return W
        # scikit-learn's penalty is ||coef||^2 / (2 C): C = 1 / (2 lambda) makes it lambda R(W) (DC-7a). A
        # binary fit has one row w, placed below as (-w/2, w/2) with R = ||w||^2 / 2: there C = 1 / lambda
        C = (1.0 / lam if present.size == 2 else 1.0 / (2.0 * lam)) if lam > 0 else 1e12
        # n_clusters may reach n_samples: k-means' labels are classes, not a regression target
        warnings.filterwarnings("ignore", "The number of unique classes is greater than 50%", UserWarning)
        lr = LogisticRegression(C=C, max_iter=1000).fit(Xs, labels)
    coef, icpt = lr.coef_, lr.intercept_
    if present.size == 2:  # binary: one row w -> (-w/2, w/2)
        coef = np.vstack([-coef[0] / 2, coef[0] / 2])
        icpt = np.array([-icpt[0] / 2, icpt[0] / 2])
    W[present, :d] = coef
    W[present, d] = icpt
    if present.size < K:  # missing k-means clusters start with a very low bias
        W[np.setdiff1d(np.arange(K), present), d] = W[present, d].min() - 10.0
    return W


def _triplet_conflicts(triplets, answer, max_conflicts=100):
    """Repeated triplets (up to the b/c swap) with contradictory answers.
    Valid input (independent noisy observations), only reported."""
    if triplets.shape[0] < 2:
        return [], 0
    b, c = triplets[:, 1], triplets[:, 2]
    swap = b > c
    ans = np.where(swap, -answer, answer)  # (a,b,c,yes) == (a,c,b,no); dnk symmetric
    key = np.stack([triplets[:, 0], np.minimum(b, c), np.maximum(b, c)], axis=1)
    _, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.ravel()
    order = np.argsort(inv, kind="stable")
    inv_s, ans_s = inv[order], ans[order]
    starts = np.flatnonzero(np.r_[True, inv_s[1:] != inv_s[:-1]])
    ends = np.r_[starts[1:], inv_s.size]
    out, count = [], 0
    for s, e in zip(starts.tolist(), ends.tolist()):
        if e - s > 1 and np.unique(ans_s[s:e]).size > 1:
            count += 1
            if len(out) < max_conflicts:
                out.append(
                    {
                        "triplet": [int(v) for v in key[order[s]]],
                        "triplet_indices": [int(v) for v in order[s:e]],
                        "answers": sorted({int(v) for v in ans_s[s:e]}),
                    }
                )
    return out, count
