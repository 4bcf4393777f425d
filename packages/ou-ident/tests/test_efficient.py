"""The efficient estimator: weighting, likelihood, intervals, and the weighted recursion."""

import warnings

import numpy as np
import pytest
from ou_ident.efficiency import coverage, cramer_rao_rows, cramer_rao_scale
from ou_ident.interventions import Environment
from ou_ident.joint import fit_joint
from ou_ident.moment_equations import ParameterLayout
from ou_ident.moment_weighting import fit_weighted, residual_covariance
from ou_ident.recovery_metrics import scale_aligned_rel_error
from ou_ident.recursive import fit_recursive
from ou_ident.stationary_likelihood import (
    environment_jacobians,
    fit_efficient,
    log_likelihood,
    score_information,
)
from ou_ident.steady_state_fit import OUFit
from ou_ident.synthetic import make_problem, wishart_moments


def test_residual_covariance_matches_monte_carlo():
    prob = make_problem(3, "degradation", seed=0)
    P = prob.params
    n, iu = 500, np.triu_indices(3)
    rng = np.random.default_rng(1)
    res = []
    for _ in range(6000):
        m = wishart_moments(Environment("obs"), P, n, rng)
        R = P.A @ m.cov + m.cov @ P.A.T + P.D
        res.append(np.concatenate([P.A @ m.mean + P.b, R[iu]]))
    emp = np.cov(np.array(res).T)
    C = residual_covariance(P.A, P.stationary_cov(), n)
    # 6000 draws: relative error of a variance ~ sqrt(2 / 6000) = 1.8%
    assert np.allclose(np.diag(emp) / np.diag(C), 1.0, atol=0.08)
    assert np.abs(emp - C).max() < 0.1 * np.abs(C).max()


def test_population_moments_are_fitted_exactly():
    prob = make_problem(6, "degradation", seed=2)
    data = prob.moments()
    for fit in (fit_weighted(data, prob.mask), fit_efficient(data, prob.mask)):
        assert np.allclose(fit.A, prob.params.A, atol=1e-7), fit.method
    rec = fit_recursive(data, prob.mask)
    assert np.allclose(rec.A, prob.params.A, atol=1e-8)


def test_score_is_the_gradient_of_the_log_likelihood():
    prob = make_problem(4, "degradation", seed=1)
    data = prob.moments(5000, seed=0)
    fit = fit_joint(data, prob.mask)
    jacs = environment_jacobians(fit.layout, fit.rhos)
    score, info = score_information(fit.theta, data, jacs)
    h = 1e-6
    for c in range(0, fit.theta.size, 3):
        e = np.zeros_like(fit.theta)
        e[c] = h
        fd = log_likelihood(fit.theta + e, data, jacs) - log_likelihood(fit.theta - e, data, jacs)
        assert fd / (2 * h) == pytest.approx(score[c], rel=1e-4, abs=1e-3)
    assert np.all(np.linalg.eigvalsh(info) > -1e-6 * np.abs(info).max())  # PSD


def test_score_vanishes_at_the_truth_on_population_moments():
    prob = make_problem(4, "degradation", seed=1)
    data = prob.moments()
    fit = fit_joint(data, prob.mask)
    score, _ = score_information(fit.theta, data, environment_jacobians(fit.layout, fit.rhos))
    assert np.abs(score).max() < 1e-8


