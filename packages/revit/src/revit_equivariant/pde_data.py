"""PDE trajectories (synthetic, or local real-data files) and their one-step pair datasets.

Synthetic problems (all periodic, generated offline by :mod:`revit_equivariant.navier_stokes`
and, in 3D, :mod:`revit_equivariant.navier_stokes3d`):

* ``kolmogorov``: velocity ``(u_x, u_y)`` plus the forcing as an input *vector* channel
  (without it the learning problem is not equivariant); trained with ``x_hat`` forcing;
  test variants ``id`` (same forcing), ``rot90`` (the C4 image of the test set: grid and
  components rotated, i.e. the ``y``-forced flow) and ``force45`` (fresh trajectories under
  the on-torus 45-degree forcing ``sin(4(x+y)) (1,-1)/sqrt 2``);
* ``decaying``: unforced velocity (an isotropic, C4-symmetric distribution);
* ``advection``: a tracer (predicted scalar) in a steady divergence-free velocity (input
  vector channel);
* ``decaying3d``: unforced 3D velocity on the cube (nu = 0.05; an isotropic distribution,
  invariant under all 24 rotations of O).

:func:`problem_spec` gives each problem's :class:`~revit_equivariant.group.FieldSpec` and
state channels, :func:`simulate` the trajectories ``(N, T, C, n, n)`` in float32, and
:class:`PairDataset` the one-step (or k-step) pairs that
:class:`~revit_equivariant.lightning.PDEDataModule` loads.

Real problems (read from a local copy, never downloaded; :mod:`revit_equivariant.real_data`):

* ``MHD_64`` (3D), ``active_matter``, ``shear_flow``: The Well's HDF5 files
  (:class:`~revit_equivariant.real_data.WellHDF5`), every channel predicted;
* ``kf2d``: the authors' hub Kolmogorov files ``{train,test}_V.npy``
  (:class:`~revit_equivariant.real_data.HubKF2D`), velocity only.

Your own fields: ``custom`` with a declared layout
(:class:`~revit_equivariant.field_files.FieldLayout`: which named arrays of a ``.npz`` / HDF5
file are scalars, vectors, pseudovectors, tensors, and which are static inputs).

They take ``path`` in :class:`~revit_equivariant.lightning.PDEDataModule` and one-step pairs; ``test_variant="rot90"``
rotates the real test pairs by 90 degrees (grid and components).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch.utils.data import Dataset

from .group import R_OZ, FieldSpec, as_matrix, rotate
from .navier_stokes import (
    Advection2D,
    NavierStokes2D,
    kolmogorov_forcing,
    random_vorticity,
    velocity_from_vorticity,
)
from .navier_stokes3d import NavierStokes3D, random_velocity3d
from .real_data import WELL_SPECS, HubKF2D

Problem = Literal[
    "kolmogorov",
    "decaying",
    "advection",
    "decaying3d",
    "kf2d",
    "MHD_64",
    "active_matter",
    "shear_flow",
    "custom",
]
SYNTHETIC = ("kolmogorov", "decaying", "advection", "decaying3d")
REAL = ("kf2d", *WELL_SPECS)
Variant = Literal["id", "rot90", "force45"]


@dataclass(frozen=True)
class ProblemSpec:
    """Input field spec and the channels of the predicted state."""

    spec: FieldSpec
    state: tuple[int, ...]


def problem_spec(problem: str) -> ProblemSpec:
    """Field spec and state channels of a problem.

    Examples
    --------
    >>> problem_spec("kolmogorov").state
    (0, 1)
    """
    if problem == "kolmogorov":
        return ProblemSpec(FieldSpec(4, vectors=((0, 1), (2, 3))), (0, 1))
    if problem == "decaying":
        return ProblemSpec(FieldSpec(2, vectors=((0, 1),)), (0, 1))
    if problem == "advection":
        return ProblemSpec(FieldSpec(3, scalars=(2,), vectors=((0, 1),)), (2,))
    if problem == "decaying3d":
        return ProblemSpec(FieldSpec(3, vectors=((0, 1, 2),)), (0, 1, 2))
    if problem == "kf2d":
        return ProblemSpec(HubKF2D.spec, (0, 1))
    if problem in WELL_SPECS:
        spec = WELL_SPECS[problem]
        return ProblemSpec(spec, tuple(range(spec.n_channels)))
    if problem == "custom":
        raise ValueError(
            "problem custom takes its field spec from the data's declared layout "
            "(field_files.FieldLayout; --data.fields)"
        )
    raise ValueError(
        f"unknown problem {problem!r}; choose {', '.join((*SYNTHETIC, *REAL, 'custom'))}"
    )


def simulate(
    problem: str,
    n_traj: int,
    n_frames: int,
    seed: int,
    grid: int = 32,
    sim_grid: int = 32,
    interval: float = 0.2,
    variant: str = "id",
) -> torch.Tensor:
    """Trajectories ``(n_traj, n_frames, C, grid, grid)`` (float32) of a problem.

    ``decaying3d`` gives ``(n_traj, n_frames, 3, grid, grid, grid)``.
    ``sim_grid`` > ``grid`` simulates finer and average-pools to ``grid``. ``variant``
    ``force45`` uses the 45-degree forcing, ``rot90`` rotates the result with
    :func:`~revit_equivariant.group.rotate` (k = 1).
    """
    if n_traj < 1 or n_frames < 2:
        raise ValueError(f"need n_traj >= 1 and n_frames >= 2, got {n_traj}, {n_frames}")
    if sim_grid % grid:
        raise ValueError(f"sim_grid {sim_grid} must be a multiple of grid {grid}")
    if variant not in ("id", "rot90", "force45"):
        raise ValueError(f"unknown test variant {variant!r}; choose id, rot90 or force45")
    if problem not in SYNTHETIC:
        problem_spec(problem)  # unknown names: the list of problems
        raise ValueError(
            f"{problem} is real data, read from local files (PDEDataModule(path=...)), "
            f"not simulated; simulated problems: {', '.join(SYNTHETIC)}"
        )
    if problem == "decaying3d":
        if variant != "id":
            raise ValueError(
                f"test variant {variant} is 2D; the 3D flow is tested over O "
                "(group.octahedral, group.equivariance_error)"
            )
        sim3 = NavierStokes3D(sim_grid, nu=0.05, dt=0.05)
        fields = sim3.trajectory(random_velocity3d(n_traj, sim_grid, seed), n_frames, interval)
        if sim_grid != grid:
            r = sim_grid // grid
            shape = (*fields.shape[:3], grid, r, grid, r, grid, r)
            fields = fields.reshape(shape).mean((-1, -3, -5))
        return fields.float().contiguous()
    g = torch.Generator().manual_seed(seed)
    if problem == "advection":
        sim = Advection2D(sim_grid, g, n_traj)
        s0 = random_vorticity(n_traj, sim_grid, g, k_peak=3.0)
        tracer = sim.trajectory(s0, n_frames, interval)[:, :, None]
        vel = sim.velocity[:, None].expand(n_traj, n_frames, 2, sim_grid, sim_grid)
        fields = torch.cat([vel, tracer], 2)
    else:
        forced = problem == "kolmogorov"
        force = kolmogorov_forcing(sim_grid, 1.0, 45 if variant == "force45" else 0)
        sim = NavierStokes2D(
            sim_grid,
            nu=1e-2 if forced else 2e-3,
            drag=0.1 if forced else 0.0,
            dt=0.02,
            forcing=force if forced else None,
        )
        w0 = random_vorticity(n_traj, sim_grid, g, rms=3.0 if forced else 2.0)
        if forced:
            w0 = sim.run(w0, 2.0)  # burn-in towards the forced attractor
        vel = velocity_from_vorticity(sim.trajectory(w0, n_frames, interval))
        fields = vel
        if forced:
            fields = torch.cat([vel, force.expand(n_traj, n_frames, 2, sim_grid, sim_grid)], 2)
    if sim_grid != grid:
        r = sim_grid // grid
        fields = fields.reshape(*fields.shape[:3], grid, r, grid, r).mean((-1, -3))
    fields = fields.float()
    if variant == "rot90":
        spec = problem_spec(problem).spec
        flat = fields.flatten(0, 1)
        fields = rotate(flat, spec, 1).reshape(fields.shape)
    return fields.contiguous()


class PairDataset(Dataset):
    """``(x_t, [x_{t+1}..x_{t+k}] state)`` pairs from trajectories, optional C4 augmentation.

    Examples
    --------
    >>> traj = torch.randn(2, 5, 4, 8, 8)
    >>> ds = PairDataset(traj, problem_spec("kolmogorov"), rollout=2)
    >>> len(ds), ds[0]["x"].shape, ds[0]["y"].shape
    (6, torch.Size([4, 8, 8]), torch.Size([2, 2, 8, 8]))
    """

    def __init__(
        self,
        traj: torch.Tensor,
        ps: ProblemSpec,
        rollout: int = 1,
        augment: bool = False,
        seed: int = 0,
    ) -> None:
        if rollout < 1 or rollout >= traj.shape[1]:
            raise ValueError(f"rollout must be in 1..{traj.shape[1] - 1}, got {rollout}")
        self.traj, self.ps, self.rollout, self.augment = traj, ps, rollout, augment
        self.per = traj.shape[1] - rollout
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return self.traj.shape[0] * self.per

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        n, t = divmod(i, self.per)
        x = self.traj[n, t]
        y = self.traj[n, t + 1 : t + 1 + self.rollout]  # (k, C, H, W)
        if self.augment:
            k = int(torch.randint(4, (1,), generator=self.gen))
            x = rotate(x[None], self.ps.spec, k)[0]
            y = rotate(y, self.ps.spec, k)
        return {"x": x, "y": y[:, list(self.ps.state)]}


class RotatedPairs(Dataset):
    """The pairs of a dataset rotated by ``k`` quarter turns (grid and components).

    2D: ``k`` powers of the C4 generator; 3D: ``k`` quarter turns about the z axis.

    Examples
    --------
    >>> ps = problem_spec("decaying")
    >>> pairs = PairDataset(torch.randn(1, 3, 2, 8, 8), ps)
    >>> item = RotatedPairs(pairs, ps.spec, 1)[0]
    >>> torch.equal(item["x"], rotate(pairs[0]["x"][None], ps.spec, 1)[0])
    True
    """

    def __init__(
        self, pairs: Dataset, spec: FieldSpec, k: int = 1, y_spec: FieldSpec | None = None
    ) -> None:
        if spec.dim not in (2, 3):
            raise ValueError(f"rotated test pairs need a 2D or 3D field spec, got {spec.dim}D")
        self.pairs, self.spec, self.y_spec = pairs, spec, y_spec or spec
        # 2D: g^k of C4; 3D: k quarter turns about the z axis (an element of O)
        self.k = k if spec.dim == 2 else torch.linalg.matrix_power(as_matrix(R_OZ), k % 4)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        item = self.pairs[i]
        return {
            "x": rotate(item["x"][None], self.spec, self.k)[0],
            "y": rotate(item["y"], self.y_spec, self.k),
        }


class AugmentedPairs(Dataset):
    """The pairs of a dataset, each rotated by a random quarter turn (2D C4 augmentation)."""

    def __init__(self, pairs: Dataset, spec: FieldSpec, seed: int = 0) -> None:
        self.pairs, self.spec = pairs, spec
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        item = self.pairs[i]
        k = int(torch.randint(4, (1,), generator=self.gen))
        return {
            "x": rotate(item["x"][None], self.spec, k)[0],
            "y": rotate(item["y"], self.spec, k),
        }


def well_split(path: str, name: str, split: str):
    """The folder of one split of a local Well dataset (several accepted layouts)."""
    from pathlib import Path

    root = Path(path)
    for base in (root, root / "data", root / name / "data", root / "datasets" / name / "data"):
        if (base / split).is_dir():
            return base / split
    raise FileNotFoundError(
        f"no {split!r} folder of The Well dataset {name} under {root} (expected "
        f"DIR/datasets/{name}/data/{split}/*.hdf5; offline: download it first with "
        f"`the-well-download --base-path DIR --dataset {name}`)"
    )
