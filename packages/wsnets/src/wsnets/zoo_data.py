"""Weight-space zoos on disk: the cache of generated zoos and the dataset of one split.

* :func:`cached_zoo`: build a zoo once (``builder(**settings)``) and reuse it from a cache
  folder keyed by its settings (default: the ``WSNETS_CACHE`` environment variable, else
  ``~/.cache/wsnets``: a location on this machine, not an experiment setting);
* :class:`ZooDataset`: network ``i`` of a zoo with its target, as a dict batch item
  ``{"weights", "biases", "y"}``;
* :func:`images_from_rows`: images and labels of Hugging Face ``datasets`` rows.

The LightningDataModules that split and serve the zoos live in :mod:`wsnets.lightning`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from torch.utils.data import Dataset

from wsnets.inr_zoo import Zoo, load_zoo


def default_cache_dir() -> Path:
    env = os.environ.get("WSNETS_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "wsnets"


def cached_zoo(builder, cache_dir: str | Path | None, **settings) -> Zoo:
    """Build ``builder(**settings)`` once and reuse it from ``cache_dir`` afterwards."""
    if cache_dir is None:
        cache_dir = default_cache_dir()
    key = hashlib.sha1(
        json.dumps({"builder": builder.__name__, **settings}, sort_keys=True).encode()
    ).hexdigest()[:12]
    folder = Path(cache_dir) / f"{builder.__name__}-{key}"
    if (folder / "zoo.pt").is_file():
        return load_zoo(folder)
    zoo = builder(**settings)
    zoo.save(folder)
    return zoo


class ZooDataset(Dataset):
    """Network ``i`` of a zoo with its target ``y[i]``."""

    def __init__(self, zoo: Zoo, target: str, index: torch.Tensor) -> None:
        if target not in zoo.targets:
            raise ValueError(f"zoo has no target {target!r}; it has {sorted(zoo.targets)}")
        self.ws = [w[index] for w in zoo.params.weights]
        self.bs = [b[index] for b in zoo.params.biases]
        self.y = zoo.targets[target][index]

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int):
        return {
            "weights": [w[i] for w in self.ws],
            "biases": [b[i] for b in self.bs],
            "y": self.y[i],
        }


def images_from_rows(rows, size: int, n: int | None = None):
    """``(images (n, size, size) in [0, 1], labels)`` from dataset rows with a PIL image.

    Each row is a mapping with an ``image`` (or ``img``) PIL image and an integer ``label``
    (or ``labels``); colour images are converted to grayscale, all are resized to ``size``.
    """
    import numpy as np

    images, labels = [], []
    for k, row in enumerate(rows):
        if n is not None and k >= n:
            break
        img = row.get("image", row.get("img"))
        lab = row.get("label", row.get("labels"))
        if img is None or lab is None or not hasattr(img, "convert"):
            raise ValueError("dataset rows need a PIL 'image' (or 'img') and a 'label' column")
        arr = np.asarray(img.convert("L").resize((size, size)), dtype=np.float32) / 255.0
        images.append(torch.tensor(arr))
        labels.append(int(lab))
    if not images:
        raise ValueError("the dataset has no rows")
    return torch.stack(images), torch.tensor(labels)
