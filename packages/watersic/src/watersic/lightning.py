"""The package's LightningModules and DataModule, and the two trainings they run.

Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956). Everything that trains goes through
these modules, from ``watersic fit`` (LightningCLI, ``configs/*.yaml``) and from the
benchmarks alike (under :func:`icml26_shared.trainer.quiet_trainer`):

* :class:`TinyLlamaPretrain` -- pretraining of the tiny byte-level Llama of
  :mod:`watersic.tiny_llm` (next-byte cross-entropy, AdamW, one-cycle lr); run by
  :func:`train_tiny_llama`;
* :class:`WaterSICFinetune` -- WaterSIC-FT: the integer codes stay fixed and only the row and
  column rescalers t, alpha*g of every quantized layer train (fp16 straight-through, see
  :class:`watersic.finetune.QuantizedLinear`), with the token-mean KL(P_teacher || P_student)
  in bits as the loss; AdamW with a cosine schedule from lr = 5e-4 to 5e-6 (the paper's
  setting below 70B); run on an existing quantization by :func:`finetune_rescalers`;
* :class:`ByteTextDataModule` -- byte-token windows ``(B, T)`` of CPython's stdlib sources
  (:mod:`watersic.text_corpus`), train and held-out files.
"""

from __future__ import annotations

import contextlib
import math

import lightning.pytorch as pl
import torch
from icml26_shared.progress import quiet_lightning
from icml26_shared.trainer import quiet_trainer
from torch import nn
from torch.utils.data import DataLoader, Dataset

from watersic.evaluation import kl_bits
from watersic.finetune import load_causal_lm, quantized_student
from watersic.model_quantization import QuantizedArtifact, quantize_model
from watersic.text_corpus import byte_sequences, stdlib_text
from watersic.tiny_llm import TinyLlamaSpec, build_tiny_llama

__all__ = [
    "ByteTextDataModule",
    "TinyLlamaPretrain",
    "WaterSICFinetune",
    "finetune_rescalers",
    "train_tiny_llama",
]


