"""PINN baselines in the same harness: MLP, Fourier-feature and separable PINNs (Lightning).

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026. Baseline protocol of the notes (Sec. B4): a 4 x 50 tanh MLP,
Latin-hypercube collocation points, Adam then L-BFGS, in float32 and float64.

The loss is the collocation (Monte-Carlo) estimate that LoRFS replaces by a closed form:

    mean_i (L u + sum_p a_p u^p - f)(z_i)^2 + w_ic mean (u(0, x) - g)^2 + w_bc (boundary terms)

with derivatives by autograd (:func:`pde_residual`). Boundary terms: periodic axes
``u(.., a, ..) = u(.., b, ..)`` on random boundary pairs (one random periodic axis per point),
Dirichlet axes ``u = 0`` on random faces, and ``(mean u)^2`` for torus problems with a
null space.

Architectures (:class:`PINNModule` ``arch``):

- ``"mlp"``: the plain PINN (Raissi et al. 2019);
- ``"fourier"``: random Fourier features ``[cos(Bz), sin(Bz)]`` before the MLP (Tancik et al. 2020);
- ``"separable"``: ``u = sum_r prod_j f_{j,r}(z_j)`` with one small MLP per axis (SPINN, Cho et al. 2023).
"""

from __future__ import annotations

from typing import Literal

import lightning.pytorch as pl
import torch
from torch import nn

from .problem_data import ProblemDataModule, ReferenceEvaluation, build_problem

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


