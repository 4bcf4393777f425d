"""Adam on the sphere ``||z|| = sqrt(d)``, per sample (paper Sec. 3, "stabilised optimisation").

The Gaussian prior on the initial noise ``z in R^d`` concentrates at radius ``sqrt(d)``; the
paper replaces it by the sphere and runs Adam there. One step of :class:`AdamOnSphere`, for each
sample ``b`` with radius ``r``:

1. project the gradient on the tangent space: ``g_T = g - (<z, g> / r^2) z``;
2. update the Adam moments on ``g_T`` (``beta = (0.9, 0.999)``, bias-corrected);
3. project the preconditioned step ``s = lr * m_hat / (sqrt(v_hat) + eps)`` on the tangent space;
4. retract: ``z <- r (z - s) / ||z - s||`` (``"normalize"``, the default) or the exponential map
   ``z <- cos(|s|/r) z - r sin(|s|/r) s / |s|`` (``"exp"``).

The authors' code treats the whole batch tensor as one sphere; here every sample has its own
sphere (the first dimension is the batch).
"""

from __future__ import annotations

import math
from typing import Literal

import torch


def _bdot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per-sample inner product, shaped to broadcast against ``a``."""
    return (a * b).flatten(1).sum(1).view(-1, *([1] * (a.ndim - 1)))


def project_to_sphere(z: torch.Tensor, radius: float | None = None) -> torch.Tensor:
    """Rescale every sample of ``z`` to norm ``radius`` (default ``sqrt(d)``)."""
    d = z[0].numel()
    r = math.sqrt(d) if radius is None else float(radius)
    if not r > 0:
        raise ValueError(f"sphere radius must be > 0, got {r}")
    return z * (r / _bdot(z, z).sqrt().clamp_min(1e-12))


def tangent(z: torch.Tensor, g: torch.Tensor) -> torch.Tensor:
    """Per-sample tangent-space projection ``g - (<z, g> / <z, z>) z``."""
    return g - _bdot(z, g) / _bdot(z, z).clamp_min(1e-12) * z


class AdamOnSphere(torch.optim.Optimizer):
    """Adam constrained to per-sample spheres of radius ``sqrt(d)`` (or ``radius``).

    Parameters
    ----------
    params:
        Tensors of shape ``(B, ...)``; each is projected onto its spheres at construction.
    lr, betas, eps:
        Adam hyper-parameters (paper: ``lr = 0.01``, ``betas = (0.9, 0.999)``).
    radius:
        Sphere radius; default ``sqrt(d)`` with ``d`` the size of one sample.
    retraction:
        ``"normalize"`` (paper default) or ``"exp"`` (exponential map).

    Examples
    --------
    >>> z = torch.randn(3, 8, requires_grad=True)
    >>> opt = AdamOnSphere([z], lr=0.1)
    >>> (z * torch.arange(8.0)).sum().backward(); opt.step()
    >>> torch.allclose(z.detach().norm(dim=1), torch.full((3,), 8 ** 0.5))
    True
    """

    def __init__(
        self,
        params,
        lr: float = 0.01,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        radius: float | None = None,
        retraction: Literal["normalize", "exp"] = "normalize",
    ) -> None:
        if radius is not None and not float(radius) > 0:
            raise ValueError(f"sphere radius must be > 0, got {radius}")
        if retraction not in ("normalize", "exp"):
            raise ValueError(f"retraction must be 'normalize' or 'exp', got {retraction!r}")
        if not lr > 0:
            raise ValueError(f"learning rate must be > 0, got {lr}")
        super().__init__(
            params, dict(lr=lr, betas=betas, eps=eps, radius=radius, retraction=retraction)
        )
        with torch.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    p.copy_(project_to_sphere(p, self._radius(p, group)))

    @staticmethod
    def _radius(p: torch.Tensor, group: dict) -> float:
        return math.sqrt(p[0].numel()) if group["radius"] is None else float(group["radius"])

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D102 - torch.optim signature
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                r = self._radius(p, group)
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                k = state["step"]
                g = tangent(p, p.grad)  # 1. tangent gradient
                state["m"].mul_(b1).add_(g, alpha=1 - b1)  # 2. moments on g_T
                state["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
                m_hat = state["m"] / (1 - b1**k)
                v_hat = state["v"] / (1 - b2**k)
                s = group["lr"] * m_hat / (v_hat.sqrt() + group["eps"])
                s = tangent(p, s)  # 3. tangent step
                if group["retraction"] == "normalize":  # 4. retraction
                    p.copy_(project_to_sphere(p - s, r))
                else:
                    n = _bdot(s, s).sqrt()
                    theta = n / r
                    direction = s / n.clamp_min(1e-12)
                    p.copy_(
                        project_to_sphere(
                            torch.cos(theta) * p - r * torch.sin(theta) * direction, r
                        )
                    )
        return loss
