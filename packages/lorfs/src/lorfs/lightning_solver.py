"""LightningModule of LoRFS: a low-rank Fourier sum trained on its closed-form physics loss.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

One Lightning *training step* is one step of the chosen solver (manual optimisation, float64):

- ``solver="als"`` (linear PDEs): step 0 is the greedy rank-by-rank exact ALS
  (:func:`lorfs.als.greedy_als`), every further step one joint ALS sweep (:func:`lorfs.als.als_solve`);
- ``solver="gauss_newton"`` (nonlinear PDEs, ``D <= 3``): one block Levenberg-Marquardt sweep on
  the quadrature residual (:func:`lorfs.gauss_newton.gauss_newton_solve`);
- ``solver="adam_lbfgs"``: ``adam_steps`` Adam steps, then L-BFGS steps (each ``lbfgs_iter``
  inner iterations) on the same deterministic loss: the closed-form pieces of
  :meth:`lorfs.problems.Problem.pieces` (linear) or the exact-quadrature loss of
  :meth:`lorfs.problems.Problem.nonlinear_loss` (nonlinear), with the residual scaled by the
  operator's magnitude.

Validation and test log the relative L2 error against the exact/reference solution.
"""

from __future__ import annotations

from typing import Literal

import lightning.pytorch as pl
import torch

from .als import als_solve, greedy_als
from .fourier_sum import LowRankFourierSum
from .gauss_newton import gauss_newton_solve
from .problem_data import ProblemDataModule, ReferenceEvaluation, build_problem
from .residual import loss as closed_form_loss

Solver = Literal["als", "gauss_newton", "adam_lbfgs"]


def initial_condition_start(model: LowRankFourierSum, problem, scale: float = 1e-2) -> None:
    """Start term 0 at ``u(t, x) = g(x)`` (the initial condition held constant in time).

    The other terms keep their small random values. Used for nonlinear problems, where a
    random start converges to poor local minima.
    """
    if problem.initial is None:
        return
    g = problem.initial(model.axes)
    with torch.no_grad():
        for j, ax in enumerate(model.axes):
            free = model.free_parameters(j).clone() * scale
            c = g.factors[j][0]
            k = (c.shape[0] - 1) // 2
            if k < ax.modes:
                c = torch.nn.functional.pad(c, (ax.modes - k, ax.modes - k))
            elif k > ax.modes:
                c = c[k - ax.modes : k + ax.modes + 1]
            free[0] = torch.linalg.pinv(model._synth(j)) @ c
            model.set_free_parameters_(j, free)


