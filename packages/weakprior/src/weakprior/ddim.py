"""The few-step deterministic DDIM generator ``G(z)`` (paper Sec. 3, "generator").

* :func:`linear_alphas_cumprod` -- the 1000-step linear-beta DDPM schedule
  (``beta`` from ``1e-4`` to ``0.02``), ``abar_t = prod_{s<=t} (1 - beta_s)``.
* :class:`FewStepDDIM` -- DDIM with ``eta = 0`` over the timesteps ``(666, 333, 0)`` (what
  ``DDIMScheduler.set_timesteps(3)`` gives for ``T = 1000``). Each step predicts
  ``x0 = (x_t - sqrt(1 - abar_t) eps) / sqrt(abar_t)``, clips it to ``[-1, 1]``, recomputes
  ``eps`` from the clipped ``x0`` and moves to
  ``x_prev = sqrt(abar_prev) x0 + sqrt(1 - abar_prev) eps`` (``abar_prev = 1`` after the last
  step, so ``G(z)`` is the last ``x0``).

An *eps-model* is any callable ``eps_model(x_t, t)`` with ``t`` a ``LongTensor`` of shape
``(B,)``: the tiny UNet of :mod:`weakprior.lightning`, a diffusers ``UNet2DModel`` wrapped
by :func:`weakprior.pretrained.diffusers_eps_model`, or the exact analytic models of
:mod:`weakprior.analytic_priors`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

EpsModel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def linear_alphas_cumprod(
    num_train_timesteps: int = 1000, beta_start: float = 1e-4, beta_end: float = 0.02
) -> torch.Tensor:
    """``abar_t`` of the linear-beta DDPM schedule (diffusers' ``"linear"``), float64."""
    betas = torch.linspace(beta_start, beta_end, num_train_timesteps, dtype=torch.float64)
    return torch.cumprod(1.0 - betas, dim=0)


def check_timesteps(timesteps: Sequence[int], num_train_timesteps: int) -> tuple[int, ...]:
    """Validate a DDIM schedule: integers in ``[0, T)``, strictly decreasing."""
    ts = tuple(int(t) for t in timesteps)
    if not ts:
        raise ValueError("DDIM timesteps must not be empty")
    if any(t < 0 or t >= num_train_timesteps for t in ts):
        raise ValueError(f"DDIM timesteps must lie in [0, {num_train_timesteps}), got {list(ts)}")
    if any(a <= b for a, b in zip(ts, ts[1:], strict=False)):
        raise ValueError(f"DDIM timesteps must be strictly decreasing, got {list(ts)}")
    return ts


def spaced_timesteps(steps: int, num_train_timesteps: int = 1000) -> tuple[int, ...]:
    """The DDIM "leading" spacing of diffusers: ``steps=3, T=1000`` gives ``(666, 333, 0)``."""
    if steps < 1:
        raise ValueError(f"number of DDIM steps must be >= 1, got {steps}")
    ratio = num_train_timesteps // steps
    return tuple(int(i * ratio) for i in reversed(range(steps)))


class FewStepDDIM(torch.nn.Module):
    """Deterministic DDIM ``G(z)``: initial noise ``z`` to a clean image in a few steps.

    Parameters
    ----------
    eps_model:
        ``eps_model(x_t, t) -> eps`` (a module or any callable).
    timesteps:
        Strictly decreasing timesteps; the paper's ``(666, 333, 0)``.
    alphas_cumprod:
        ``abar_t`` for ``t = 0..T-1`` (default: :func:`linear_alphas_cumprod`).
    clip:
        Clip the predicted ``x0`` to ``[-1, 1]`` at every step (the paper does).

    Examples
    --------
    >>> from weakprior.analytic_priors import GaussianPrior
    >>> prior = GaussianPrior(torch.zeros(4), torch.eye(4))
    >>> g = FewStepDDIM(prior.eps, timesteps=(666, 333, 0), clip=False)
    >>> g(torch.zeros(2, 4)).abs().max().item() < 1e-6  # the mean maps to the mean
    True
    """

    def __init__(
        self,
        eps_model: EpsModel,
        timesteps: Sequence[int] = (666, 333, 0),
        alphas_cumprod: torch.Tensor | None = None,
        clip: bool = True,
    ) -> None:
        super().__init__()
        abar = linear_alphas_cumprod() if alphas_cumprod is None else alphas_cumprod
        self.eps_model = eps_model
        self.timesteps = check_timesteps(timesteps, len(abar))
        self.register_buffer("alphas_cumprod", abar.double(), persistent=False)
        self.clip = bool(clip)

    @property
    def num_evaluations(self) -> int:
        """Network evaluations per call of ``G``."""
        return len(self.timesteps)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """``G(z)``; differentiable in ``z`` (the solvers back-propagate through it)."""
        x = z
        abar = self.alphas_cumprod
        for i, t in enumerate(self.timesteps):
            a_t = abar[t].to(z.dtype)
            a_prev = (
                abar[self.timesteps[i + 1]].to(z.dtype)
                if i + 1 < len(self.timesteps)
                else torch.ones((), dtype=z.dtype)
            )
            tt = torch.full((z.shape[0],), t, dtype=torch.long)
            eps = self.eps_model(x, tt)
            x0 = (x - (1 - a_t).sqrt() * eps) / a_t.sqrt()
            if self.clip:
                x0 = x0.clamp(-1.0, 1.0)
                eps = (x - a_t.sqrt() * x0) / (1 - a_t).sqrt()
            x = a_prev.sqrt() * x0 + (1 - a_prev).sqrt() * eps
        return x
