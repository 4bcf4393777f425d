"""One row of the comparison: train a head behind a privacy method, then score and audit it.

Methods (same head, same features, same seeds):

- ``none``: no projection; ``OPL``: :class:`~opl_vad.projection.OrthogonalProjection` trained
  by the VAD loss only; ``G-OPL``: :class:`~opl_vad.projection.GuidedOrthogonalProjection`
  with the weak face-presence signal (the paper's two face losses, as reconstructed);
  ``G-OPL+C``: the same plus our within-video face-contrast term
  (:func:`~opl_vad.face_guidance.face_contrast_loss`, weight ``contrast_weight``);
- ``LEACE`` and ``INLP``: face erasure fitted once with the true face labels on the training
  snippets (:mod:`opl_vad.erasure`), then the head is trained on the erased features.

:func:`run_method` returns frame AUC / AP, the :class:`~opl_vad.privacy_audit.PrivacyAudit`
of the features the head sees on the test set, and the training time.
"""

from __future__ import annotations

import copy
import dataclasses
import time
import warnings

import numpy as np
import torch

from .erasure import fit_inlp, fit_leace
from .lightning import SyntheticVADDataModule, VADModule
from .privacy_audit import PrivacyAudit

__all__ = ["METHODS", "run_method"]

METHODS = ["none", "OPL", "G-OPL", "G-OPL+C", "LEACE", "INLP"]


def run_method(
    method: str,
    head: str,
    data: SyntheticVADDataModule,  # or its image variant, FaceFrameVADDataModule
    epochs: int = 30,
    rank_task: int = 8,
    rank_face: int = 4,
    face_weight: float = 1.0,
    cos_weight: float = 0.1,
    contrast_weight: float = 5.0,
    projection_lr: float | None = None,
    seed: int = 0,
    face_readout: str = "mlp",
    cos_anchor: str = "ema",
) -> dict:
    """Train and evaluate one (method, head) on ``data`` (set up); returns a result row.

    ``contrast_weight`` applies to ``G-OPL+C`` only (``G-OPL`` trains without the term);
    ``face_readout`` / ``cos_anchor`` choose G-OPL's variant (:class:`~opl_vad.face_guidance.FaceGuidance`).
    """
    import lightning.pytorch as pl
    from icml26_shared.trainer import quiet_trainer

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    data.setup()
    train, test = data.train_data, data.test_data
    D = train.features.shape[-1]
    eraser = None
    if method in ("LEACE", "INLP"):
        X = train.features.reshape(-1, D)
        face = train.face.reshape(-1)
        eraser = fit_leace(X, face) if method == "LEACE" else fit_inlp(X, face, seed=seed)
        erased = copy.copy(data)  # same data module, erased copies of its two splits
        erased.train_data = dataclasses.replace(train, features=eraser(train.features))
        erased.test_data = dataclasses.replace(test, features=eraser(test.features))
        data, test = erased, erased.test_data
    projection = {"OPL": "opl", "G-OPL": "gopl", "G-OPL+C": "gopl"}.get(method, "none")
    contrast_weight = contrast_weight if method == "G-OPL+C" else 0.0
    pl.seed_everything(seed, verbose=False)
    module = VADModule(D, head=head, projection=projection, rank_task=rank_task,
                       rank_face=rank_face, face_weight=face_weight, cos_weight=cos_weight,
                       contrast_weight=contrast_weight, face_readout=face_readout,
                       cos_anchor=cos_anchor, projection_lr=projection_lr,
                       seed=seed)  # fmt: skip
    trainer = quiet_trainer(max_epochs=epochs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        trainer.fit(module, train_dataloaders=data.train_dataloader())
        seconds = time.perf_counter() - start
        metrics = trainer.test(module, dataloaders=data.test_dataloader(), verbose=False)[0]
    module.eval()
    with torch.no_grad():
        kept = module.kept(torch.as_tensor(test.features)).numpy().reshape(-1, D)
    if eraser is not None:
        removed = eraser.removed_basis
    elif module.projection is None:
        removed = None
    elif projection == "gopl":
        removed = module.projection.bases()[1].detach().numpy()
    else:
        removed = module.projection.basis().detach().numpy()
    V, T = test.features.shape[:2]
    audit = PrivacyAudit(max_samples=2000, seed=seed).run(
        kept, test.face.reshape(-1), np.repeat(test.identity, T), test.face_basis, removed,
        groups=np.repeat(np.arange(V), T),
    )  # fmt: skip
    return {"method": method, "head": head, "seed": seed, "auc": metrics["test/auc"],
            "ap": metrics["test/ap"], "seconds": seconds, **audit}  # fmt: skip
