"""Offline data: scikit-learn's 8x8 handwritten digits upsampled to 16x16 in [0, 1].

:func:`load_digits_images` returns a seeded train/test split; :class:`DigitsDataModule`
(an :class:`InMemoryImageDataModule`) serves it to Lightning (batches are ``(images (B,1,16,16), labels (B,))``).
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


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


class InMemoryImageDataModule(pl.LightningDataModule):
    """Serves an in-memory ``train_set`` / ``test_set`` of ``(image, label)`` pairs.

    Subclasses fill both in ``setup`` and save ``batch_size`` and ``seed`` as
    hyperparameters; training batches are shuffled with that seed and full-size.
    """

    train_set: TensorDataset
    test_set: TensorDataset

    def train_dataloader(self) -> DataLoader:
        g = torch.Generator().manual_seed(self.hparams.seed)
        return DataLoader(
            self.train_set, self.hparams.batch_size, shuffle=True, drop_last=True, generator=g
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, 256)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, 256)

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, 256)


class DigitsDataModule(InMemoryImageDataModule):
    """Upsampled scikit-learn digits (10 classes), seeded split.

    Examples
    --------
    >>> dm = DigitsDataModule(batch_size=8)
    >>> dm.setup("fit")
    >>> x, y = next(iter(dm.train_dataloader()))
    >>> x.shape, y.shape
    (torch.Size([8, 1, 16, 16]), torch.Size([8]))
    """

    def __init__(
        self, image_size: int = 16, batch_size: int = 64, test_fraction: float = 0.25, seed: int = 0
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.save_hyperparameters()
        self.num_classes = 10

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        xtr, ytr, xte, yte = load_digits_images(hp.image_size, hp.test_fraction, hp.seed)
        self.train_set, self.test_set = TensorDataset(xtr, ytr), TensorDataset(xte, yte)