class LoRFSModule(ReferenceEvaluation, pl.LightningModule):
    """LoRFS on a registry problem, trained by Lightning (exact ALS, Gauss-Newton or Adam + L-BFGS).

    Parameters
    ----------
    problem, params:
        Registry problem and its parameters (must match the datamodule's).
    rank:
        Number of rank-one terms (default: the problem's).
    modes:
        Fourier modes per axis, one int for all axes, or ``None`` for the problem's default.
    solver:
        ``"als"``, ``"gauss_newton"`` or ``"adam_lbfgs"`` (see the module docstring).
    adam_steps, lr, lbfgs_iter:
        Schedule of ``adam_lbfgs``.
    ic_weight:
        Weight of the initial-condition term.
    seed:
        Seed of the initial parameters.

    Examples
    --------
    >>> m = LoRFSModule("torus_poisson", {"d": 3}, solver="als")
    >>> m.model.rank, [ax.modes for ax in m.model.axes]
    (2, [2, 2, 2])
    >>> m(torch.zeros(4, 3, dtype=torch.float64)).shape
    torch.Size([4])
    """

    def __init__(
        self,
        problem: str = "convection",
        params: dict[str, float] | None = None,
        rank: int | None = None,
        modes: list[int] | int | None = None,
        solver: Solver = "als",
        adam_steps: int = 500,
        lr: float = 1e-2,
        lbfgs_iter: int = 50,
        ic_weight: float = 1.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.problem = build_problem(problem, params)
        if solver not in ("als", "gauss_newton", "adam_lbfgs"):
            raise ValueError(
                f"solver must be 'als', 'gauss_newton' or 'adam_lbfgs', got {solver!r}"
            )
        if solver == "als" and not self.problem.is_linear:
            raise ValueError(
                f"problem {self.problem.name!r} is nonlinear: ALS needs a linear PDE "
                "(use solver gauss_newton or adam_lbfgs)"
            )
        if solver == "gauss_newton" and self.problem.dim > 3:
            raise ValueError("solver gauss_newton uses a tensor quadrature grid: D <= 3")
        if not self.problem.is_linear and self.problem.dim > 3:
            raise ValueError("nonlinear problems use exact tensor quadrature: D <= 3")
        if adam_steps < 0 or lbfgs_iter < 1 or lr <= 0:
            raise ValueError("adam_steps must be >= 0, lbfgs_iter >= 1 and lr > 0")
        axes = self.problem.make_axes(modes)
        self.model = LowRankFourierSum(axes, self.problem.rank if rank is None else rank, seed=seed)
        if not self.problem.is_linear:
            initial_condition_start(self.model, self.problem)
        self._init_reference_metrics()
        self._step_counter = 0

    # ------------------------------------------------------------ forward / loss
    def forward(self, points: torch.Tensor) -> torch.Tensor:
        """Real field at ``points`` ``(N, D)`` -> ``(N,)``."""
        if points.dim() != 2 or points.shape[1] != self.model.dim:
            raise ValueError(
                f"dimension mismatch: points have shape {tuple(points.shape)}, the model has {self.model.dim} axes"
            )
        return self.model(points)

    def physics_loss(self) -> torch.Tensor:
        """The deterministic LoRFS loss (closed form if linear, exact quadrature otherwise)."""
        u = self.model.as_sum()
        ic = self.hparams.ic_weight
        if self.problem.is_linear:
            return closed_form_loss(self.problem.pieces(u, ic_weight=ic))
        return self.problem.nonlinear_loss(u, ic_weight=ic)

    # ------------------------------------------------------------ Lightning hooks
    def setup(self, stage: str) -> None:
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if isinstance(dm, ProblemDataModule) and dm.problem.name != self.problem.name:
            raise ValueError(
                f"the model solves {self.problem.name!r} but the data is for {dm.problem.name!r}"
            )

    def configure_optimizers(self):
        if self.hparams.solver != "adam_lbfgs":
            # The exact solvers update the parameters themselves; this zero-rate optimiser only
            # advances Lightning's step counter (checkpointing, max_steps, logging intervals).
            return torch.optim.SGD(self.model.parameters(), lr=0.0)
        adam = torch.optim.Adam(self.model.parameters(), lr=self.hparams.lr)
        lbfgs = torch.optim.LBFGS(
            self.model.parameters(),
            lr=1.0,
            max_iter=self.hparams.lbfgs_iter,
            history_size=50,
            line_search_fn="strong_wolfe",
            tolerance_grad=1e-14,
            tolerance_change=1e-16,
        )
        return [adam, lbfgs]

    def training_step(self, batch, batch_idx):
        solver = self.hparams.solver
        step = self._step_counter
        if solver == "als":

            def build(u):
                return self.problem.pieces(u, ic_weight=self.hparams.ic_weight)

            if step == 0:
                hist = greedy_als(self.model, build, seed=self.hparams.seed)
            else:
                hist = als_solve(self.model, build, sweeps=1)
            value = torch.tensor(hist.losses[-1], dtype=torch.float64)
        elif solver == "gauss_newton":
            hist = gauss_newton_solve(
                self.model, self.problem, sweeps=1, ic_weight=self.hparams.ic_weight
            )
            value = torch.tensor(hist.losses[-1], dtype=torch.float64)
        else:
            value = None
        if value is not None:
            self.optimizers().step()  # no gradients: only counts the step
        else:
            adam, lbfgs = self.optimizers()
            if step < self.hparams.adam_steps:
                adam.zero_grad()
                value = self.physics_loss()
                self.manual_backward(value)
                adam.step()
            else:

                def closure():
                    lbfgs.zero_grad()
                    out = self.physics_loss()
                    self.manual_backward(out)
                    return out

                value = lbfgs.step(closure)
            value = value.detach()
        self._step_counter += 1
        self.log("train_loss", value, prog_bar=True, batch_size=1)
        return value
