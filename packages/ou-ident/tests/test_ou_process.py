"""Stationary law of the OU process: closed forms, Euler-Maruyama, scale invariance."""

import numpy as np
import pytest
from ou_ident.ou_process import OUParams, check_covariance


def test_two_node_chain_closed_form():
    a, c, e = 1.3, 0.7, 0.9
    b0, b1, d0, d1 = 0.5, -0.2, 1.1, 0.6
    theta = OUParams([[-a, 0.0], [c, -e]], [b0, b1], [d0, d1])
    mu0 = b0 / a
    mu1 = (b1 + c * mu0) / e
    s00 = d0 / (2 * a)
    s01 = c * s00 / (a + e)
    s11 = (d1 + 2 * c * s01) / (2 * e)
    np.testing.assert_allclose(theta.stationary_mean(), [mu0, mu1], rtol=1e-12)
    np.testing.assert_allclose(theta.stationary_cov(), [[s00, s01], [s01, s11]], rtol=1e-12)


def test_moments_match_euler_maruyama_p3():
    theta = OUParams(
        [[-1.0, 0.3, 0.0], [0.0, -1.5, 0.6], [0.4, 0.0, -1.2]], [0.5, -0.3, 1.0], [1.0, 0.5, 0.8]
    )
    n, dt = 4000, 5e-3
    X = theta.simulate(n_paths=n, t_end=8.0, dt=dt, seed=1)  # (n, 3)
    assert X.shape == (n, 3)
    mu, S = theta.stationary_mean(), theta.stationary_cov()
    se_mean = np.sqrt(np.diag(S) / n)
    assert np.all(np.abs(X.mean(0) - mu) < 5 * se_mean + 0.01)
    se_cov = np.sqrt((S**2 + np.outer(np.diag(S), np.diag(S))) / n)
    # Euler-Maruyama biases the covariance by O(dt); allow 2% on top of 5 standard errors
    assert np.all(np.abs(np.cov(X, rowvar=False) - S) < 5 * se_cov + 0.02 * np.abs(S).max())


def test_exact_samples_match_moments():
    theta = OUParams([[-1.0, 0.5], [0.2, -2.0]], [1.0, 0.0], [1.0, 2.0])
    X = theta.sample(40000, seed=3)
    np.testing.assert_allclose(X.mean(0), theta.stationary_mean(), atol=0.02)
    np.testing.assert_allclose(np.cov(X, rowvar=False), theta.stationary_cov(), atol=0.02)


def test_lyapunov_and_mean_equations_hold():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 5)) * 0.3 - 2 * np.eye(5)
    theta = OUParams(A, rng.normal(size=5), rng.uniform(0.5, 1.5, 5))
    mu, S = theta.stationary_mean(), theta.stationary_cov()
    np.testing.assert_allclose(A @ mu + theta.b, 0, atol=1e-12)
    np.testing.assert_allclose(A @ S + S @ A.T + theta.D, 0, atol=1e-12)


@pytest.mark.parametrize("c", [0.1, 2.0, 17.0])
def test_scale_invariance_of_moments(c):
    theta = OUParams([[-1.0, 0.5], [0.2, -2.0]], [1.0, 0.3], [1.0, 2.0])
    np.testing.assert_allclose(theta.rescaled(c).stationary_mean(), theta.stationary_mean())
    np.testing.assert_allclose(theta.rescaled(c).stationary_cov(), theta.stationary_cov())
    assert np.trace(theta.rescaled(c).normalized().D) == pytest.approx(2.0)


def test_non_hurwitz_simulation_raises():
    theta = OUParams([[0.5, 0.0], [0.0, -1.0]], [0.0, 0.0], [1.0, 1.0])
    assert not theta.is_hurwitz
    with pytest.raises(ValueError, match="not Hurwitz"):
        theta.simulate(10, 1.0)
    with pytest.raises(ValueError, match="not Hurwitz"):
        theta.stationary_cov()


def test_bad_parameters():
    with pytest.raises(ValueError, match="non-negative"):
        OUParams([[-1.0]], [0.0], [-1.0])
    with pytest.raises(ValueError, match="NaN"):
        OUParams([[np.nan]], [0.0], [1.0])
    with pytest.raises(ValueError, match="shape"):
        OUParams([[-1.0]], [0.0, 1.0], [1.0])


def test_covariance_validation():
    with pytest.raises(ValueError, match="NaN"):
        check_covariance("S", [[1.0, np.nan], [np.nan, 1.0]])
    with pytest.raises(ValueError, match="positive semi-definite"):
        check_covariance("S", [[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="symmetric"):
        check_covariance("S", [[1.0, 0.5], [0.0, 1.0]])