class PINNModule(ReferenceEvaluation, pl.LightningModule):
    """A physics-informed neural network baseline on a registry problem.

    Parameters
    ----------
    problem, params:
        Registry problem and parameters (the datamodule's collocation points are the batch).
    arch:
        ``"mlp"``, ``"fourier"`` or ``"separable"``.
    width, depth:
        Hidden layer width and number of hidden layers (per-axis nets for ``separable``).
    features, sigma:
        Number and scale of the random Fourier features (``arch="fourier"``).
    sep_rank:
        Output features per axis of the separable PINN.
    precision:
        ``"float32"`` or ``"float64"`` parameters and inputs.
    adam_steps, lr, lbfgs_iter:
        Adam steps first, then L-BFGS steps of ``lbfgs_iter`` inner iterations each.
    n_boundary:
        Initial-condition and boundary points.
    ic_weight, bc_weight:
        Loss weights.
    seed:
        Seed of the initialisation and of the boundary points.

    Examples
    --------
    >>> m = PINNModule("convection", {"beta": 30}, width=8, depth=2)
    >>> m(torch.rand(5, 2, dtype=torch.float64)).shape
    torch.Size([5])
    >>> sum(p.numel() for p in m.parameters())
    105
    """

    def __init__(
        self,
        problem: str = "convection",
        params: dict[str, float] | None = None,
        arch: Arch = "mlp",
        width: int = 50,
        depth: int = 4,
        features: int = 64,
        sigma: float = 1.0,
        sep_rank: int = 16,
        precision: Literal["float32", "float64"] = "float32",
        adam_steps: int = 1000,
        lr: float = 1e-3,
        lbfgs_iter: int = 20,
        n_boundary: int = 256,
        ic_weight: float = 1.0,
        bc_weight: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.problem = build_problem(problem, params)
        for name, v in (("width", width), ("depth", depth), ("features", features)):
            if v < 1:
                raise ValueError(f"{name} must be >= 1, got {v}")
        if precision not in ("float32", "float64"):
            raise ValueError(f"precision must be 'float32' or 'float64', got {precision!r}")
        dtype = torch.float32 if precision == "float32" else torch.float64
        torch.manual_seed(seed)
        d = self.problem.dim
        if arch == "mlp":
            self.net = mlp(d, width, depth)
        elif arch == "fourier":
            self.net = FourierFeatureNet(d, width, depth, features, sigma, seed)
        elif arch == "separable":
            self.net = SeparableNet(d, width, depth, sep_rank)
        else:
            raise ValueError(f"arch must be 'mlp', 'fourier' or 'separable', got {arch!r}")
        self.net = self.net.to(dtype)
        self._dtype = dtype
        self._boundary = self._boundary_data(n_boundary, seed)
        self._init_reference_metrics()
        self._step_counter = 0

    # ------------------------------------------------------------ data of the loss
    def _boundary_data(self, n: int, seed: int) -> dict[str, torch.Tensor]:
        prob = self.problem
        gen = torch.Generator().manual_seed(seed + 7)
        lo = torch.tensor([s.domain[0] for s in prob.specs], dtype=torch.float64)
        hi = torch.tensor([s.domain[1] for s in prob.specs], dtype=torch.float64)

        def box(m: int) -> torch.Tensor:
            return lo + (hi - lo) * torch.rand(m, prob.dim, dtype=torch.float64, generator=gen)

        out: dict[str, torch.Tensor] = {}
        if prob.initial is not None:
            z = box(n)
            z[:, prob.time_axis] = lo[prob.time_axis]
            out["ic_z"], out["ic_g"] = z, prob.initial_values(z)
        for kind in ("periodic", "dirichlet"):
            axes = [j for j, s in enumerate(prob.specs) if s.boundary == kind]
            if not axes:
                continue
            z = box(n)
            which = torch.tensor(axes)[torch.randint(len(axes), (n,), generator=gen)]
            rows = torch.arange(n)
            za, zb = z.clone(), z.clone()
            za[rows, which] = lo[which]
            zb[rows, which] = hi[which]
            out[f"{kind}_a"], out[f"{kind}_b"] = za, zb
        return out

    def forward(self, points: torch.Tensor) -> torch.Tensor:
        """Network values at ``points`` ``(N, D)`` -> ``(N,)`` (float64 output)."""
        if points.dim() != 2 or points.shape[1] != self.problem.dim:
            raise ValueError(
                f"dimension mismatch: points have shape {tuple(points.shape)}, the problem has {self.problem.dim} axes"
            )
        return self.net(points.to(self._dtype)).squeeze(-1).to(torch.float64)

    def collocation_loss(self, z: torch.Tensor) -> torch.Tensor:
        """The PINN loss on collocation points ``z`` (Monte-Carlo residual + IC/BC terms)."""
        dt = self._dtype
        key = (tuple(z.shape), float(z[0, 0]), float(z[-1, -1]))
        if getattr(self, "_source_cache", (None,))[0] != key:
            self._source_cache = (key, self.problem.source_values(z.to(torch.float64)).to(dt))
        res = pde_residual(self.problem, self.net, z.to(dt), self._source_cache[1])
        total = res.pow(2).mean()
        b = self._boundary
        hp = self.hparams
        if "ic_z" in b:
            total = total + hp.ic_weight * (
                (self.net(b["ic_z"].to(dt)).squeeze(-1) - b["ic_g"].to(dt)).pow(2).mean()
            )
        if "periodic_a" in b:
            diff = self.net(b["periodic_a"].to(dt)) - self.net(b["periodic_b"].to(dt))
            total = total + hp.bc_weight * diff.pow(2).mean()
        if "dirichlet_a" in b:
            za, zb = b["dirichlet_a"].to(dt), b["dirichlet_b"].to(dt)
            total = total + hp.bc_weight * 0.5 * (
                self.net(za).pow(2).mean() + self.net(zb).pow(2).mean()
            )
        if self.problem.null_space:
            total = total + self.net(z.to(dt)).mean().pow(2)
        return total

    # ------------------------------------------------------------ Lightning hooks
    def setup(self, stage: str) -> None:
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if isinstance(dm, ProblemDataModule) and dm.problem.name != self.problem.name:
            raise ValueError(
                f"the model solves {self.problem.name!r} but the data is for {dm.problem.name!r}"
            )

    def configure_optimizers(self):
        adam = torch.optim.Adam(self.net.parameters(), lr=self.hparams.lr)
        lbfgs = torch.optim.LBFGS(
            self.net.parameters(),
            lr=1.0,
            max_iter=self.hparams.lbfgs_iter,
            history_size=50,
            line_search_fn="strong_wolfe",
        )
        return [adam, lbfgs]

    def training_step(self, batch, batch_idx):
        (z,) = batch
        adam, lbfgs = self.optimizers()
        step = self._step_counter
        if step < self.hparams.adam_steps:
            adam.zero_grad()
            value = self.collocation_loss(z)
            self.manual_backward(value)
            adam.step()
        else:

            def closure():
                lbfgs.zero_grad()
                out = self.collocation_loss(z)
                self.manual_backward(out)
                return out

            value = lbfgs.step(closure)
        self._step_counter = step + 1
        value = value.detach()
        self.log("train_loss", value.to(torch.float64), prog_bar=True, batch_size=1)
        return value
