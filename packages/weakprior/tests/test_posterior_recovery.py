"""Closed-form ground truth: exact Gaussian / GMM priors, DDIM moments, solver posteriors."""

import pytest
import torch
from weakprior.analytic_priors import GaussianPrior, GMMPrior
from weakprior.ddim import FewStepDDIM, check_timesteps, linear_alphas_cumprod, spaced_timesteps
from weakprior.dps import DPSSolver
from weakprior.noise_optimisation import NoiseOptimisationSolver
from weakprior.operators import MatrixOperator


def _gaussian(d=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(d, d, generator=gen) * 0.4
    return GaussianPrior(torch.randn(d, generator=gen) * 0.3, a @ a.T + 0.1 * torch.eye(d))


def test_paper_schedule():
    assert spaced_timesteps(3) == (666, 333, 0)
    abar = linear_alphas_cumprod()
    assert abar.shape == (1000,) and abar[0] == pytest.approx(1 - 1e-4)
    assert float(abar[-1]) < 1e-4


@pytest.mark.parametrize(
    "ts, match",
    [((333, 666, 0), "strictly decreasing"), ((666, 666, 0), "strictly decreasing"),
     ((1000, 500, 0), r"\[0, 1000\)"), ((500, -1), r"\[0, 1000\)"), ((), "empty")],
)  # fmt: skip
def test_bad_timesteps_rejected(ts, match):
    with pytest.raises(ValueError, match=match):
        check_timesteps(ts, 1000)
    with pytest.raises(ValueError, match=match):
        FewStepDDIM(lambda x, t: x, ts)


def test_gaussian_eps_matches_monte_carlo_regression():
    """E[eps | x_t] is linear for a Gaussian; a least-squares fit on samples recovers it."""
    prior = _gaussian(3)
    t = 400
    a = linear_alphas_cumprod()[t]
    x0 = prior.sample(20000, seed=1)
    eps = torch.randn(20000, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    xt = a.sqrt() * x0 + (1 - a).sqrt() * eps
    pred = prior.eps(xt, torch.full((20000,), t))
    # residual eps - E[eps|x_t] is uncorrelated with x_t
    cross = ((eps - pred).T @ (xt - xt.mean(0))) / 20000
    assert cross.abs().max() < 0.02


def test_ddim_with_exact_gaussian_score_reproduces_mean_and_covariance():
    prior = _gaussian(5)
    z = torch.randn(4000, 5, generator=torch.Generator().manual_seed(0))
    x = FewStepDDIM(prior.eps, spaced_timesteps(50), clip=False)(z).double()
    assert (x.mean(0) - prior.mean).abs().max() < 0.05
    assert (torch.cov(x.T) - prior.cov).abs().max() < 0.15 * prior.cov.abs().max()


def test_gmm_single_component_equals_gaussian_and_posterior_mean():
    g = _gaussian(3)
    gm = GMMPrior(torch.tensor([1.0]), g.mean[None], g.cov[None])
    m = torch.randn(2, 3, generator=torch.Generator().manual_seed(4))
    y = torch.randn(4, 2, generator=torch.Generator().manual_seed(5))
    assert torch.allclose(gm.posterior_mean(m, y, 0.1), g.posterior(m, y, 0.1)[0])


def test_gmm_posterior_mean_matches_importance_sampling():
    gm = GMMPrior(torch.tensor([0.3, 0.7]), torch.tensor([[-1.0, 0.0], [1.0, 0.5]]),
                  torch.stack([0.2 * torch.eye(2), 0.1 * torch.eye(2)]))  # fmt: skip
    m, sigma = torch.tensor([[1.0, 0.0]]), 0.3
    y = torch.tensor([[0.1]])
    x = gm.sample(200000, seed=0)
    w = torch.exp(-0.5 * ((x @ m.double().T - y.double()) ** 2).sum(1) / sigma**2)
    mc = (w[:, None] * x).sum(0) / w.sum()
    assert torch.allclose(gm.posterior_mean(m, y, sigma)[0], mc, atol=0.02)


@pytest.mark.parametrize("optimizer", ["adam", "adam_sphere"])
def test_noise_optimisation_approaches_gaussian_posterior_mean(optimizer):
    """Many random inits, each fitted to the same y: their average is near the posterior mean."""
    prior = _gaussian(5)
    gen = torch.Generator().manual_seed(7)
    m = torch.randn(3, 5, generator=gen)
    x_true = prior.sample(1, seed=3)
    sigma = 0.01
    y = (x_true @ m.double().T).float() + sigma * torch.randn(1, 3, generator=gen)
    post, _ = prior.posterior(m, y, sigma)
    solver = NoiseOptimisationSolver(
        FewStepDDIM(prior.eps, spaced_timesteps(6), clip=False), MatrixOperator(m),
        optimizer=optimizer, early_stop="none", iterations=120, lr=0.05,
    )  # fmt: skip
    est = solver.solve(y.expand(96, 3).contiguous()).x.double()
    prior_gap = (prior.mean - post[0]).norm()
    err = (est.mean(0) - post[0]).norm()
    assert err < 0.4 * prior_gap
    fit = (est @ m.double().T - y.double()).norm(dim=1).median()
    # every init fits the measurement (the sphere, ||z|| = sqrt(5), leaves a small misfit)
    assert fit < (0.15 if optimizer == "adam" else 0.25)


def test_dps_approaches_gaussian_posterior_mean():
    prior = _gaussian(5)
    gen = torch.Generator().manual_seed(7)
    m = torch.randn(3, 5, generator=gen)
    x_true = prior.sample(1, seed=3)
    y = (x_true @ m.double().T).float()
    post, _ = prior.posterior(m, y, 0.05)
    est = DPSSolver(prior.eps, MatrixOperator(m), scale=0.3, num_steps=100, clip=False).solve(
        y.expand(128, 3).contiguous()
    )
    err = (est.x.double().mean(0) - post[0]).norm()
    assert err < 0.4 * (prior.mean - post[0]).norm()


@pytest.mark.parametrize("y0", [-0.8, 0.2, 1.0])
def test_dps_on_2d_gmm_matches_exact_posterior_mean(y0):
    gm = GMMPrior(torch.tensor([0.5, 0.5]), torch.tensor([[-1.0, 0.0], [1.0, 0.5]]),
                  torch.stack([0.1 * torch.eye(2)] * 2))  # fmt: skip
    m = torch.tensor([[1.0, 0.0]])
    y = torch.full((384, 1), y0)
    exact = gm.posterior_mean(m, y[:1], 0.1)[0]
    est = DPSSolver(gm.eps, MatrixOperator(m), scale=0.3, num_steps=100, clip=False).solve(y)
    assert (est.x.double().mean(0) - exact).abs().max() < 0.15


def test_stacking_problems_leaves_each_solution_unchanged():
    """Per-sample solvers: solving a stack of problems equals solving the first one alone.

    ``reproduce`` stacks every inpainting problem of a target into one batch; the first
    problem's noise draw, hold-out split, sphere and stopper are the same either way.
    """
    from weakprior.operators import BoxInpainting, RandomInpainting, measure, stack_inpainting

    shape = (2, 1, 4, 4)
    prior = GaussianPrior(torch.zeros(16), 0.3 * torch.eye(16) + 0.1)
    x = prior.sample(2, seed=1).float().clamp(-1, 1).view(shape)
    ops = [RandomInpainting(shape, 0.5, seed=2), BoxInpainting(shape, 0.25)]
    ys = [measure(op, x, 0.01, seed=3) for op in ops]
    for opt, stop in (("adam_sphere", "holdout"), ("adam", "wmv")):
        kw = dict(optimizer=opt, early_stop=stop, iterations=25, lr=0.05, best_k=3,
                  wmv_patience=1000, seed=4)  # fmt: skip
        gen = FewStepDDIM(prior.eps, clip=False)  # exact eps, reshaped per sample
        alone = NoiseOptimisationSolver(gen, ops[0], **kw).solve(ys[0], shape).x
        both = NoiseOptimisationSolver(gen, stack_inpainting(ops), **kw).solve(torch.cat(ys)).x
        assert both.shape == (4, 1, 4, 4)
        assert torch.allclose(both[:2], alone, atol=1e-5)
