"""Offline data: scikit-learn's 8x8 handwritten digits upsampled to 16x16 in [0, 1].

:func:`load_digits_images` returns a seeded train/test split;
:class:`~eostok.lightning.DigitsDataModule` serves it to Lightning (batches are
``(images (B,1,16,16), labels (B,))``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def load_digits_images(
    image_size: int = 16, test_fraction: float = 0.25, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x_train, y_train, x_test, y_test)``; images ``(N, 1, S, S)`` in [0, 1].

    >>> xtr, ytr, xte, yte = load_digits_images()
    >>> xtr.shape[1:], len(xtr) + len(xte), float(xtr.max()) <= 1.0
    (torch.Size([1, 16, 16]), 1797, True)
    """
    from sklearn.datasets import load_digits

    if image_size < 8:
        raise ValueError(f"image_size must be at least 8, got {image_size}")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction}")
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32)[:, None] / 16.0
    x = F.interpolate(x, size=(image_size, image_size), mode="bilinear", align_corners=False)
    x = x.clamp(0.0, 1.0)
    y = torch.tensor(d.target, dtype=torch.long)
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    n_test = int(round(test_fraction * len(x)))
    te, tr = perm[:n_test], perm[n_test:]
    return x[tr], y[tr], x[te], y[te]
