"""QAT of tiny Llama LMs as Lightning modules: model, data, schedule, activation-statistics callback.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302.

1. L_QAT(N, D, G) and L_BF16(N, D): the causal-LM cross-entropy of a model trained with /
   without fake quantisation from scratch -> :class:`QATLanguageModel` (validation loss and
   perplexity through torchmetrics; full precision here is float32, not bf16, on a CPU).
2. One run, several token budgets D: the warmup-stable-decay schedule (Hagele et al. 2024),
   whose decay branches can start from any point of the stable phase -> :func:`wsd_factor`.
3. Data: fixed-length windows of a corpus, a seeded order of training windows shared by all
   paired runs, fixed validation windows -> :class:`TextDataModule`.
4. FC2-input outliers (Sec. on the activation bottleneck), logged during training
   -> :class:`ActivationStatsCallback` (the statistics: :mod:`qat_scaling.activation_outliers`).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import lightning.pytorch as pl
import torch
import torchmetrics
from torch import nn
from torch.utils.data import DataLoader, Dataset

from .activation_outliers import activation_statistics
from .corpora import build_corpus
from .quant_linear import QATScheme, apply_qat
from .tiny_llama import count_params, tiny_llama


def wsd_factor(step: int, warmup: int, decay_start: int, decay_end: int) -> float:
    """Learning-rate multiplier of the warmup-stable-decay schedule at ``step``.

    Linear warmup over ``warmup`` steps, constant until ``decay_start``, then linear decay to
    zero at ``decay_end``.

    >>> [round(wsd_factor(s, 2, 6, 10), 2) for s in (0, 1, 2, 5, 6, 8, 10)]
    [0.5, 1.0, 1.0, 1.0, 1.0, 0.5, 0.0]
    """
    if step < warmup:
        return (step + 1) / warmup
    if step < decay_start:
        return 1.0
    if decay_end <= decay_start:
        return 0.0
    return max(0.0, (decay_end - step) / (decay_end - decay_start))


def reject_fp16_on_cpu(precision: Any, accelerator: str) -> None:
    """fp16 training is not supported on a CPU: raise a one-line error."""
    text = str(precision)
    if accelerator == "cpu" and "16" in text and "bf16" not in text:
        raise ValueError(
            f"precision {text!r} (fp16) is not supported for training on the CPU; "
            "use 32-true or bf16-mixed"
        )


class NonFiniteLossError(ValueError):
    """A training loss became NaN or infinite (bad input or a diverged run): stop, don't record."""


