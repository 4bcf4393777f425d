"""Snippet-feature datasets of the Lightning DataModules (:mod:`opl_vad.lightning`).

- :class:`VideoSet`: videos of ``(T, D)`` snippet features with video, snippet (and frame)
  labels and a per-snippet face signal
- :class:`PairedVideos` and :func:`collate_pairs`: balanced MIL batches, item ``i`` = the
  ``i``-th abnormal video and a random normal one
- :func:`check_features`: reject NaN / inf features
"""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

__all__ = ["PairedVideos", "VideoSet", "check_features", "collate_pairs"]


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


class PairedVideos(Dataset):
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


def collate_pairs(items):
    """Stack the videos of a batch of (abnormal, normal) pairs into one dict of tensors."""
    flat = [video for pair in items for video in pair]
    return {k: torch.stack([v[k] for v in flat]) for k in flat[0]}
