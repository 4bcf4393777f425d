"""The Lightning module: a projection layer (none / OPL / G-OPL) in front of a VAD head.

Paper: Wang et al., ICML 2026. Training loss
``L = L_VAD(z) + face_weight * L_face + cos_weight * L_cos + contrast_weight * L_contrast``
(the last three for G-OPL only, :mod:`opl_vad.face_guidance`; ``L_contrast`` is our addition,
off by default), Adam with weight decay (RTFM: lr 1e-3, 5e-4). Validation and
test report frame-level AUC and AP (torchmetrics ``BinaryAUROC`` / ``BinaryAveragePrecision``)
with the snippet-to-frame expansion of :mod:`opl_vad.frame_protocol`.
"""

from __future__ import annotations

from typing import Literal

import lightning.pytorch as pl
import torch
from torchmetrics.classification import BinaryAUROC, BinaryAveragePrecision

from .face_guidance import FaceGuidance, check_face_signal, face_contrast_loss
from .frame_protocol import FRAMES_PER_SNIPPET
from .mgfn import MGFNHead
from .mil import MILHead
from .projection import GuidedOrthogonalProjection, OrthogonalProjection
from .rtfm import RTFMHead

__all__ = ["HEADS", "VADModule"]

HEADS = {"mil": MILHead, "rtfm": RTFMHead, "mgfn": MGFNHead}


class VADModule(pl.LightningModule):
    """Weakly supervised VAD with an optional orthogonal projection in front of the head.

    Parameters
    ----------
    dim:
        Feature size ``D``.
    head:
        ``mil`` (Sultani et al.), ``rtfm`` (Tian et al.) or ``mgfn`` (Chen et al.).
    projection:
        ``none``, ``opl`` or ``gopl``.
    rank_task, rank_face:
        Removed-subspace dimensions (OPL uses ``rank_task``).
    face_weight, cos_weight:
        G-OPL's loss weights ``lambda_f``, ``lambda_c``.
    contrast_weight:
        Weight of :func:`~opl_vad.face_guidance.face_contrast_loss` (G-OPL only; 0 = the
        paper's losses as reconstructed here).
    face_readout:
        Readout of the face-presence loss (:class:`~opl_vad.face_guidance.FaceGuidance`).
    lr, weight_decay:
        Adam settings.
    projection_lr:
        Learning rate of the projection's subspace parameter and the face readout (default:
        ``lr``); it is never weight-decayed, since only its column space matters.
    seed:
        Initialisation seed of the projection.

    Examples
    --------
    >>> import torch
    >>> m = VADModule(16, head="mil", projection="gopl", rank_task=2, rank_face=2).eval()
    >>> m(torch.randn(3, 8, 16)).shape
    torch.Size([3, 8])
    """

    def __init__(
        self,
        dim: int = 128,
        head: Literal["mil", "rtfm", "mgfn"] = "mil",
        projection: Literal["none", "opl", "gopl"] = "gopl",
        rank_task: int = 16,
        rank_face: int = 8,
        face_weight: float = 1.0,
        cos_weight: float = 0.1,
        contrast_weight: float = 0.0,
        face_readout: Literal["linear", "mlp"] = "mlp",
        lr: float = 1e-3,
        weight_decay: float = 5e-4,
        projection_lr: float | None = None,
        seed: int = 0,
    ):
        super().__init__()
        self.save_hyperparameters()
        if head not in HEADS or projection not in ("none", "opl", "gopl"):
            raise ValueError(f"unknown head {head!r} or projection {projection!r}")
        self.head = HEADS[head](dim)
        self.projection = None
        self.guidance = None
        if projection == "opl":
            self.projection = OrthogonalProjection(dim, rank_task, seed=seed)
        elif projection == "gopl":
            self.projection = GuidedOrthogonalProjection(dim, rank_task, rank_face, seed=seed)
            self.guidance = FaceGuidance(dim, rank_face, readout=face_readout)
        self.val_auc, self.val_ap = BinaryAUROC(), BinaryAveragePrecision()
        self.test_auc, self.test_ap = BinaryAUROC(), BinaryAveragePrecision()

    def kept(self, x: torch.Tensor) -> torch.Tensor:
        """The features the head sees: ``(..., D) -> (..., D)``."""
        if x.shape[-1] != self.hparams.dim:
            raise ValueError(
                f"feature dimension {x.shape[-1]} does not match dim={self.hparams.dim}"
            )
        return x if self.projection is None else self.projection(x).z

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Snippet anomaly scores ``(B, T)`` of features ``(B, T, D)``."""
        return self.head(self.kept(x))

    def training_step(self, batch, batch_idx):
        x, y = batch["x"], batch["y"]
        if not bool(torch.isfinite(x).all()):
            raise ValueError("features contain NaN or inf")
        out = None if self.projection is None else self.projection(x)
        z = x if out is None else out.z
        loss, _ = self.head.loss(z, y)
        self.log("train/vad_loss", loss, prog_bar=True)
        if self.guidance is not None:
            face = batch["face"]
            if bool((face < 0).all()):  # VideoSet's marker for "no face signal given"
                raise ValueError(
                    "G-OPL needs a face-presence signal per training snippet; give the data "
                    "module one (FeatureListDataModule: face_dir, from opl-vad "
                    "extract-face-presence) or use projection none / opl"
                )
            check_face_signal(face, tuple(x.shape[:2]))
            l_face, l_cos = self.guidance(out.face_coeffs, out.face_removed, face)
            loss = loss + self.hparams.face_weight * l_face + self.hparams.cos_weight * l_cos
            logs = {"train/face_loss": l_face, "train/cos_loss": l_cos}
            if self.hparams.contrast_weight:
                l_con = face_contrast_loss(out.face_coeffs, x, face)
                loss = loss + self.hparams.contrast_weight * l_con
                logs["train/contrast_loss"] = l_con
            self.log_dict(logs)
        self.log("train/loss", loss)
        return loss

    def _frames(self, batch) -> tuple[torch.Tensor, torch.Tensor]:
        scores = self(batch["x"])  # (B, T)
        frames = scores.repeat_interleave(FRAMES_PER_SNIPPET, dim=1).reshape(-1)
        if "frame_y" in batch:
            target = batch["frame_y"].reshape(-1)
            frames = frames[: len(target)]
        else:
            target = batch["snippet_y"].repeat_interleave(FRAMES_PER_SNIPPET, dim=1).reshape(-1)
        return frames, target

    def validation_step(self, batch, batch_idx):
        s, t = self._frames(batch)
        self.val_auc.update(s, t)
        self.val_ap.update(s, t)
        self.log_dict({"val/auc": self.val_auc, "val/ap": self.val_ap}, prog_bar=True)

    def test_step(self, batch, batch_idx):
        s, t = self._frames(batch)
        self.test_auc.update(s, t)
        self.test_ap.update(s, t)
        self.log_dict({"test/auc": self.test_auc, "test/ap": self.test_ap})

    def predict_step(self, batch, batch_idx):
        return self(batch["x"])

    def configure_optimizers(self):
        # no weight decay on the subspace parameter: only its column space matters
        proj = [] if self.projection is None else list(self.projection.parameters())
        if self.guidance is not None:
            proj += list(self.guidance.parameters())
        ids = {id(p) for p in proj}
        rest = [p for p in self.parameters() if id(p) not in ids]
        groups = [{"params": rest, "weight_decay": self.hparams.weight_decay}]
        if proj:
            plr = self.hparams.projection_lr or self.hparams.lr
            groups.append({"params": proj, "weight_decay": 0.0, "lr": plr})
        return torch.optim.Adam(groups, lr=self.hparams.lr)