class TinyLlamaPretrain(pl.LightningModule):
    """Pretraining of the tiny byte-level Llama: next-byte cross-entropy, AdamW, one-cycle lr.

    The teacher of benchmark (c) and of WaterSIC-FT; :func:`train_tiny_llama` runs it with a
    Lightning ``Trainer`` and ``watersic fit --config configs/pretrain_tiny_llama.yaml`` with
    LightningCLI (so ``--trainer.strategy`` / ``--trainer.devices`` work as for any module).

    Parameters
    ----------
    hidden_size, intermediate_size, num_layers, num_heads, seq_len:
        Size of the ``LlamaConfig`` (byte vocabulary 256, untied LM head).
    lr, weight_decay:
        AdamW peak learning rate and weight decay.
    warmup_fraction:
        Fraction of the steps spent warming up in the one-cycle schedule.
    seed:
        Seed of the initialisation.

    Examples
    --------
    >>> m = TinyLlamaPretrain(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2,
    ...                       seq_len=16)
    >>> m(torch.zeros(2, 16, dtype=torch.long)).shape  # (B, T, V)
    torch.Size([2, 16, 256])
    >>> m.predict_step(torch.zeros(2, 16, dtype=torch.long), 0).shape  # NLL bits per sequence
    torch.Size([2])
    """

    def __init__(
        self,
        hidden_size: int = 128,
        intermediate_size: int = 352,
        num_layers: int = 4,
        num_heads: int = 4,
        seq_len: int = 128,
        lr: float = 3e-3,
        weight_decay: float = 0.01,
        warmup_fraction: float = 0.1,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        spec = TinyLlamaSpec(
            hidden_size=hidden_size,
            intermediate_size=intermediate_size,
            num_layers=num_layers,
            num_heads=num_heads,
            seq_len=seq_len,
        )
        self.model = build_tiny_llama(spec, seed)
        self.model.train()

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, V)
        return self.model(input_ids=input_ids).logits

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        loss = self.model(input_ids=batch, labels=batch).loss
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def _eval(self, batch: torch.Tensor, prefix: str) -> None:
        loss = self.model(input_ids=batch, labels=batch).loss
        self.log(f"{prefix}_loss", loss)
        self.log(f"{prefix}_perplexity", torch.exp(loss))

    def validation_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self._eval(batch, "val")

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self._eval(batch, "test")

    def predict_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        """Per-sequence next-byte NLL in bits ``(B,)``."""
        logits = self(batch)
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].transpose(1, 2).float(), batch[:, 1:], reduction="none"
        )
        return nll.mean(-1) / math.log(2)

    def configure_optimizers(self):
        hp = self.hparams
        opt = torch.optim.AdamW(self.parameters(), lr=hp.lr, weight_decay=hp.weight_decay)
        total = max(2, int(self.trainer.estimated_stepping_batches)) if self._trainer else 2
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=hp.lr, total_steps=total, pct_start=hp.warmup_fraction
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class WaterSICFinetune(pl.LightningModule):
    """WaterSIC-FT: train only the rescalers of a WaterSIC-quantized causal LM by KL to its teacher.

    Parameters
    ----------
    teacher:
        ``"tiny-llama"`` (built and pretrained here on stdlib text) or a ``transformers``
        causal-LM id / local path (loaded through the offline-aware hub loader).
    rate:
        Target bits per quantized weight.
    hidden_size, intermediate_size, num_layers, num_heads, seq_len:
        Size of the tiny teacher (ignored for a hub model).
    pretrain_steps:
        Pretraining steps of the tiny teacher (0: random initialisation).
    calib_sequences:
        Calibration windows of ``seq_len`` bytes for the quantizer.
    lr, min_lr:
        AdamW learning rate, annealed by a cosine schedule to ``min_lr``.
    accounting:
        WaterSIC entropy accounting.
    seed:
        Seed of the teacher initialisation and pretraining.

    References
    ----------
    Lifar, Savkin, Ordentlich, Polyanskiy, ICML 2026, arXiv:2603.04956 (WaterSIC-FT).

    Examples
    --------
    >>> m = WaterSICFinetune(hidden_size=16, intermediate_size=32, num_layers=1, num_heads=2,
    ...                      seq_len=16, pretrain_steps=0, calib_sequences=8, rate=4.0)
    >>> m(torch.zeros(2, 16, dtype=torch.long)).shape  # (B, T, V)
    torch.Size([2, 16, 256])
    >>> all(p.requires_grad == ("scale" in n) for n, p in m.student.named_parameters())
    True
    """

    def __init__(
        self,
        teacher: str = "tiny-llama",
        rate: float = 2.0,
        hidden_size: int = 64,
        intermediate_size: int = 128,
        num_layers: int = 2,
        num_heads: int = 2,
        seq_len: int = 64,
        pretrain_steps: int = 150,
        calib_sequences: int = 64,
        lr: float = 5e-4,
        min_lr: float = 5e-6,
        accounting: str = "pooled",
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if teacher == "tiny-llama":
            spec = TinyLlamaSpec(
                hidden_size=hidden_size,
                intermediate_size=intermediate_size,
                num_layers=num_layers,
                num_heads=num_heads,
                seq_len=seq_len,
                train_steps=pretrain_steps,
                batch_size=8,
            )
            fp = (
                train_tiny_llama(spec, seed) if pretrain_steps > 0 else build_tiny_llama(spec, seed)
            )
        else:
            fp = load_causal_lm(teacher)
        cal = byte_sequences(stdlib_text("train"), seq_len, calib_sequences)
        artifact = quantize_model(fp, cal, rate, "watersic", accounting=accounting)
        self._attach(fp, artifact)

    def _attach(self, teacher: nn.Module, artifact: QuantizedArtifact) -> None:
        for p in teacher.parameters():
            p.requires_grad_(False)
        self.teacher = teacher
        self.student = quantized_student(artifact)
        self.quantized_rate = artifact.rate

    @classmethod
    def from_artifact(
        cls,
        teacher: nn.Module,
        artifact: QuantizedArtifact,
        lr: float = 5e-4,
        min_lr: float = 5e-6,
    ) -> WaterSICFinetune:
        """WaterSIC-FT of an already quantized model (e.g. ``quantize_model``'s artifact).

        Args:
            teacher: The full-precision causal LM (frozen here).
            artifact: Its WaterSIC quantization; its model becomes the student (in place).
            lr, min_lr: AdamW learning rate and the end of its cosine schedule.
        """
        module = cls.__new__(cls)
        pl.LightningModule.__init__(module)
        module.hparams.update(teacher="in-memory model", rate=artifact.rate, lr=lr, min_lr=min_lr)
        module._attach(teacher, artifact)
        return module

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:  # (B, T) -> (B, T, V)
        return self.student(input_ids=input_ids).logits

    def _kl(self, batch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            t_logits = self.teacher(input_ids=batch).logits
        s_logits = self(batch)
        return kl_bits(t_logits, s_logits), s_logits

    def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        loss, _ = self._kl(batch)
        self.log("train_kl_bits", loss, prog_bar=True)
        return loss

    def _eval(self, batch: torch.Tensor, prefix: str) -> None:
        kl, logits = self._kl(batch)
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.shape[-1]).float(), batch[:, 1:].reshape(-1)
        )
        self.log(f"{prefix}_kl_bits", kl)
        self.log(f"{prefix}_perplexity", torch.exp(nll))

    def validation_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self._eval(batch, "val")

    def test_step(self, batch: torch.Tensor, batch_idx: int) -> None:
        self._eval(batch, "test")

    def predict_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
        """Per-sequence next-token NLL in bits ``(B,)``."""
        logits = self(batch)
        nll = torch.nn.functional.cross_entropy(
            logits[:, :-1].transpose(1, 2).float(), batch[:, 1:], reduction="none"
        )
        return nll.mean(-1) / math.log(2)

    def configure_optimizers(self):
        params = [p for p in self.student.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=self.hparams.lr, weight_decay=0.0)
        total = max(1, int(self.trainer.estimated_stepping_batches)) if self._trainer else 1
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(
            opt, T_max=total, eta_min=self.hparams.min_lr
        )
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class _Windows(Dataset):
    """Rows of a ``(N, T)`` tensor as a map-style dataset."""

    def __init__(self, data: torch.Tensor) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.data[i]