class QATLanguageModel(pl.LightningModule):
    """A tiny randomly initialised Llama trained with a QAT scheme (or in full precision).

    Args:
        hidden, layers, ffn, heads: Model size (see :mod:`qat_scaling.tiny_llama`).
        vocab_size: Vocabulary (256 for byte corpora).
        seq_len: Context length.
        scheme: A name in :data:`qat_scaling.quant_linear.SCHEMES` (``FP``, ``W4A4``, ...).
        group_size: G of weights and activations.
        lr, weight_decay, betas: AdamW settings.
        max_steps, warmup_steps, decay_fraction: WSD schedule (decay over the last
            ``decay_fraction`` of ``max_steps``); ``schedule="cosine"`` for a cosine decay.
        seed: Seed of the initial weights (paired runs share it).
        scale_rule: ``absmax`` (s = absmax / (2^(b-1) - 1)) or ``torchao`` (s = absmax /
            ((2^b - 1) / 2) on [-2^(b-1), 2^(b-1) - 1]).

    Examples:
        >>> m = QATLanguageModel(hidden=32, layers=1, ffn=64, heads=2, seq_len=16, group_size=8)
        >>> m(torch.zeros(2, 16, dtype=torch.long)).shape
        torch.Size([2, 16, 256])
        >>> m.n_params
        10336
    """

    def __init__(
        self,
        hidden: int = 32,
        layers: int = 2,
        ffn: int = 64,
        heads: int = 2,
        vocab_size: int = 256,
        seq_len: int = 128,
        scheme: str = "W4A4",
        group_size: int = 32,
        lr: float = 3e-3,
        weight_decay: float = 0.1,
        betas: tuple[float, float] = (0.9, 0.95),
        max_steps: int = 1000,
        warmup_steps: int = 50,
        decay_fraction: float = 0.2,
        schedule: Literal["wsd", "cosine"] = "wsd",
        seed: int = 0,
        scale_rule: Literal["absmax", "torchao"] = "absmax",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.qat_scheme = QATScheme.preset(scheme, group_size=group_size, scale_rule=scale_rule)
        self.model = tiny_llama(hidden, layers, ffn, heads, vocab_size, seq_len, seed=seed)
        apply_qat(self.model, self.qat_scheme)
        self.n_params = count_params(self.model)
        self.val_loss = torchmetrics.MeanMetric()
        self.test_loss = torchmetrics.MeanMetric()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, T, vocab)`` for token ids ``(B, T)``."""
        return self.model(input_ids=input_ids).logits

    def loss(self, tokens: torch.Tensor) -> torch.Tensor:
        """Mean next-token cross-entropy of a ``(B, T+1)`` token window (nats)."""
        logits = self(tokens[:, :-1])
        return nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]).float(), tokens[:, 1:].reshape(-1)
        )

    def setup(self, stage: str) -> None:
        dm = self.trainer.datamodule if self._trainer is not None else None
        corpus = getattr(dm, "corpus", None)
        if corpus is not None and corpus.vocab_size > self.hparams.vocab_size:
            raise ValueError(
                f"the corpus has {corpus.vocab_size} token ids but the model's vocabulary is "
                f"{self.hparams.vocab_size}: set --model.vocab_size {corpus.vocab_size}"
            )

    def on_fit_start(self) -> None:
        reject_fp16_on_cpu(self.trainer.precision, "cpu" if self.device.type == "cpu" else "gpu")

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        loss = self.loss(batch)
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"training loss is {loss.item()} at step {self.global_step}; lower the learning "
                "rate or check the data"
            )
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self.val_loss.update(self.loss(batch), weight=batch.shape[0])

    def on_validation_epoch_end(self) -> None:
        loss = self.val_loss.compute()
        self.log("val_loss", loss, prog_bar=True)
        self.log("val_ppl", torch.exp(loss))
        self.val_loss.reset()

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self.test_loss.update(self.loss(batch), weight=batch.shape[0])

    def on_test_epoch_end(self) -> None:
        loss = self.test_loss.compute()
        self.log("test_loss", loss)
        self.log("test_ppl", torch.exp(loss))
        self.test_loss.reset()

    def predict_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        """Per-sequence mean next-token loss."""
        logits = self(batch[:, :-1])
        nll = nn.functional.cross_entropy(
            logits.transpose(1, 2).float(), batch[:, 1:], reduction="none"
        )
        return nll.mean(dim=1)

    def lr_factor(self, step: int) -> float:
        """Learning-rate multiplier at ``step`` (WSD or cosine)."""
        hp = self.hparams
        if hp.schedule == "cosine":
            if step < hp.warmup_steps:
                return (step + 1) / hp.warmup_steps
            frac = (step - hp.warmup_steps) / max(1, hp.max_steps - hp.warmup_steps)
            return 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))
        decay_start = int(round(hp.max_steps * (1 - hp.decay_fraction)))
        return wsd_factor(step, hp.warmup_steps, decay_start, hp.max_steps)

    def configure_optimizers(self):
        hp = self.hparams
        decay, no_decay = [], []
        for name, p in self.named_parameters():
            (decay if p.ndim >= 2 and "embed" not in name else no_decay).append(p)
        opt = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": hp.weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=hp.lr,
            betas=tuple(hp.betas),
        )
        sched = torch.optim.lr_scheduler.LambdaLR(opt, self.lr_factor)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class _Windows(Dataset):
    def __init__(self, tokens: torch.Tensor, seq_len: int, starts: torch.Tensor) -> None:
        self.tokens, self.seq_len, self.starts = tokens, seq_len, starts

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> torch.Tensor:
        s = int(self.starts[i])
        return self.tokens[s : s + self.seq_len + 1]


class TextDataModule(pl.LightningDataModule):
    """Windows of ``seq_len + 1`` tokens from a corpus; a seeded training order.

    Args:
        corpus: ``stdlib`` (CPython sources as bytes), ``markov``, ``text`` (your own file
            or folder, ``corpus_kwargs={"path": ...}``) or ``hf``.
        seq_len: Context length T (windows hold T + 1 tokens).
        batch_size: Windows per batch.
        train_batches: Batches per training epoch (random windows, seeded).
        val_batches: Fixed validation batches (non-overlapping windows).
        seed: Seed of the training-window order (the same in paired runs).
        corpus_kwargs: Passed to the corpus class (e.g. ``{"max_bytes": 1000000}``).

    Examples:
        >>> dm = TextDataModule("markov", seq_len=8, batch_size=4, train_batches=2,
        ...                     val_batches=1, corpus_kwargs={"vocab": 8, "train_tokens": 500,
        ...                                                   "val_tokens": 100})
        >>> dm.setup("fit")
        >>> next(iter(dm.train_dataloader())).shape
        torch.Size([4, 9])
    """

    def __init__(
        self,
        corpus: Literal["stdlib", "markov", "text", "hf"] = "stdlib",
        seq_len: int = 128,
        batch_size: int = 8,
        train_batches: int = 1000,
        val_batches: int = 16,
        seed: int = 0,
        corpus_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        for name, value in (
            ("seq_len", seq_len),
            ("batch_size", batch_size),
            ("train_batches", train_batches),
            ("val_batches", val_batches),
        ):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        self.save_hyperparameters()
        self.corpus = None

    def setup(self, stage: str | None = None) -> None:
        if self.corpus is None:
            hp = self.hparams
            self.corpus = build_corpus(hp.corpus, **(hp.corpus_kwargs or {}))
        hp = self.hparams
        span = hp.seq_len + 1
        n_val = min(hp.val_batches * hp.batch_size, len(self.corpus.val) // span)
        if n_val < 1:
            raise ValueError(f"the validation text is shorter than one window of {span} tokens")
        self.val_starts = torch.arange(n_val) * span
        gen = torch.Generator().manual_seed(hp.seed)
        self.train_starts = torch.randint(
            0, len(self.corpus.train) - span, (hp.train_batches * hp.batch_size,), generator=gen
        )

    def train_batch(self, step: int) -> torch.Tensor:
        """Training batch number ``step`` (cycling through the seeded order)."""
        n = len(self.train_starts) // self.hparams.batch_size
        i = step % n
        starts = self.train_starts[i * self.hparams.batch_size : (i + 1) * self.hparams.batch_size]
        return torch.stack(
            [self.corpus.train[s : s + self.hparams.seq_len + 1] for s in starts.tolist()]
        )

    def val_batches(self) -> list[torch.Tensor]:
        """The fixed validation batches."""
        return list(self.val_dataloader())

    def train_dataloader(self) -> DataLoader:
        return DataLoader(
            _Windows(self.corpus.train, self.hparams.seq_len, self.train_starts),
            batch_size=self.hparams.batch_size,
            shuffle=False,
        )

    def val_dataloader(self) -> DataLoader:
        return DataLoader(
            _Windows(self.corpus.val, self.hparams.seq_len, self.val_starts),
            batch_size=self.hparams.batch_size,
        )

    def test_dataloader(self) -> DataLoader:
        return self.val_dataloader()

    def predict_dataloader(self) -> DataLoader:
        return self.val_dataloader()


class ActivationStatsCallback(pl.Callback):
    """Log :func:`activation_statistics` of the first validation batch after each validation.

    Args:
        bits, group_size: Quantiser used for the ``rel_mse`` statistic.

    Examples:
        >>> ActivationStatsCallback(bits=4, group_size=16).bits
        4
    """

    def __init__(self, bits: int = 4, group_size: int = 32) -> None:
        self.bits, self.group_size = bits, group_size
        self.latest: dict[str, dict[str, float]] = {}

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        loaders = trainer.val_dataloaders
        loader = loaders[0] if isinstance(loaders, list | tuple) else loaders
        batch = next(iter(loader)).to(pl_module.device)
        self.latest = activation_statistics(
            pl_module.model, batch[:, :-1], self.bits, self.group_size
        )
        for name, values in self.latest.items():
            short = name.split(".")[-1]
            for key, value in values.items():
                pl_module.log(f"act/{short}/{key}", value)
