"""Deploying a trained OPL / G-OPL model: scores, kept features and the audit from a checkpoint.

Paper: Wang et al., ICML 2026. The layer is meant to sit in front of a VAD head at test time;
this module is what ``opl-vad predict --checkpoint`` and ``opl-vad export-projector`` run:

- :func:`predict_videos`: a trained :class:`~opl_vad.lightning.VADModule` over the videos of a
  feature list (RTFM / UR-DMU layout, :class:`~opl_vad.lightning.FeatureListDataModule`):
  snippet scores, frame scores (the x16 expansion of :mod:`opl_vad.frame_protocol`), the kept
  features ``(I - Q Q^T) x`` the head saw, and, given a face signal per video, the
  :class:`~opl_vad.privacy_audit.PrivacyAudit` of the raw and the kept features;
- :func:`write_prediction`: those outputs as files, each written atomically;
- :func:`export_projection`: the learned projection as a standalone tensor file
  (:func:`~opl_vad.projection.save_projection`, read back by
  :class:`~opl_vad.projection.FixedProjection`).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .frame_protocol import FRAMES_PER_SNIPPET

__all__ = ["Prediction", "export_projection", "predict_videos", "write_prediction"]


@dataclass
class Prediction:
    """What :func:`predict_videos` returns (videos in list order).

    ``names`` per video; ``snippet_scores`` and ``kept`` lists of ``(T_v,)`` / ``(T_v, D)``
    arrays; ``face`` a list of ``(T_v,)`` face signals or ``None``; ``audit`` /
    ``audit_raw`` the privacy audits of the kept / raw features (``{}`` without a face
    signal); ``metrics`` frame AUC / AP when a frame ground truth was given.
    """

    names: list[str]
    snippet_scores: list[np.ndarray]
    kept: list[np.ndarray]
    face: list[np.ndarray] | None = None
    audit: dict = field(default_factory=dict)
    audit_raw: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)

    def frame_scores(self) -> np.ndarray:
        """Frame scores of all videos concatenated in list order (16 frames per snippet)."""
        return np.concatenate([np.repeat(s, FRAMES_PER_SNIPPET) for s in self.snippet_scores])


def _video_name(files: list[Path]) -> str:
    import re

    return re.sub(r"__\d+$", "", files[0].stem)


def predict_videos(module, list_file, face_dir=None, gt=None, folds: int = 5,
                   seed: int = 0) -> Prediction:  # fmt: skip
    """Score every video of ``list_file`` with ``module`` (a :class:`VADModule`, eval mode).

    ``face_dir``: ``<video>_face.npy`` per video (values in ``[0, 1]``, thresholded at 0.5
    for the audit). ``gt``: frame-level ground truth ``.npy`` (the test videos' frames in list
    order), for frame AUC / AP.
    """
    from icml26_shared.progress import progress

    from .lightning import FeatureListDataModule
    from .privacy_audit import PrivacyAudit

    paths, _ = FeatureListDataModule.read_list(str(list_file))
    D = int(module.hparams.dim)
    names, scores, kept, raw, faces = [], [], [], [], []
    module.eval()
    for files in progress(paths, desc="videos"):
        x = FeatureListDataModule.load_features(files)
        if x.shape[1] != D:
            raise ValueError(f"{files[0]}: feature size {x.shape[1]}, the checkpoint's dim={D}")
        with torch.no_grad():
            xt = torch.as_tensor(x)[None]
            z = module.kept(xt)
            s = module.head(z)
        names.append(_video_name(files))
        scores.append(s[0].numpy().astype(np.float64))
        kept.append(z[0].numpy())
        raw.append(x)
        if face_dir is not None:
            p = Path(face_dir) / f"{names[-1]}_face.npy"
            if not p.is_file():
                raise FileNotFoundError(f"face signal {str(p)!r} does not exist")
            f = np.load(p).astype(np.float64).reshape(-1)
            if len(f) != len(x):
                raise ValueError(f"face signal {str(p)!r} has {len(f)} values, the features "
                                 f"{len(x)}")  # fmt: skip
            if not np.isfinite(f).all() or (f < 0).any() or (f > 1).any():
                raise ValueError(f"face signal {str(p)!r} has values outside [0, 1]")
            faces.append(f)
    pred = Prediction(names, scores, kept, faces or None)
    if gt is not None:
        from sklearn.metrics import average_precision_score, roc_auc_score

        y = np.load(gt).reshape(-1)
        s = pred.frame_scores()
        if len(y) != len(s):
            raise ValueError(f"frame ground truth has {len(y)} frames, the list implies {len(s)}")
        if len(np.unique(y)) == 2:
            pred.metrics = {"frame_auc": float(roc_auc_score(y, s)),
                            "frame_ap": float(average_precision_score(y, s))}  # fmt: skip
    if faces:
        f = (np.concatenate(faces) > 0.5).astype(int)
        groups = np.concatenate([np.full(len(v), i) for i, v in enumerate(kept)])
        if len(np.unique(f)) == 2 and len(kept) >= folds:
            audit = PrivacyAudit(folds=folds, max_samples=4000, seed=seed)
            pred.audit = audit.run(np.concatenate(kept), f, groups=groups)
            pred.audit_raw = audit.run(np.concatenate(raw), f, groups=groups)
    return pred


def _save_npy(path: Path, array: np.ndarray) -> None:
    from icml26_shared.results import atomic_write_bytes

    buf = io.BytesIO()
    np.save(buf, array)
    atomic_write_bytes(path, buf.getvalue())


def write_prediction(pred: Prediction, out, info: dict | None = None) -> Path:
    """Write ``pred`` into folder ``out``; returns the path of ``result.json``.

    Files: ``snippet_scores.csv`` (video, snippet, score[, face]), ``frame_scores.npy``
    (16 frames per snippet, list order), ``kept_features.npy`` ``(N, D)`` (all snippets in
    list order), ``snippet_video.npy`` ``(N,)`` (video index per snippet: the probes' groups),
    ``face.npy`` ``(N,)`` (0/1, with a face signal), ``result.json`` (counts, metrics, audits).
    """
    from icml26_shared.results import atomic_write_text, ensure_writable_dir

    out = ensure_writable_dir(out)
    lines = ["video,snippet,score" + (",face" if pred.face else "")]
    for i, (name, s) in enumerate(zip(pred.names, pred.snippet_scores, strict=True)):
        for t, v in enumerate(s):
            row = f"{name},{t},{v:.6g}"
            lines.append(row + (f",{pred.face[i][t]:.6g}" if pred.face else ""))
    atomic_write_text(out / "snippet_scores.csv", "\n".join(lines) + "\n")
    _save_npy(out / "frame_scores.npy", pred.frame_scores())
    _save_npy(out / "kept_features.npy", np.concatenate(pred.kept).astype(np.float32))
    groups = np.concatenate([np.full(len(v), i) for i, v in enumerate(pred.kept)])
    _save_npy(out / "snippet_video.npy", groups.astype(np.int64))
    if pred.face:
        _save_npy(out / "face.npy", (np.concatenate(pred.face) > 0.5).astype(np.int64))
    result = {
        "videos": len(pred.names), "snippets": int(sum(len(s) for s in pred.snippet_scores)),
        "frames_per_snippet": FRAMES_PER_SNIPPET, **(info or {}), "metrics": pred.metrics,
        "audit_kept": pred.audit, "audit_raw": pred.audit_raw,
    }  # fmt: skip
    return atomic_write_text(out / "result.json", json.dumps(result, indent=2) + "\n")


def export_projection(module, out) -> Path:
    """Write ``module``'s learned projection to ``out`` (a ``.pt`` file); returns the path.

    Raises ``ValueError`` for a model trained without a projection (``projection: none``).
    """
    from .projection import FixedProjection, save_projection

    if module.projection is None:
        raise ValueError("the checkpoint has no projection layer (projection: none)")
    fixed = FixedProjection.from_layer(module.projection)
    out = Path(out)
    save_projection(fixed, out, dim=int(module.hparams.dim),
                    projection=str(module.hparams.projection))  # fmt: skip
    return out
