"""Parity with deepinv (the optional ``bench`` extra): operators, the denoiser wrapper, its DPS.

Skipped cleanly when deepinv is not installed (``pip install 'weakprior[bench]'``).
"""

import pytest
import torch
from weakprior.analytic_priors import GaussianPrior
from weakprior.deepinv_anchor import DeepinvDPSSolver, EpsDenoiser, deepinv_physics
from weakprior.operators import (
    BoxInpainting,
    Downsample,
    GaussianBlur,
    RandomInpainting,
    gaussian_kernel,
    measure,
)

dinv = pytest.importorskip("deepinv")

SHAPE = (2, 3, 12, 12)


@pytest.mark.parametrize(
    "op",
    [
        RandomInpainting(SHAPE, 0.3, seed=1),
        BoxInpainting(SHAPE, 0.5),
        GaussianBlur(5, 1.0),
        GaussianBlur(7, 1.5),
        Downsample(2),
        Downsample(3),
    ],
    ids=["random", "box", "blur5", "blur7", "sr2", "sr3"],
)
def test_operators_match_deepinv_physics(op):
    """Our A and A^T equal deepinv.physics' on the same mask / kernel / factor."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(SHAPE, generator=g)
    physics = deepinv_physics(op, SHAPE)
    y = torch.randn(op(x).shape, generator=g)
    torch.testing.assert_close(physics.A(x), op(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(physics.A_adjoint(y), op.adjoint(y), atol=1e-5, rtol=1e-5)


def test_gaussian_kernel_matches_deepinv():
    """deepinv's isotropic Gaussian PSF (sigma 1: 9 taps) is our normalised kernel."""
    from deepinv.physics.functional.blur import gaussian_blur

    ref = gaussian_blur(sigma=(1.0, 1.0))[0, 0]
    torch.testing.assert_close(gaussian_kernel(ref.shape[-1], 1.0), ref, atol=1e-6, rtol=1e-5)


