"""Command line of revit-equivariant: ``revit --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~revit_equivariant.lightning.EmulatorModule`
and :class:`~revit_equivariant.lightning.PDEDataModule`: synthetic problems, or local real-data
files with ``--data.path``), ``reproduce``, and the package commands ``simulate``
(write trajectories to ``.pt``), ``equivariance`` (group error of a checkpoint or of a
fresh model, C4 or all 24 elements of O) and ``rollout`` (autoregressive error of a
checkpoint on fresh data).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER


def load_emulator(checkpoint: Path):
    """An :class:`~revit_equivariant.lightning.EmulatorModule` checkpoint, on the CPU, in eval mode.

    A missing or unreadable file is one :class:`~icml26_shared.cli.UsageError` line.
    """
    from icml26_shared.cli import load_checkpoint

    from revit_equivariant.lightning import EmulatorModule

    return load_checkpoint(EmulatorModule, checkpoint)


def simulate(
    out: Path,
    problem: Literal["kolmogorov", "decaying", "advection"] = "kolmogorov",
    n_traj: int = 8,
    n_frames: int = 12,
    grid: int = 32,
    sim_grid: int = 32,
    variant: Literal["id", "rot90", "force45"] = "id",
    seed: int = 0,
) -> None:
    """Simulate trajectories offline and save them as a ``.pt`` tensor (N, T, C, n, n).

    Args:
        out: Output file (``.pt``).
        problem: ``kolmogorov`` (velocity + forcing), ``decaying`` or ``advection``.
        n_traj: Number of trajectories.
        n_frames: Frames per trajectory (spacing 0.2).
        grid: Saved resolution.
        sim_grid: Simulation resolution (a multiple of ``grid``).
        variant: ``id``, ``rot90`` (rotated by 90 degrees) or ``force45`` (45-degree forcing).
        seed: Seed of the initial conditions.
    """
    import torch

    from revit_equivariant.pde_data import simulate as run

    traj = run(problem, n_traj, n_frames, seed, grid, sim_grid, variant=variant)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"fields": traj, "problem": problem, "variant": variant}, out)
    print(f"wrote {out}: fields {tuple(traj.shape)}, rms {float(traj.pow(2).mean().sqrt()):.4f}")


def equivariance(
    checkpoint: Path | None = None,
    group: Literal["c4", "o"] = "c4",
    grid: int = 32,
    batch: int = 2,
    equivariant: bool = True,
    seed: int = 0,
    angle: float | None = None,
) -> None:
    """Equivariance error of a checkpoint (C4) or of a fresh ReViT2d / ReViT3d (C4 or O).

    Args:
        checkpoint: Lightning checkpoint written by ``revit fit`` (2D: group c4, 3D: group o);
            default: a fresh randomly initialised model.
        group: ``c4`` (2D) or ``o`` (3D, all 24 rotations).
        grid: Grid side of the random test field.
        batch: Batch size of the random test field.
        equivariant: Fresh model only: False measures the Swin baseline backbone.
        seed: Seed of the field and of the fresh model.
        angle: 2D only: also the approximate SO(2) error for a rotation by this many degrees
            (bilinear periodic resampling, measured in the central disk).
    """
    import torch

    from revit_equivariant.group import FieldSpec, equivariance_error
    from revit_equivariant.pde_data import problem_spec
    from revit_equivariant.transformer import ReViT2d, ReViT3d

    torch.manual_seed(seed)
    if angle is not None and group != "c4":
        raise UsageError("--angle is for 2D models; use --group c4")
    if angle is not None and not math.isfinite(angle):
        raise UsageError(f"--angle must be a finite number of degrees, got {angle}")
    if checkpoint is not None:
        module = load_emulator(checkpoint)
        net, spec, out_spec = module, module.ps.spec, module.out_spec
        if group != module.equiv_group:
            raise UsageError(
                f"this checkpoint is a {spec.dim}D model; use --group {module.equiv_group}"
            )
        x = torch.randn(batch, spec.n_channels, *(grid,) * spec.dim)
    elif group == "c4":
        spec = problem_spec("kolmogorov").spec
        net = ReViT2d(spec, (0, 1), equivariant=equivariant)
        out_spec = net.out_spec
        x = torch.randn(batch, 4, grid, grid)
    else:
        spec = FieldSpec(4, scalars=(3,), vectors=((0, 1, 2),))
        net = ReViT3d(spec, (0, 1, 2, 3), embed_dim=12, depths=(1, 1, 1), equivariant=equivariant)
        out_spec = net.out_spec
        x = torch.randn(batch, 4, grid, grid, grid)
    net.eval()
    err = equivariance_error(net, x, spec, group, out_spec)
    print(
        f"equivariance error over {group.upper()} ({4 if group == 'c4' else 24} elements): {err:.3e}"
    )
    if angle is not None:
        from revit_equivariant.group import so2_equivariance_error

        e = so2_equivariance_error(net, x, spec, math.radians(angle), out_spec)
        print(f"approximate SO(2) error at {angle:g} degrees (central disk): {e:.3e}")


def rollout(
    checkpoint: Path,
    steps: int = 10,
    n_traj: int = 4,
    seed: int = 123,
    data: Path | None = None,
) -> None:
    """Autoregressive rollout MSE per step of a checkpoint (fresh simulations or your files).

    Args:
        checkpoint: Lightning checkpoint written by ``revit fit``.
        steps: Rollout length.
        n_traj: Number of test trajectories (fresh simulations; with --data: at most this many
            test trajectories of the files).
        seed: Seed of the simulated trajectories.
        data: Problem ``custom``: the data file or folder; its test split is rolled out from
            frame 0 (static fields carried over).
    """
    from revit_equivariant.metrics import rollout_mse
    from revit_equivariant.pde_data import SYNTHETIC
    from revit_equivariant.pde_data import simulate as run

    if steps < 1:
        raise UsageError(f"steps must be >= 1, got {steps}")
    module = load_emulator(checkpoint)
    problem = module.hparams.problem
    if problem == "custom":
        from revit_equivariant.field_files import FieldLayout, read_splits

        if data is None:
            raise UsageError("this checkpoint was trained on your own fields: give --data FILE|DIR")
        traj = read_splits(data, FieldLayout(**module.hparams.layout))[0]["test"][:n_traj]
        if traj.shape[1] <= steps:
            raise UsageError(
                f"--steps {steps} needs more than {traj.shape[1]} frames per test trajectory"
            )
    elif problem not in SYNTHETIC:
        raise UsageError(
            f"rollout simulates fresh test data, which exists for {', '.join(SYNTHETIC)}; this "
            f"checkpoint was trained on {problem} (use revit test on its files)"
        )
    else:
        if data is not None:
            raise UsageError("--data is for checkpoints trained on your own fields (custom)")
        traj = run(problem, n_traj, steps + 1, seed)
    for i, err in enumerate(rollout_mse(module, traj, steps), 1):
        print(f"step {i}: MSE {err:.4e}")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="revit_equivariant.lightning:EmulatorModule",
        datamodule_class="revit_equivariant.lightning:PDEDataModule",
        commands={
            "simulate": "revit_equivariant.cli:simulate",
            "equivariance": "revit_equivariant.cli:equivariance",
            "rollout": "revit_equivariant.cli:rollout",
        },
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``revit`` console script."""
    return build_cli().main(args)
