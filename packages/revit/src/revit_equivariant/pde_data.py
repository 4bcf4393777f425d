"""Synthetic PDE trajectories and the Lightning DataModule that serves them.

Problems (all periodic, generated offline by :mod:`revit_equivariant.navier_stokes`):

* ``kolmogorov``: velocity ``(u_x, u_y)`` plus the forcing as an input *vector* channel
  (without it the learning problem is not equivariant); trained with ``x_hat`` forcing;
  test variants ``id`` (same forcing), ``rot90`` (the C4 image of the test set: grid and
  components rotated, i.e. the ``y``-forced flow) and ``force45`` (fresh trajectories under
  the on-torus 45-degree forcing ``sin(4(x+y)) (1,-1)/sqrt 2``);
* ``decaying``: unforced velocity (an isotropic, C4-symmetric distribution);
* ``advection``: a tracer (predicted scalar) in a steady divergence-free velocity (input
  vector channel).

:func:`problem_spec` gives each problem's :class:`~revit_equivariant.group.FieldSpec` and
state channels, :func:`simulate` the trajectories ``(N, T, C, n, n)`` in float32, and
:class:`SyntheticPDEDataModule` the one-step (or k-step) pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset

from .group import FieldSpec, rotate
from .navier_stokes import (
    Advection2D,
    NavierStokes2D,
    kolmogorov_forcing,
    random_vorticity,
    velocity_from_vorticity,
)

Problem = Literal["kolmogorov", "decaying", "advection"]
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
    raise ValueError(f"unknown problem {problem!r}; choose kolmogorov, decaying or advection")


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


class SyntheticPDEDataModule(pl.LightningDataModule):
    """Offline synthetic PDE data (see the module docstring for the problems).

    Parameters
    ----------
    problem:
        ``kolmogorov`` | ``decaying`` | ``advection``.
    n_train, n_val, n_test:
        Trajectories per split (seeds ``seed``, ``seed + 1``, ``seed + 2``).
    n_frames:
        Frames per trajectory.
    grid, sim_grid:
        Learning and simulation resolution.
    interval:
        Time between frames.
    rollout:
        Training target length k (1: one-step loss; > 1: k-step rollout loss).
    augment:
        Random C4 rotation of every training pair (the "Swin + C4 aug" baseline).
    test_variant:
        ``id`` | ``rot90`` | ``force45`` for the test split.
    batch_size, num_workers, seed:
        Loader settings and the data seed.

    Examples
    --------
    >>> dm = SyntheticPDEDataModule("decaying", 2, 1, 1, n_frames=3, grid=16, batch_size=2)
    >>> dm.setup("fit")
    >>> next(iter(dm.train_dataloader()))["x"].shape
    torch.Size([2, 2, 16, 16])
    """

    def __init__(
        self,
        problem: Problem = "kolmogorov",
        n_train: int = 24,
        n_val: int = 4,
        n_test: int = 8,
        n_frames: int = 12,
        grid: int = 32,
        sim_grid: int = 32,
        interval: float = 0.2,
        rollout: int = 1,
        augment: bool = False,
        test_variant: Variant = "id",
        batch_size: int = 16,
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.save_hyperparameters()
        self.ps = problem_spec(problem)
        self.train_traj = self.val_traj = self.test_traj = None

    def _sim(self, n: int, seed: int, variant: str = "id") -> torch.Tensor:
        h = self.hparams
        return simulate(h.problem, n, h.n_frames, seed, h.grid, h.sim_grid, h.interval, variant)

    def setup(self, stage: str | None = None) -> None:
        h = self.hparams
        if stage in (None, "fit") and self.train_traj is None:
            self.train_traj = self._sim(h.n_train, h.seed)
        if stage in (None, "fit", "validate") and self.val_traj is None:
            self.val_traj = self._sim(h.n_val, h.seed + 1)
        if stage in (None, "test", "predict") and self.test_traj is None:
            self.test_traj = self._sim(h.n_test, h.seed + 2, h.test_variant)

    def _loader(self, traj, rollout: int, augment: bool, shuffle: bool) -> DataLoader:
        h = self.hparams
        ds = PairDataset(traj, self.ps, rollout, augment, h.seed)
        gen = torch.Generator().manual_seed(h.seed)
        return DataLoader(
            ds, batch_size=h.batch_size, shuffle=shuffle, num_workers=h.num_workers, generator=gen
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_traj, self.hparams.rollout, self.hparams.augment, True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_traj, 1, False, False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_traj, 1, False, False)

    def predict_dataloader(self) -> DataLoader:
        return self.test_dataloader()
