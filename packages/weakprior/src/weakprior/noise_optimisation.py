"""The paper's solver: optimise the initial noise ``z`` of the few-step generator ``G``.

``min_z || M_fit * (A(G(z)) - y) ||^2`` (paper Sec. 3) with

* ``optimizer="adam_sphere"``: :class:`~weakprior.sphere.AdamOnSphere` (lr 0.01, per-sample
  radius ``sqrt(d)``) and ``early_stop="holdout"``: :class:`~weakprior.early_stopping.HoldOutStopper`
  on a 90/10 split of the observed entries -- the paper's method;
* ``optimizer="adam"``, ``early_stop="wmv"``: plain Adam on ``z`` fitting every observed entry,
  with the windowed-variance stopper -- the DMPlug baseline.

``z`` starts from ``N(0, I)`` drawn from ``seed``; all samples of a batch are solved at once,
independently (the loss is a sum of per-sample losses).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

from .early_stopping import HoldOutStopper, WindowedVarianceStopper, holdout_split
from .operators import Operator, check_measurement
from .sphere import AdamOnSphere


@dataclass
class SolveResult:
    """Output of a solver: the estimate and some bookkeeping."""

    x: torch.Tensor
    iterations: int
    network_evaluations: int
    chosen_iteration: list[int] | None = None


class NoiseOptimisationSolver:
    """Noise-space optimisation through a few-step DDIM generator.

    Parameters
    ----------
    generator:
        ``G(z)``, e.g. :class:`~weakprior.ddim.FewStepDDIM`.
    operator:
        The forward operator ``A``.
    optimizer:
        ``"adam_sphere"`` (paper) or ``"adam"`` (DMPlug).
    early_stop:
        ``"holdout"`` (paper), ``"wmv"`` (DMPlug) or ``"none"`` (last iterate).
    iterations, lr:
        Number of optimisation steps (paper: 1000) and learning rate (paper: 0.01).
    train_frac, best_k, patience:
        Hold-out split and stopper settings (paper: 0.9, 100, 1000).
    window, wmv_patience:
        Windowed-variance stopper settings (DMPlug: 10, 100).
    seed:
        Seed of the initial noise and of the hold-out split.

    Examples
    --------
    >>> from weakprior.analytic_priors import GaussianPrior
    >>> from weakprior.ddim import FewStepDDIM
    >>> from weakprior.operators import MatrixOperator
    >>> prior = GaussianPrior(torch.zeros(4), torch.eye(4))
    >>> op = MatrixOperator(torch.eye(4))
    >>> solver = NoiseOptimisationSolver(FewStepDDIM(prior.eps, clip=False), op, "adam", "none",
    ...                                  iterations=200, lr=0.05)
    >>> y = torch.tensor([[0.5, -0.5, 1.0, 0.0]])
    >>> (solver.solve(y).x - y).abs().max().item() < 0.05
    True
    """

    def __init__(
        self,
        generator: torch.nn.Module,
        operator: Operator,
        optimizer: Literal["adam_sphere", "adam"] = "adam_sphere",
        early_stop: Literal["holdout", "wmv", "none"] = "holdout",
        iterations: int = 1000,
        lr: float = 0.01,
        train_frac: float = 0.9,
        best_k: int = 100,
        patience: int = 1000,
        window: int = 10,
        wmv_patience: int = 100,
        seed: int = 0,
    ) -> None:
        if optimizer not in ("adam_sphere", "adam"):
            raise ValueError(f"optimizer must be 'adam_sphere' or 'adam', got {optimizer!r}")
        if early_stop not in ("holdout", "wmv", "none"):
            raise ValueError(f"early_stop must be 'holdout', 'wmv' or 'none', got {early_stop!r}")
        if iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {iterations}")
        self.generator, self.operator = generator, operator
        self.optimizer, self.early_stop = optimizer, early_stop
        self.iterations, self.lr = int(iterations), float(lr)
        self.train_frac, self.best_k, self.patience = train_frac, best_k, patience
        self.window, self.wmv_patience = window, wmv_patience
        self.seed = int(seed)

    def solve(self, y: torch.Tensor, x_shape: tuple[int, ...] | None = None) -> SolveResult:
        """Reconstruct ``x`` from ``y``; ``x_shape`` defaults to the shape of ``A^T y``."""
        x_shape = tuple(self.operator.adjoint(y).shape) if x_shape is None else tuple(x_shape)
        check_measurement(self.operator, x_shape, y)
        observed = self.operator.observed(x_shape)
        if self.early_stop == "holdout":
            fit, val = holdout_split(observed, self.train_frac, self.seed + 1)
            stopper = HoldOutStopper(self.best_k, self.patience)
        else:
            fit, val = observed, None
            stopper = (
                WindowedVarianceStopper(self.window, self.wmv_patience)
                if self.early_stop == "wmv"
                else None
            )
        n_fit = fit.flatten(1).sum(1).clamp_min(1)
        n_val = None if val is None else val.flatten(1).sum(1).clamp_min(1)
        gen = torch.Generator().manual_seed(self.seed)
        z = torch.randn(x_shape, generator=gen).requires_grad_(True)
        opt = (
            AdamOnSphere([z], lr=self.lr)
            if self.optimizer == "adam_sphere"
            else torch.optim.Adam([z], lr=self.lr)
        )
        x = None
        it = 0
        for it in range(1, self.iterations + 1):  # noqa: B007 - used after the loop
            opt.zero_grad(set_to_none=True)
            x = self.generator(z)
            resid = self.operator(x) - y
            loss = ((fit * resid) ** 2).flatten(1).sum(1) / n_fit
            loss.sum().backward()
            if stopper is not None:
                vloss = (
                    None if val is None else ((val * resid.detach()) ** 2).flatten(1).sum(1) / n_val
                )
                if stopper.update(vloss, x.detach()):
                    break
            opt.step()
        if stopper is None:
            with torch.no_grad():
                out = self.generator(z)
        else:
            out = stopper.best()
        chosen = getattr(stopper, "chosen_iteration", None)
        return SolveResult(
            out.detach(), it, it * getattr(self.generator, "num_evaluations", 1), chosen
        )
