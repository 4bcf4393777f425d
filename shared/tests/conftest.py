"""A tiny LightningModule and DataModule used to test the shared layer."""

from __future__ import annotations

import lightning.pytorch as pl
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset


class TinyRegressor(pl.LightningModule):
    """y = w x + b, trained with MSE."""

    def __init__(self, in_features: int = 3, lr: float = 0.1) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.linear = torch.nn.Linear(in_features, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, F) -> (B,)
        return self.linear(x).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


class TinyData(pl.LightningDataModule):
    """A planted linear problem."""

    def __init__(self, n: int = 64, in_features: int = 3, batch_size: int = 16) -> None:
        super().__init__()
        self.n, self.in_features, self.batch_size = n, in_features, batch_size

    def setup(self, stage: str | None = None) -> None:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(self.n, self.in_features, generator=g)
        y = x @ torch.arange(1.0, self.in_features + 1) + 0.5
        self.data = TensorDataset(x, y)

    def train_dataloader(self):
        return DataLoader(self.data, batch_size=self.batch_size)

    def val_dataloader(self):
        return DataLoader(self.data, batch_size=self.batch_size)


@pytest.fixture
def tiny():
    return TinyRegressor, TinyData
