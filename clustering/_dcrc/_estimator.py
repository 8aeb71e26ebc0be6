"""DCRC: discriminative clustering with relative constraints (yes / no / don't know).

A K-class multinomial logistic model ``P(y | x, W)`` whose classes are the
clusters, fitted by variational EM to triplet answers "is ``a`` closer to ``b``
than to ``c``?" (yes / no / don't know) observed through a symmetric noise
channel of rate ``epsilon``, plus a cluster-separation (conditional entropy)
and an optional cluster-balance (marginal entropy) term.

Implementation spec: ``shared/specs/dcrc.md`` (equation tags DC-1 ... DC-18).
The E-step, the lower bound and its gradient live in :mod:`clustering._dcrc._em`.
"""

import numbers
import time
import warnings

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from .._constraints import check_triplet_constraints
from ._em import (
    _HARD_EPS,
    DNK,
    NO,
    YES,
    _answer_proba,
    _e_step,
    _EStepPlan,
    _ideal_answer,
    _kmeans_logistic_init,
    _lower_bound,
    _neg_objective,
    _triplet_conflicts,
    _workspace,
    _log_softmax,
)
from .._params import Interval, Options, validate_params
from ..exceptions import ConstraintWarning, InvalidInputError
from ..validation import (
    MAX_ABS_VALUE,
    check_data,
    check_magnitude,
    check_n_clusters,
    check_triplets,
    check_weights,
    scientific,
)

__all__ = ["DCRC", "select_dcrc_params"]

_SCREEN_ITER = 10  # EM iterations every restart gets before the best one is continued
_RANDOM_INIT_SCALE = 0.01


def _column_std(X):
    """Standard deviation of each column of ``X``, without squaring values below float64's range.

    Each column is multiplied by a power of two that brings its largest
    magnitude into [0.5, 1) first, and the result by its inverse: exact, so
    this equals ``X.std(axis=0)`` bit for bit unless the squared deviations
    there leave float64's normal range. Below about 1e-154 they do: on data
    within 1e-170 ``X.std`` was 0 (the squares underflow), every column was
    taken for constant and DCRC put every row in one cluster.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
        Finite values.

    Returns
    -------
    ndarray of shape (n_features,), float64
        0.0 for a constant column.
    """
    _, exponent = np.frexp(np.abs(X).max(axis=0, initial=0.0))  # exponent 0 for a column of zeros
    return np.ldexp(np.ldexp(X, -exponent).std(axis=0), exponent)


def check_start_weights(W, shape, field, what):
    """A copy of the weights ``W`` as float64, checked for ``shape`` and finiteness.

    Parameters
    ----------
    W : array-like
        Weights in the standardised space, last column = bias (DC-6): one
        (n_clusters, n_features + 1) matrix or a stack of them.
    shape : tuple of int
        Required shape.
    field, what : str
        Error field and the name used in the message.

    Returns
    -------
    W : ndarray of shape ``shape``, float64

    Raises
    ------
    InvalidInputError
        Ragged or wrongly shaped ``W``, or a value that is not finite or lies beyond
        ``±MAX_ABS_VALUE`` (the squared weights of the L2 penalty would overflow), also
        an integer no float64 holds.
    """
    try:
        W = np.array(W, dtype=np.float64)
        values = W
    except OverflowError:  # an integer no float64 holds (Python ints in an object array): a value out of range
        try:
            W = np.array(W, dtype=object)
            values = np.array([_as_float(v) for v in W.flat]).reshape(W.shape)
        except (TypeError, ValueError):  # ragged, or not numbers
            W = values = np.empty(0)
    except (TypeError, ValueError):
        W = values = np.empty(0)
    if W.shape != tuple(shape):
        raise InvalidInputError(f"{what} has shape {W.shape}, must have shape {tuple(shape)}", field=field)
    bad = ~(np.abs(values) <= MAX_ABS_VALUE)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        huge = W.dtype == object and isinstance(W[idx], int) and np.isinf(values[idx])
        shown = scientific(W[idx]) if huge else f"{values[idx]:g}"
        raise InvalidInputError(
            f"{what}[{', '.join(map(str, idx))}] = {shown}; weights must be finite and within ±{MAX_ABS_VALUE:g}",
            field=field,
            index=idx,
        )
    return values


