"""LightningDataModule yielding the payoff matrix of a game (the "data" of a saddle-point solver).

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 6 (the games). Every batch is the same ``(m, n)``
payoff ``A`` (collated to ``(1, m, n)``); an epoch is ``batches_per_epoch`` of them,
so ``Trainer(max_epochs=E)`` runs ``E * batches_per_epoch * K`` solver iterations.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset

from .matrix_game import MatrixGame, game_by_name

__all__ = ["GameDataModule"]


class _RepeatedGame(Dataset):
    def __init__(self, A: torch.Tensor, length: int) -> None:
        self.A, self.length = A, length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.A


class GameDataModule(pl.LightningDataModule):
    """Serves one matrix game's payoff ``A`` as every batch.

    Parameters
    ----------
    game:
        ``"brps"``, ``"bmp"``, ``"m_ne"`` or ``"random<m>"`` / ``"random<m>x<n>"``.
    seed:
        Seed of a random game.
    batches_per_epoch:
        Training batches (solver chunks) per epoch; validation/test/predict use one.

    Examples
    --------
    >>> dm = GameDataModule("brps")
    >>> dm.setup("fit")
    >>> next(iter(dm.train_dataloader())).shape
    torch.Size([1, 3, 3])
    """

    def __init__(self, game: str = "brps", seed: int = 0, batches_per_epoch: int = 10) -> None:
        super().__init__()
        if batches_per_epoch < 1:
            raise ValueError(f"batches_per_epoch must be >= 1, got {batches_per_epoch}")
        self.save_hyperparameters()
        self.game: MatrixGame = game_by_name(game, seed=seed)

    def _loader(self, length: int) -> DataLoader:
        return DataLoader(_RepeatedGame(self.game.A, length), batch_size=1, num_workers=0)

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.hparams.batches_per_epoch)

    def val_dataloader(self) -> DataLoader:
        return self._loader(1)

    def test_dataloader(self) -> DataLoader:
        return self._loader(1)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(1)
