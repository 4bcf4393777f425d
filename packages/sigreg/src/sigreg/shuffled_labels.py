"""The supervised plasticity benchmark: labels re-permuted at every phase.

The paper's non-stationary CIFAR protocol (first 10,000 images, labels re-permuted across
samples at epochs 20/40/60/80, so every phase is random-label memorisation; SIGReg on
the trunk output after its final ReLU, which feeds a linear classifier) at CPU scale on
scikit-learn's digits (1797 x 64, shipped with scikit-learn):

* the offline data (digits) and the real path (the first 10,000 CIFAR-10 training images
  via ``datasets``, offline-aware: a clear error when the Hub cannot be reached and the
  data is not cached) -> :func:`load_digits_tensors`, :func:`load_cifar10_tensors`
* per-phase labels ``y_p = y[perm_p]`` -> :func:`phase_labels`
* the methods compared (plain, LayerNorm, ReDo, Shrink & Perturb, L2-init, SIGReg in both
  presets, ``lightly``'s SIGReg) -> :data:`METHODS`

The data module with the phase schedule and the classifier are in :mod:`sigreg.lightning`
(:class:`~sigreg.lightning.DigitsShuffleDataModule`,
:class:`~sigreg.lightning.ShuffledLabelClassifier`); one seeded run of a method and the
benchmark table are in :mod:`sigreg.shuffled_labels_benchmark`.
"""

from __future__ import annotations

import numpy as np
import torch

METHODS = (
    "none",
    "layernorm",
    "redo",
    "shrink-perturb",
    "l2-init",
    "sigreg",
    "sigreg-lejepa",
    "lightly-sigreg",
)


def load_digits_tensors() -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn digits, standardised per pixel: ``x`` (1797, 64) float, ``y`` (1797,)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = data.data.astype(np.float32)
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    return torch.from_numpy(x), torch.from_numpy(data.target.astype(np.int64))


CIFAR10_ID = "uoft-cs/cifar10"


def load_cifar10_tensors(
    n_samples: int = 10_000, split: str = "train"
) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``n_samples`` CIFAR-10 images of ``split`` (the paper's protocol), flattened.

    Loaded with ``datasets`` through :func:`icml26_shared.hub.load_dataset`, so without a
    network and without a cached copy it fails at once with one clear line (a
    ``ValueError``) naming the offline alternative. Images are scaled to [0, 1] and
    standardised per channel; ``x`` is (N, 3072) float (channel-major), ``y`` (N,).
    """
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    try:
        from icml26_shared.hub import HubUnavailableError, load_dataset
    except ImportError as err:  # pragma: no cover - icml26-shared is a core dependency
        raise ValueError(f"the CIFAR-10 path needs icml26-shared: {err}") from err
    try:
        ds = load_dataset(
            CIFAR10_ID, split=f"{split}[:{n_samples}]", offline_hint="--data.dataset digits"
        )
    except ImportError as err:
        raise ValueError(
            "the CIFAR-10 path needs the 'datasets' package: pip install 'sigreg[real]'"
        ) from err
    except HubUnavailableError as err:
        raise ValueError(
            f"CIFAR-10 ({CIFAR10_ID!r}) is not in the local Hugging Face cache and the Hub "
            "cannot be reached; offline alternative: --data.dataset digits"
        ) from err
    img_key = "img" if "img" in ds.column_names else "image"
    imgs = np.stack([np.asarray(im.convert("RGB"), dtype=np.float32) / 255.0 for im in ds[img_key]])
    x = torch.from_numpy(imgs).permute(0, 3, 1, 2)  # (N, 3, 32, 32)
    mean = x.mean((0, 2, 3), keepdim=True)
    std = x.std((0, 2, 3), keepdim=True)
    x = ((x - mean) / (std + 1e-6)).reshape(len(ds), -1)
    return x.contiguous(), torch.as_tensor(np.asarray(ds["label"], dtype=np.int64))


def phase_labels(y: torch.Tensor, phases: int, seed: int = 0) -> torch.Tensor:
    """``(phases, N)`` labels: phase 0 the true labels, then ``y`` permuted across samples.

    >>> lab = phase_labels(torch.arange(10) % 3, 3)
    >>> lab.shape, bool((lab[0] == torch.arange(10) % 3).all()), sorted(lab[2].tolist()) == sorted(lab[0].tolist())
    (torch.Size([3, 10]), True, True)
    """
    if phases < 1:
        raise ValueError(f"phases must be >= 1, got {phases}")
    g = torch.Generator().manual_seed(seed)
    rows = [y]
    for _ in range(phases - 1):
        rows.append(y[torch.randperm(y.numel(), generator=g)])
    return torch.stack(rows)