def test_efficient_fit_maximises_the_likelihood():
    """The ML refinement ends at a likelihood above the truth's and the moment estimates'."""
    prob = make_problem(5, "degradation", per_component=5, seed=3)
    data = prob.moments(200_000, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = fit_efficient(data, prob.mask)
        joint = fit_joint(data, prob.mask)
        weighted = fit_weighted(data, prob.mask, first=joint)
    layout = ParameterLayout(prob.mask, prob.environments)
    theta, rhos = layout.pack(prob.params)
    jacs = environment_jacobians(layout, rhos)
    ll = eff.diagnostics["log_likelihood"]
    assert ll >= log_likelihood(theta, data, jacs)
    assert ll >= log_likelihood(joint.theta, data, jacs)
    assert ll >= log_likelihood(weighted.theta, data, jacs)
    assert not eff.diagnostics["at_boundary"] and eff.params.is_hurwitz


def test_intervals_cover_on_a_small_system():
    """30 replications x 18 parameters: coverage of the 95% intervals near 0.95."""
    hits = coverage(3, 10**5, 30)
    allhits = np.concatenate(list(hits.values()), axis=1)
    assert 0.88 <= allhits.mean() <= 0.99


@pytest.mark.slow
def test_interval_coverage_100_replications():
    hits = coverage(4, 10**6, 100)
    allhits = np.concatenate(list(hits.values()), axis=1)
    assert 0.9 <= allhits.mean() <= 0.98


def test_weighted_recursive_fits_are_stable():
    for seed in range(3):
        prob = make_problem(10, "degradation", seed=seed)
        data = prob.moments(100_000, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_recursive(data, prob.mask)
        assert fit.params.is_hurwitz
        assert fit.diagnostics["weighting"] == "efficient"


def test_lambda_mean_changes_the_finite_sample_fit_only():
    prob = make_problem(6, "degradation", seed=3)
    sample, pop = prob.moments(2000, seed=0), prob.moments()
    for weighting in ("none", "efficient"):
        a = fit_recursive(sample, prob.mask, lambda_mean=1.0, weighting=weighting, project=False)
        b = fit_recursive(sample, prob.mask, lambda_mean=50.0, weighting=weighting, project=False)
        assert np.abs(a.A - b.A).max() > 1e-4, weighting
        c = fit_recursive(pop, prob.mask, lambda_mean=50.0, weighting=weighting)
        assert np.allclose(c.A, prob.params.A, atol=1e-8)
    with pytest.raises(ValueError, match="weighting"):
        fit_recursive(pop, prob.mask, weighting="optimal")


def test_fit_json_round_trip_keeps_intervals():
    prob = make_problem(4, "degradation", seed=0)
    fit = fit_efficient(prob.moments(50_000, seed=0), prob.mask)
    again = OUFit.from_json(fit.to_json())
    assert np.allclose(again.theta, fit.theta)
    lo, hi = again.intervals()["A"]
    assert np.all(lo <= fit.A + 1e-12) and np.all(hi + 1e-12 >= fit.A)
    assert np.all(lo[~prob.mask] == 0) and np.all(hi[~prob.mask] == 0)
    with pytest.raises(ValueError, match="no standard errors"):
        fit_joint(prob.moments(), prob.mask).intervals()


def test_layout_unchanged_by_weighting():
    prob = make_problem(5, "degradation", seed=4)
    data = prob.moments(10_000, seed=0)
    w = fit_weighted(data, prob.mask)
    assert w.layout.dim == ParameterLayout(prob.mask, [d.environment for d in data]).dim


def test_likelihood_fit_converges_and_does_not_depend_on_the_start():
    """The damped Fisher scoring stops at a stationary point (Newton decrement ~ 0), and the
    fit started at the planted truth ends at the same maximum as the one from the moments."""
    from ou_ident.stationary_likelihood import fit_stationary_ml
    from ou_ident.steady_state_fit import OUFit

    prob = make_problem(5, "degradation", per_component=5, seed=3)
    data = prob.moments(200_000, seed=3)
    layout = ParameterLayout(prob.mask, prob.environments)
    truth, _ = layout.pack(prob.params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eff = fit_efficient(data, prob.mask)
        warm = fit_stationary_ml(data, OUFit.from_theta(layout, truth, {}, "truth"))
    assert eff.diagnostics["newton_decrement"] < 1e-6
    assert warm.diagnostics["newton_decrement"] < 1e-6
    assert abs(eff.diagnostics["log_likelihood"] - warm.diagnostics["log_likelihood"]) < 1e-6
    se = eff.standard_errors()
    assert np.all(np.abs(eff.theta - warm.theta) <= 0.01 * se)  # same point, far inside 1 s.e.


def test_likelihood_fit_holds_a_noise_variance_on_its_bound():
    """A planted noise variance near 0: the maximum sits on the bound d_0 = 0. The scoring
    must keep every variance >= 0, hold d_0 there and still converge on the free directions
    (it used to stop at the first step that would have made a variance negative)."""
    from ou_ident.ou_process import OUParams
    from ou_ident.stationary_likelihood import (
        environment_jacobians,
        fit_stationary_ml,
        log_likelihood,
        score_information,
    )
    from ou_ident.steady_state_fit import OUFit
    from ou_ident.synthetic import SteadyStateProblem

    prob = make_problem(4, "degradation", per_component=4, seed=0)
    d = np.diag(prob.params.D).copy() if np.ndim(prob.params.D) == 2 else prob.params.d.copy()
    d[0] = 1e-4 * d.sum()
    planted = OUParams(prob.params.A, prob.params.b, d * (4 / d.sum()))
    data = SteadyStateProblem(planted, prob.mask, prob.environments, prob.heldout).moments(
        2000, seed=0
    )
    layout = ParameterLayout(prob.mask, prob.environments)
    truth, _ = layout.pack(planted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_stationary_ml(data, OUFit.from_theta(layout, truth, {}, "truth"))
    dcols = np.arange(layout.dim)[layout.d_slice]
    assert fit.diagnostics["noise_on_bound"] == 1 and fit.theta[dcols[0]] == 0.0
    assert np.all(fit.theta[dcols] >= 0.0)
    assert fit.diagnostics["newton_decrement"] < 1e-6
    jacs = environment_jacobians(layout, {})
    assert fit.diagnostics["log_likelihood"] > log_likelihood(truth, data, jacs)
    # KKT: raising d_0 (at the expense of the free variances) lowers the likelihood
    score, _ = score_information(fit.theta, data, jacs)
    assert score[dcols[0]] < np.mean(score[dcols[1:]])


def test_fixed_weights_solve_is_exact_on_population_moments_and_uses_the_weights():
    """``fit_weighted(weights=...)`` (the oracle of the efficiency table): exact on population
    moments, and on sample moments its result depends on the weights it is given."""
    from ou_ident.moment_weighting import MomentWeights

    prob = make_problem(5, "knockdown", seed=2)
    planted = [env.apply(prob.params) for env in prob.environments]
    covs = [q.stationary_cov() for q in planted]
    w = MomentWeights.at([q.A for q in planted], covs, [1000] * len(planted))
    fit = fit_weighted(prob.moments(), prob.mask, weights=w)
    np.testing.assert_allclose(fit.A, prob.params.A, atol=1e-7)
    data = prob.moments(5_000, seed=0)
    other = MomentWeights.at([-np.eye(5)] * len(planted), covs, [1000] * len(planted))
    a = fit_weighted(data, prob.mask, weights=w).A
    b = fit_weighted(data, prob.mask, weights=other).A
    assert np.max(np.abs(a - b)) > 1e-3


def test_cramer_rao_scale_is_the_rms_error_of_maximum_likelihood():
    # a well-identified system in its asymptotic regime: the root-mean-square scale-aligned
    # error of the likelihood fit over independent experiments equals the bound
    prob = make_problem(4, "degradation", seed=0)
    layout = ParameterLayout(prob.mask, prob.environments)
    truth, _ = layout.pack(prob.params)
    errs = []
    for r in range(60):
        data = prob.moments(10**8, seed=500 + r, method="wishart")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            errs.append(scale_aligned_rel_error(fit_efficient(data, prob.mask).A, prob.params.A))
    rms = float(np.sqrt(np.mean(np.square(errs))))
    crb = cramer_rao_scale(truth, data, layout)
    assert rms == pytest.approx(crb, rel=0.2)
    # the unaligned standard error would overstate the floor of the aligned error
    rows = cramer_rao_rows(4, 10**8, 4, problem_seed=0)
    assert rows["crb"] == pytest.approx(crb)
    assert rows["weak_sd"] > 0 and rows["weak_crb"] > 0