def test_eps_denoiser_is_the_exact_gaussian_posterior_mean():
    """D(x0 + sigma n, sigma) from the exact eps of N(mu, S) is mu + S (S + sigma^2 I)^-1 (x - mu)."""
    d = 4
    a = torch.randn(d, d, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    prior = GaussianPrior(torch.linspace(-0.5, 0.5, d), 0.1 * a @ a.T + 0.05 * torch.eye(d))
    den = EpsDenoiser(lambda x, t: prior.eps(x, t.round().long()))
    abar = prior.alphas_cumprod
    for t in (50, 400, 900):
        sigma = float(((1 - abar[t]) / abar[t]).sqrt())
        x = torch.randn(3, d, generator=torch.Generator().manual_seed(t), dtype=torch.float64)
        gain = prior.cov @ torch.linalg.inv(
            prior.cov + sigma**2 * torch.eye(d, dtype=torch.float64)
        )
        want = prior.mean + (x - prior.mean) @ gain.T
        torch.testing.assert_close(den(x, sigma), want, atol=1e-6, rtol=1e-6)


def test_deepinv_dps_fits_the_observed_pixels():
    """deepinv's DPS over an exact Gaussian prior fits the kept pixels far better than no guidance."""
    shape = (4, 1, 4, 4)
    prior = GaussianPrior(torch.zeros(16), 0.2 * torch.eye(16) + 0.1)

    def eps(x, t):
        return prior.eps(x.reshape(x.shape[0], -1), t.round().long()).reshape(x.shape)

    x = (torch.rand(shape, generator=torch.Generator().manual_seed(0)) - 0.5) * 1.5
    op = RandomInpainting(shape, 0.5, seed=2)
    y = measure(op, x, 0.01, seed=3)
    obs = op.observed(shape)

    def resid(w):
        est = DeepinvDPSSolver(eps, op, weight=w, num_steps=40, seed=0).solve(y, shape).x
        assert est.shape == shape and torch.isfinite(est).all()
        return float(((obs * (est - x)) ** 2).sum() / obs.sum())

    assert resid(30.0) < 0.25 * resid(0.0)


def test_deepinv_dps_rejects_bad_settings():
    with pytest.raises(ValueError, match="weight"):
        DeepinvDPSSolver(lambda x, t: x, Downsample(2), weight=-1.0)
    with pytest.raises(ValueError, match="num_steps"):
        DeepinvDPSSolver(lambda x, t: x, Downsample(2), num_steps=1)


def test_diffpir_and_ddrm_share_the_unit_range_set_up():
    """Both samplers check their settings and map y = A x + n to A (x + 1) / 2 + n / 2 the same
    way (the UnitRangeSampler base); DiffPIR alone refuses sigma = 0."""
    from weakprior.deepinv_anchor import DeepinvDDRMSolver, DeepinvDiffPIRSolver

    shape = (2, 1, 4, 4)
    x = torch.rand(shape, generator=torch.Generator().manual_seed(0)) * 2 - 1
    op = RandomInpainting(shape, 0.5, seed=1)
    y = measure(op, x, 0.0)
    for solver in (DeepinvDiffPIRSolver, DeepinvDDRMSolver):
        s = solver(lambda z, t: z, op, sigma=0.02, num_steps=5)
        got_shape, y01 = s.unit_range_problem(y, shape)
        assert got_shape == shape and s.unit_sigma == pytest.approx(0.01)
        torch.testing.assert_close(y01, op((x + 1) / 2))
        with pytest.raises(ValueError, match="num_steps"):
            solver(lambda z, t: z, op, num_steps=1)
        with pytest.raises(ValueError, match="sigma"):
            solver(lambda z, t: z, op, sigma=-0.1)
    assert DeepinvDDRMSolver(lambda z, t: z, op, sigma=0.0).sigma == 0.0
    with pytest.raises(ValueError, match="sigma > 0"):
        DeepinvDiffPIRSolver(lambda z, t: z, op, sigma=0.0)


@pytest.mark.parametrize("op_name", ["random", "blur"])
def test_deepinv_diffpir_and_ddrm_recover_a_gaussian_signal(op_name):
    """With the exact eps of a Gaussian prior, deepinv's DiffPIR and DDRM (run through our
    [0, 1] wrapper) land far closer to the planted images than the prior mean does."""
    from weakprior.deepinv_anchor import DeepinvDDRMSolver, DeepinvDiffPIRSolver

    d, n = 16, 16
    shape = (n, 1, 4, 4)
    a = torch.randn(d, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    prior = GaussianPrior(torch.zeros(d), 0.1 * a @ a.T / d + 0.01 * torch.eye(d))

    def eps(x, t):
        flat = x.reshape(x.shape[0], -1).double()
        return prior.eps(flat, t.round().long()).reshape(x.shape).float()

    x = prior.sample(n, seed=1).float().view(shape)
    op = RandomInpainting(shape, 0.5, seed=2) if op_name == "random" else GaussianBlur(3, 1.0)
    y = measure(op, x, 0.01, seed=3)
    base = float((x**2).mean())  # error of the prior mean (0)
    for solver in (DeepinvDiffPIRSolver, DeepinvDDRMSolver):
        est = solver(eps, op, 0.01, num_steps=20, seed=0).solve(y, shape).x
        assert est.shape == shape and torch.isfinite(est).all()
        assert float(((est - x) ** 2).mean()) < 0.8 * base, solver.__name__


def test_svd_physics_is_the_operator():
    from weakprior.deepinv_anchor import svd_physics

    x = torch.randn(3, 1, 6, 6, generator=torch.Generator().manual_seed(0))
    for op in (Downsample(2), GaussianBlur(3, 1.0)):
        physics = svd_physics(op, (1, 6, 6))
        back = physics.V(physics.mask**2 * physics.V_adjoint(x))  # A^T A x through the SVD
        torch.testing.assert_close(back, op.adjoint(op(x)), atol=1e-5, rtol=1e-4)
