"""Lightning wrappers: a prequential streaming module and an ordered chunked DataModule.

Paper: Amoukou, Mishra & Veloso, ICML 2026 (arXiv:2605.31239). The learners are not
gradient-trained, so the module uses manual optimisation and no optimiser:

- :class:`StreamLearnerModule`: ``training_step`` *predicts* the chunk first, updates the
  prequential torchmetrics (accuracy, Cohen's kappa), then *learns* the chunk, which keeps
  the evaluation test-then-train; ``validation_step`` / ``test_step`` only predict (hold-out
  chunks); ``predict_step`` returns class probabilities. The learner is saved in the
  checkpoint (pickled), so ``load_from_checkpoint`` restores the exact tree.
- :class:`StreamDataModule`: a named stream (:func:`anytime_hoeffding.streams.make_stream`)
  served as an ordered ``IterableDataset`` of chunks (``batch_size=None``, no shuffling,
  ``num_workers=0``: order is the point of a stream). Validation/test use a fresh stream
  from the same generator with another seed.
"""

from __future__ import annotations

import pickle
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset
from torchmetrics.classification import MulticlassAccuracy, MulticlassCohenKappa

from .forest import AnytimeARFClassifier
from .streams import make_stream
from .tree import AnytimeHoeffdingTreeClassifier

__all__ = ["StreamDataModule", "StreamLearnerModule"]


class _Chunks(IterableDataset):
    """Ordered chunks ``(X (c, d) float64, y (c,) int64)`` of a stream."""

    def __init__(self, X: np.ndarray, y: np.ndarray, chunk_size: int):
        self.X, self.y, self.chunk_size = X, y, chunk_size

    def __iter__(self):
        for a in range(0, len(self.y), self.chunk_size):
            yield (
                torch.from_numpy(self.X[a : a + self.chunk_size]),
                torch.from_numpy(self.y[a : a + self.chunk_size]),
            )


class StreamDataModule(pl.LightningDataModule):
    """A named stream as ordered chunks.

    Parameters
    ----------
    stream
        Name from :data:`anytime_hoeffding.streams.STREAMS` (``"sea"``, ``"agrawal"``, ...).
    n
        Instances in the training stream.
    chunk_size
        Instances per chunk (one Lightning batch).
    n_holdout
        Instances in the validation/test stream (same generator, seed + 1).
    seed
        Seed of the generator.

    Examples
    --------
    >>> dm = StreamDataModule("sea", n=2500, chunk_size=1000)
    >>> dm.setup("fit")
    >>> [tuple(X.shape) for X, _ in dm.train_dataloader()]
    [(1000, 10), (1000, 10), (500, 10)]
    """

    def __init__(
        self, stream: str = "sea", n: int = 20_000, chunk_size: int = 1_000,
        n_holdout: int = 5_000, seed: int = 0,
    ):  # fmt: skip
        super().__init__()
        if chunk_size < 1 or n < 1 or n_holdout < 1:
            raise ValueError("n, chunk_size and n_holdout must be positive")
        self.stream, self.n, self.chunk_size = stream, n, chunk_size
        self.n_holdout, self.seed = n_holdout, seed
        make_stream(stream, 1, seed)  # fail early on an unknown name
        self.train = self.holdout = None

    def setup(self, stage: str | None = None):
        if self.train is None:
            self.train = make_stream(self.stream, self.n, self.seed)
            self.holdout = make_stream(self.stream, self.n_holdout, self.seed + 1)

    @property
    def n_classes(self) -> int:
        self.setup()
        return self.train.n_classes

    def _loader(self, s):
        return DataLoader(_Chunks(s.X, s.y, self.chunk_size), batch_size=None, num_workers=0)

    def train_dataloader(self):
        return self._loader(self.train)

    def val_dataloader(self):
        return self._loader(self.holdout)

    def test_dataloader(self):
        return self._loader(self.holdout)

    def predict_dataloader(self):
        return self._loader(self.holdout)


