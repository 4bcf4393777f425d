"""The emulator LightningModule: one-step / rollout training of a pluggable backbone.

* losses: one-step MSE ``||Phi(u_t) - u_{t+1}||^2`` and the k-step autoregressive rollout
  loss (the conditioning channels, e.g. the forcing, are carried over): :meth:`EmulatorModule.rollout`;
* metrics (torchmetrics): MSE, :class:`VRMSE` (``sqrt(MSE / Var(u))`` per sample and
  channel) and :class:`EquivarianceError` (``max_g ||Phi(L_g u) - L_g Phi(u)|| / ||Phi(u)||``
  over C4);
* backbones: ``revit`` (ReViT, :class:`~revit_equivariant.transformer.ReViT2d`), ``swin`` (the
  same backbone with ``equivariant=False``), ``unet``, ``fno`` (``neuraloperator``'s FNO when
  installed, else the re-implementation with a warning), ``fno-own`` (always the
  re-implementation), ``reference`` (``revit-pde``); ``build_backbone``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import lightning.pytorch as pl
import torch
from torchmetrics import MeanSquaredError, Metric

from .fno import FNO2d, NeuralOperatorFNO2d, neuraloperator_version
from .group import equivariance_error
from .pde_data import Problem, problem_spec
from .transformer import ReViT2d, ReViT3d, _sub_spec
from .unet import UNet2d

Backbone = Literal["revit", "swin", "unet", "fno", "fno-own", "reference"]


class VRMSE(Metric):
    """Variance-scaled RMSE ``sqrt(mean((y - t)^2) / var(t))`` per sample and channel, averaged.

    Examples
    --------
    >>> m = VRMSE(); t = torch.randn(4, 2, 8, 8)
    >>> m.update(t, t); float(m.compute())
    0.0
    """

    def __init__(self) -> None:
        super().__init__()
        self.add_state("total", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("count", torch.tensor(0), dist_reduce_fx="sum")

    def update(self, pred: torch.Tensor, target: torch.Tensor) -> None:
        dims = tuple(range(2, target.ndim))
        mse = (pred - target).double().pow(2).mean(dims)
        var = target.double().var(dims).clamp_min(1e-12)
        self.total += (mse / var).sqrt().sum()
        self.count += mse.numel()

    def compute(self) -> torch.Tensor:
        return self.total / self.count.clamp_min(1)


class EquivarianceError(Metric):
    """Largest relative C4 equivariance error seen over the updates.

    Examples
    --------
    >>> from revit_equivariant.group import FieldSpec
    >>> m = EquivarianceError(); spec = FieldSpec(2, vectors=((0, 1),))
    >>> m.update(lambda u: 3 * u, torch.randn(1, 2, 8, 8), spec, spec); float(m.compute()) < 1e-6
    True
    """

    def __init__(self, group: str = "c4") -> None:
        super().__init__()
        self.group = group
        self.add_state("worst", torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="max")

    def update(self, model, x: torch.Tensor, spec, out_spec) -> None:
        err = equivariance_error(model, x, spec, self.group, out_spec)
        self.worst = torch.maximum(self.worst, torch.tensor(err, dtype=torch.float64))

    def compute(self) -> torch.Tensor:
        return self.worst


def build_backbone(
    backbone: str,
    problem: str,
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
) -> torch.nn.Module:
    """Build one of the emulator backbones for a problem's field spec (3D: revit / swin only)."""
    ps = problem_spec(problem)
    if ps.spec.dim == 3:
        if backbone not in ("revit", "swin"):
            raise ValueError(
                f"backbone {backbone!r} is 2D only; the 3D problem {problem} takes revit or swin"
            )
        return ReViT3d(
            ps.spec,
            ps.state,
            patch=patch,
            window=window,
            embed_dim=embed_dim,
            heads=heads,
            depths=tuple(depths),
            frame_method="aovc" if frame_method == "aov" else frame_method,
            equivariant=backbone == "revit",
            periodic=periodic,
        )
    if backbone in ("revit", "swin"):
        return ReViT2d(
            ps.spec,
            ps.state,
            patch=patch,
            window=window,
            embed_dim=embed_dim,
            heads=heads,
            depths=tuple(depths),
            frame_method=frame_method,
            equivariant=backbone == "revit",
            periodic=periodic,
        )
    if backbone == "unet":
        return UNet2d(ps.spec.n_channels, ps.state, width=width)
    if backbone == "fno" and neuraloperator_version() is not None:
        return NeuralOperatorFNO2d(ps.spec.n_channels, ps.state, width=width, modes=modes)
    if backbone == "fno":
        warnings.warn(
            "neuraloperator is not installed: backbone fno uses the re-implementation FNO2d "
            "(pip install 'revit-equivariant[bench]' for the anchor)",
            stacklevel=2,
        )
    if backbone in ("fno", "fno-own"):
        return FNO2d(ps.spec.n_channels, ps.state, width=width, modes=modes)
    if backbone == "reference":
        from .reference_model import ReferenceReViT2d

        return ReferenceReViT2d(
            ps.spec,
            ps.state,
            img_size=img_size,
            patch=patch,
            window=window,
            embed_dim=embed_dim,
            heads=heads,
            depths=tuple(depths),
            periodic=periodic,
        )
    raise ValueError(
        f"unknown backbone {backbone!r}; choose revit, swin, unet, fno, fno-own or reference"
    )


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
        the 3D problem ``MHD_64`` builds :class:`~revit_equivariant.transformer.ReViT3d`
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
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.ps = problem_spec(problem)
        self.out_spec = _sub_spec(self.ps.spec, self.ps.state)
        self.net = build_backbone(
            backbone,
            problem,
            patch,
            window,
            embed_dim,
            heads,
            depths,
            frame_method,
            periodic,
            width,
            modes,
            img_size,
        )
        self.val_mse, self.test_mse = MeanSquaredError(), MeanSquaredError()
        self.val_vrmse, self.test_vrmse = VRMSE(), VRMSE()
        self.equiv_group = "o" if self.ps.spec.dim == 3 else "c4"
        self.val_equiv = EquivarianceError(self.equiv_group)

    def setup(self, stage: str) -> None:
        dm = self.trainer.datamodule if self._trainer is not None else None
        problem = getattr(getattr(dm, "hparams", None), "problem", None)
        if problem is not None and problem != self.hparams.problem:
            raise ValueError(
                f"the model is built for problem {self.hparams.problem!r} but the data is "
                f"{problem!r}: set --model.problem {problem}"
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
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
