"""Test oracles of ``specs/urasc.md`` §8.1: the eigenvector derivatives, gradient norms and entropy
(finite differences and identities, no hard-coded results)."""

import numpy as np
import pytest
from scipy.linalg import eigh

from clustering._urasc._selection import _gradient_norms, _nonparametric_entropy, eigenvector_derivative


# ----------------------------------------------------------------------------- helpers

def _random_W(n=12, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.uniform(0, 1, (n, n))
    W = np.triu(A, 1)
    return W + W.T


def _standard(W):
    L = np.diag(W.sum(1)) - W
    lam, V = eigh(L)
    return lam, V


def _generalized(W):
    d = W.sum(1)
    lam, V = eigh(np.diag(d) - W, np.diag(d))  # D-orthonormal columns
    return lam, V


def _bump(W, i, j, delta):
    W2 = W.copy()
    W2[i, j] += delta
    W2[j, i] += delta
    return W2


def _fd(W, i, j, k, solver, inner, delta=1e-6):
    lam, V = solver(W)
    lp, Vp = solver(_bump(W, i, j, delta))
    lm, Vm = solver(_bump(W, i, j, -delta))
    M = inner(W)
    vp = Vp[:, k] * np.sign(Vp[:, k] @ M @ V[:, k])
    vm = Vm[:, k] * np.sign(Vm[:, k] @ M @ V[:, k])
    return (vp - vm) / (2 * delta), (lp[k] - lm[k]) / (2 * delta), lam, V


# ----------------------------------------------------------------------------- §8.1

@pytest.mark.parametrize("pair", [(0, 5), (3, 7), (10, 11)])
def test_standard_derivative_matches_finite_differences(pair):
    W = _random_W(seed=1)
    i, j = pair
    for k in (1, 2, 3):
        fd, fdl, lam, V = _fd(W, i, j, k, _standard, lambda W: np.eye(len(W)))
        c, dl = eigenvector_derivative(V, lam, i, j, k, perturbation="standard")
        assert np.max(np.abs(V @ c - fd)) < 1e-6
        assert abs(dl - fdl) < 1e-6


@pytest.mark.parametrize("pair", [(0, 5), (3, 7), (10, 11)])
def test_generalized_derivative_matches_finite_differences(pair):
    W = _random_W(seed=2)
    i, j = pair
    for k in (1, 2, 3):
        fd, fdl, lam, V = _fd(W, i, j, k, _generalized, lambda W: np.diag(W.sum(1)))
        c, dl = eigenvector_derivative(V, lam, i, j, k, perturbation="exact")
        assert np.max(np.abs(V @ c - fd)) < 1e-6
        assert abs(dl - fdl) < 1e-6


def test_truncated_derivative_is_projection_of_exact():
    W = _random_W(seed=3)
    i, j, k, q = 2, 9, 2, 6
    fd, _, lam, V = _fd(W, i, j, k, _generalized, lambda W: np.diag(W.sum(1)))
    D = np.diag(W.sum(1))
    c, _ = eigenvector_derivative(V[:, :q], lam[:q], i, j, k, perturbation="exact")
    Vq = V[:, :q]
    proj = Vq @ (Vq.T @ D @ fd)  # D-orthogonal projector onto span{v_1..v_q}
    assert np.max(np.abs(Vq @ c - proj)) < 1e-6


def test_norm_identity_and_vectorised_gradient():
    W = _random_W(seed=4)
    lam, V = _generalized(W)
    D = np.diag(W.sum(1))
    K = 3
    cand, reps = [0, 0, 4, 7], [1, 5, 2, 11]
    for perturbation in ("exact", "paper"):
        expected = []
        for x, r in zip(cand, reps):
            tot = 0.0
            for k in range(K):
                c, _ = eigenvector_derivative(V, lam, x, r, k, perturbation=perturbation)
                dv = V @ c
                assert np.isclose(np.sqrt(dv @ D @ dv), np.linalg.norm(c), rtol=1e-10)
                tot += np.linalg.norm(c)
            expected.append(tot)
        got = _gradient_norms(V, lam, cand, reps, K, perturbation=perturbation, terms="all", gap_floor=1e-9)
        np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_constant_vector_derivative():
    W = _random_W(seed=5)
    lam, V = _generalized(W)
    vol = W.sum()
    c, _ = eigenvector_derivative(V, lam, 1, 6, 0, perturbation="exact")
    assert np.allclose(c[1:], 0.0, atol=1e-9)
    assert np.allclose(V @ c, -V[:, 0] / vol, atol=1e-9)
    lam_s, V_s = _standard(W)
    c_std, _ = eigenvector_derivative(V_s, lam_s, 1, 6, 0, perturbation="standard")
    assert np.allclose(c_std, 0.0, atol=1e-9)


def test_gradient_sign_invariance():
    W = _random_W(seed=6)
    lam, V = _generalized(W)
    flip = np.where(np.random.default_rng(0).random(V.shape[1]) < 0.5, -1.0, 1.0)
    args = ([0, 3, 5], [8, 9, 1], 4)
    a = _gradient_norms(V, lam, *args, perturbation="exact", terms="all", gap_floor=1e-9)
    b = _gradient_norms(V * flip, lam, *args, perturbation="exact", terms="all", gap_floor=1e-9)
    np.testing.assert_allclose(a, b, rtol=1e-12)


def test_entropy_range_and_extremes():
    K = 3
    w = np.ones((3, 6))
    labels = np.array([[0] * 6, [0, 1, 2, 0, 1, 2], [0, 0, 0, 0, 1, 2]])
    H, iso = _nonparametric_entropy(w, labels, K)
    assert H[0] == 0.0
    assert np.isclose(H[1], np.log(K))
    assert 0 < H[2] < np.log(K)
    H, iso = _nonparametric_entropy(np.zeros((1, 6)), labels[:1], K)
    assert iso[0] and H[0] == 0.0
