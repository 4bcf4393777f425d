"""The sparsity-penalised efficient estimator (ou_ident.sparse_drift)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from ou_ident.joint import fit_joint
from ou_ident.moment_equations import ParameterLayout
from ou_ident.sparse_drift import (
    _feature_sign,
    _stationary_start,
    extended_bic,
    fit_penalised,
    fit_sparse_efficient,
)
from ou_ident.stationary_likelihood import fit_efficient, fit_stationary_ml
from ou_ident.synthetic import make_problem


@pytest.fixture(scope="module")
def sparse_system():
    """A planted sparse drift (6 of 12 off-diagonal entries), one degradation per node."""
    prob = make_problem(4, "degradation", per_component=4, seed=0)
    assert int(prob.mask.sum()) - 4 == 6
    data = prob.moments(10**6, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = fit_efficient(data, None)
    return prob, data, ml


def test_feature_sign_satisfies_the_lasso_optimality_conditions():
    rng = np.random.default_rng(0)
    for _ in range(20):
        m = 8
        X = rng.normal(size=(12, m))
        H = X.T @ X + 1e-3 * np.eye(m)
        q = rng.normal(size=m) * 3
        pen = np.array([0, 2, 3, 5, 6])
        lam = rng.uniform(0.1, 2.0, size=pen.size)
        v = _feature_sign(H, q, rng.normal(size=m), pen, lam)
        g = H @ v + q
        free = np.setdiff1d(np.arange(m), pen)
        assert np.allclose(g[free], 0, atol=1e-8)
        for k, j in enumerate(pen):
            if v[j] != 0:
                assert g[j] + lam[k] * np.sign(v[j]) == pytest.approx(0, abs=1e-8)
            else:
                assert abs(g[j]) <= lam[k] + 1e-8
    # a penalty above every |gradient at 0| zeroes every penalised coordinate
    v = _feature_sign(
        np.eye(3), np.array([1.0, -2.0, 0.5]), np.ones(3), np.arange(3), np.full(3, 5.0)
    )
    assert np.array_equal(v, np.zeros(3))


def test_penalty_zero_is_the_unpenalised_efficient_fit(sparse_system):
    prob, data, ml = sparse_system
    fit = fit_sparse_efficient(data, None, penalty=0, start=ml)
    assert fit is ml and fit.theta_cov is not None
    again = fit_sparse_efficient(data, None, penalty=0.0)
    assert np.array_equal(again.theta, ml.theta)


def test_proximal_newton_at_zero_penalty_reaches_the_likelihood_maximum():
    prob = make_problem(4, "degradation", seed=0)
    data = prob.moments(10**5, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = _stationary_start(fit_joint(data, prob.mask))
        ml = fit_stationary_ml(data, start)
        pen = fit_penalised(data, start, 0.0)
    assert pen.diagnostics["log_likelihood"] == pytest.approx(
        ml.diagnostics["log_likelihood"], abs=1e-4
    )
    assert np.allclose(pen.A, ml.A, atol=2e-3)  # a flat maximum: the height is what is sharp


@pytest.mark.parametrize("penalty", [1e-5, 1e-3, 1e-1])
def test_objective_decreases_monotonically(sparse_system, penalty):
    _, data, ml = sparse_system
    joint = _stationary_start(fit_joint(data))
    for start in (ml, joint):
        fit = fit_penalised(data, start, penalty)
        path = np.asarray(fit.diagnostics["objective_path"])
        assert len(path) >= 2 and np.all(np.diff(path) <= 0.0)
        assert fit.params.is_hurwitz and np.all(fit.params.D.diagonal() >= 0)


def test_larger_penalty_gives_a_sparser_drift(sparse_system):
    _, data, ml = sparse_system
    lams = (0.0, 1e-2, 1.0)
    counts = [fit_penalised(data, ml, lam).diagnostics["nonzero_offdiag"] for lam in lams]
    assert counts[0] == 12 and counts == sorted(counts, reverse=True) and counts[-1] <= 8


def test_planted_sparse_support_is_recovered_at_large_n(sparse_system):
    prob, data, ml = sparse_system
    for lam in (1e-6, 1e-5, 1e-4):
        fit = fit_sparse_efficient(data, None, penalty=lam, adaptive=True, start=ml)
        assert np.array_equal(fit.A != 0, prob.mask), lam
    # the unpenalised fit has no exact zeros: the zeros come from the penalty
    assert np.all(ml.A != 0)


@pytest.mark.slow
def test_extended_bic_selects_the_planted_support():
    prob = make_problem(4, "degradation", per_component=4, seed=0)
    data = prob.moments(10**7, seed=0)
    fit = fit_sparse_efficient(data, None, penalty="auto", adaptive=True)
    assert np.array_equal(fit.A != 0, prob.mask)
    assert fit.diagnostics["penalty"] > 0


def test_extended_bic_prefers_the_true_zeros(sparse_system):
    prob, data, ml = sparse_system
    sparse = fit_sparse_efficient(data, None, penalty=1e-5, adaptive=True, start=ml)
    # same likelihood to within the noise, 6 fewer parameters: lower criterion
    assert extended_bic(sparse, data) < extended_bic(ml, data)


def test_bad_penalty_is_refused(sparse_system):
    _, data, ml = sparse_system
    with pytest.raises(ValueError, match="penalty"):
        fit_sparse_efficient(data, None, penalty="large", start=ml)
    with pytest.raises(ValueError, match="penalty"):
        fit_penalised(data, ml, -1.0)
    layout = ParameterLayout(np.ones((4, 4), bool), ml.layout.environments)
    assert len(layout.offdiag_a) == 12
