"""LightningModule training the in-context classifier with cross-entropy on the probe.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613).

The loss is the cross-entropy of the probe's logits (the label block of the probe token
after the last layer) against the probe's clean label. In ``"augment"`` mode the weights
are projected onto the commutant (Reynolds average) when training ends
(``project_at_end``), after which :func:`symicl.recursion.extract_recursion` reads them.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.nn import functional as F

from symicl.analysis import model_defects
from symicl.episodes import one_hot_labels
from symicl.transformer import EquivariantICLTransformer


class ICLClassifierModule(pl.LightningModule):
    """Train an :class:`EquivariantICLTransformer` on in-context classification episodes.

    Parameters
    ----------
    d, n_classes, n_layers, n_heads, symmetry, attention, init_scale
        Passed to :class:`EquivariantICLTransformer`.
    lr
        Adam learning rate (cosine-annealed to 0 over the run).
    weight_decay
        Adam weight decay.
    project_at_end
        In ``"augment"`` mode, replace the weights by their Reynolds projection when
        ``fit`` ends.

    Examples
    --------
    >>> from symicl.episodes import LinearTaskSampler
    >>> _ = torch.manual_seed(0)
    >>> module = ICLClassifierModule(d=4, n_classes=3, n_layers=1)
    >>> batch = LinearTaskSampler(4, 3, 8).sample(6)
    >>> tuple(module(batch["x"], batch["y"], batch["xq"]).shape)
    (6, 3)
    """

    def __init__(
        self,
        d: int = 8,
        n_classes: int = 2,
        n_layers: int = 2,
        n_heads: int = 2,
        symmetry: str = "tied",
        attention: str = "softmax",
        init_scale: float = 0.1,
        lr: float = 1e-2,
        weight_decay: float = 0.0,
        project_at_end: bool = True,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        self.model = EquivariantICLTransformer(
            d, n_classes, n_layers, n_heads, symmetry, attention, init_scale
        )
        #: mean/max defects of an "augment" model just before its end-of-fit projection
        self.defect_before_projection: dict[str, float] | None = None
        #: state dict of an "augment" model just before its end-of-fit projection
        self.state_before_projection: dict[str, torch.Tensor] | None = None

    def forward(self, x: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Probe logits ``(B, C)``; ``y`` may be integer labels ``(B, N)`` (-1 = unlabeled)."""
        if y.ndim == 2:
            y = one_hot_labels(y, self.model.n_classes).to(x.device)
        return self.model(x, y, xq)

    def _step(self, batch: dict[str, torch.Tensor], stage: str) -> torch.Tensor:
        logits = self(batch["x"], batch["y"], batch["xq"])
        loss = F.cross_entropy(logits, batch["yq"])
        acc = (logits.argmax(-1) == batch["yq"]).float().mean()
        on_step = stage == "train"
        bs = len(batch["yq"])
        self.log(f"{stage}_loss", loss, on_step=on_step, on_epoch=True, batch_size=bs)
        self.log(f"{stage}_acc", acc, on_step=False, on_epoch=True, prog_bar=True, batch_size=bs)
        return loss

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Cross-entropy of the probe logits."""
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Logs ``val_loss`` and ``val_acc``."""
        self._step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Logs ``test_loss`` and ``test_acc``."""
        self._step(batch, "test")

    def predict_step(
        self, batch: dict[str, torch.Tensor], batch_idx: int
    ) -> dict[str, torch.Tensor]:
        """Probe logits, predicted class and true class."""
        logits = self(batch["x"], batch["y"], batch["xq"])
        return {"logits": logits, "pred": logits.argmax(-1), "target": batch["yq"]}

    def on_fit_end(self) -> None:
        """Reynolds-project an ``"augment"`` model when training ends."""
        if self.hparams.project_at_end and self.model.symmetry == "augment":
            self.defect_before_projection = model_defects(self.model)
            self.state_before_projection = {
                k: v.detach().clone() for k, v in self.model.state_dict().items()
            }
            self.model.project_()

    def configure_optimizers(self):
        """Adam with a cosine schedule over the whole run."""
        opt = torch.optim.Adam(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        total = max(1, int(self.trainer.estimated_stepping_batches))
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def train_classifier(
    d: int,
    n_classes: int,
    n_context: int,
    n_layers: int = 2,
    n_heads: int = 2,
    symmetry: str = "tied",
    steps: int = 1000,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
) -> ICLClassifierModule:
    """Fit an :class:`ICLClassifierModule` for ``steps`` batches with Lightning (no logging).

    The same Trainer path as ``symicl fit``, without validation, checkpoints or a logger;
    used by ``symicl reproduce``.
    """
    from symicl.episode_data import LinearTaskDataModule

    pl.seed_everything(seed, verbose=False)
    module = ICLClassifierModule(d, n_classes, n_layers, n_heads, symmetry, lr=lr)
    data = LinearTaskDataModule(
        d, n_classes, n_context, batch_size=batch_size, train_batches=steps, seed=seed
    )
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    trainer.fit(module, datamodule=data)
    return module.eval()
