"""LightningModules of the three weight-space tasks.

* :class:`INRClassifier`: invariant head, cross-entropy, accuracy (digit class of an INR).
* :class:`INREditor`: equivariant head with ``F`` output channels, residual edits and the
  output-ensemble rendering (:mod:`wsnets.output_ensemble`); loss = pixel MSE between the
  rendered edited function and the target image (dilated digit); metric PSNR.
* :class:`WeightRegressor`: invariant scalar head on standardised targets (sine frequency,
  test accuracy of a zoo MLP); metrics R^2 and Kendall tau.

Inputs are normalised by one scale per block (a scalar, so invariant), measured on the
training split by the data module and stored as a buffer (saved in checkpoints). Batches
are dicts ``{"weights": [...], "biases": [...], "y": ...}`` with ``(B, d_out, d_in, 1)`` /
``(B, d_out, 1)`` blocks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import lightning.pytorch as pl
import torch
import torch.nn.functional as nnf
from torchmetrics.functional import kendall_rank_corrcoef, r2_score

from wsnets.architectures import build_model, matched_hidden
from wsnets.output_ensemble import OutputEnsemble
from wsnets.weight_space import WeightSpace, image_coords


class WeightSpaceTask(pl.LightningModule):
    """Shared parts: model construction, input normalisation, augmentation, optimiser."""

    head = "invariant"

    def __init__(
        self,
        arch: Sequence[int] = (2, 16, 16, 1),
        model: str = "dws",
        hidden: int = 16,
        depth: int = 3,
        out_dim: int = 1,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        augment: bool | None = None,
    ) -> None:
        super().__init__()
        self.arch = tuple(int(a) for a in arch)
        self.net = build_model(model, self.arch, hidden, depth, self.head, out_dim)
        self.augment = (model == "mlp_aug") if augment is None else augment
        self.register_buffer("block_scale", torch.ones(2 * (len(self.arch) - 1)))

    # ------------------------------------------------------------ data
    def to_space(self, batch) -> WeightSpace:
        return WeightSpace(batch["weights"], batch["biases"]).check_arch(self.arch).check_finite()

    def normalise(self, v: WeightSpace) -> WeightSpace:
        s = self.block_scale
        return WeightSpace(
            [w / s[2 * li] for li, w in enumerate(v.weights)],
            [b / s[2 * li + 1] for li, b in enumerate(v.biases)],
        )

    def on_fit_start(self) -> None:
        dm = getattr(self.trainer, "datamodule", None)
        scale = getattr(dm, "block_scale", None)
        if scale is not None:
            self.block_scale.copy_(torch.as_tensor(scale, dtype=torch.float32))
        self._epoch_start = time.perf_counter()
        self.epoch_seconds: list[float] = []

    def on_train_epoch_start(self) -> None:
        self._epoch_start = time.perf_counter()

    def on_train_epoch_end(self) -> None:
        self.epoch_seconds.append(time.perf_counter() - self._epoch_start)

    def maybe_augment(self, v: WeightSpace) -> WeightSpace:
        if self.training and self.augment:
            return v.permute(v.batch_random_permutation())
        return v

    def forward(self, weights, biases, **_):
        v = WeightSpace(weights, biases).check_arch(self.arch).check_finite()
        return self.net(self.normalise(v))

    def configure_optimizers(self):
        opt = torch.optim.AdamW(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=5, min_lr=1e-4)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "monitor": "val/loss"}}

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


class INRClassifier(WeightSpaceTask):
    """Classify INRs by the class of the signal they represent (invariant head).

    Parameters
    ----------
    arch:
        Architecture of the input INRs.
    model:
        One of :data:`wsnets.architectures.MODELS`.
    hidden, depth:
        Width and depth of the meta-network.
    n_classes:
        Number of classes.
    lr, weight_decay:
        AdamW settings (the authors' experiment: 1e-3 and 1e-3).
    augment:
        Random hidden-neuron permutations in training (default: only for ``mlp_aug``).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> m = INRClassifier([2, 4, 4, 1], "dws", hidden=4, depth=1, n_classes=3)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=2)
    >>> m(v.weights, v.biases).shape
    torch.Size([2, 3])
    """

    selection = ("val/acc", "max")  # checkpoint selection (DWSNets: best validation accuracy)

    def __init__(
        self,
        arch: Sequence[int] = (2, 16, 16, 1),
        model: str = "dws",
        hidden: int = 16,
        depth: int = 3,
        n_classes: int = 10,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        augment: bool | None = None,
    ) -> None:
        super().__init__(arch, model, hidden, depth, n_classes, lr, weight_decay, augment)
        self.save_hyperparameters()

    def _step(self, batch, stage: str):
        v = self.maybe_augment(self.to_space(batch))
        logits = self.net(self.normalise(v))
        loss = nnf.cross_entropy(logits, batch["y"])
        acc = (logits.argmax(-1) == batch["y"]).float().mean()
        self.log(f"{stage}/loss", loss, prog_bar=stage != "train", batch_size=v.batch)
        self.log(f"{stage}/acc", acc, prog_bar=stage != "train", batch_size=v.batch)
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def predict_step(self, batch, batch_idx):
        return self(batch["weights"], batch["biases"]).argmax(-1)


class INREditor(WeightSpaceTask):
    """Edit INRs in weight space; render the output ensemble and compare with the target.

    Parameters
    ----------
    arch:
        Architecture of the input INRs (images: ``(2, h, h, 1)``).
    model:
        An equivariant family (``dws``, ``np_pe``, ``gmn``) or a baseline.
    hidden, depth:
        Meta-network width/depth *for F = 1*; with ``match_budget`` the width is reduced
        for ``F > 1`` so the parameter count does not exceed the ``F = 1`` model's.
    F:
        Output-ensemble size (1 = the plain residual editor).
    image_size, w0, offset:
        Rendering grid and SIREN settings of the zoo (must match the data).
    edit_scale:
        Initial per-block scale ``s`` of the residual edits (1e-3: the first edits are a small
        fraction of the weights' spread, so training starts from the input INR).

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> m = INREditor([2, 4, 4, 1], "dws", hidden=4, depth=1, F=2, image_size=4)
    >>> v = WeightSpace.random([2, 4, 4, 1], batch=3)
    >>> m(v.weights, v.biases).shape
    torch.Size([3, 16])
    """

    head = "equivariant"

    def __init__(
        self,
        arch: Sequence[int] = (2, 16, 16, 1),
        model: str = "dws",
        hidden: int = 16,
        depth: int = 3,
        F: int = 1,
        match_budget: bool = True,
        image_size: int = 16,
        w0: float = 30.0,
        offset: float = 0.5,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        augment: bool | None = None,
        edit_scale: float = 1e-3,
    ) -> None:
        if F < 1:
            raise ValueError(f"the number of ensemble members F must be >= 1, got {F}")
        width = matched_hidden(model, arch, hidden, depth, F) if match_budget else hidden
        super().__init__(arch, model, width, depth, F, lr, weight_decay, augment)
        self.save_hyperparameters()
        self.width = width
        self.ensemble = OutputEnsemble(len(self.arch) - 1, F, init_scale=edit_scale)
        self.register_buffer("coords", image_coords(image_size), persistent=False)

    def on_fit_start(self) -> None:
        super().on_fit_start()
        meta = getattr(getattr(self.trainer, "datamodule", None), "meta", None) or {}
        for key in ("w0", "offset"):
            if key in meta and float(meta[key]) != float(self.hparams[key]):
                raise ValueError(
                    f"the editor renders with {key}={self.hparams[key]} but the zoo's SIRENs use "
                    f"{key}={meta[key]}"
                )

    def edit(self, v: WeightSpace) -> WeightSpace:
        """The ``F`` edited networks ``v + s * Delta_f`` (``Delta`` from the normalised input).

        ``s`` starts at ``edit_scale`` (1e-3). With the authors' 1e-2 and our meta-networks'
        output magnitude (``|Delta| ~ 4``) the first edits were as large as the SIREN weights
        themselves (block spreads 0.005-0.08): training started at twice the no-edit MSE and
        the DWS editors at F = 2 and 4 never left that basin (full run of 0.1.x: test MSE 0.15
        and 0.14 against 0.056 for not editing).
        """
        return self.ensemble.edit(v, self.net(self.normalise(v)))

    def render(self, edited: WeightSpace) -> torch.Tensor:
        hp = self.hparams
        return self.ensemble.render(edited, self.coords, "sine", hp.w0, hp.offset)[..., 0]

    def forward(self, weights, biases, **_):
        return self.render(
            self.edit(WeightSpace(weights, biases).check_arch(self.arch).check_finite())
        )

    def _step(self, batch, stage: str):
        v = self.maybe_augment(self.to_space(batch))
        pred = self.render(self.edit(v))
        target = batch["y"].reshape(pred.shape)
        mse_each = ((pred - target) ** 2).mean(dim=1)
        loss = mse_each.mean()
        psnr = (-10 * torch.log10(mse_each.clamp_min(1e-10))).mean()
        self.log(f"{stage}/loss", loss, prog_bar=stage != "train", batch_size=v.batch)
        self.log(f"{stage}/psnr", psnr, prog_bar=stage != "train", batch_size=v.batch)
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def predict_step(self, batch, batch_idx):
        return self(batch["weights"], batch["biases"])


class WeightRegressor(WeightSpaceTask):
    """Regress a scalar property of a network from its weights (sine frequency, accuracy).

    Targets are standardised with ``target_mean`` / ``target_std`` (set from the training
    split by the data module); metrics are R^2 and Kendall tau on the original scale.

    Examples
    --------
    >>> torch.manual_seed(0) and None
    >>> m = WeightRegressor([1, 4, 4, 1], "gmn", hidden=4, depth=1)
    >>> v = WeightSpace.random([1, 4, 4, 1], batch=2)
    >>> m(v.weights, v.biases).shape
    torch.Size([2])
    """

    def __init__(
        self,
        arch: Sequence[int] = (1, 16, 16, 1),
        model: str = "dws",
        hidden: int = 16,
        depth: int = 3,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        augment: bool | None = None,
    ) -> None:
        super().__init__(arch, model, hidden, depth, 1, lr, weight_decay, augment)
        self.save_hyperparameters()
        self.register_buffer("target_stats", torch.tensor([0.0, 1.0]))
        self._outs: dict[str, list] = {}

    def on_fit_start(self) -> None:
        super().on_fit_start()
        stats = getattr(getattr(self.trainer, "datamodule", None), "target_stats", None)
        if stats is not None:
            self.target_stats.copy_(torch.as_tensor(stats, dtype=torch.float32))

    def forward(self, weights, biases, **_):
        m, s = self.target_stats
        return super().forward(weights, biases)[:, 0] * s + m

    def _step(self, batch, stage: str):
        v = self.maybe_augment(self.to_space(batch))
        m, s = self.target_stats
        pred = self.net(self.normalise(v))[:, 0]
        loss = nnf.mse_loss(pred, (batch["y"].float() - m) / s)
        self.log(f"{stage}/loss", loss, prog_bar=stage != "train", batch_size=v.batch)
        if stage != "train":
            self._outs.setdefault(stage, []).append((pred.detach() * s + m, batch["y"].float()))
        return loss

    def _epoch_end(self, stage: str) -> None:
        outs = self._outs.pop(stage, [])
        if not outs:
            return
        pred = torch.cat([p for p, _ in outs])
        y = torch.cat([t for _, t in outs])
        if len(y) > 2:
            self.log(f"{stage}/r2", r2_score(pred, y))
            self.log(f"{stage}/kendall", kendall_rank_corrcoef(pred, y))

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def on_validation_epoch_end(self) -> None:
        self._epoch_end("val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def on_test_epoch_end(self) -> None:
        self._epoch_end("test")

    def predict_step(self, batch, batch_idx):
        return self(batch["weights"], batch["biases"])
