"""Training in one place: the emulator LightningModule, the PDE DataModule, the epoch timer.

* :class:`EmulatorModule`: ``u_{t+1} = u_t + s (Phi(u_t) - u_t)`` with a pluggable backbone
  (:func:`~revit_equivariant.backbones.build_backbone`); losses: one-step MSE
  ``||Phi(u_t) - u_{t+1}||^2`` and the k-step autoregressive rollout loss (the conditioning
  channels, e.g. the forcing, are carried over: :meth:`EmulatorModule.rollout`); metrics
  (:mod:`~revit_equivariant.metrics`): MSE, VRMSE and the C4 / O equivariance error;
* :class:`PDEDataModule`: one-step (or k-step) pairs of a synthetic problem
  (:func:`~revit_equivariant.pde_data.simulate`) or of local real-data files;
* :class:`EpochTimer`: CPU seconds per training epoch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset
from torchmetrics import MeanSquaredError

from .backbones import Backbone, build_backbone
from .field_files import FieldLayout, layout_from, read_splits
from .metrics import VRMSE, EquivarianceError
from .pde_data import (
    REAL,
    AugmentedPairs,
    PairDataset,
    Problem,
    RotatedPairs,
    Variant,
    problem_spec,
    simulate,
    well_split,
)
from .real_data import HubKF2D, WellHDF5
from .transformer import _sub_spec


class EmulatorModule(pl.LightningModule):
    """Neural PDE emulator ``u_{t+1} = Phi(u_t)`` with a pluggable backbone.

    Parameters
    ----------
    backbone:
        ``revit`` | ``swin`` | ``unet`` | ``fno`` (``neuraloperator``'s FNO when installed) |
        ``fno-own`` (the re-implementation) | ``reference`` (the authors' ``revit-pde``,
        optional; needs ``img_size``).
    problem:
        Problem of the data (fixes the field spec, see :func:`~revit_equivariant.pde_data.problem_spec`);
        the 3D problems ``MHD_64`` and ``decaying3d`` build :class:`~revit_equivariant.transformer.ReViT3d`
        (``revit`` / ``swin`` only; frames ``aovc``; equivariance logged over O).
    patch, window, embed_dim, heads, depths, frame_method, periodic:
        ReViT / Swin settings.
    width, modes:
        U-Net / FNO width and FNO Fourier modes.
    lr, weight_decay:
        AdamW settings (cosine decay over the run).
    delta_scale:
        Output normalisation of the residual step: ``u_{t+1} = u_t + s (Phi(u_t) - u_t)``
        (one-step increments are ~10x smaller than the fields). A scalar factor, so it keeps
        every symmetry of the backbone.
    check_equivariance:
        Log the C4 (2D) / O (3D) equivariance error on the first validation batch.
    drop_path:
        ReViT / Swin: stochastic-depth rate of every block's residual branches (0: off).
    pooling:
        ReViT: pixel pooling of the invariant patch embedding, ``mean`` (the paper's default)
        or ``attention`` (:class:`~revit_equivariant.transformer.FrameEmbedding`).
    layout:
        Problem ``custom`` (one's own fields): the data's declared layout
        (:meth:`~revit_equivariant.field_files.FieldLayout.as_dict`). Leave it out: the model
        adopts the datamodule's layout when it is fitted or tested, and the checkpoint stores it.

    Examples
    --------
    >>> m = EmulatorModule("revit", "decaying", window=2, embed_dim=8, depths=(1, 1, 1))
    >>> m(torch.randn(1, 2, 16, 16)).shape
    torch.Size([1, 2, 16, 16])
    """

    def __init__(
        self,
        backbone: Backbone = "revit",
        problem: Problem = "kolmogorov",
        patch: int = 2,
        window: int = 4,
        embed_dim: int = 24,
        heads: int = 2,
        depths: Sequence[int] = (2, 2, 2),
        frame_method: str = "aov",
        periodic: bool = True,
        width: int = 16,
        modes: int = 8,
        img_size: int = 32,
        lr: float = 2e-3,
        weight_decay: float = 1e-4,
        delta_scale: float = 0.1,
        check_equivariance: bool = True,
        layout: dict | None = None,
        drop_path: float = 0.0,
        pooling: str = "mean",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.val_mse, self.test_mse = MeanSquaredError(), MeanSquaredError()
        self.val_vrmse, self.test_vrmse = VRMSE(), VRMSE()
        self.net: torch.nn.Module | None = None
        if problem != "custom":
            if layout is not None:
                raise ValueError("layout is for problem custom (one's own fields)")
            self._build(problem_spec(problem))
        elif layout is not None:
            self._build(FieldLayout(**layout).problem_spec())

    def _build(self, ps) -> None:
        h = self.hparams
        self.ps = ps
        self.out_spec = _sub_spec(ps.spec, ps.state)
        self.net = build_backbone(
            h.backbone, ps, h.patch, h.window, h.embed_dim, h.heads, h.depths,
            h.frame_method, h.periodic, h.width, h.modes, h.img_size, h.drop_path,
            h.get("pooling", "mean"),
        )  # fmt: skip
        self.equiv_group = "o" if ps.spec.dim == 3 else "c4"
        self.val_equiv = EquivarianceError(self.equiv_group)

    def setup(self, stage: str) -> None:
        dm = self.trainer.datamodule if self._trainer is not None else None
        problem = getattr(getattr(dm, "hparams", None), "problem", None)
        if problem is not None and problem != self.hparams.problem:
            raise ValueError(
                f"the model is built for problem {self.hparams.problem!r} but the data is "
                f"{problem!r}: set --model.problem {problem}"
            )
        if problem != "custom":
            return
        dm.setup(stage)  # reads the files: the layout's dim, spec and channels
        layout = dm.layout.as_dict()
        if self.net is None:  # adopt the data's declared layout (stored in the checkpoint)
            self.hparams["layout"] = layout
            self._build(dm.layout.problem_spec())
        elif layout != self.hparams.layout:
            raise ValueError(
                f"the model was trained on fields {self.hparams.layout} but the data declares "
                f"{layout}"
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.net is None:
            raise ValueError(
                "problem custom: the model takes its fields from the data; fit or test it "
                "with a datamodule first (or pass layout=...)"
            )
        base = x[:, list(self.ps.state)]
        return base + self.hparams.delta_scale * (self.net(x) - base)

    def rollout(self, x: torch.Tensor, steps: int) -> torch.Tensor:
        """Autoregressive predictions ``(B, steps, C_state, ...)``; conditioning carried over."""
        preds = []
        state = list(self.ps.state)
        for _ in range(steps):
            y = self(x)
            preds.append(y)
            x = x.clone()
            x[:, state] = y
        return torch.stack(preds, 1)

    def _loss(self, batch) -> torch.Tensor:
        y = batch["y"]  # (B, k, C_state, ...)
        pred = self.rollout(batch["x"], y.shape[1])
        return (pred - y).pow(2).mean()

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        loss = self._loss(batch)
        self.log("train_loss", loss, prog_bar=True, batch_size=batch["x"].shape[0])
        return loss

    def validation_step(self, batch, batch_idx: int) -> None:
        pred, y = self(batch["x"]), batch["y"][:, 0]
        self.val_mse.update(pred, y)
        self.val_vrmse.update(pred, y)
        if batch_idx == 0 and self.hparams.check_equivariance:
            self.val_equiv.update(self, batch["x"][:2], self.ps.spec, self.out_spec)
            self.log("val_equiv_err", self.val_equiv, batch_size=2)
        self.log("val_mse", self.val_mse, prog_bar=True, batch_size=y.shape[0])
        self.log("val_vrmse", self.val_vrmse, batch_size=y.shape[0])

    def test_step(self, batch, batch_idx: int) -> None:
        pred, y = self(batch["x"]), batch["y"][:, 0]
        self.test_mse.update(pred, y)
        self.test_vrmse.update(pred, y)
        self.log("test_mse", self.test_mse, batch_size=y.shape[0])
        self.log("test_vrmse", self.test_vrmse, batch_size=y.shape[0])

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        return self(batch["x"])

    def configure_optimizers(self):
        opt = torch.optim.AdamW(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        total = max(1, int(self.trainer.estimated_stepping_batches)) if self._trainer else 1000
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class PDEDataModule(pl.LightningDataModule):
    """One-step (or k-step) pairs of a synthetic problem, or of local real-data files.

    Parameters
    ----------
    problem:
        Synthetic: ``kolmogorov`` | ``decaying`` | ``advection`` (see the module docstring).
        Real (needs ``path``): ``MHD_64`` | ``active_matter`` | ``shear_flow`` (The Well's
        HDF5 files) | ``kf2d`` (the authors' hub files).
    n_train, n_val, n_test:
        Synthetic: trajectories per split (seeds ``seed``, ``seed + 1``, ``seed + 2``).
    n_frames:
        Synthetic: frames per trajectory.
    grid, sim_grid:
        Synthetic: learning and simulation resolution.
    interval:
        Synthetic: time between frames.
    rollout:
        Training target length k (1: one-step loss; > 1: k-step rollout loss; synthetic only).
    augment:
        Random C4 rotation of every training pair (the "Swin + C4 aug" baseline; 2D).
    test_variant:
        ``id`` | ``rot90`` | ``force45`` for the test split (real data: ``id`` or ``rot90``).
    fields, static, test_fraction:
        Problem ``custom`` (your own fields, read from ``path``): field name -> ``scalar`` |
        ``vector`` | ``pseudovector`` | ``tensor``; the input-only (static) field names; the
        share of a single file's trajectories kept for testing
        (:mod:`~revit_equivariant.field_files`). ``test_variant: rot90`` rotates the test
        pairs by 90 degrees (3D: about the z axis).
    path:
        Own fields: a ``.npz`` / ``.h5`` file or a folder with ``train.*`` / ``test.*``
        (``revit:own-fields-example.npz``: the example shipped in the package's configs).
        Real data: The Well's dataset folder (``.../datasets/NAME``, its ``data`` folder or
        any folder with ``train`` / ``valid`` / ``test`` sub-folders of ``.hdf5`` files), or
        the hub snapshot folder with ``train_V.npy`` / ``test_V.npy`` (``kf2d``: validation
        and test both read ``test_V.npy``). Local files only: nothing is downloaded.
    batch_size, num_workers, seed:
        Loader settings and the data seed.

    Examples
    --------
    >>> dm = PDEDataModule("decaying", 2, 1, 1, n_frames=3, grid=16, batch_size=2)
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
        path: str | None = None,
        fields: dict[str, str] | None = None,
        static: list[str] | None = None,
        test_fraction: float = 0.2,
        batch_size: int = 16,
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.save_hyperparameters()
        self.custom = problem == "custom"
        self.train_traj = self.val_traj = self.test_traj = None
        self.real_sets: dict[str, Dataset] = {}
        if self.custom:
            self.layout = layout_from(fields, static)
            self.ps = None  # known once the files are read (setup)
            if path is None:
                raise ValueError(
                    "problem custom reads your files: give --data.path FILE.npz|FILE.h5|DIR"
                )
            if path.startswith("revit:"):  # a file shipped in the package's configs/ folder
                from icml26_shared.cli import config_folder

                from .paper import PAPER

                path = str(config_folder(PAPER) / path.split(":", 1)[1])
                self.hparams.path = path
            if test_variant == "force45":
                raise ValueError(
                    "test_variant force45 exists for the synthetic Kolmogorov flow only"
                )
            self.real = False
            self._read_custom()  # bad files fail here, before a Trainer exists
            return
        if fields is not None or static is not None:
            raise ValueError("fields / static declare one's own data: use them with problem custom")
        self.ps = problem_spec(problem)
        self.real = problem in REAL
        if self.real:
            if path is None:
                raise ValueError(
                    f"problem {problem} is real data: give the local folder as path "
                    "(--data.path DIR); nothing is downloaded"
                )
            if rollout != 1:
                raise ValueError(
                    f"real data gives one-step pairs: rollout must be 1, got {rollout}"
                )
            if test_variant == "force45":
                raise ValueError(
                    "test_variant force45 exists for the synthetic Kolmogorov flow only"
                )
        elif path is not None:
            raise ValueError(
                f"problem {problem} is simulated; path is for real data ({', '.join(REAL)})"
            )
        if augment and self.ps.spec.dim != 2:
            raise ValueError("C4 augmentation is 2D; 3D problems train without it")

    def _sim(self, n: int, seed: int, variant: str = "id") -> torch.Tensor:
        h = self.hparams
        return simulate(h.problem, n, h.n_frames, seed, h.grid, h.sim_grid, h.interval, variant)

    def _real(self, split: str) -> Dataset:
        if split not in self.real_sets:
            h = self.hparams
            if h.problem == "kf2d":
                ds = HubKF2D(h.path, "train" if split == "train" else "test")
            else:
                ds = WellHDF5(well_split(h.path, h.problem, split))
                if ds.spec != self.ps.spec:
                    raise ValueError(
                        f"{h.path}: the files' fields {list(ds.channel_names)} do not have the "
                        f"layout of {h.problem} ({self.ps.spec})"
                    )
            self.real_sets[split] = ds
        return self.real_sets[split]

    def _read_custom(self) -> None:
        h = self.hparams
        splits, self.layout = read_splits(h.path, self.layout, h.test_fraction)
        self.ps = self.layout.problem_spec()
        if h.augment and self.ps.spec.dim != 2:
            raise ValueError("C4 augmentation is 2D; 3D problems train without it")
        if h.rollout >= splits["train"].shape[1]:
            raise ValueError(
                f"rollout {h.rollout} needs more than {splits['train'].shape[1]} frames per "
                "trajectory"
            )
        self.train_traj, self.val_traj, self.test_traj = (
            splits["train"],
            splits["valid"],
            splits["test"],
        )

    def setup(self, stage: str | None = None) -> None:
        h = self.hparams
        if self.custom:
            if self.ps is None:
                self._read_custom()
            return
        if self.real:
            for split, stages in (("train", ("fit",)), ("valid", ("fit", "validate"))):
                if stage in (None, *stages):
                    self._real(split)
            if stage in (None, "test", "predict"):
                self._real("test")
            return
        if stage in (None, "fit") and self.train_traj is None:
            self.train_traj = self._sim(h.n_train, h.seed)
        if stage in (None, "fit", "validate") and self.val_traj is None:
            self.val_traj = self._sim(h.n_val, h.seed + 1)
        if stage in (None, "test", "predict") and self.test_traj is None:
            self.test_traj = self._sim(h.n_test, h.seed + 2, h.test_variant)

    def _loader(self, traj, rollout: int, augment: bool, shuffle: bool) -> DataLoader:
        h = self.hparams
        ds = PairDataset(traj, self.ps, rollout, augment, h.seed)
        return self._wrap(ds, shuffle)

    def _wrap(self, ds: Dataset, shuffle: bool) -> DataLoader:
        h = self.hparams
        gen = torch.Generator().manual_seed(h.seed)
        return DataLoader(
            ds, batch_size=h.batch_size, shuffle=shuffle, num_workers=h.num_workers, generator=gen
        )

    def train_dataloader(self) -> DataLoader:
        if self.real:
            ds = self._real("train")
            if self.hparams.augment:
                ds = AugmentedPairs(ds, self.ps.spec, self.hparams.seed)
            return self._wrap(ds, True)
        return self._loader(self.train_traj, self.hparams.rollout, self.hparams.augment, True)

    def val_dataloader(self) -> DataLoader:
        if self.real:
            return self._wrap(self._real("valid"), False)
        return self._loader(self.val_traj, 1, False, False)

    def test_dataloader(self) -> DataLoader:
        if self.real:
            ds = self._real("test")
            if self.hparams.test_variant == "rot90":
                ds = RotatedPairs(ds, self.ps.spec, 1)
            return self._wrap(ds, False)
        if self.custom:
            ds = PairDataset(self.test_traj, self.ps)
            if self.hparams.test_variant == "rot90":
                ds = RotatedPairs(ds, self.ps.spec, 1, _sub_spec(self.ps.spec, self.ps.state))
            return self._wrap(ds, False)
        return self._loader(self.test_traj, 1, False, False)

    def predict_dataloader(self) -> DataLoader:
        return self.test_dataloader()


#: The earlier name of :class:`PDEDataModule` (synthetic problems only then).
SyntheticPDEDataModule = PDEDataModule


class EpochTimer(pl.Callback):
    """CPU time (``time.process_time``) of every training epoch.

    CPU time rather than wall time: on a shared machine the wall time of one epoch grows with
    the other jobs' load, the CPU time of a one-thread run does not.
    """

    def __init__(self) -> None:
        self.times: list[float] = []
        self._t0 = 0.0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._t0 = time.process_time()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.times.append(time.process_time() - self._t0)

    @property
    def mean(self) -> float:
        """Mean CPU seconds per epoch (0 before any epoch)."""
        return sum(self.times) / len(self.times) if self.times else 0.0
