"""Lightning DataModule of in-context classification episodes (:mod:`symicl.episodes`).

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613).

* training: ``train_batches`` batches, batch ``k`` drawn by
  :meth:`LinearTaskSampler.batch` with index ``k`` (a fixed, seeded training set of
  ``train_batches * batch_size`` episodes; under DDP Lightning's distributed sampler
  splits the batch indices between ranks);
* validation / test / predict: fixed banks of episodes drawn one by one with per-episode
  seeds from disjoint index ranges. The test bank may be shifted (label noise, unlabeled
  points, the quadratic task, a longer context) to measure robustness.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset

from symicl.episodes import LinearTaskSampler

VAL_OFFSET = 10_000_000  # episode indices of the validation bank start here
TEST_OFFSET = 20_000_000  # ... and those of the test bank here


class _TrainBatches(Dataset):
    def __init__(self, sampler: LinearTaskSampler, n_batches: int, batch_size: int) -> None:
        self.sampler, self.n_batches, self.batch_size = sampler, n_batches, batch_size

    def __len__(self) -> int:
        return self.n_batches

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        return self.sampler.batch(self.batch_size, int(k))


class _EpisodeBank(Dataset):
    def __init__(self, episodes: dict[str, torch.Tensor]) -> None:
        self.episodes = episodes

    def __len__(self) -> int:
        return len(self.episodes["yq"])

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {k: v[i] for k, v in self.episodes.items()}


class LinearTaskDataModule(pl.LightningDataModule):
    """Seeded in-context classification episodes for Lightning.

    Parameters
    ----------
    d, n_classes, n_context
        Task size ``(d, C, N)`` of training and validation episodes.
    batch_size
        Episodes per batch.
    train_batches
        Training batches per epoch (the training set has ``train_batches * batch_size``
        episodes).
    val_episodes, test_episodes
        Sizes of the fixed validation and test banks.
    noise, unlabeled, kind
        Training-distribution variant (see :class:`LinearTaskSampler`).
    test_noise, test_unlabeled, test_kind, test_n_context
        Overrides for the test/predict bank (``None``: same as training), e.g.
        ``test_n_context = 2 * n_context`` for length extrapolation.
    seed
        Base seed of every episode.
    num_workers
        DataLoader workers (0 on small CPUs).

    Examples
    --------
    >>> dm = LinearTaskDataModule(d=4, n_classes=3, n_context=8, batch_size=16, train_batches=2,
    ...                           val_episodes=32, test_episodes=32)
    >>> dm.setup("fit")
    >>> batch = next(iter(dm.train_dataloader()))
    >>> tuple(batch["x"].shape), tuple(batch["y"].shape)
    ((16, 8, 4), (16, 8))
    """

    def __init__(
        self,
        d: int = 8,
        n_classes: int = 2,
        n_context: int = 32,
        batch_size: int = 64,
        train_batches: int = 1000,
        val_episodes: int = 512,
        test_episodes: int = 2000,
        noise: float = 0.0,
        unlabeled: float = 0.0,
        kind: str = "linear",
        test_noise: float | None = None,
        test_unlabeled: float | None = None,
        test_kind: str | None = None,
        test_n_context: int | None = None,
        seed: int = 0,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        for name, value in (("batch_size", batch_size), ("train_batches", train_batches)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        for name, value in (("val_episodes", val_episodes), ("test_episodes", test_episodes)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        self.train_sampler = LinearTaskSampler(
            d, n_classes, n_context, noise, unlabeled, kind, seed
        )
        self.test_sampler = LinearTaskSampler(
            d,
            n_classes,
            n_context if test_n_context is None else test_n_context,
            noise if test_noise is None else test_noise,
            unlabeled if test_unlabeled is None else test_unlabeled,
            kind if test_kind is None else test_kind,
            seed,
        )
        self._val: _EpisodeBank | None = None
        self._test: _EpisodeBank | None = None

    def setup(self, stage: str | None = None) -> None:
        """Draw the validation and test banks (once)."""
        hp = self.hparams
        if self._val is None:
            self._val = _EpisodeBank(self.train_sampler.sample(hp.val_episodes, start=VAL_OFFSET))
        if self._test is None and stage in (None, "test", "predict"):
            self._test = _EpisodeBank(self.test_sampler.sample(hp.test_episodes, start=TEST_OFFSET))

    def train_dataloader(self) -> DataLoader:
        """Seeded training batches (already batched: ``batch_size=None``)."""
        hp = self.hparams
        data = _TrainBatches(self.train_sampler, hp.train_batches, hp.batch_size)
        return DataLoader(data, batch_size=None, shuffle=False, num_workers=hp.num_workers)

    def _bank_loader(self, bank: _EpisodeBank | None) -> DataLoader:
        assert bank is not None, "call setup() first"
        return DataLoader(
            bank, batch_size=self.hparams.batch_size, num_workers=self.hparams.num_workers
        )

    def val_dataloader(self) -> DataLoader:
        """The fixed validation bank."""
        return self._bank_loader(self._val)

    def test_dataloader(self) -> DataLoader:
        """The fixed (possibly shifted) test bank."""
        if self._test is None:
            self.setup("test")
        return self._bank_loader(self._test)

    def predict_dataloader(self) -> DataLoader:
        """Same episodes as :meth:`test_dataloader`."""
        return self.test_dataloader()