class ByteTextDataModule(pl.LightningDataModule):
    """Byte-token windows ``(B, T)`` of CPython's stdlib sources (train / held-out files).

    Parameters
    ----------
    seq_len, batch_size:
        Window length T and batch size B.
    train_sequences, val_sequences:
        Number of windows in each split (None: every window of the text).
    train_offset:
        Bytes of the training text skipped first (WaterSIC-FT skips the first 500,000 bytes,
        where the quantizer's calibration windows come from; pretraining uses 0).
    train_bytes:
        Bytes of training text read (:func:`stdlib_text`).
    num_workers:
        DataLoader workers (0 on small machines).
    seed:
        Seed of the training shuffle (a generator of its own, so runs are deterministic).

    Examples
    --------
    >>> dm = ByteTextDataModule(seq_len=16, batch_size=4, train_sequences=8, val_sequences=4)
    >>> dm.setup("fit")
    >>> tuple(next(iter(dm.train_dataloader())).shape)
    (4, 16)
    """

    def __init__(
        self,
        seq_len: int = 64,
        batch_size: int = 8,
        train_sequences: int | None = 256,
        val_sequences: int | None = 32,
        train_offset: int = 500_000,
        train_bytes: int = 2_000_000,
        num_workers: int = 0,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()

    def setup(self, stage: str | None = None) -> None:
        hp = self.hparams
        text = stdlib_text("train", hp.train_bytes)
        self.train = _Windows(
            byte_sequences(text, hp.seq_len, hp.train_sequences, offset=hp.train_offset)
        )
        self.val = _Windows(byte_sequences(stdlib_text("heldout"), hp.seq_len, hp.val_sequences))

    def _loader(self, ds: Dataset, shuffle: bool) -> DataLoader:
        gen = torch.Generator().manual_seed(self.hparams.seed) if shuffle else None
        return DataLoader(
            ds,
            batch_size=self.hparams.batch_size,
            shuffle=shuffle,
            num_workers=self.hparams.num_workers,
            generator=gen,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train, True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val, False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.val, False)

    def predict_dataloader(self) -> DataLoader:
        return self._loader(self.val, False)


@contextlib.contextmanager
def _own_hyperparameters():
    """Let Lightning objects built inside another module's constructor record their own hparams.

    While LightningCLI instantiates the configured module it hands that module's init
    arguments to every ``save_hyperparameters()`` call (Lightning's ``_given_hyperparameters``
    context); the pretraining module and DataModule that :class:`WaterSICFinetune` builds for
    its teacher would otherwise record the outer module's arguments instead of their own.
    """
    from lightning.pytorch.core.mixins import hparams_mixin

    token = hparams_mixin._given_hyperparameters.set(None)
    try:
        yield
    finally:
        hparams_mixin._given_hyperparameters.reset(token)


def train_tiny_llama(
    spec: TinyLlamaSpec | None = None, seed: int = 0, log: bool = False
) -> nn.Module:
    """Pretrain the tiny LM on stdlib bytes (:class:`TinyLlamaPretrain` under a ``Trainer``).

    Deterministic for a given ``seed`` (initialisation and shuffle). Returns the trained
    ``LlamaForCausalLM`` on the CPU, in eval mode.
    """
    spec = spec or TinyLlamaSpec()
    with _own_hyperparameters():
        module = TinyLlamaPretrain(
            hidden_size=spec.hidden_size,
            intermediate_size=spec.intermediate_size,
            num_layers=spec.num_layers,
            num_heads=spec.num_heads,
            seq_len=spec.seq_len,
            lr=spec.lr,
            seed=seed,
        )
        data = ByteTextDataModule(
            seq_len=spec.seq_len,
            batch_size=spec.batch_size,
            train_sequences=None,
            val_sequences=1,
            train_offset=0,
            train_bytes=spec.train_bytes,
            seed=seed,
        )
    with contextlib.nullcontext() if log else quiet_lightning():
        trainer = quiet_trainer(
            max_steps=spec.train_steps,
            gradient_clip_val=1.0,
            enable_progress_bar=log,
            limit_val_batches=0,
            num_sanity_val_steps=0,
            deterministic=True,
        )
        trainer.fit(module, datamodule=data)
    model = module.model
    model.eval()
    return model


def finetune_rescalers(
    teacher: nn.Module,
    artifact: QuantizedArtifact,
    steps: int,
    seq_len: int,
    batch_size: int = 16,
    lr: float = 5e-4,
    min_lr: float = 5e-6,
    train_offset: int = 500_000,
    train_bytes: int = 2_000_000,
    seed: int = 0,
) -> nn.Module:
    """WaterSIC-FT of a byte-level LM: :class:`WaterSICFinetune` under the quiet ``Trainer``.

    Trains the rescalers of ``artifact`` (a WaterSIC quantization of ``teacher``) for ``steps``
    AdamW steps on shuffled windows of the stdlib training text from byte ``train_offset`` on
    (past the quantizer's calibration windows) up to byte ``train_bytes``.

    Args:
        teacher: The full-precision byte-level causal LM.
        artifact: ``quantize_model(teacher, ..., method="watersic")``; its model is trained in
            place.
        steps: Optimiser steps.
        seq_len, batch_size: Window length and batch size of the training text.
        lr, min_lr: AdamW learning rate, annealed by a cosine schedule to ``min_lr``.
        train_offset, train_bytes: Byte range of the training text used.
        seed: Seed of the shuffle.

    Returns:
        The fine-tuned student (the artifact's model with :class:`~watersic.finetune.QuantizedLinear`
        layers), in eval mode.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if train_bytes <= train_offset + seq_len:
        raise ValueError(
            f"train_bytes ({train_bytes}) must exceed train_offset ({train_offset}) by a window"
        )
    module = WaterSICFinetune.from_artifact(teacher, artifact, lr=lr, min_lr=min_lr)
    with _own_hyperparameters():
        data = ByteTextDataModule(
            seq_len=seq_len,
            batch_size=batch_size,
            train_sequences=None,
            val_sequences=1,
            train_offset=train_offset,
            train_bytes=train_bytes,
            seed=seed,
        )
    with quiet_lightning():
        trainer = quiet_trainer(
            max_steps=steps, limit_val_batches=0, num_sanity_val_steps=0, deterministic=True
        )
        trainer.fit(module, datamodule=data)
    student = module.student
    student.eval()
    return student