class StreamLearnerModule(pl.LightningModule):
    """Prequential Lightning wrapper of the anytime-valid tree or forest.

    Parameters
    ----------
    n_classes
        Number of classes (the labels are ``0..n_classes-1``).
    learner
        ``"tree"`` (:class:`AnytimeHoeffdingTreeClassifier`) or ``"arf"``
        (:class:`AnytimeARFClassifier`).
    alpha, alpha_spending, loss, betting, bet_cap, n_bins, warmup, leaf_prediction
        Tree parameters (see :class:`AnytimeHoeffdingTreeClassifier`).
    n_models
        Forest size (``learner="arf"``).
    seed
        Seed of the learner.

    Examples
    --------
    >>> import torch
    >>> m = StreamLearnerModule(n_classes=2)
    >>> m(torch.zeros(3, 4)).shape
    torch.Size([3, 2])
    """

    def __init__(
        self,
        n_classes: int = 2,
        learner: str = "tree",
        alpha: float = 0.05,
        alpha_spending: str = "tree",
        loss: str = "brier",
        betting: str = "agrapa",
        bet_cap: float = 0.5,
        n_bins: int = 16,
        warmup: int = 100,
        leaf_prediction: str = "nba",
        n_models: int = 10,
        seed: int = 0,
    ):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        if n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {n_classes}")
        params = dict(alpha=alpha, alpha_spending=alpha_spending, loss=loss, betting=betting,
                      bet_cap=bet_cap, n_bins=n_bins, warmup=warmup,
                      leaf_prediction=leaf_prediction)  # fmt: skip
        classes = list(range(n_classes))
        if learner == "tree":
            self.learner = AnytimeHoeffdingTreeClassifier(classes=classes, seed=seed, **params)
        elif learner == "arf":
            self.learner = AnytimeARFClassifier(n_models=n_models, classes=classes, seed=seed,
                                                **params)  # fmt: skip
        else:
            raise ValueError(f"unknown learner {learner!r}; choose 'tree' or 'arf'")
        self.train_acc = MulticlassAccuracy(n_classes, average="micro")
        self.train_kappa = MulticlassCohenKappa(n_classes)
        self.val_acc = MulticlassAccuracy(n_classes, average="micro")
        self.val_kappa = MulticlassCohenKappa(n_classes)

    def _fitted(self) -> bool:
        lr = self.learner
        return (
            bool(getattr(lr, "classes_", None) and lr.n_seen)
            or getattr(lr, "_members", None) is not None
        )

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """Class probabilities ``(B, K)`` for ``X (B, d)`` (uniform before any learning)."""
        K = self.hparams.n_classes
        if not self._fitted():
            return torch.full((X.shape[0], K), 1.0 / K, dtype=torch.float64)
        p = self.learner.predict_proba_many(X.detach().cpu().numpy())
        return torch.from_numpy(np.ascontiguousarray(p))

    def training_step(self, batch, batch_idx):
        X, y = batch
        p = self(X)  # predict first (prequential) ...
        self.train_acc.update(p.argmax(dim=1), y)
        self.train_kappa.update(p.argmax(dim=1), y)
        self.learner.learn_many(X.cpu().numpy(), y.cpu().numpy())  # ... then learn
        self.log("prequential_accuracy", self.train_acc, on_step=False, on_epoch=True)
        self.log("prequential_kappa", self.train_kappa, on_step=False, on_epoch=True)
        self.log("n_nodes", float(self.learner.n_nodes), on_step=False, on_epoch=True)

    def _evaluate(self, batch, prefix):
        X, y = batch
        pred = self(X).argmax(dim=1)
        self.val_acc.update(pred, y)
        self.val_kappa.update(pred, y)
        self.log(f"{prefix}_accuracy", self.val_acc, on_step=False, on_epoch=True)
        self.log(f"{prefix}_kappa", self.val_kappa, on_step=False, on_epoch=True)

    def validation_step(self, batch, batch_idx):
        self._evaluate(batch, "val")

    def test_step(self, batch, batch_idx):
        self._evaluate(batch, "test")

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        X = batch[0] if isinstance(batch, (tuple, list)) else batch
        return self(X)

    def on_train_end(self) -> None:
        m = self.trainer.callback_metrics
        if "prequential_accuracy" in m and self.trainer.is_global_zero:
            print(
                f"prequential accuracy {float(m['prequential_accuracy']):.4f}, kappa "
                f"{float(m['prequential_kappa']):.4f}, nodes {self.learner.n_nodes}"
            )

    def configure_optimizers(self):
        return None  # no gradient training: the learner updates itself in training_step

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["anytime_hoeffding_learner"] = pickle.dumps(self.learner)

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        blob = checkpoint.get("anytime_hoeffding_learner")
        if blob is not None:
            self.learner = pickle.loads(blob)
