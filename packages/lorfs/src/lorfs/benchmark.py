"""The benchmark harness: every method on the same problem, timed in the same run.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026 (notes, Sec. B4: problems x methods, relative L2 error and
wall time).

- :func:`solve_problem`: LoRFS (exact greedy + joint ALS for linear problems, causal time
  slabs with Picard linearisation and closed-form nonlinear terms for nonlinear ones)
- :func:`train_pinn`: a PINN baseline trained with Lightning on the same problem
- :func:`spectral_run`: the full-tensor spectral ceiling (linear, ``D <= 3``)
- :func:`compare_losses`: closed-form residual vs exact quadrature vs Monte Carlo
- :func:`mc_variance`: relative standard deviation of the Monte-Carlo loss estimate vs ``d``
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from .basis import CDTYPE, FourierAxis
from .fourier_sum import LowRankFourierSum, SeparableSum
from .operators import Identity
from .problems import build_problem, relative_error_on
from .residual import Piece, mc_norm2, piece_norm2, quadrature_residual_l2


@dataclass
class MethodRun:
    """One cell of the results table."""

    problem: str
    method: str
    error: float
    seconds: float
    n_params: int = 0
    rank: int = 0
    solver: str = ""


def solve_problem(
    name: str,
    params: dict | None = None,
    rank: int | None = None,
    modes=None,
    sweeps: int | None = None,
    seed: int = 0,
    n_test: int = 10_000,
    slabs: int = 20,
    picard: int = 30,
) -> MethodRun:
    """Solve with LoRFS; the timing covers the whole solve (not the evaluation).

    Linear problems: exact greedy + joint ALS (:func:`lorfs.als.solve_linear`). Nonlinear ones:
    causal time slabs with Picard linearisation and closed-form nonlinear terms
    (:func:`lorfs.time_slabs.solve_nonlinear`; ``slabs``, ``picard``, ``sweeps`` per Picard step).
    """
    from .als import solve_linear
    from .time_slabs import solve_nonlinear

    problem = build_problem(name, params)
    start = time.perf_counter()
    if problem.is_linear:
        model, _ = solve_linear(problem, rank=rank, modes=modes, sweeps=sweeps or 8, seed=seed)
        solver = "ALS"
        axes = model.axes
        n_params = sum(2 * ax.n_params * model.rank for ax in axes)
    else:
        model = solve_nonlinear(
            problem,
            rank=problem.rank if rank is None else rank,
            modes=modes,
            slabs=slabs,
            picard=picard,
            sweeps=sweeps or 2,
            seed=seed,
        )
        solver = f"time slabs ({slabs}) + Picard"
        n_params = sum(2 * f.numel() for u in model.fields for f in u.factors)
    seconds = time.perf_counter() - start
    err = relative_error_on(problem, model, n=n_test, seed=seed + 1)
    return MethodRun(problem.name, "LoRFS", err, seconds, n_params, model.rank, solver)


def train_pinn(
    name: str,
    params: dict | None = None,
    arch: str = "mlp",
    precision: str = "float32",
    adam_steps: int = 1000,
    lbfgs_steps: int = 5,
    lbfgs_iter: int = 50,
    n_collocation: int = 2000,
    width: int = 50,
    depth: int = 4,
    seed: int = 0,
    n_test: int = 10_000,
) -> MethodRun:
    """Train a :class:`~lorfs.lightning.PINNModule` with the quiet Lightning Trainer (one step per epoch)."""
    import lightning.pytorch as pl
    from icml26_shared.trainer import quiet_trainer

    from .lightning import PINNModule, ProblemDataModule

    pl.seed_everything(seed, verbose=False)
    module = PINNModule(
        name,
        params,
        arch=arch,
        precision=precision,
        adam_steps=adam_steps,
        lbfgs_iter=lbfgs_iter,
        width=width,
        depth=depth,
        seed=seed,
    )
    data = ProblemDataModule(name, params, n_collocation=n_collocation, n_test=16, seed=seed)
    trainer = quiet_trainer(
        max_epochs=adam_steps + lbfgs_steps, limit_val_batches=0, num_sanity_val_steps=0
    )
    start = time.perf_counter()
    trainer.fit(module, datamodule=data)
    seconds = time.perf_counter() - start
    module.eval()
    err = relative_error_on(module.problem, module, n=n_test, seed=seed + 1)
    if not math.isfinite(err):
        err = float("nan")
    label = {"mlp": "PINN", "fourier": "FF-PINN", "separable": "SPINN"}[arch]
    label += " fp64" if precision == "float64" else ""
    n_params = sum(p.numel() for p in module.parameters())
    return MethodRun(
        module.problem.name, label, err, seconds, n_params, 0, f"Adam+L-BFGS {precision}"
    )


def spectral_run(name: str, params: dict | None = None, seed: int = 0, n_test: int = 10_000):
    """The full-tensor spectral least-squares ceiling (linear problems with ``D <= 3``)."""
    from .spectral import spectral_solve

    problem = build_problem(name, params)
    start = time.perf_counter()
    predict = spectral_solve(problem)
    seconds = time.perf_counter() - start
    err = relative_error_on(problem, predict, n=n_test, seed=seed + 1)
    size = math.prod(ax.n_params for ax in problem.make_axes())
    return MethodRun(problem.name, "spectral", err, seconds, 2 * size, 0, "full tensor")


def compare_losses(
    name: str, params: dict | None = None, rank: int = 3, samples: int = 2000, seed: int = 0
) -> dict:
    """``||Re L u||^2`` of a random rank-``rank`` field: closed form, exact quadrature (D <= 3), MC."""
    problem = build_problem(name, params)
    if not problem.is_linear:
        raise ValueError(f"check-loss needs a linear problem, {problem.name!r} is nonlinear")
    if samples < 2:
        raise ValueError(f"samples must be >= 2, got {samples}")
    with torch.no_grad():
        u = (
            LowRankFourierSum(problem.make_axes(), rank, init_scale=0.5, seed=seed)
            .balance_()
            .as_sum()
        )
    piece = Piece([(u, problem.operator)], ["integral"] * problem.dim)
    with torch.no_grad():
        start = time.perf_counter()
        closed = float(piece_norm2(piece, real=True))
        closed_s = time.perf_counter() - start
        quad = None
        if problem.dim <= 3:
            quad = float(quadrature_residual_l2(u, problem.operator))
        est, std = mc_norm2(piece, samples, torch.Generator().manual_seed(seed + 1), real=True)
    return {
        "closed_form": closed,
        "closed_seconds": closed_s,
        "quadrature": quad,
        "mc": float(est),
        "mc_std": float(std),
    }


def product_field(d: int, amplitude: float = 0.5) -> SeparableSum:
    """``prod_j (1 + amplitude sin x_j)`` on ``[0, 2 pi)^d`` (rank 1, one mode per axis)."""
    axes = [FourierAxis(f"x{j}", (0.0, 2 * math.pi), 1) for j in range(d)]
    c = torch.tensor([[0.5j * amplitude, 1.0, -0.5j * amplitude]], dtype=CDTYPE)
    return SeparableSum(axes, [c] * d)


def mc_variance(d: int, samples: int = 2000, repeats: int = 30, seed: int = 0) -> dict:
    """Closed form vs ``repeats`` Monte-Carlo estimates of ``||u||^2`` for :func:`product_field`.

    Returns the exact value, the closed-form time, the empirical relative standard deviation of
    the MC estimates, and the theoretical one ``sqrt((kappa^d - 1) / N)`` with
    ``kappa = E[phi^4] / E[phi^2]^2`` per axis.
    """
    u = product_field(d)
    piece = Piece([(u, Identity())], ["integral"] * d)
    start = time.perf_counter()
    exact = float(piece_norm2(piece, real=True))
    closed_s = time.perf_counter() - start
    gen = torch.Generator().manual_seed(seed)
    ests = torch.stack([mc_norm2(piece, samples, gen, real=True)[0] for _ in range(repeats)])
    a = 0.5
    m2 = 1 + a**2 / 2
    m4 = 1 + 3 * a**2 + 3 * a**4 / 8
    kappa = m4 / m2**2
    return {
        "d": d,
        "exact": exact,
        "exact_formula": m2**d,
        "closed_seconds": closed_s,
        "mc_rel_std": float(ests.std() / exact),
        "theory_rel_std": math.sqrt((kappa**d - 1) / samples),
    }
