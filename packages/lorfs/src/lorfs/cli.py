"""Command line of lorfs: ``lorfs --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~lorfs.lightning.LoRFSModule`
or the :class:`~lorfs.lightning.PINNModule` baseline, chosen with ``--model.class_path``, and
:class:`~lorfs.lightning.ProblemDataModule`), ``reproduce``, and the package commands
``solve`` (exact ALS / time slabs; ``--spec`` for your own PDE), ``benchmark`` (LoRFS vs PINN on one problem),
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
    "reaction_diffusion_nd",
]


def _params(params: dict[str, float] | None) -> dict[str, float]:
    return dict(params or {})


def solve(
    problem: ProblemName = "convection",
    params: dict[str, float] | None = None,
    rank: int | None = None,
    modes: list[int] | int | None = None,
    sweeps: int | None = None,
    slabs: int = 20,
    seed: int = 0,
    spec: Path | None = None,
    out: Path | None = None,
) -> None:
    """Solve one problem with LoRFS: a registry problem, or your own PDE with ``--spec pde.yaml``.

    Registry problems: exact ALS if linear, causal time slabs + Picard if nonlinear. ``--spec``:
    the PDE of a YAML file (axes, operator, reaction, initial condition / source, see the
    README), solved with automatic rank growth until the residual tolerance; progress goes to
    stderr; ``--out DIR`` writes ``solution.npz``, ``result.json`` and ``solution.png``.

    Args:
        problem: Registry problem name (ignored with ``--spec``).
        params: Problem parameters, e.g. ``{beta: 50}`` or ``{d: 100}``.
        rank: Number of rank-one terms (default: the problem's).
        modes: Fourier modes per axis (one int for all, or a list; time: per slab if nonlinear).
        sweeps: ALS sweeps (per Picard step if nonlinear).
        slabs: Time slabs of the nonlinear solver.
        seed: Seed of the initialisation.
        spec: A YAML PDE specification (your own PDE).
        out: Output folder for ``--spec`` runs.
    """
    import sys

    if spec is not None:
        from .pde_spec import build_spec_problem, load_spec, solve_spec, write_outputs

        spec_path = Path(spec)
        problem_obj, settings = build_spec_problem(load_spec(spec_path), spec_path.parent)
        run = solve_spec(
            problem_obj, settings, progress=lambda msg: print(msg, file=sys.stderr, flush=True)
        )
        last = run.history[-1]
        err = f", relative L2 error {last['error']:.3e}" if "error" in last else ""
        print(
            f"{problem_obj.name}: LoRFS rank {last['rank']}, relative residual {last['residual']:.3e}"
            f"{err}, {run.seconds:.1f} s"
        )
        if out is not None:
            write_outputs(run, Path(out))
            print(f"wrote {Path(out) / 'solution.npz'}, result.json, solution.png")
        return
    if out is not None:
        raise ValueError("--out is written by --spec runs; registry problems print their result")
    from .benchmark import solve_problem

    run = solve_problem(
        problem, _params(params), rank=rank, modes=modes, sweeps=sweeps, seed=seed, slabs=slabs
    )
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
