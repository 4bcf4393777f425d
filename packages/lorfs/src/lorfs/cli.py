"""Command line of lorfs: ``lorfs --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~lorfs.lightning.LoRFSModule`
or the :class:`~lorfs.lightning.PINNModule` baseline, chosen with ``--model.class_path``, and
:class:`~lorfs.lightning.ProblemDataModule`), ``reproduce``, and the package commands
``solve`` (exact ALS / Gauss-Newton), ``benchmark`` (LoRFS vs PINN on one problem),
``check-loss`` (closed form vs exact quadrature vs Monte Carlo) and ``evaluate`` (a checkpoint).

Nothing heavy is imported at start-up: each command imports torch (and lightning, for the
commands that train) inside its function.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI

from .paper import PAPER

ProblemName = Literal[
    "convection",
    "reaction",
    "reaction_diffusion",
    "allen_cahn",
    "torus_poisson",
    "torus_heat",
    "convection_nd",
    "dirichlet_poisson",
]


def _params(params: dict[str, float] | None) -> dict[str, float]:
    return dict(params or {})


def solve(
    problem: ProblemName = "convection",
    params: dict[str, float] | None = None,
    rank: int | None = None,
    modes: list[int] | int | None = None,
    sweeps: int = 8,
    seed: int = 0,
) -> None:
    """Solve one problem with LoRFS (exact ALS if linear, block Gauss-Newton if not).

    Args:
        problem: Registry problem name.
        params: Problem parameters, e.g. ``{beta: 50}`` or ``{d: 100}``.
        rank: Number of rank-one terms (default: the problem's).
        modes: Fourier modes per axis (one int for all, or a list).
        sweeps: ALS / Gauss-Newton sweeps.
        seed: Seed of the initialisation.
    """
    from .benchmark import solve_problem

    run = solve_problem(problem, _params(params), rank=rank, modes=modes, sweeps=sweeps, seed=seed)
    print(
        f"{run.problem}: LoRFS rank {run.rank}, {run.n_params} parameters, "
        f"relative L2 error {run.error:.3e}, {run.seconds:.2f} s ({run.solver})"
    )


def benchmark(
    problem: ProblemName = "convection",
    params: dict[str, float] | None = None,
    pinn_steps: int = 500,
    pinn_lbfgs: int = 2,
    collocation: int = 1000,
    arch: Literal["mlp", "fourier", "separable"] = "mlp",
    precision: Literal["float32", "float64"] = "float32",
    seed: int = 0,
) -> None:
    """LoRFS against a PINN baseline on one problem: relative L2 error and seconds.

    Args:
        problem: Registry problem name.
        params: Problem parameters.
        pinn_steps: Adam steps of the PINN.
        pinn_lbfgs: L-BFGS steps (50 inner iterations each) after Adam.
        collocation: Latin-hypercube collocation points of the PINN.
        arch: PINN architecture.
        precision: PINN floating-point precision.
        seed: Seed of everything.
    """
    from .benchmark import solve_problem, train_pinn

    run = solve_problem(problem, _params(params), seed=seed)
    print(f"{run.problem}")
    print(f"  LoRFS ({run.solver})  error {run.error:.3e}  time {run.seconds:.2f} s")
    pinn = train_pinn(
        problem,
        _params(params),
        arch=arch,
        precision=precision,
        adam_steps=pinn_steps,
        lbfgs_steps=pinn_lbfgs,
        n_collocation=collocation,
        seed=seed,
    )
    print(f"  PINN ({arch}, {precision})  error {pinn.error:.3e}  time {pinn.seconds:.2f} s")


def check_loss(
    problem: ProblemName = "torus_poisson",
    params: dict[str, float] | None = None,
    rank: int = 3,
    samples: int = 2000,
    seed: int = 0,
) -> None:
    """Closed-form residual of a random LoRFS field against exact quadrature and Monte Carlo.

    Args:
        problem: Registry problem name (linear).
        params: Problem parameters.
        rank: Rank of the random field.
        samples: Monte-Carlo collocation points.
        seed: Seed of the field and of the samples.
    """
    from .benchmark import compare_losses

    out = compare_losses(problem, _params(params), rank=rank, samples=samples, seed=seed)
    print(f"closed form     {out['closed_form']:.12e}  ({out['closed_seconds'] * 1e3:.2f} ms)")
    if out.get("quadrature") is not None:
        print(f"exact quadrature {out['quadrature']:.12e}")
    print(
        f"Monte Carlo     {out['mc']:.6e} +- {out['mc_std']:.2e} ({samples} points, "
        f"relative std {out['mc_std'] / max(out['closed_form'], 1e-300):.2e})"
    )


def evaluate(checkpoint: Path, n_test: int = 10_000, seed: int = 0) -> None:
    """Relative L2 error of a checkpoint written by ``lorfs fit`` (LoRFS or PINN).

    Args:
        checkpoint: Lightning checkpoint.
        n_test: Test points (exact solutions) or the reference grid.
        seed: Seed of the test points.
    """
    from .lightning import load_solver_checkpoint
    from .problems import relative_error_on

    module = load_solver_checkpoint(Path(checkpoint))

    start = time.perf_counter()
    err = relative_error_on(module.problem, module, n=n_test, seed=seed)
    print(
        f"{module.problem.name}: {type(module).__name__} relative L2 error {err:.3e} "
        f"({time.perf_counter() - start:.2f} s)"
    )


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="lightning.pytorch:LightningModule",
        datamodule_class="lorfs.lightning:ProblemDataModule",
        subclass_mode_model=True,
        commands={
            "solve": "lorfs.cli:solve",
            "benchmark": "lorfs.cli:benchmark",
            "check-loss": "lorfs.cli:check_loss",
            "evaluate": "lorfs.cli:evaluate",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``lorfs`` console script."""
    return build_cli().main(args)


if __name__ == "__main__":  # pragma: no cover - ``python -m lorfs.cli``
    raise SystemExit(main())
