"""The supervised plasticity benchmark: labels re-permuted at every phase.

The paper's non-stationary CIFAR protocol (first 10,000 images, labels re-permuted across
samples at epochs 20/40/60/80, so every phase is random-label memorisation; SIGReg on
the trunk output after its final ReLU, which feeds a linear classifier) at CPU scale on
scikit-learn's digits (1797 x 64, shipped with scikit-learn):

* the offline data (digits) and the real path (the first 10,000 CIFAR-10 training images
  via ``datasets``, offline-aware: a clear error when the Hub cannot be reached and the
  data is not cached) -> :func:`load_digits_tensors`, :func:`load_cifar10_tensors`
* per-phase labels ``y_p = y[perm_p]`` -> :func:`phase_labels`
* data with the phase schedule -> :class:`DigitsShuffleDataModule`
* the classifier with every baseline and both SIGReg presets -> :class:`ShuffledLabelClassifier`
* one seeded run -> :func:`run_shuffled_labels`
"""

from __future__ import annotations

import time
from typing import Literal

import lightning.pytorch as pl
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from sigreg.encoder import Trunk
from sigreg.plasticity_baselines import L2Init, redo_reset, shrink_perturb
from sigreg.plasticity_metrics import ActivationRecorder, representation_report
from sigreg.sigreg_loss import SIGReg, combine_losses

METHODS = (
    "none",
    "layernorm",
    "redo",
    "shrink-perturb",
    "l2-init",
    "sigreg",
    "sigreg-lejepa",
    "lightly-sigreg",
)


def load_digits_tensors() -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn digits, standardised per pixel: ``x`` (1797, 64) float, ``y`` (1797,)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = data.data.astype(np.float32)
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    return torch.from_numpy(x), torch.from_numpy(data.target.astype(np.int64))


CIFAR10_ID = "uoft-cs/cifar10"


