"""Lightning DataModules: planted synthetic features, and RTFM-format feature lists.

- :class:`SyntheticVADDataModule`: :func:`~opl_vad.synthetic.make_planted_vad` train / test
  sets sharing their bases; training batches pair abnormal and normal videos (MIL needs both)
- :class:`FeatureListDataModule`: the real path: RTFM / UR-DMU list files of ``.npy`` snippet
  features (one ``(T, D)`` or ten-crop ``(T, 10, D)`` file per video, or UR-DMU's one file
  per crop; crops averaged), labels from an explicit column, RTFM's abnormal-first order or
  the datasets' file names, an optional per-video face signal, and for test a frame-level
  ground truth ``.npy`` concatenated in list order
"""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from .frame_protocol import FRAMES_PER_SNIPPET
from .synthetic import PlantedVAD, make_planted_vad

__all__ = ["FeatureListDataModule", "SyntheticVADDataModule", "VideoSet", "check_features"]


def check_features(x: np.ndarray, name: str = "features") -> None:
    if not np.isfinite(x).all():
        raise ValueError(f"{name} contain NaN or inf")


class VideoSet(Dataset):
    """Per-video items: features ``(T, D)``, label, snippet labels ``(T,)``, face signal ``(T,)``."""

    def __init__(self, features, labels, snippet_labels=None, face=None, frame_labels=None):
        check_features(features)
        labels = np.asarray(labels)
        if not np.isin(labels, (0, 1)).all():
            raise ValueError("video labels must be 0 or 1")
        self.x = torch.as_tensor(np.asarray(features, np.float32))
        self.y = torch.as_tensor(labels, dtype=torch.long)
        T = self.x.shape[1]
        self.snip = torch.as_tensor(
            np.zeros((len(labels), T)) if snippet_labels is None else snippet_labels,
            dtype=torch.long,
        )
        self.face = torch.as_tensor(
            np.full((len(labels), T), -1.0) if face is None else face, dtype=torch.float32
        )

        self.frames = None if frame_labels is None else torch.as_tensor(frame_labels).long()

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i):
        item = {"x": self.x[i], "y": self.y[i], "snippet_y": self.snip[i], "face": self.face[i]}
        if self.frames is not None:
            item["frame_y"] = self.frames[i]
        return item


class _Pairs(Dataset):
    """Item ``i``: the ``i``-th abnormal video and a normal one (a balanced MIL batch)."""

    def __init__(self, videos: VideoSet, seed: int):
        self.v = videos
        self.abn = torch.nonzero(videos.y == 1).flatten()
        self.nor = torch.nonzero(videos.y == 0).flatten()
        if len(self.abn) == 0 or len(self.nor) == 0:
            raise ValueError("training needs both normal and abnormal videos")
        self.g = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return max(len(self.abn), len(self.nor))

    def __getitem__(self, i):
        a = self.abn[i % len(self.abn)]
        n = self.nor[torch.randint(len(self.nor), (1,), generator=self.g)[0]]
        return [self.v[int(a)], self.v[int(n)]]


def _collate_pairs(items):
    flat = [video for pair in items for video in pair]
    return {k: torch.stack([v[k] for v in flat]) for k in flat[0]}


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
        pairs = _Pairs(self._set(d, d.face_signal), self.hparams.seed)
        return DataLoader(pairs, batch_size=self.hparams.batch_pairs, shuffle=True,
                          collate_fn=_collate_pairs)  # fmt: skip

    def _eval(self):
        d = self.test_data
        return DataLoader(self._set(d, d.face), batch_size=64)

    val_dataloader = test_dataloader = predict_dataloader = _eval


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
        return DataLoader(_Pairs(self.train_set, self.hparams.seed),
                          batch_size=self.hparams.batch_pairs, shuffle=True,
                          collate_fn=_collate_pairs)  # fmt: skip

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
