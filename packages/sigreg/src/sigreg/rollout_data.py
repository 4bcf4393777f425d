"""Data side of the RL agents: the agents collect their own rollouts in ``training_step``.

:class:`RolloutDataModule` only yields iteration indices (one per rollout + update
round), so ``Trainer.fit`` drives ``iterations`` rounds of collection and learning, and
Lightning's loops, callbacks and strategies apply unchanged.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset


class _Iterations(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.tensor(i)


class RolloutDataModule(pl.LightningDataModule):
    """``iterations`` rollout rounds for an on-policy agent (PQN, PPO).

    Examples:
        >>> dm = RolloutDataModule(3); dm.setup("fit"); [int(b) for b in dm.train_dataloader()]
        [0, 1, 2]
    """

    def __init__(self, iterations: int = 100) -> None:
        super().__init__()
        if iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {iterations}")
        self.iterations = int(iterations)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(_Iterations(self.iterations), batch_size=None, shuffle=False)
