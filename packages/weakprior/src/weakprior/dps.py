"""Diffusion posterior sampling (DPS; Chung et al., ICLR 2023), the paper's main baseline.

Ancestral DDPM sampling where every step is followed by a measurement-gradient step:

* ``x0_hat = (x_t - sqrt(1 - abar_t) eps(x_t, t)) / sqrt(abar_t)`` (clipped to ``[-1, 1]``);
* ``x_{t-1}' = c1 x0_hat + c2 x_t + sqrt(beta~_t) n`` (the DDPM posterior, ``n ~ N(0, I)``);
* ``x_{t-1} = x_{t-1}' - zeta * grad_{x_t} || y - A(x0_hat) ||`` -- the gradient of the *norm*
  (not its square), as in the DPS code; ``zeta = 0.5`` for inpainting, ``0.3`` for blur / SR.

``num_steps < T`` respaces the schedule (``beta_t = 1 - abar_t / abar_prev`` on the kept steps);
the paper uses all 1000.
"""

from __future__ import annotations

import torch

from .ddim import EpsModel, linear_alphas_cumprod, spaced_timesteps
from .noise_optimisation import SolveResult
from .operators import Operator, check_measurement


class DPSSolver:
    """DPS sampler for ``y = A(x) + noise``.

    Examples
    --------
    >>> from weakprior.analytic_priors import GaussianPrior
    >>> from weakprior.operators import MatrixOperator
    >>> prior = GaussianPrior(torch.zeros(2), torch.eye(2))
    >>> dps = DPSSolver(prior.eps, MatrixOperator(torch.eye(2)), scale=0.3, num_steps=50, clip=False)
    >>> dps.solve(torch.zeros(4, 2)).x.shape
    torch.Size([4, 2])
    """

    def __init__(
        self,
        eps_model: EpsModel,
        operator: Operator,
        scale: float = 0.5,
        num_steps: int = 1000,
        alphas_cumprod: torch.Tensor | None = None,
        clip: bool = True,
        seed: int = 0,
    ) -> None:
        if not scale >= 0:
            raise ValueError(f"DPS scale must be >= 0, got {scale}")
        abar = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod.double()
        if not 1 <= num_steps <= len(abar):
            raise ValueError(f"DPS num_steps must lie in [1, {len(abar)}], got {num_steps}")
        self.eps_model, self.operator = eps_model, operator
        self.scale, self.clip, self.seed = float(scale), bool(clip), int(seed)
        self.alphas_cumprod = abar
        self.timesteps = spaced_timesteps(num_steps, len(abar))
        if num_steps == len(abar):
            self.timesteps = tuple(range(len(abar) - 1, -1, -1))

    def solve(self, y: torch.Tensor, x_shape: tuple[int, ...] | None = None) -> SolveResult:
        """One DPS sample per measurement in the batch."""
        x_shape = tuple(self.operator.adjoint(y).shape) if x_shape is None else tuple(x_shape)
        check_measurement(self.operator, x_shape, y)
        observed = self.operator.observed(x_shape)
        gen = torch.Generator().manual_seed(self.seed)
        x = torch.randn(x_shape, generator=gen, dtype=y.dtype)
        abar = self.alphas_cumprod
        x0 = x
        for i, t in enumerate(self.timesteps):
            a_t = abar[t]
            a_prev = (
                abar[self.timesteps[i + 1]] if i + 1 < len(self.timesteps) else abar.new_ones(())
            )
            beta = 1 - a_t / a_prev
            x = x.detach().requires_grad_(True)
            eps = self.eps_model(x, torch.full((x_shape[0],), t, dtype=torch.long))
            x0 = (x - (1 - a_t).sqrt().to(x) * eps) / a_t.sqrt().to(x)
            if self.clip:
                x0 = x0.clamp(-1.0, 1.0)
            resid = observed * (y - self.operator(x0))
            norm = resid.flatten(1).norm(dim=1)
            (grad,) = torch.autograd.grad(norm.sum(), x)
            with torch.no_grad():
                if i + 1 == len(self.timesteps):
                    x = x0.detach()
                    break
                c1 = (a_prev.sqrt() * beta / (1 - a_t)).to(x)
                c2 = ((1 - beta).sqrt() * (1 - a_prev) / (1 - a_t)).to(x)
                var = (beta * (1 - a_prev) / (1 - a_t)).to(x)
                noise = torch.randn(x_shape, generator=gen, dtype=x.dtype)
                x = c1 * x0 + c2 * x + var.sqrt() * noise - self.scale * grad
        return SolveResult(x.detach(), len(self.timesteps), 2 * len(self.timesteps))