def load_cifar10_tensors(
    n_samples: int = 10_000, split: str = "train"
) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``n_samples`` CIFAR-10 images of ``split`` (the paper's protocol), flattened.

    Loaded with ``datasets`` through :func:`icml26_shared.hub.load_dataset`, so without a
    network and without a cached copy it fails at once with one clear line (a
    ``ValueError``) naming the offline alternative. Images are scaled to [0, 1] and
    standardised per channel; ``x`` is (N, 3072) float (channel-major), ``y`` (N,).
    """
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    try:
        from icml26_shared.hub import HubUnavailableError, load_dataset
    except ImportError as err:  # pragma: no cover - icml26-shared is a core dependency
        raise ValueError(f"the CIFAR-10 path needs icml26-shared: {err}") from err
    try:
        ds = load_dataset(
            CIFAR10_ID, split=f"{split}[:{n_samples}]", offline_hint="--data.dataset digits"
        )
    except ImportError as err:
        raise ValueError(
            "the CIFAR-10 path needs the 'datasets' package: pip install 'sigreg[real]'"
        ) from err
    except HubUnavailableError as err:
        raise ValueError(
            f"CIFAR-10 ({CIFAR10_ID!r}) is not in the local Hugging Face cache and the Hub "
            "cannot be reached; offline alternative: --data.dataset digits"
        ) from err
    img_key = "img" if "img" in ds.column_names else "image"
    imgs = np.stack([np.asarray(im.convert("RGB"), dtype=np.float32) / 255.0 for im in ds[img_key]])
    x = torch.from_numpy(imgs).permute(0, 3, 1, 2)  # (N, 3, 32, 32)
    mean = x.mean((0, 2, 3), keepdim=True)
    std = x.std((0, 2, 3), keepdim=True)
    x = ((x - mean) / (std + 1e-6)).reshape(len(ds), -1)
    return x.contiguous(), torch.as_tensor(np.asarray(ds["label"], dtype=np.int64))


def phase_labels(y: torch.Tensor, phases: int, seed: int = 0) -> torch.Tensor:
    """``(phases, N)`` labels: phase 0 the true labels, then ``y`` permuted across samples.

    >>> lab = phase_labels(torch.arange(10) % 3, 3)
    >>> lab.shape, bool((lab[0] == torch.arange(10) % 3).all()), sorted(lab[2].tolist()) == sorted(lab[0].tolist())
    (torch.Size([3, 10]), True, True)
    """
    if phases < 1:
        raise ValueError(f"phases must be >= 1, got {phases}")
    g = torch.Generator().manual_seed(seed)
    rows = [y]
    for _ in range(phases - 1):
        rows.append(y[torch.randperm(y.numel(), generator=g)])
    return torch.stack(rows)


class DigitsShuffleDataModule(pl.LightningDataModule):
    """Digits (or CIFAR-10) with labels re-permuted every ``epochs_per_phase`` epochs.

    ``dataset="digits"`` (offline, default) or ``dataset="cifar10"`` (the paper's real
    path: the first ``n_samples`` (default 10,000) CIFAR-10 training images, flattened to
    3072 inputs, so the classifier needs ``in_dim: 3072``; see
    ``configs/cifar10-shuffle-sigreg.yaml``).

    The train loader is rebuilt every epoch (``reload_dataloaders_every_n_epochs=1``) and
    serves the labels of phase ``current_epoch // epochs_per_phase``; the val loader
    scores the *current* phase's labels on the same images (train accuracy, as in the
    paper: the task is memorisation).

    Examples:
        >>> dm = DigitsShuffleDataModule(phases=2, epochs_per_phase=1, batch_size=64, n_samples=128)
        >>> dm.setup("fit"); x, y = next(iter(dm.train_dataloader())); x.shape
        torch.Size([64, 64])
    """

    def __init__(
        self,
        phases: int = 10,
        epochs_per_phase: int = 30,
        batch_size: int = 128,
        n_samples: int | None = None,
        seed: int = 0,
        dataset: Literal["digits", "cifar10"] = "digits",
    ) -> None:
        super().__init__()
        if phases < 1 or epochs_per_phase < 1 or batch_size < 1:
            raise ValueError("phases, epochs_per_phase and batch_size must be >= 1")
        if dataset not in ("digits", "cifar10"):
            raise ValueError(f"unknown dataset {dataset!r}; choose 'digits' or 'cifar10'")
        self.dataset = dataset
        self.phases = phases
        self.epochs_per_phase = epochs_per_phase
        self.batch_size = batch_size
        self.n_samples = n_samples
        self.seed = seed
        self.x = self.labels = None

    def setup(self, stage: str | None = None) -> None:
        if self.x is not None:
            return
        if self.dataset == "cifar10":
            x, y = load_cifar10_tensors(10_000 if self.n_samples is None else self.n_samples)
        else:
            x, y = load_digits_tensors()
        if self.n_samples is not None:
            x, y = x[: self.n_samples], y[: self.n_samples]
        self.x = x
        self.labels = phase_labels(y, self.phases, self.seed)

    def phase(self) -> int:
        epoch = self.trainer.current_epoch if self.trainer is not None else 0
        return min(epoch // self.epochs_per_phase, self.phases - 1)

    def train_dataloader(self) -> DataLoader:
        g = torch.Generator().manual_seed(self.seed + 7919 * self.phase())
        ds = TensorDataset(self.x, self.labels[self.phase()])
        return DataLoader(ds, batch_size=self.batch_size, shuffle=True, generator=g)

    def val_dataloader(self) -> DataLoader:
        ds = TensorDataset(self.x, self.labels[self.phase()])
        return DataLoader(ds, batch_size=1024)


class ShuffledLabelClassifier(pl.LightningModule):
    """MLP classifier on the shuffled-label task with one plasticity method.

    Args:
        in_dim, n_classes, hidden, depth: The MLP (paper's CPU-scale: 3 x 256 ReLU).
        method: One of :data:`METHODS`.
        sigreg_lambda: SIGReg weight (``sigreg*`` methods).
        lambda_convention: ``additive`` (code) or ``convex`` (paper text).
        lr: Adam learning rate.
        epochs_per_phase: For the phase-boundary baselines (ReDo, Shrink & Perturb).
        redo_tau, sp_shrink, sp_perturb, l2_coef: Baseline settings.
        sigreg_layer: Where ``phi`` is read: ``post-relu`` (the paper's CIFAR script: the
            trunk output after its final ReLU) or ``pre-relu`` (before the final ReLU).

    Examples:
        >>> m = ShuffledLabelClassifier(64, 10, hidden=16, depth=2, method="sigreg")
        >>> m(torch.randn(5, 64)).shape
        torch.Size([5, 10])
    """

    def __init__(
        self,
        in_dim: int = 64,
        n_classes: int = 10,
        hidden: int = 256,
        depth: int = 3,
        method: str = "none",
        sigreg_lambda: float = 1.0,
        lambda_convention: Literal["additive", "convex"] = "additive",
        sigreg_slices: int | None = None,
        lr: float = 1e-3,
        epochs_per_phase: int = 30,
        redo_tau: float = 0.025,
        sp_shrink: float = 0.4,
        sp_perturb: float = 0.1,
        l2_coef: float = 1e-3,
        sigreg_layer: Literal["post-relu", "pre-relu"] = "post-relu",
    ) -> None:
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
        if sigreg_lambda < 0:
            raise ValueError(f"sigreg_lambda must be >= 0, got {sigreg_lambda}")
        self.save_hyperparameters()
        self.trunk = Trunk(
            in_dim, hidden, depth, layer_norm=method == "layernorm", feature_point=sigreg_layer
        )
        self.head = nn.Linear(hidden, n_classes)
        self.reg: nn.Module | None = None
        if method == "sigreg":
            self.reg = SIGReg("isogaussian-drl", num_slices=sigreg_slices)
        elif method == "sigreg-lejepa":
            self.reg = SIGReg("lejepa", num_slices=sigreg_slices)
        elif method == "lightly-sigreg":
            from lightly.loss.lejepa_loss import SIGReg as LightlySIGReg

            self.reg = LightlySIGReg(
                **({} if sigreg_slices is None else {"num_vectors": sigreg_slices})
            )
        self.l2 = (
            L2Init(nn.ModuleList([self.trunk, self.head]), l2_coef) if method == "l2-init" else None
        )
        self.phase_end: list[dict] = []
        self.reg_time = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk.head_input(self.trunk(x)))

    def training_step(self, batch, batch_idx):
        x, y = batch
        phi = self.trunk(x)
        logits = self.head(self.trunk.head_input(phi))
        loss = F.cross_entropy(logits, y)
        if self.reg is not None:
            t0 = time.perf_counter()
            reg = self.reg(phi)
            loss = combine_losses(
                loss, reg, self.hparams.sigreg_lambda, self.hparams.lambda_convention
            )
            self.reg_time += time.perf_counter() - t0
            self.log("train/sigreg", reg.detach(), prog_bar=False)
        if self.l2 is not None:
            loss = loss + self.l2(nn.ModuleList([self.trunk, self.head]))
        self.log("train/loss", loss.detach(), prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        acc = (self(x).argmax(-1) == y).float().mean()
        self.log("val/acc", acc, prog_bar=True)

    def on_train_epoch_start(self) -> None:
        epoch = self.current_epoch
        k = self.hparams.epochs_per_phase
        if epoch == 0 or epoch % k != 0:
            return
        if self.hparams.method == "shrink-perturb":
            shrink_perturb(
                nn.ModuleList([self.trunk, self.head]),
                self.hparams.sp_shrink,
                self.hparams.sp_perturb,
            )
        elif self.hparams.method == "redo":
            dm = self.trainer.datamodule
            with torch.no_grad(), ActivationRecorder(self.trunk, [nn.ReLU]) as rec:
                self.trunk(dm.x)
            redo_reset(
                self.trunk.linear_layers(),
                list(rec.outputs.values()),
                self.head,
                self.hparams.redo_tau,
            )

    @torch.no_grad()
    def diagnose(self, x: torch.Tensor, y: torch.Tensor | None = None) -> dict[str, float]:
        """Accuracy (if labels) and representation diagnostics of the trunk on ``x``."""
        was = self.training
        self.eval()
        with ActivationRecorder(self.trunk, [nn.ReLU]) as rec:
            phi = self.trunk(x)
        out = representation_report(phi, rec.outputs)
        if y is not None:
            out["accuracy"] = float(
                (self.head(self.trunk.head_input(phi)).argmax(-1) == y).float().mean()
            )
        self.train(was)
        return out

    def on_train_epoch_end(self) -> None:
        k = self.hparams.epochs_per_phase
        if (self.current_epoch + 1) % k != 0:
            return
        dm = self.trainer.datamodule
        if dm is None or getattr(dm, "labels", None) is None:
            return
        phase = self.current_epoch // k
        if phase >= dm.labels.shape[0]:
            return
        row = self.diagnose(dm.x.to(self.device), dm.labels[phase].to(self.device))
        row["phase"] = phase
        self.phase_end.append(row)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def run_shuffled_labels(
    method: str,
    *,
    phases: int = 10,
    epochs_per_phase: int = 30,
    hidden: int = 256,
    depth: int = 3,
    batch_size: int = 128,
    lr: float = 1e-3,
    sigreg_lambda: float = 1.0,
    n_samples: int | None = None,
    sigreg_layer: str = "post-relu",
    sigreg_slices: int | None = None,
    seed: int = 0,
) -> dict:
    """Train one method through all phases; per-phase end accuracy and diagnostics."""
    pl.seed_everything(seed, verbose=False)
    dm = DigitsShuffleDataModule(phases, epochs_per_phase, batch_size, n_samples, seed)
    model = ShuffledLabelClassifier(
        64,
        10,
        hidden,
        depth,
        method,
        sigreg_lambda,
        lr=lr,
        epochs_per_phase=epochs_per_phase,
        sigreg_layer=sigreg_layer,
        sigreg_slices=sigreg_slices,
    )
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=phases * epochs_per_phase,
        reload_dataloaders_every_n_epochs=1,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    t0 = time.perf_counter()
    trainer.fit(model, datamodule=dm)
    wall = time.perf_counter() - t0
    return {"method": method, "phases": model.phase_end, "wall_s": wall, "reg_s": model.reg_time}
