"""Lightning DataModules of unimodal and multimodal in-context sequences.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

* training: batch ``k`` is drawn fresh from the training distribution with a generator
  seeded by ``(seed, k)`` (a map-style dataset, so Lightning's distributed sampler splits
  batches between DDP ranks and runs are reproducible);
* validation / test: fixed seeded sets of the four splits ``test/IC/IC2/IW``, one
  dataloader each (in :attr:`split_names` order); predict: the IC split.
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.utils.data import DataLoader, Dataset

from mmicl.gmm_data import SPLITS, BurstySampler, GMMBank, eval_splits
from mmicl.multimodal_data import DigitsModality, MultimodalSampler, multimodal_eval_splits

VAL_SEED, TEST_SEED = 10_000_019, 20_000_003


class _FreshBatches(Dataset):
    def __init__(self, sampler, n_batches: int, batch_size: int, seed: int) -> None:
        self.sampler, self.n_batches, self.batch_size, self.seed = (
            sampler,
            n_batches,
            batch_size,
            seed,
        )

    def __len__(self) -> int:
        return self.n_batches

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + int(k))
        return self.sampler.sample(self.batch_size, g)


class _FixedBatches(Dataset):
    def __init__(self, data: dict[str, torch.Tensor], batch_size: int) -> None:
        self.data, self.batch_size = data, batch_size
        self.n = len(data["target"])

    def __len__(self) -> int:
        return (self.n + self.batch_size - 1) // self.batch_size

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        sl = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return {k: v[sl] for k, v in self.data.items()}


class ICLDataModule(pl.LightningDataModule):
    """Base of the data modules: fresh seeded training batches, fixed evaluation splits.

    Subclasses set ``self.sampler`` and implement ``_eval_sets(seed)``.

    Examples
    --------
    >>> issubclass(UnimodalICLDataModule, ICLDataModule)
    True
    """

    split_names = SPLITS

    def __init__(self, batch_size: int, train_batches: int, eval_sequences: int, seed: int):
        super().__init__()
        if batch_size < 1 or train_batches < 1 or eval_sequences < 1:
            raise ValueError("batch_size, train_batches and eval_sequences must be >= 1")
        self.batch_size, self.train_batches = batch_size, train_batches
        self.eval_sequences, self.seed = eval_sequences, seed
        self._sets: dict[int, dict] = {}
        self._sampler = None

    @property
    def sampler(self):
        """The training sampler, built (and its settings checked) on first use.

        Building lazily lets the CLI report a bad value as one line once training starts,
        instead of a type-resolution error while it parses the config.
        """
        if self._sampler is None:
            self._sampler = self._build()
        return self._sampler

    def _build(self):  # pragma: no cover - overridden
        raise NotImplementedError

    def setup(self, stage: str | None = None) -> None:
        """Build the sampler (checks every setting)."""
        _ = self.sampler

    def _eval_sets(self, seed: int) -> dict:  # pragma: no cover - overridden
        raise NotImplementedError

    def sets(self, stage: str = "val") -> dict[str, dict[str, torch.Tensor]]:
        """The fixed evaluation sets of ``stage`` (``val`` or ``test``)."""
        seed = (VAL_SEED if stage == "val" else TEST_SEED) + self.seed
        if seed not in self._sets:
            self._sets[seed] = self._eval_sets(seed)
        return self._sets[seed]

    def _loaders(self, stage: str) -> list[DataLoader]:
        sets = self.sets(stage)
        return [
            DataLoader(_FixedBatches(sets[name], self.batch_size), batch_size=None)
            for name in self.split_names
        ]

    def train_dataloader(self) -> DataLoader:
        data = _FreshBatches(self.sampler, self.train_batches, self.batch_size, self.seed)
        return DataLoader(data, batch_size=None, shuffle=False)

    def val_dataloader(self) -> list[DataLoader]:
        return self._loaders("val")

    def test_dataloader(self) -> list[DataLoader]:
        return self._loaders("test")

    def predict_dataloader(self) -> DataLoader:
        return DataLoader(_FixedBatches(self.sets("test")["IC"], self.batch_size), batch_size=None)


class UnimodalICLDataModule(ICLDataModule):
    """Bursty Gaussian-mixture sequences (:class:`~mmicl.gmm_data.BurstySampler`).

    Parameters
    ----------
    K, L, D, n_novel, bank_seed:
        The :class:`~mmicl.gmm_data.GMMBank` (the same values give the same bank, which
        the multimodal stages reuse).
    N, B, p_B, p_C, eps, alpha, no_repeats:
        The training distribution.
    batch_size, train_batches:
        Sequences per batch; batches per epoch (fresh sequences each).
    eval_sequences:
        Size of each fixed evaluation split.
    seed:
        Seed of the training stream and the evaluation sets.

    Examples
    --------
    >>> dm = UnimodalICLDataModule(K=32, L=8, D=8, N=4, B=2, batch_size=4, train_batches=2,
    ...                            eval_sequences=8)
    >>> batch = next(iter(dm.train_dataloader()))
    >>> tuple(batch["tokens"].shape), len(dm.val_dataloader())
    ((4, 9, 8), 4)
    """

    def __init__(
        self,
        K: int = 8192,
        L: int = 32,
        D: int = 32,
        N: int = 8,
        B: int = 2,
        p_B: float = 1.0,
        p_C: float = 0.0,
        eps: float = 0.1,
        alpha: float = 0.0,
        no_repeats: bool = False,
        n_novel: int = 128,
        bank_seed: int = 0,
        batch_size: int = 128,
        train_batches: int = 10_000,
        eval_sequences: int = 1000,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size, train_batches, eval_sequences, seed)
        self.save_hyperparameters()

    def _build(self) -> BurstySampler:
        h = self.hparams
        bank = GMMBank(h.K, h.L, h.D, n_novel=h.n_novel, seed=h.bank_seed)
        return BurstySampler(bank, h.N, h.B, h.p_B, h.p_C, h.eps, h.alpha, h.no_repeats)

    @property
    def bank(self) -> GMMBank:
        """The Gaussian-mixture bank."""
        return self.sampler.bank

    def _eval_sets(self, seed: int) -> dict:
        return eval_splits(self.sampler, self.eval_sequences, seed)


class MultimodalICLDataModule(ICLDataModule):
    """``[M1, M2, y] x N + [M1_q, M2_q]`` sequences (:class:`~mmicl.multimodal_data.MultimodalSampler`).

    Parameters
    ----------
    K1, L1, D1, n_novel1, bank1_seed:
        The primary bank; use the values of the stage-1 pretraining so that label tokens
        and paired M1 items come from the decoder's modality.
    modality2:
        ``gmm`` (a :class:`~mmicl.gmm_data.GMMBank` with ``K2, L2, D2``) or ``digits``
        (scikit-learn digits; ``K2`` training digits 0..K2-1, the rest novel; ``D2 = 64``).
    K2, L2, D2, n_novel2, bank2_seed:
        The secondary bank (``L2 <= L1``; ``L2`` defaults to ``min(K2, L1)``).
    N, B, p_B, p_C, eps, alpha, control:
        The training distribution (see :class:`~mmicl.multimodal_data.MultimodalSampler`).
    batch_size, train_batches, eval_sequences, seed:
        As in :class:`UnimodalICLDataModule`.

    Examples
    --------
    >>> dm = MultimodalICLDataModule(K1=32, L1=8, D1=8, K2=4, D2=6, N=4, B=2, batch_size=4,
    ...                              train_batches=2, eval_sequences=8)
    >>> batch = next(iter(dm.train_dataloader()))
    >>> tuple(batch["m1"].shape), tuple(batch["m2"].shape)
    ((4, 5, 8), (4, 5, 6))
    """

    def __init__(
        self,
        K1: int = 8192,
        L1: int = 32,
        D1: int = 32,
        n_novel1: int = 128,
        bank1_seed: int = 0,
        modality2: str = "gmm",
        K2: int = 4,
        L2: int | None = None,
        D2: int = 16,
        n_novel2: int = 64,
        bank2_seed: int = 1,
        N: int = 8,
        B: int = 2,
        p_B: float = 1.0,
        p_C: float = 0.0,
        eps: float = 0.1,
        alpha: float = 0.0,
        control: str = "none",
        batch_size: int = 128,
        train_batches: int = 10_000,
        eval_sequences: int = 1000,
        seed: int = 0,
    ) -> None:
        super().__init__(batch_size, train_batches, eval_sequences, seed)
        self.save_hyperparameters()

    def _build(self) -> MultimodalSampler:
        h = self.hparams
        bank1 = GMMBank(h.K1, h.L1, h.D1, n_novel=h.n_novel1, seed=h.bank1_seed)
        if h.modality2 == "gmm":
            L2 = min(h.K2, h.L1) if h.L2 is None else h.L2
            m2 = GMMBank(h.K2, L2, h.D2, n_novel=h.n_novel2, seed=h.bank2_seed)
        elif h.modality2 == "digits":
            if not 1 <= h.K2 <= 9:
                raise ValueError(f"digits: K2 must be between 1 and 9 training digits, got {h.K2}")
            m2 = DigitsModality(tuple(range(h.K2)))
        else:
            raise ValueError(f"unknown modality2 {h.modality2!r}; choose gmm or digits")
        return MultimodalSampler(bank1, m2, h.N, h.B, h.p_B, h.p_C, h.eps, h.alpha, h.control)

    @property
    def bank1(self) -> GMMBank:
        """The primary bank."""
        return self.sampler.bank1

    @property
    def m2(self):
        """The secondary modality."""
        return self.sampler.m2

    @property
    def d2(self) -> int:
        """Dimension of the raw secondary items."""
        return self.m2.D

    def _eval_sets(self, seed: int) -> dict:
        return multimodal_eval_splits(self.sampler, self.eval_sequences, seed)
