"""External anchor: the DPS sampler and physics operators of ``deepinv`` (optional ``bench`` extra).

deepinv (https://deepinv.github.io) ships its own forward operators and its own DPS sampler. This
module connects both to this package so ``reproduce`` can run an *independent* DPS
implementation on the same measurements and with the same tiny prior:

* :func:`deepinv_physics` -- the deepinv ``Physics`` equal to one of our operators
  (``Inpainting`` for random / box masks, ``Blur(padding="circular")``, ``Downsampling`` with a
  2x2 box filter); the tests check ``A`` and ``A^T`` agree entry for entry;
* :class:`EpsDenoiser` -- turns an eps-model on the DDPM schedule into the denoiser deepinv
  expects, ``D(x0 + sigma n, sigma) ~ E[x0 | .]``. With ``abar(t)`` the DDPM schedule, an input at
  noise level ``sigma`` is the scaled state ``x_t / sqrt(abar_t)`` for the (continuous) ``t`` with
  ``sqrt((1 - abar_t) / abar_t) = sigma``; then ``D = x - sigma * eps(sqrt(abar_t) x, t)``;
* :class:`DeepinvDPSSolver` -- ``deepinv.sampling.DPS`` (VP schedule, DDPM solver, residual-norm
  guidance with weight ``zeta``) with that denoiser, returning a
  :class:`~weakprior.noise_optimisation.SolveResult`.

deepinv is imported lazily; :func:`deepinv_available` says whether it is installed.
"""

from __future__ import annotations

import importlib.util

import torch

from .ddim import EpsModel, linear_alphas_cumprod
from .noise_optimisation import SolveResult
from .operators import (
    BoxInpainting,
    Downsample,
    GaussianBlur,
    Operator,
    RandomInpainting,
    check_measurement,
)


def deepinv_available() -> bool:
    """Whether the optional ``deepinv`` package is installed (without importing it)."""
    return importlib.util.find_spec("deepinv") is not None


def deepinv_physics(operator: Operator, x_shape: tuple[int, ...]):
    """The ``deepinv.physics.Physics`` computing the same ``A`` (and ``A^T``) as ``operator``."""
    import deepinv as dinv

    if isinstance(operator, (RandomInpainting, BoxInpainting)):
        return dinv.physics.Inpainting(img_size=tuple(x_shape[1:]), mask=operator.mask)
    if isinstance(operator, GaussianBlur):
        return dinv.physics.Blur(filter=operator.kernel[None, None], padding="circular")
    if isinstance(operator, Downsample):
        f = operator.factor
        box = torch.full((1, 1, f, f), 1.0 / f**2)
        return dinv.physics.Downsampling(
            img_size=tuple(x_shape[1:]), filter=box, factor=f, padding="valid"
        )
    raise ValueError(f"no deepinv counterpart for operator {type(operator).__name__}")


class EpsDenoiser(torch.nn.Module):
    """Denoiser ``D(x, sigma)`` (variance-exploding form) from an eps-model on a DDPM schedule.

    Examples
    --------
    >>> from weakprior.analytic_priors import GaussianPrior
    >>> prior = GaussianPrior(torch.zeros(1), torch.eye(1) * 0.25)
    >>> d = EpsDenoiser(prior.eps)
    >>> x = torch.full((1, 1), 1.0)
    >>> round(float(d(x, torch.tensor(0.5))), 3)  # E[x0 | x0 + 0.5 n = 1] = 0.25 / (0.25 + 0.25)
    0.5
    """

    def __init__(self, eps_model: EpsModel, alphas_cumprod: torch.Tensor | None = None) -> None:
        super().__init__()
        abar = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod.double()
        self.eps_model = eps_model
        self.register_buffer("log_sigma", 0.5 * torch.log((1 - abar) / abar))

    def _continuous_t(self, sigma: torch.Tensor) -> torch.Tensor:
        """The fractional timestep whose DDPM noise level equals ``sigma`` (log-linear interp.)."""
        ls = sigma.double().clamp_min(1e-8).log()
        grid = self.log_sigma
        ls = ls.clamp(float(grid[0]), float(grid[-1]))
        i = torch.searchsorted(grid, ls).clamp(1, len(grid) - 1)
        w = (ls - grid[i - 1]) / (grid[i] - grid[i - 1])
        return (i - 1).double() + w

    def forward(self, x: torch.Tensor, sigma) -> torch.Tensor:
        sigma = torch.as_tensor(sigma, dtype=torch.float64).flatten()
        if sigma.numel() == 1:
            sigma = sigma.expand(x.shape[0])
        t = self._continuous_t(sigma)
        shape = (-1,) + (1,) * (x.ndim - 1)
        scale = (1 + sigma**2).rsqrt().to(x).view(shape)  # sqrt(abar_t) = 1 / sqrt(1 + sigma^2)
        eps = self.eps_model(scale * x, t.to(x.dtype))
        return x - sigma.to(x).view(shape) * eps


class DeepinvDPSSolver:
    """deepinv's DPS sampler over one of our eps-models, solving our measurement problem.

    Parameters
    ----------
    eps_model:
        The prior's ``eps_model(x_t, t)`` on the linear 1000-step schedule.
    operator:
        One of our operators; :func:`deepinv_physics` gives deepinv's copy.
    weight:
        deepinv's DPS guidance weight on ``grad ||y - A D(x_t)||`` (the analogue of zeta).
    num_steps:
        Steps of deepinv's DDPM solver (the paper's DPS: 1000).
    seed:
        Seed of deepinv's sampler.
    """

    def __init__(
        self,
        eps_model: EpsModel,
        operator: Operator,
        weight: float = 1.0,
        num_steps: int = 100,
        seed: int = 0,
    ) -> None:
        if not weight >= 0:
            raise ValueError(f"deepinv DPS weight must be >= 0, got {weight}")
        if num_steps < 2:
            raise ValueError(f"deepinv DPS num_steps must be >= 2, got {num_steps}")
        self.denoiser = EpsDenoiser(eps_model)
        self.operator, self.weight = operator, float(weight)
        self.num_steps, self.seed = int(num_steps), int(seed)

    def solve(self, y: torch.Tensor, x_shape: tuple[int, ...] | None = None) -> SolveResult:
        """One deepinv DPS sample per measurement in the batch."""
        import deepinv as dinv

        x_shape = tuple(self.operator.adjoint(y).shape) if x_shape is None else tuple(x_shape)
        check_measurement(self.operator, x_shape, y)
        physics = deepinv_physics(self.operator, x_shape)
        rng = torch.Generator().manual_seed(self.seed)
        sampler = dinv.sampling.DPS(
            self.denoiser, num_steps=self.num_steps, weight=self.weight,
            dtype=torch.float32, rng=rng, minus_one_one=False,
        )  # fmt: skip
        x = sampler(y, physics, x_init=x_shape, seed=self.seed)
        return SolveResult(x.detach().float(), self.num_steps, 2 * self.num_steps)
