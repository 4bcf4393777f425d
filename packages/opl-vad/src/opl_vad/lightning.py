"""The Lightning layer of opl-vad: the VAD LightningModule and the DataModules.

- :class:`VADModule`: a projection layer (none / OPL / G-OPL) in front of a VAD head;
- :class:`SyntheticVADDataModule`: planted synthetic features (:mod:`opl_vad.synthetic`);
- :class:`FaceFrameVADDataModule`: the image variant (:mod:`opl_vad.face_frames`);
- :class:`FeatureListDataModule`: pre-extracted features in the RTFM / UR-DMU list formats.

VADModule.

Paper: Wang et al., ICML 2026. Training loss
``L = L_VAD(z) + face_weight * L_face + cos_weight * L_cos + contrast_weight * L_contrast``
(the last three for G-OPL only, :mod:`opl_vad.face_guidance`; ``L_contrast`` is our addition,
off by default), Adam with weight decay (RTFM: lr 1e-3, 5e-4). Validation and
test report frame-level AUC and AP (torchmetrics ``BinaryAUROC`` / ``BinaryAveragePrecision``)
with the snippet-to-frame expansion of :mod:`opl_vad.frame_protocol`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader
from torchmetrics.classification import BinaryAUROC, BinaryAveragePrecision

from .face_frames import make_face_frame_vad
from .face_guidance import FaceGuidance, check_face_signal, face_contrast_loss
from .frame_protocol import FRAMES_PER_SNIPPET
from .mgfn import MGFNHead
from .mil import MILHead
from .projection import GuidedOrthogonalProjection, OrthogonalProjection
from .rtfm import RTFMHead
from .synthetic import PlantedVAD, make_planted_vad
from .vad_data import PairedVideos, VideoSet, check_features, collate_pairs

__all__ = [
    "HEADS",
    "FaceFrameVADDataModule",
    "FeatureListDataModule",
    "SyntheticVADDataModule",
    "VADModule",
]

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
        Readout of the face-presence loss (:class:`~opl_vad.face_guidance.FaceGuidance`):
        ``linear``, ``mlp`` or ``per_direction``.
    cos_anchor:
        Anchor of the cosine alignment: ``ema`` (global) or ``video`` (per video).
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
        face_readout: Literal["linear", "mlp", "per_direction"] = "mlp",
        cos_anchor: Literal["ema", "video"] = "ema",
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
            self.guidance = FaceGuidance(dim, rank_face, readout=face_readout, anchor=cos_anchor)
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


class SyntheticVADDataModule(pl.LightningDataModule):
    """Planted train / test videos (see :mod:`opl_vad.synthetic`); test doubles as validation.

    Parameters
    ----------
    n_train, n_test:
        Videos per split.
    dim, n_snippets:
        Feature size and snippets per video.
    face_flip, face_anomaly_coupling:
        Noise of the training face signal and the face / anomaly coupling.
    batch_pairs:
        (abnormal, normal) pairs per batch (RTFM: 32 + 32 videos).
    seed:
        Seed of the planted bases and the splits.
    """

    def __init__(
        self,
        n_train: int = 200,
        n_test: int = 100,
        dim: int = 128,
        n_snippets: int = 32,
        face_flip: float = 0.1,
        face_anomaly_coupling: float = 0.0,
        batch_pairs: int = 16,
        seed: int = 0,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.train_data: PlantedVAD | None = None
        self.test_data: PlantedVAD | None = None

    def setup(self, stage: str | None = None) -> None:
        if self.train_data is not None:
            return
        h = self.hparams
        kw = dict(n_snippets=h.n_snippets, dim=h.dim, face_flip=h.face_flip,
                  face_anomaly_coupling=h.face_anomaly_coupling, basis_seed=h.seed)  # fmt: skip
        self.train_data = make_planted_vad(h.n_train, seed=h.seed, **kw)
        self.test_data = make_planted_vad(h.n_test, seed=h.seed + 1, **kw)

    def _set(self, d: PlantedVAD, face) -> VideoSet:
        return VideoSet(d.features, d.video_labels, d.snippet_labels, face)

    def train_dataloader(self):
        d = self.train_data
        pairs = PairedVideos(self._set(d, d.face_signal), self.hparams.seed)
        return DataLoader(pairs, batch_size=self.hparams.batch_pairs, shuffle=True,
                          collate_fn=collate_pairs)  # fmt: skip

    def _eval(self):
        d = self.test_data
        return DataLoader(self._set(d, d.face), batch_size=64)

    val_dataloader = test_dataloader = predict_dataloader = _eval


class FaceFrameVADDataModule(SyntheticVADDataModule):
    """Image-variant train / test videos (LFW faces in moving-shape frames, CNN features).

    Same batches as :class:`~opl_vad.vad_data.SyntheticVADDataModule` (balanced abnormal /
    normal pairs; the training face signal is flipped on ``face_flip`` of the snippets; test
    doubles as validation), but the features come from :func:`make_face_frame_vad`: the
    :class:`FrameEncoder` is trained (without labels) on the training videos' frames and
    reused for the test videos.

    Parameters
    ----------
    n_train, n_test:
        Videos per split.
    dim, n_snippets, frames_per_snippet:
        Feature size, snippets per video, frames per snippet.
    encoder_epochs:
        Auto-encoder epochs of the frame CNN.
    face_flip:
        Noise of the training face signal.
    standardize:
        z-score the snippet features with the training split's statistics
        (:func:`make_face_frame_vad`).
    match_intensity:
        Give every pasted crop the same mean and contrast (:func:`render_face_videos`).
    batch_pairs:
        (abnormal, normal) pairs per batch.
    seed:
        Seed of the rendering (test split: ``seed + 1``) and the encoder.

    Examples
    --------
    >>> dm = FaceFrameVADDataModule(4, 2, dim=8, n_snippets=4, frames_per_snippet=2,
    ...                             encoder_epochs=1, batch_pairs=1)
    >>> dm.setup()
    >>> dm.train_data.features.shape, dm.test_data.features.shape   # (V, T, D)
    ((4, 4, 8), (2, 4, 8))
    """

    def __init__(
        self,
        n_train: int = 120,
        n_test: int = 60,
        dim: int = 64,
        n_snippets: int = 16,
        frames_per_snippet: int = 4,
        encoder_epochs: int = 3,
        face_flip: float = 0.1,
        standardize: bool = True,
        match_intensity: bool = False,
        batch_pairs: int = 4,
        seed: int = 0,
    ):
        super().__init__(n_train, n_test, dim, n_snippets, face_flip, 0.0, batch_pairs, seed)
        self.save_hyperparameters()

    def setup(self, stage: str | None = None) -> None:
        if self.train_data is not None:
            return
        h = self.hparams
        kw = dict(dim=h.dim, n_snippets=h.n_snippets, frames_per_snippet=h.frames_per_snippet,
                  face_flip=h.face_flip, standardize=h.standardize,
                  match_intensity=h.match_intensity)  # fmt: skip
        self.train_data, enc = make_face_frame_vad(
            h.n_train, encoder_epochs=h.encoder_epochs, seed=h.seed, **kw
        )
        self.test_data, _ = make_face_frame_vad(h.n_test, encoder=enc, seed=h.seed + 1, **kw)


class FeatureListDataModule(pl.LightningDataModule):
    """Pre-extracted features in the RTFM / UR-DMU list formats (UCF-Crime, ShanghaiTech, XD).

    List file: one entry per line, ``<path>.npy`` optionally followed by an explicit video
    label ``0`` / ``1`` (other columns are ignored); relative paths resolve against the list
    file's folder. Two layouts are read:

    - RTFM: one file per video, ``(T, D)`` or ten-crop ``(T, 10, D)``;
    - UR-DMU: one file per crop, ``<video>__<k>.npy`` ``(T, D)`` on consecutive lines; the
      crops of a video are stacked into ``(T, crops, D)``.

    Crops are averaged (``(T, D)`` per video). Video labels, in order of precedence: the
    explicit column; ``n_abnormal`` (RTFM's ShanghaiTech / UCF lists put the abnormal videos
    first: 63 and 810 videos); the file name (UCF-Crime: a name starting ``Normal`` or
    containing ``_Normal`` is normal, e.g. ``Normal_Videos_003_x264``; XD-Violence:
    ``_label_A`` is normal; everything else abnormal).

    Parameters
    ----------
    train_list, test_list:
        The two list files.
    test_gt:
        Frame-level ground truth ``.npy`` (0/1), the test videos' frames concatenated in list
        order (``16 T`` frames per video, :mod:`opl_vad.frame_protocol`).
    n_snippets:
        Training videos are resampled to this many segments (32 in MIL / RTFM) by averaging
        consecutive snippets.
    n_abnormal:
        Label rule of RTFM's ShanghaiTech / UCF training lists (the first ``n_abnormal``
        videos are abnormal, see above); ``None`` = explicit column or names. Test labels
        come from the column or the names (the frame ground truth drives the metrics).
    face_dir:
        Folder with ``<video>_face.npy`` per training video (``(T,)`` values in ``[0, 1]``,
        what ``opl-vad extract-face-presence`` writes for a ``.list``): the face signal G-OPL
        needs; resampled to ``n_snippets`` like the features.
    batch_pairs:
        (abnormal, normal) pairs per batch.
    """

    def __init__(self, train_list: str, test_list: str, test_gt: str | None = None,
                 n_snippets: int = 32, n_abnormal: int | None = None,
                 face_dir: str | None = None, batch_pairs: int = 32, seed: int = 0):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()

    @staticmethod
    def label_from_name(name: str) -> int:
        """0 for UCF-Crime ``Normal...`` / XD-Violence ``..._label_A...`` files, else 1.

        Examples
        --------
        >>> [FeatureListDataModule.label_from_name(n) for n in
        ...  ["Normal_Videos_003_x264.npy", "Abnormal_0001.npy", "Abuse028_x264__0.npy",
        ...   "A.Beautiful.Mind.2001__#00-01-45_00-02-50_label_A.npy"]]
        [0, 1, 1, 0]
        """
        import re

        n = name.lower()
        return 0 if re.search(r"(^|[_/])normal", n) or "_label_a" in n else 1

    @staticmethod
    def read_list(path: str, n_abnormal: int | None = None) -> tuple[list[list[Path]], np.ndarray]:
        """``(files per video, labels)``: UR-DMU crop files of one video are grouped."""
        import re

        lst = Path(path)
        if not lst.is_file():
            raise FileNotFoundError(f"list file {path!r} does not exist")
        videos: list[list[Path]] = []
        keys: list[str] = []
        labels: list[int | None] = []
        for i, line in enumerate(lst.read_text().splitlines(), 1):
            cols = line.split()
            if not cols:
                continue
            p = Path(cols[0])
            p = p if p.is_absolute() else lst.parent / p
            if not p.is_file():
                raise FileNotFoundError(f"{path}: feature file {str(p)!r} does not exist")
            explicit = None
            if len(cols) > 1 and cols[1].lstrip("-").replace(".", "", 1).isdigit():
                if cols[1] not in ("0", "1"):
                    raise ValueError(f"{path}, line {i}: video label {cols[1]!r} is not 0 or 1")
                explicit = int(cols[1])
            crop = re.match(r"^(.*)__\d+\.npy$", p.name)  # UR-DMU: <video>__<crop>.npy
            key = str(p.parent / crop.group(1)) if crop else str(p)
            if crop and keys and keys[-1] == key:
                videos[-1].append(p)
                continue
            videos.append([p])
            keys.append(key)
            labels.append(explicit)
        if not videos:
            raise ValueError(f"list file {path!r} is empty")
        if n_abnormal is not None and not 0 <= n_abnormal <= len(videos):
            raise ValueError(f"n_abnormal={n_abnormal} but {path!r} lists {len(videos)} videos")
        out = []
        for j, (files, explicit) in enumerate(zip(videos, labels, strict=True)):
            if explicit is not None:
                out.append(explicit)
            elif n_abnormal is not None:
                out.append(int(j < n_abnormal))
            else:
                out.append(FeatureListDataModule.label_from_name(files[0].name))
        return videos, np.asarray(out)

    @staticmethod
    def load_features(files: Path | list[Path]) -> np.ndarray:
        """``(T, D)`` features of one video: crops (a ten-crop axis or UR-DMU files) averaged."""
        files = [files] if isinstance(files, Path) else list(files)
        parts = []
        for p in files:
            x = np.load(p).astype(np.float32)
            if x.ndim == 3:  # ten-crop (T, 10, D)
                x = x.mean(axis=1)
            if x.ndim != 2:
                raise ValueError(f"{p}: expected (T, D) or (T, crops, D) features, got {x.shape}")
            check_features(x, str(p))
            if parts and x.shape != parts[0].shape:
                raise ValueError(f"{p}: crop shape {x.shape} differs from {parts[0].shape}")
            parts.append(x)
        return np.mean(parts, axis=0) if len(parts) > 1 else parts[0]

    @staticmethod
    def resample(x: np.ndarray, n: int) -> np.ndarray:
        """Average consecutive snippets into ``n`` segments (Sultani et al.'s 32 segments)."""
        edges = np.linspace(0, len(x), n + 1).astype(int)
        return np.stack(
            [x[a : max(b, a + 1)].mean(0) for a, b in zip(edges[:-1], edges[1:], strict=True)]
        )

    def _face(self, files: list[Path], T: int) -> np.ndarray:
        import re

        stem = re.sub(r"__\d+$", "", files[0].stem)
        p = Path(self.hparams.face_dir) / f"{stem}_face.npy"
        if not p.is_file():
            raise FileNotFoundError(f"face signal {str(p)!r} does not exist")
        f = np.load(p).astype(np.float32).reshape(-1)
        if len(f) != T:
            raise ValueError(f"face signal {str(p)!r} has {len(f)} values, the features {T}")
        if not np.isfinite(f).all() or (f < 0).any() or (f > 1).any():
            raise ValueError(f"face signal {str(p)!r} has values outside [0, 1]")
        return f

    def setup(self, stage: str | None = None) -> None:
        h = self.hparams
        if stage in (None, "fit"):
            paths, labels = self.read_list(h.train_list, h.n_abnormal)
            feats = [self.load_features(p) for p in paths]
            X = np.stack([self.resample(x, h.n_snippets) for x in feats])
            face = None
            if h.face_dir is not None:
                face = np.stack([self.resample(self._face(p, len(x))[:, None], h.n_snippets)[:, 0]
                                 for p, x in zip(paths, feats, strict=True)])  # fmt: skip
            self.train_set = VideoSet(X, labels, face=face)
        paths, labels = self.read_list(h.test_list)  # test labels: column or names
        self.test_videos = [self.load_features(p) for p in paths]
        self.test_labels = labels
        if h.test_gt is not None:
            gt = np.load(h.test_gt)
            n = sum(len(v) for v in self.test_videos) * FRAMES_PER_SNIPPET
            if len(gt) != n:
                raise ValueError(f"frame ground truth has {len(gt)} frames, the list implies {n}")
            self.test_gt = gt

    def train_dataloader(self):
        return DataLoader(PairedVideos(self.train_set, self.hparams.seed),
                          batch_size=self.hparams.batch_pairs, shuffle=True,
                          collate_fn=collate_pairs)  # fmt: skip

    def _eval(self):
        """One video per batch (videos differ in length); snippet labels from the frame GT."""
        items = []
        offset = 0
        for x, y in zip(self.test_videos, self.test_labels, strict=True):
            n = len(x) * FRAMES_PER_SNIPPET
            gt = getattr(self, "test_gt", None)
            frames = gt[offset : offset + n] if gt is not None else np.zeros(n)
            snip = frames.reshape(len(x), -1).max(1)
            offset += n
            items.append(VideoSet(x[None], [y], snip[None], frame_labels=frames[None]))
        return DataLoader(torch.utils.data.ConcatDataset(items), batch_size=1)

    val_dataloader = test_dataloader = predict_dataloader = _eval
