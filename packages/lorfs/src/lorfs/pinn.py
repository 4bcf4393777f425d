"""PINN baselines in the same harness: networks, collocation points and the pointwise residual.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026. Baseline protocol of the notes (Sec. B4): a 4 x 50 tanh MLP,
Latin-hypercube collocation points, Adam then L-BFGS, in float32 and float64.

The loss is the collocation (Monte-Carlo) estimate that LoRFS replaces by a closed form:

    mean_i (L u + sum_p a_p u^p - f)(z_i)^2 + w_ic mean (u(0, x) - g)^2 + w_bc (boundary terms)

with derivatives by autograd (:func:`pde_residual`), on Latin-hypercube collocation points
(:func:`latin_hypercube`, ``scipy.stats.qmc``). Boundary terms: periodic axes
``u(.., a, ..) = u(.., b, ..)`` on random boundary pairs (one random periodic axis per point),
Dirichlet axes ``u = 0`` on random faces, and ``(mean u)^2`` for torus problems with a
null space.

The trainable LightningModule is :class:`lorfs.lightning.PINNModule`; its architectures
(``arch``):

- ``"mlp"``: the plain PINN (Raissi et al. 2019);
- ``"fourier"``: random Fourier features ``[cos(Bz), sin(Bz)]`` before the MLP (Tancik et al. 2020);
- ``"separable"``: ``u = sum_r prod_j f_{j,r}(z_j)`` with one small MLP per axis (SPINN, Cho et al. 2023).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from .basis import RDTYPE
from .problems import Problem

Arch = Literal["mlp", "fourier", "separable"]


def mlp(n_in: int, width: int, depth: int, n_out: int = 1) -> nn.Sequential:
    """``depth`` hidden tanh layers of ``width`` units."""
    layers: list[nn.Module] = []
    d = n_in
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.Tanh()]
        d = width
    layers.append(nn.Linear(d, n_out))
    return nn.Sequential(*layers)


class FourierFeatureNet(nn.Module):
    """``MLP([cos(B z), sin(B z)])`` with fixed Gaussian ``B`` of scale ``sigma``."""

    def __init__(self, n_in: int, width: int, depth: int, features: int, sigma: float, seed: int):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.register_buffer("B", sigma * torch.randn(n_in, features, generator=gen))
        self.net = mlp(2 * features, width, depth)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        proj = z @ self.B.to(z.dtype)
        return self.net(torch.cat([torch.cos(proj), torch.sin(proj)], -1))


class SeparableNet(nn.Module):
    """``u(z) = sum_r prod_j f_{j,r}(z_j)``: one ``1 -> rank`` MLP per axis."""

    def __init__(self, n_in: int, width: int, depth: int, rank: int):
        super().__init__()
        self.nets = nn.ModuleList([mlp(1, width, depth, rank) for _ in range(n_in)])

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        prod = None
        for j, net in enumerate(self.nets):
            f = net(z[:, j : j + 1])
            prod = f if prod is None else prod * f
        return prod.sum(-1, keepdim=True)


def pde_residual(problem, net, z: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """Pointwise ``L u + sum_p a_p u^p - f`` of the network ``net`` at ``z`` (autograd)."""
    z = z.detach().requires_grad_(True)
    u = net(z).squeeze(-1)
    op = problem.operator
    res = op.constant * u
    for p, a in problem.reaction.items():
        res = res + a * u**p
    if op.derivatives:
        (g,) = torch.autograd.grad(u.sum(), z, create_graph=True)
        for j, orders in op.derivatives.items():
            for m, c in orders.items():
                if m == 1:
                    res = res + float(c.real if isinstance(c, complex) else c) * g[:, j]
                elif m == 2:
                    (g2,) = torch.autograd.grad(g[:, j].sum(), z, create_graph=True)
                    res = res + float(c.real if isinstance(c, complex) else c) * g2[:, j]
                else:
                    raise ValueError(f"PINN residual supports derivative orders 1 and 2, got {m}")
    return res - source


def latin_hypercube(problem: Problem, n: int, seed: int = 0) -> torch.Tensor:
    """``n`` Latin-hypercube points in the problem's box, ``(n, D)`` float64."""
    from scipy.stats import qmc

    if n < 1:
        raise ValueError(f"number of collocation points must be >= 1, got {n}")
    sampler = qmc.LatinHypercube(d=problem.dim, seed=seed)
    lo = [s.domain[0] for s in problem.specs]
    hi = [s.domain[1] for s in problem.specs]
    return torch.tensor(qmc.scale(sampler.random(n), lo, hi), dtype=RDTYPE)