def _as_float(v):
    """``float(v)``, or infinity (with the sign of ``v``) for an integer no float64 holds."""
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


# --------------------------------------------------------------------------
# public estimator
# --------------------------------------------------------------------------


class DCRC(ClusterMixin, BaseEstimator):
    """Discriminative clustering with relative (triplet) constraints.

    Learns a K-class multinomial logistic model whose classes are the
    clusters from triplet questions "is ``x_a`` more similar to ``x_b`` than
    to ``x_c``?" answered yes, no or don't know, by variational EM
    (mean-field E-step, L-BFGS M-step).

    Parameters
    ----------
    n_clusters : int, default=2
        Number of clusters K (>= 2).
    epsilon : float in [0, 2/3], default=0.05
        Answer-noise rate: the ideal answer is observed with probability
        ``1 - epsilon``, each of the two others with ``epsilon / 2``. 0 gives
        hard constraints (max-compatible update, DC-14); 2/3 makes the answers
        uninformative (a :class:`ConstraintWarning` is emitted). Use 0.1-0.2
        for crowd answers.
    l2_penalty : float >= 0, default=0.01
        lambda, weight of ``sum_k ||w_k||^2`` (biases not penalised).
    entropy_weight : float >= 0, default=1.0
        tau, weight of the mean conditional entropy of unconstrained
        instances and (if ``balance``) of minus the marginal entropy.
        Both are means, on the scale [0, ln K]; the constraint
        log-likelihood is a sum over triplets.
    balance : bool, default=True
        Include the cluster-balance term (paper Eq. 9). Switch off for
        strongly unbalanced clusters when constraints are plentiful.
    standardize : bool, default=True
        Standardise features (zero mean, unit variance) before fitting.
    max_iter : int, default=100
        Maximum EM iterations.
    tol : float, default=1e-6
        Relative change of the lower bound that stops EM (soft mode).
    max_mean_field_iter : int, default=100
        Maximum mean-field sweeps per E-step.
    mean_field_tol : float, default=1e-6
        Sweeps stop when ``max |q_new - q_old|`` is below this.
    max_lbfgs_iter : int, default=50
        L-BFGS iterations per M-step.
    init : "kmeans" or ndarray of shape (n_clusters, n_features + 1), default="kmeans"
        "kmeans": k-means then logistic regression on its labels. An array is
        the initial W (last column = bias) in the standardised space.
    n_init_kmeans : int, default=10
        k-means restarts for the initialisation.
    n_init : int, default=4
        Number of EM starts: the k-means + logistic start and
        ``n_init - 1`` starts from small random weights (N(0, 0.01^2)). Each
        runs 10 EM iterations; the one with the largest lower bound is
        continued to convergence (the objective is non-concave and bad
        optima have far lower bounds). Ignored when ``init`` is an array.
    extra_starts : ndarray of shape (r, n_clusters, n_features + 1) or None, default=None
        Further EM starts (W in the standardised space, last column = bias),
        screened with the others, e.g. the previous fit's W when answers
        were added (:class:`ActiveDCRC` warm starts this way). Restarts are
        our choice (spec 7.7), so this leaves the model unchanged.
    labels_from : {"model", "posterior"}, default="model"
        ``labels_`` as the argmax of ``proba_`` (same rule as ``predict``) or
        of ``posterior_`` (mean-field posteriors on constrained instances).
    random_state : int, RandomState or None, default=None
        Seeds the k-means initialisation (the only randomness).
    callback : callable or None, default=None
        ``callback(stage, fraction)`` called a few times during fit; it may
        raise to cancel.

    Attributes
    ----------
    n_features_in_ : int
        Number of columns of ``X`` seen in ``fit``.
    labels_ : ndarray of shape (n_samples,), dtype int64
        Cluster of every training sample, in [0, n_clusters).
    proba_ : ndarray of shape (n_samples, n_clusters), dtype float64
        P(y_i = k | x_i, W) (Eq. DC-6); rows sum to 1.
    posterior_ : ndarray of shape (n_samples, n_clusters), dtype float64
        Mean-field q_i for constrained samples, ``proba_`` rows otherwise.
    coef_ : ndarray of shape (n_clusters, n_features)
        Weights in the standardised feature space.
    intercept_ : ndarray of shape (n_clusters,)
    mean_, scale_ : ndarray of shape (n_features,)
        Standardisation (zeros / ones when ``standardize=False``).
    constrained_index_ : ndarray of shape (n_constrained,), dtype int64
        Sorted distinct samples occurring in some triplet.
    triplet_proba_ : ndarray of shape (n_triplets, 3)
        Model probabilities of yes / no / don't know per input triplet (DC-17).
    lower_bound_ : list of float
        Objective lower bound (DC-10b) after every E- and M-step. In hard
        mode (epsilon = 0) the constraint term (0 or -inf) is left out.
    n_clusters_ : int
    n_iter_ : int
        EM iterations run.
    converged_ : bool
    diagnostics_ : dict
        JSON-serialisable: counts of answers, mode, sweeps per E-step,
        cluster sizes, empty clusters, training-triplet accuracy (hard DC-17),
        contradictory repeated triplets under ``"conflicts"``.

    Raises
    ------
    InvalidInputError
        From ``fit``: bad parameters, non-finite X (or, with
        ``standardize=False``, X within ``±MIN_PEAK_VALUE``), malformed triplets
        (out-of-range or repeated index, unknown answer), bad weights, or an
        ``init`` or ``extra_starts`` array of the wrong shape or non-finite.

    Notes
    -----
    Pei, Fern, Rosales and Tjahja, Eqs. 1 and 6-14 (spec ``dcrc.md``
    DC-1 ... DC-17). Objective (Eq. 9):
    ``L(W) - lambda R(W) - tau [H_U(W) - H(y_hat | W)]`` with the triplet
    likelihood ``L`` under the noise model of Table I. The E-step is the
    mean-field update Eq. 13 (soft) or Eq. 14 (hard, epsilon = 0), run as
    Gauss-Seidel sweeps over colour blocks of instances that share no
    triplet (so the bound never decreases); the M-step maximises DC-15 with
    L-BFGS and the analytic gradient DC-16. Initialisation: k-means followed
    by logistic regression (paper IV-C).

    Contrary to the brief this estimator was specified from, answers stop
    mattering at ``epsilon = 2/3`` (not 1/3): Table I is uniform there.
    Repeated triplets and contradictory answers are valid (independent
    noisy observations) and are only reported in ``diagnostics_``.
    Interface differences from spec §2: answers are coded +1 / -1 / 0
    (yes / no / don't know; the spec's codes are 0 / 1 / 2, the strings are
    the same), and ``triplet_weight`` is a confidence in (0, 1], so the
    spec's "weight 2 = the triplet given twice" is written by repeating it.
    Empty clusters are listed in ``diagnostics_["empty_clusters"]``, not
    warned about (spec 7.3 asks for a warning).

    References
    ----------
    Y. Pei, X. Z. Fern, R. Rosales, T. V. Tjahja, "Discriminative clustering
    with relative constraints", arXiv:1501.00037.

    Examples
    --------
    >>> import numpy as np
    >>> from clustering._dcrc import DCRC
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [0.1, 0.3],
    ...               [5.0, 5.0], [5.2, 5.1], [5.1, 4.8]])
    >>> triplets = [[0, 1, 3], [3, 4, 0], [2, 5, 0]]
    >>> answers = [1, 1, -1]          # yes, yes, no
    >>> model = DCRC(n_clusters=2, random_state=0).fit(
    ...     X, triplets=triplets, triplet_answer=answers)
    >>> model.labels_[0] == model.labels_[2], model.labels_[0] != model.labels_[3]
    (np.True_, np.True_)
    >>> model.predict([[0.1, 0.1]])[0] == model.labels_[0]
    np.True_
    """

    def __init__(
        self,
        n_clusters=2,
        *,
        epsilon=0.05,
        l2_penalty=0.01,
        entropy_weight=1.0,
        balance=True,
        standardize=True,
        max_iter=100,
        tol=1e-6,
        max_mean_field_iter=100,
        mean_field_tol=1e-6,
        max_lbfgs_iter=50,
        init="kmeans",
        n_init_kmeans=10,
        n_init=4,
        extra_starts=None,
        labels_from="model",
        random_state=None,
        callback=None,
    ):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.l2_penalty = l2_penalty
        self.entropy_weight = entropy_weight
        self.balance = balance
        self.standardize = standardize
        self.max_iter = max_iter
        self.tol = tol
        self.max_mean_field_iter = max_mean_field_iter
        self.mean_field_tol = mean_field_tol
        self.max_lbfgs_iter = max_lbfgs_iter
        self.init = init
        self.n_init_kmeans = n_init_kmeans
        self.n_init = n_init
        self.extra_starts = extra_starts
        self.labels_from = labels_from
        self.random_state = random_state
        self.callback = callback

    _parameter_constraints = {
        "n_clusters": [Interval(numbers.Integral, 2, None)],
        "epsilon": [Interval(numbers.Real, 0, 2.0 / 3.0, closed="both")],
        "l2_penalty": [Interval(numbers.Real, 0, None, closed="left")],
        "entropy_weight": [Interval(numbers.Real, 0, None, closed="left")],
        "balance": [bool],
        "standardize": [bool],
        "max_iter": [Interval(numbers.Integral, 1, None)],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_mean_field_iter": [Interval(numbers.Integral, 1, None)],
        "mean_field_tol": [Interval(numbers.Real, 0, None, closed="left")],
        "max_lbfgs_iter": [Interval(numbers.Integral, 1, None)],
        "init": [Options("kmeans"), np.ndarray],
        "n_init_kmeans": [Interval(numbers.Integral, 1, None)],
        "n_init": [Interval(numbers.Integral, 1, None)],
        "extra_starts": [None, np.ndarray],
        "labels_from": [Options("model", "posterior")],
        "random_state": [None, numbers.Integral, np.random.RandomState],
    }

    # ------------------------------------------------------------------
    def _standardize(self, X):
        return (X - self.mean_) / self.scale_

    def _augment(self, Xs):
        return np.hstack([Xs, np.ones((Xs.shape[0], 1))])

    def fit(self, X, y=None, *, triplets=None, triplet_answer=None, triplet_weight=None):
        """Fit the model to X and the answered triplets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored
        triplets : array-like of shape (n_triplets, 3) or None
            Rows ``(a, b, c)``: "is a closer to b than to c?". None or empty:
            no constraints (regularised information maximisation).
        triplet_answer : array-like of shape (n_triplets,) or None
            ``+1`` yes, ``-1`` no, ``0`` don't know (or ``"yes"``, ``"no"``,
            ``"dont_know"``); None means all yes.
        triplet_weight : array-like of shape (n_triplets,) or None
            Optional confidence in (0, 1] multiplying each triplet's
            log-likelihood (an extension, not in the paper).

        Returns
        -------
        self : DCRC

        Raises
        ------
        InvalidInputError
            See the class docstring.
        """
        validate_params(self, self._parameter_constraints)
        if self.callback is not None and not callable(self.callback):
            raise InvalidInputError("DCRC: callback must be callable or None", field="callback")
        X = check_data(X)
        if not self.standardize:
            check_magnitude(X)  # the raw values go to k-means and the logistic model
        N, d = X.shape
        self.n_features_in_ = d
        K = check_n_clusters(self.n_clusters, N)
        cons = check_triplet_constraints(triplets, triplet_answer, N)
        tri, ans = cons.triplets, cons.answer.astype(np.int8)
        M = tri.shape[0]
        weight = check_weights(triplet_weight, M, name="triplet_weight")
        eps = float(self.epsilon)
        hard = eps < _HARD_EPS
        if eps >= 2.0 / 3.0 - 1e-12 and M:
            warnings.warn(
                "DCRC: epsilon == 2/3 makes every answer equally likely; constraints ignored",
                ConstraintWarning,
                stacklevel=2,
            )
        log_gamma = 0.0 if hard else float(np.log(2.0 * (1.0 - eps) / eps))
        lam, tau, balance = float(self.l2_penalty), float(self.entropy_weight), self.balance
        cb = self.callback
        last_cb = [time.monotonic()]

        def report(stage, frac, force=False):
            if cb is not None and (force or time.monotonic() - last_cb[0] >= 0.5):
                last_cb[0] = time.monotonic()
                cb(stage, float(frac))

        report("init", 0.0, force=True)

        # 1. standardise and augment
        if self.standardize:
            self.mean_ = X.mean(axis=0)
            sd = _column_std(X)
            self.scale_ = np.where(sd > 0, sd, 1.0)
        else:
            self.mean_ = np.zeros(d)
            self.scale_ = np.ones(d)
        Xs = self._standardize(X)
        Xa = self._augment(Xs)

        # 2. constrained / unconstrained sets
        c_idx = np.unique(tri) if M else np.zeros(0, dtype=np.int64)
        u_mask = np.ones(N, dtype=bool)
        u_mask[c_idx] = False
        u_idx = np.flatnonzero(u_mask)
        tri_loc = np.searchsorted(c_idx, tri) if M else np.zeros((0, 3), dtype=np.int64)

        # 3. initial W (one per restart)
        rng = check_random_state(self.random_state)
        if isinstance(self.init, np.ndarray):
            inits = [check_start_weights(self.init, (K, d + 1), "init", "DCRC: init")]
        else:
            with threadpool_limits(limits=1):
                inits = [_kmeans_logistic_init(Xs, K, lam, self.n_init_kmeans, rng)]
            # further starts: small random weights (nearly uniform p), so the
            # constraints rather than the k-means partition shape the start
            inits += [rng.normal(scale=_RANDOM_INIT_SCALE, size=(K, d + 1)) for _ in range(self.n_init - 1)]
        if self.extra_starts is not None:
            extra = np.asarray(self.extra_starts, dtype=np.float64)
            shape = (extra.shape[0] if extra.ndim == 3 else -1, K, d + 1)
            inits += list(check_start_weights(extra, shape, "extra_starts", "DCRC: extra_starts"))
        report("init", 0.05)

        # 4. colouring
        plan = _EStepPlan(tri_loc, ans, weight, c_idx.size) if M else None

        work = _workspace(K, N)  # scratch of the M-step objective, reused by every call

        def lb(W_, q_):
            return _lower_bound(W_, Xa, c_idx, u_idx, q_, tri_loc, ans, weight, eps, hard, lam, tau, balance, work)

        # 5. EM from each start for a few iterations; continue the one with the
        # largest bound to convergence (spec 7.7, restarts are our choice)
        # L-BFGS-B calls BLAS on tiny vectors: a multi-threaded BLAS on a busy
        # machine made each of its iterations ~100x slower, so limit to 1 thread.
        with threadpool_limits(limits=1, user_api="blas"):
            runs = []
            screen = self.max_iter if len(inits) == 1 else min(_SCREEN_ITER, self.max_iter)
            for r, W in enumerate(inits):
                run = self._em_start(W, Xa, c_idx)
                self._em(run, screen, Xa, c_idx, u_idx, plan, log_gamma, hard, lam, tau, balance, lb,
                         lambda f, r=r: report("em", 0.05 + 0.45 * (r + f) / len(inits)), work)
                runs.append(run)
            screen_bounds = [run["bounds"][-1] for run in runs]
            best = runs[int(np.argmax(screen_bounds))]
            if not best["converged"] and best["n_iter"] < self.max_iter:
                self._em(best, self.max_iter, Xa, c_idx, u_idx, plan, log_gamma, hard, lam, tau, balance, lb,
                         lambda f: report("em", 0.5 + 0.45 * f), work)
        W, q, lp, n_iter, converged = best["W"], best["q"], best["lp"], best["n_iter"], best["converged"]
        bounds, sweeps = best["bounds"], best["sweeps"]
        final_bounds = screen_bounds

        # 6. outputs
        self.coef_ = W[:, :-1].copy()
        self.intercept_ = W[:, -1].copy()
        self.proba_ = np.exp(lp)
        self.proba_ /= self.proba_.sum(axis=1, keepdims=True)
        post = self.proba_.copy()
        if M:
            post[c_idx] = q / q.sum(axis=1, keepdims=True)
        self.posterior_ = post
        src = self.proba_ if self.labels_from == "model" else self.posterior_
        self.labels_ = src.argmax(axis=1).astype(np.int64)
        self.constrained_index_ = c_idx.astype(np.int64)
        self.n_clusters_ = K
        self.n_iter_ = int(n_iter)
        self.converged_ = bool(converged)
        self.lower_bound_ = [float(v) for v in bounds]
        if M:
            self.triplet_proba_ = _answer_proba(self.proba_[tri[:, 0]], self.proba_[tri[:, 1]], self.proba_[tri[:, 2]])
            hard_pred = _ideal_answer(self.labels_[tri[:, 0]], self.labels_[tri[:, 1]], self.labels_[tri[:, 2]])
            acc = float(np.mean(hard_pred == ans))
        else:
            self.triplet_proba_ = np.zeros((0, 3))
            acc = None
        sizes = np.bincount(self.labels_, minlength=K)
        conflicts, n_conflicts = _triplet_conflicts(tri, ans)
        self.diagnostics_ = {
            "mode": "hard" if hard else "soft",
            "epsilon": eps,
            "n_triplets": int(M),
            "n_yes": int(np.sum(ans == YES)),
            "n_no": int(np.sum(ans == NO)),
            "n_dont_know": int(np.sum(ans == DNK)),
            "n_constrained": int(c_idx.size),
            "n_colours": int(plan.n_colours) if plan is not None else 0,
            "n_iter": int(n_iter),
            "converged": bool(converged),
            "mean_field_sweeps": [int(s) for s in sweeps],
            "lower_bound": float(bounds[-1]) if bounds else None,
            "cluster_sizes": [int(s) for s in sizes],
            "empty_clusters": [int(k) for k in np.flatnonzero(sizes == 0)],
            "triplet_accuracy": acc,
            "restart_lower_bounds": [float(v) for v in final_bounds],
            "chosen_restart": int(np.argmax(final_bounds)),
            "conflicts": conflicts,
            "n_conflicts": int(n_conflicts),
        }
        report("done", 1.0, force=True)
        return self

    @staticmethod
    def _em_start(W, Xa, c_idx):
        lp = _log_softmax(Xa @ W.T, axis=1)
        return {"W": W, "q": np.exp(lp[c_idx]), "lp": lp, "n_iter": 0, "converged": False,
                "bounds": [], "sweeps": [], "prev_lb": None, "stable": 0, "prev_args": None}

    def _em(self, run, stop, Xa, c_idx, u_idx, plan, log_gamma, hard, lam, tau, balance, lb, progress,
            work=None):
        """Variational EM (spec 4.1 step 5) on the state ``run`` until
        ``run["n_iter"] == stop`` or convergence; resumable."""
        W, q, lp = run["W"], run["q"], run["lp"]
        M = 0 if plan is None else 1
        K = W.shape[0]
        first = run["n_iter"]
        while run["n_iter"] < stop:
            run["n_iter"] += 1
            # a. E-step (in place on q)
            if M:
                run["sweeps"].append(
                    _e_step(q, lp[c_idx], plan, log_gamma, hard, self.max_mean_field_iter, self.mean_field_tol)
                )
                run["bounds"].append(lb(W, q))
            # b. M-step
            W_old = W
            res = minimize(
                _neg_objective,
                W.ravel(),
                args=(Xa, c_idx, q, u_idx, lam, tau, balance, K, work),
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": self.max_lbfgs_iter, "gtol": 1e-6},
            )
            W = res.x.reshape(W.shape)
            lp = _log_softmax(Xa @ W.T, axis=1)
            run["W"], run["lp"] = W, lp
            cur = lb(W, q)
            run["bounds"].append(cur)
            progress((run["n_iter"] - first) / max(1, stop - first))
            # c. convergence
            if hard and M:
                args = (q.argmax(axis=1), lp.argmax(axis=1))
                prev = run["prev_args"]
                same = prev is not None and all(np.array_equal(a, b) for a, b in zip(args, prev))
                run["stable"] = run["stable"] + 1 if same else 0
                run["prev_args"] = args
                if run["stable"] >= 2 and np.abs(W - W_old).max() < 1e-6:
                    run["converged"] = True
                    break
            elif run["prev_lb"] is not None and abs(cur - run["prev_lb"]) <= self.tol * max(1.0, abs(run["prev_lb"])):
                run["converged"] = True
                break
            run["prev_lb"] = cur
        return run

    # ------------------------------------------------------------------
    def _check_fitted_X(self, X):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "coef_")
        X = check_data(X, min_samples=1)
        if X.shape[1] != self.coef_.shape[1]:
            raise InvalidInputError(
                f"X has {X.shape[1]} features, but DCRC is expecting {self.n_features_in_} features as input",
                field="X"
            )
        return X

    def predict_proba(self, X):
        """Cluster probabilities P(y = k | x, W) (DC-6) for new points.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_clusters), float64
            Rows sum to 1.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        InvalidInputError
            ``X`` not finite, not 2-D, or with a number of columns other than
            ``n_features_in_``.
        """
        X = self._check_fitted_X(X)
        z = self._standardize(X) @ self.coef_.T + self.intercept_
        p = np.exp(_log_softmax(z, axis=1))
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Most probable cluster of new points.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        labels : ndarray of shape (n_samples,), dtype int64

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        InvalidInputError
            As :meth:`predict_proba`.
        """
        return self.predict_proba(X).argmax(axis=1).astype(np.int64)

    def predict_triplets(self, X, triplets, *, hard=False):
        """Answer triplet questions with the fitted model (DC-17).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points the triplet indices refer to.
        triplets : array-like of shape (n_triplets, 3)
        hard : bool, default=False
            False: probabilities of (yes, no, don't know), shape (n_triplets, 3).
            True: DC-1 applied to the predicted labels, int8 codes +1 / -1 / 0.

        Returns
        -------
        ndarray of shape (n_triplets, 3) float64, or (n_triplets,) int8

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        InvalidInputError
            As :meth:`predict_proba`, or malformed ``triplets`` (index out of
            range for ``X``, repeated index).
        """
        p = self.predict_proba(X)
        tri, _ = check_triplets(triplets, p.shape[0])
        if hard:
            lab = p.argmax(axis=1)
            return _ideal_answer(lab[tri[:, 0]], lab[tri[:, 1]], lab[tri[:, 2]])
        return _answer_proba(p[tri[:, 0]], p[tri[:, 1]], p[tri[:, 2]])


def select_dcrc_params(
    X,
    triplets,
    triplet_answer,
    *,
    n_clusters,
    l2_penalties=(1e-4, 1e-3, 1e-2, 1e-1, 1.0),
    entropy_weights=(0.01, 0.1, 1.0, 10.0),
    n_folds=5,
    random_state=None,
    **params,
):
    """Choose ``l2_penalty`` and ``entropy_weight`` by cross-validation over
    the triplets (the paper's protocol, spec 4.5).

    For every grid point, fit :class:`DCRC` on ``n_folds - 1`` folds of the
    triplets (all of X) and score the hard DC-17 answers on the held-out
    fold; return the pair with the best mean accuracy.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    triplets : array-like of shape (n_triplets, 3)
    triplet_answer : array-like of shape (n_triplets,)
        +1 yes, -1 no, 0 don't know.
    n_clusters : int
    l2_penalties, entropy_weights : sequence of float
        The grids (the paper's grids were lost; these are our choice).
    n_folds : int, default=5
    random_state : int or None
        Seeds the fold split and every fit.
    **params
        Other :class:`DCRC` parameters, fixed.

    Returns
    -------
    best : dict
        ``{"l2_penalty": float, "entropy_weight": float, "accuracy": float,
        "scores": [{"l2_penalty", "entropy_weight", "accuracy"}, ...]}``.

    Raises
    ------
    InvalidInputError
        Malformed input, or fewer triplets than folds.
    """
    from sklearn.model_selection import KFold

    X = check_data(X)
    tri, ans = check_triplets(triplets, X.shape[0], triplet_answer)
    if not 2 <= n_folds <= tri.shape[0]:
        raise InvalidInputError(
            f"n_folds == {n_folds}, must be >= 2 and <= the number of triplets ({tri.shape[0]})", field="n_folds"
        )
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    folds = list(KFold(n_folds, shuffle=True, random_state=seed).split(tri))
    scores = []
    for lam in l2_penalties:
        for tau in entropy_weights:
            acc = []
            for train, test in folds:
                model = DCRC(n_clusters, l2_penalty=lam, entropy_weight=tau, random_state=seed, **params)
                model.fit(X, triplets=tri[train], triplet_answer=ans[train])
                acc.append(float(np.mean(model.predict_triplets(X, tri[test], hard=True) == ans[test])))
            scores.append({"l2_penalty": float(lam), "entropy_weight": float(tau), "accuracy": float(np.mean(acc))})
    best = max(scores, key=lambda r: r["accuracy"])
    return {**best, "scores": scores}
