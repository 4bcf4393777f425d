"""The LightningModule and DataModule of symicl: every training run goes through these.

Paper: "Symmetry Reveals Layerwise Dynamics: How Transformers Perform In-Context
Classification", Lutz et al., ICML 2026 (arXiv 2604.11613).

* the in-context classifier, trained with the cross-entropy of the probe's logits (the label
  block of the probe token after the last layer) against the probe's clean label; in
  ``"augment"`` mode the weights are projected onto the commutant (Reynolds average) when
  training ends (``project_at_end``), after which :func:`symicl.recursion.extract_recursion`
  reads them -> :class:`ICLClassifierModule`
* seeded episodes for Lightning (:mod:`symicl.episodes`): ``train_batches`` training batches,
  batch ``k`` drawn by :meth:`~symicl.episodes.LinearTaskSampler.batch` with index ``k`` (a
  fixed, seeded training set; under DDP Lightning's distributed sampler splits the batch
  indices between ranks); validation / test / predict: fixed banks of episodes drawn with
  per-episode seeds from disjoint index ranges, the test bank optionally shifted (label
  noise, unlabeled points, the quadratic task, a longer context) -> :class:`LinearTaskDataModule`
* one seeded fit for a number of steps, as ``symicl fit`` does it -> :func:`train_classifier`
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

from symicl.analysis import model_defects
from symicl.episodes import (
    LinearTaskSampler,
    TableEpisodeSampler,
    load_episodes,
    one_hot_labels,
)
from symicl.transformer import EquivariantICLTransformer

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
    episodes
        Your own episodes instead of the synthetic task: an ``.npz`` file with ``x``
        ``(B, N, d)``, ``y`` ``(B, N)`` (``-1`` = unlabeled) or one-hot ``(B, N, C)``, ``xq``
        ``(B, d)`` and ``yq`` ``(B,)`` (see :func:`symicl.episodes.load_episodes`). The last
        ``min(val_episodes, B // 5)`` episodes are held out as the validation and test bank;
        training passes over the rest in shuffled batches (an epoch = one pass, so set
        ``trainer.max_epochs``). The shift options do not apply.
    table, label_column
        Episodes built on the fly from a table (:class:`symicl.episodes.TableEpisodeSampler`):
        ``"sklearn:digits"`` (or ``wine``, ``iris``, ``breast_cancer``) or a CSV path whose
        label column is ``label_column`` (default: the last). Training, validation and test
        episodes use disjoint episode seeds (rows may recur across episodes).

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
        episodes: str | None = None,
        table: str | None = None,
        label_column: str | None = None,
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
        self._train_bank: _EpisodeBank | None = None
        if episodes is not None and table is not None:
            raise ValueError("give either data.episodes (a .npz file) or data.table, not both")
        if episodes is not None:
            self._split_file(load_episodes(episodes, n_classes), d, val_episodes, str(episodes))
        elif table is not None:
            sampler = TableEpisodeSampler.from_source(
                table, d, n_classes, n_context, seed, label_column
            )
            self.train_sampler = self.test_sampler = sampler

    def _split_file(self, bank: dict, d: int, val_episodes: int, path: str) -> None:
        if "yq" not in bank:
            raise ValueError(
                f"episode file {path!r} lacks 'yq' (the probes' classes), needed to train"
            )
        if bank["x"].shape[-1] != d:
            raise ValueError(
                f"episode file {path!r} has d={bank['x'].shape[-1]} features, data.d is {d}"
            )
        n = len(bank["yq"])
        n_val = min(val_episodes, n // 5)
        if n_val < 1 or n - n_val < 1:
            raise ValueError(f"episode file {path!r} holds {n} episodes; need at least 5")
        self._train_bank = _EpisodeBank({k: v[: n - n_val] for k, v in bank.items()})
        self._val = self._test = _EpisodeBank({k: v[n - n_val :] for k, v in bank.items()})

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
        if self._train_bank is not None:  # the user's episode file
            return DataLoader(
                self._train_bank, batch_size=hp.batch_size, shuffle=True,
                num_workers=hp.num_workers,
            )  # fmt: skip
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


class ICLClassifierModule(pl.LightningModule):
    """Train an :class:`EquivariantICLTransformer` on in-context classification episodes.

    Parameters
    ----------
    d, n_classes, n_layers, n_heads, symmetry, attention, init_scale
        Passed to :class:`EquivariantICLTransformer`.
    lr
        Adam learning rate (cosine-annealed to 0 over the run).
    weight_decay
        Adam weight decay.
    project_at_end
        In ``"augment"`` mode, replace the weights by their Reynolds projection when
        ``fit`` ends.

    Examples
    --------
    >>> from symicl.episodes import LinearTaskSampler
    >>> _ = torch.manual_seed(0)
    >>> module = ICLClassifierModule(d=4, n_classes=3, n_layers=1)
    >>> batch = LinearTaskSampler(4, 3, 8).sample(6)
    >>> tuple(module(batch["x"], batch["y"], batch["xq"]).shape)
    (6, 3)
    """

    def __init__(
        self,
        d: int = 8,
        n_classes: int = 2,
        n_layers: int = 2,
        n_heads: int = 2,
        symmetry: str = "tied",
        attention: str = "softmax",
        init_scale: float = 0.1,
        lr: float = 1e-2,
        weight_decay: float = 0.0,
        project_at_end: bool = True,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        self.model = EquivariantICLTransformer(
            d, n_classes, n_layers, n_heads, symmetry, attention, init_scale
        )
        #: mean/max defects of an "augment" model just before its end-of-fit projection
        self.defect_before_projection: dict[str, float] | None = None
        #: state dict of an "augment" model just before its end-of-fit projection
        self.state_before_projection: dict[str, torch.Tensor] | None = None

    def setup(self, stage: str) -> None:
        """Refuse a data module whose ``d`` / ``n_classes`` differ from the model's (one line)."""
        data = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        hp = getattr(data, "hparams", {}) or {}
        if "d" in hp and hp["d"] != self.model.d:
            raise ValueError(
                f"feature dimension {hp['d']} of the data does not match the model's "
                f"d={self.model.d}"
            )
        if "n_classes" in hp and hp["n_classes"] != self.model.n_classes:
            raise ValueError(
                f"the data has C={hp['n_classes']} classes, the model C={self.model.n_classes}"
            )

    def forward(self, x: torch.Tensor, y: torch.Tensor, xq: torch.Tensor) -> torch.Tensor:
        """Probe logits ``(B, C)``; ``y`` may be integer labels ``(B, N)`` (-1 = unlabeled)."""
        if y.ndim == 2:
            y = one_hot_labels(y, self.model.n_classes).to(x.device)
        return self.model(x, y, xq)

    def _step(self, batch: dict[str, torch.Tensor], stage: str) -> torch.Tensor:
        logits = self(batch["x"], batch["y"], batch["xq"])
        loss = F.cross_entropy(logits, batch["yq"])
        acc = (logits.argmax(-1) == batch["yq"]).float().mean()
        on_step = stage == "train"
        bs = len(batch["yq"])
        self.log(f"{stage}_loss", loss, on_step=on_step, on_epoch=True, batch_size=bs)
        self.log(f"{stage}_acc", acc, on_step=False, on_epoch=True, prog_bar=True, batch_size=bs)
        return loss

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Cross-entropy of the probe logits."""
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Logs ``val_loss`` and ``val_acc``."""
        self._step(batch, "val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        """Logs ``test_loss`` and ``test_acc``."""
        self._step(batch, "test")

    def predict_step(
        self, batch: dict[str, torch.Tensor], batch_idx: int
    ) -> dict[str, torch.Tensor]:
        """Probe logits, predicted class and true class."""
        logits = self(batch["x"], batch["y"], batch["xq"])
        return {"logits": logits, "pred": logits.argmax(-1), "target": batch["yq"]}

    def on_fit_end(self) -> None:
        """Reynolds-project an ``"augment"`` model when training ends."""
        if self.hparams.project_at_end and self.model.symmetry == "augment":
            self.defect_before_projection = model_defects(self.model)
            self.state_before_projection = {
                k: v.detach().clone() for k, v in self.model.state_dict().items()
            }
            self.model.project_()

    def configure_optimizers(self):
        """Adam with a cosine schedule over the whole run."""
        opt = torch.optim.Adam(
            self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay
        )
        total = max(1, int(self.trainer.estimated_stepping_batches))
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def train_classifier(
    d: int,
    n_classes: int,
    n_context: int,
    n_layers: int = 2,
    n_heads: int = 2,
    symmetry: str = "tied",
    steps: int = 1000,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
) -> ICLClassifierModule:
    """Fit an :class:`ICLClassifierModule` for ``steps`` batches with Lightning (no logging).

    The same Trainer path as ``symicl fit`` (:func:`icml26_shared.trainer.quiet_trainer`:
    no validation, checkpoints or logger); used by ``symicl reproduce``.
    """
    from icml26_shared.trainer import quiet_trainer

    pl.seed_everything(seed, verbose=False)
    module = ICLClassifierModule(d, n_classes, n_layers, n_heads, symmetry, lr=lr)
    data = LinearTaskDataModule(
        d, n_classes, n_context, batch_size=batch_size, train_batches=steps, seed=seed
    )
    trainer = quiet_trainer(max_epochs=1, limit_val_batches=0, num_sanity_val_steps=0)
    trainer.fit(module, datamodule=data)
    return module.eval()
