"""A tiny Llama-style causal LM with a byte vocabulary, trained on CPython's sources.

Offline benchmark (c) of the package: the whole-model pipeline of Lifar et al., "WaterSIC",
ICML 2026 (arXiv:2603.04956) needs a pretrained causal LM; with no hub access we pretrain a
``transformers.LlamaConfig`` model (byte vocabulary 256, RMSNorm, rotary, SwiGLU) for a couple
of minutes with a fixed seed on the standard-library sources of :mod:`watersic.text_corpus`.

* :class:`TinyLlamaSpec` -- size and training budget;
* :func:`build_tiny_llama` -- the untrained ``LlamaForCausalLM``;
* :class:`TinyLlamaPretrain` -- the pretraining LightningModule (next-byte cross-entropy);
* :func:`train_tiny_llama` -- runs it under a Lightning ``Trainer`` (what the benchmarks use).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import lightning.pytorch as pl
import torch
from icml26_shared.progress import quiet_lightning
from torch import nn

from watersic.text_corpus import ByteTextDataModule


@dataclass(frozen=True)
class TinyLlamaSpec:
    """Size and training budget of the tiny LM (defaults: the full reproduce setting)."""

    hidden_size: int = 128
    intermediate_size: int = 352
    num_layers: int = 4
    num_heads: int = 4
    seq_len: int = 128
    train_steps: int = 600
    batch_size: int = 16
    lr: float = 3e-3
    train_bytes: int = 2_000_000


def build_tiny_llama(spec: TinyLlamaSpec | None = None, seed: int = 0) -> nn.Module:
    """An untrained ``LlamaForCausalLM`` of the given size (seeded initialisation)."""
    spec = spec or TinyLlamaSpec()
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=256,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_heads,
        max_position_embeddings=spec.seq_len,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.eval()
    return model


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


def train_tiny_llama(
    spec: TinyLlamaSpec | None = None, seed: int = 0, log: bool = False
) -> nn.Module:
    """Pretrain the tiny LM on stdlib bytes (:class:`TinyLlamaPretrain` under a ``Trainer``).

    Deterministic for a given ``seed`` (initialisation and shuffle). Returns the trained
    ``LlamaForCausalLM`` on the CPU, in eval mode.
    """
    spec = spec or TinyLlamaSpec()
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
        trainer = pl.Trainer(
            max_steps=spec.train_steps,
            accelerator="cpu",
            devices=1,
            gradient_clip_val=1.0,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=log,
            enable_model_summary=False,
            limit_val_batches=0,
            num_sanity_val_steps=0,
            deterministic=True,
        )
        trainer.fit(module, datamodule=data)
    model = module.model
    model.eval()
    return model
