"""Teacher regression: one POET layer fitting a linear teacher, against the Procrustes floor.

Data: x ~ N(0, I_n), y = T x + noise, with a fixed teacher T (m x n) (:class:`TeacherRegressionDataModule`).
Student: W = R W0 P (a :class:`~poet_x.poet_linear.POETLinear`, merged every T steps) or a
plain ``nn.Linear`` trained by AdamW (``optimizer="adamw"``) (:class:`TeacherRegressionModule`).

Because R and P are orthogonal, the spectrum of W is that of W0, so the distance to the
teacher is bounded below by the two-sided orthogonal Procrustes value

    min_{R, P orthogonal} ||R W0 P - T||_F^2 = sum_i (sigma_i(W0) - sigma_i(T))^2

(von Neumann's trace inequality) -> :func:`procrustes_floor`. For x ~ N(0, I) the
population MSE per output is ||W - T||_F^2 / m (+ the noise variance), so POET's validation
MSE cannot go below floor / m + noise^2, while AdamW on a full matrix can reach noise^2.
The module logs ``val_mse``, ``weight_dist`` = ||W - T||_F^2 and ``procrustes_floor``.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from .config import POETConfig
from .optimizer_recipe import build_optimizer, reset_poet_state
from .poet_linear import POETLinear


def procrustes_floor(w0: torch.Tensor, teacher: torch.Tensor) -> float:
    """sum_i (sigma_i(W0) - sigma_i(T))^2: the least ||R W0 P - T||_F^2 over orthogonal R, P.

    Examples
    --------
    >>> procrustes_floor(torch.eye(3), 2 * torch.eye(3))
    3.0
    """
    s0 = torch.linalg.svdvals(w0.double())
    st = torch.linalg.svdvals(teacher.double())
    return float((s0 - st).pow(2).sum())


class TeacherRegressionDataModule(pl.LightningDataModule):
    """Regression on a fixed random linear teacher (x ~ N(0, I), y = T x + noise).

    Parameters
    ----------
    in_features, out_features: Teacher shape (out x in).
    n_train, n_val: Examples per split.
    batch_size: Examples per batch.
    noise: Standard deviation of the label noise.
    seed: Seed of the teacher and the inputs.

    Examples
    --------
    >>> dm = TeacherRegressionDataModule(8, 4, n_train=16, n_val=8, batch_size=4)
    >>> dm.setup("fit")
    >>> x, y = next(iter(dm.train_dataloader()))
    >>> x.shape, y.shape, dm.teacher.shape
    (torch.Size([4, 8]), torch.Size([4, 4]), torch.Size([4, 8]))
    """

    def __init__(
        self,
        in_features: int = 32,
        out_features: int = 32,
        n_train: int = 2048,
        n_val: int = 512,
        batch_size: int = 64,
        noise: float = 0.0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if min(in_features, out_features, n_train, n_val, batch_size) < 1 or noise < 0:
            raise ValueError("sizes must be >= 1 and noise >= 0")
        self.save_hyperparameters()
        g = torch.Generator().manual_seed(seed)
        self.teacher = torch.randn(out_features, in_features, generator=g) / in_features**0.5
        self._g = g
        self.train_set = self.val_set = None

    def _split(self, n: int) -> TensorDataset:
        x = torch.randn(n, self.hparams.in_features, generator=self._g)
        y = x @ self.teacher.T
        y = y + self.hparams.noise * torch.randn(y.shape, generator=self._g)
        return TensorDataset(x, y)

    def setup(self, stage: str | None = None) -> None:  # noqa: D102
        if self.train_set is None:
            self.train_set = self._split(self.hparams.n_train)
            self.val_set = self._split(self.hparams.n_val)

    def train_dataloader(self) -> DataLoader:  # noqa: D102
        gen = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(self.train_set, self.hparams.batch_size, shuffle=True, generator=gen)

    def val_dataloader(self) -> DataLoader:  # noqa: D102
        return DataLoader(self.val_set, self.hparams.batch_size)

    def test_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:  # noqa: D102
        return self.val_dataloader()


class TeacherRegressionModule(pl.LightningModule):
    """A single POET layer (or an AdamW ``nn.Linear``) regressing onto the teacher.

    Parameters
    ----------
    in_features, out_features: Layer shape (must match the data module's teacher).
    optimizer: ``"poet"`` (W = R W0 P, merged every ``merge_interval`` steps) or ``"adamw"``.
    block_size, merge_interval, cayley, neumann_terms, mode: POET settings.
    lr: Learning rate (POET: of the rotations).
    seed: Seed of W0 and the permutations.

    Examples
    --------
    >>> m = TeacherRegressionModule(8, 4, block_size=4)
    >>> m(torch.zeros(2, 8)).shape
    torch.Size([2, 4])
    """

    def __init__(
        self,
        in_features: int = 32,
        out_features: int = 32,
        optimizer: str = "poet",
        block_size: int = 8,
        merge_interval: int = 50,
        cayley: str = "exact",
        neumann_terms: int = 4,
        mode: str = "mem",
        lr: float = 0.05,
        seed: int = 0,
    ) -> None:
        super().__init__()
        if optimizer not in ("poet", "adamw"):
            raise ValueError(f"optimizer must be 'poet' or 'adamw', got {optimizer!r}")
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.cfg = POETConfig(block_size=block_size, merge_interval=merge_interval,
                              cayley=cayley, neumann_terms=neumann_terms, mode=mode,
                              poet_lr=lr, poet_lr_scale=1.0, base_lr=lr, seed=seed)  # fmt: skip
        g = torch.Generator().manual_seed(seed + 1000)
        w0 = torch.randn(out_features, in_features, generator=g) / in_features**0.5
        if optimizer == "poet":
            self.layer = POETLinear(w0, None, self.cfg, torch.Generator().manual_seed(seed))
        else:
            self.layer = nn.Linear(in_features, out_features, bias=False)
            with torch.no_grad():
                self.layer.weight.copy_(w0 / w0.norm(dim=1, keepdim=True))  # same start as POET
        self.n_optimizer_steps = 0
        self.steps_since_merge = 0
        self.floor: float | None = None

    def weight(self) -> torch.Tensor:
        """The student's effective weight (m x n)."""
        if isinstance(self.layer, POETLinear):
            return self.layer.effective_weight()
        return self.layer.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return self.layer(x)

    def _teacher(self) -> torch.Tensor | None:
        trainer = self._trainer
        dm = getattr(trainer, "datamodule", None) if trainer is not None else None
        return getattr(dm, "teacher", None)

    def setup(self, stage: str | None = None) -> None:  # noqa: D102
        teacher = self._teacher()
        if teacher is None:
            return
        want = (self.hparams.out_features, self.hparams.in_features)
        if tuple(teacher.shape) != want:
            raise ValueError(f"teacher shape {tuple(teacher.shape)} != student shape {want}")
        # POET keeps sigma(W) = sigma(W0); AdamW's floor is 0 (it can match any spectrum)
        self.floor = (
            procrustes_floor(self.weight().detach(), teacher)
            if self.hparams.optimizer == "poet"
            else 0.0
        )

    def configure_optimizers(self):  # noqa: D102
        kind = self.hparams.optimizer
        return build_optimizer(self.layer, self.cfg, kind, lr=self.hparams.lr)

    def training_step(self, batch, batch_idx):  # noqa: D102
        opt = self.optimizers()
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.manual_backward(loss)
        opt.step()
        opt.zero_grad(set_to_none=True)
        self.n_optimizer_steps += 1
        self.steps_since_merge += 1
        self.log("train_mse", loss.detach(), prog_bar=True)
        return loss.detach()

    def merge(self, optimizers) -> int:
        """Merge-and-reinitialise the POET layer and reset its optimiser state."""
        if not isinstance(self.layer, POETLinear):
            return 0
        self.layer.merge_and_reinit()
        for opt in optimizers if isinstance(optimizers, (list, tuple)) else [optimizers]:
            reset_poet_state(getattr(opt, "optimizer", opt))
        self.steps_since_merge = 0
        return 1

    def _eval(self, batch, prefix: str) -> None:
        x, y = batch
        self.log(f"{prefix}_mse", F.mse_loss(self(x), y), prog_bar=True)
        teacher = self._teacher()
        if teacher is not None:
            dist = (self.weight().detach() - teacher.to(self.device)).pow(2).sum()
            self.log("weight_dist", dist)
            self.log("procrustes_floor", float(self.floor or 0.0))

    def validation_step(self, batch, batch_idx):  # noqa: D102
        self._eval(batch, "val")

    def test_step(self, batch, batch_idx):  # noqa: D102
        self._eval(batch, "test")

    def predict_step(self, batch, batch_idx):  # noqa: D102
        return self(batch[0])
