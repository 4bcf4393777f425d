"""A tiny Llama-style causal LM with a byte vocabulary, trained on CPython's sources.

Offline benchmark (c) of the package: the whole-model pipeline of Lifar et al., "WaterSIC",
ICML 2026 (arXiv:2603.04956) needs a pretrained causal LM; with no hub access we pretrain a
``transformers.LlamaConfig`` model (byte vocabulary 256, RMSNorm, rotary, SwiGLU) for a couple
of minutes with a fixed seed on the standard-library sources of :mod:`watersic.text_corpus`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import nn

from watersic.text_corpus import byte_sequences, stdlib_text


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


def train_tiny_llama(
    spec: TinyLlamaSpec | None = None, seed: int = 0, log: bool = False
) -> nn.Module:
    """Pretrain the tiny LM on stdlib bytes with AdamW and a one-cycle schedule (deterministic)."""
    spec = spec or TinyLlamaSpec()
    model = build_tiny_llama(spec, seed)
    data = byte_sequences(stdlib_text("train", spec.train_bytes), spec.seq_len)  # (N, T)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=spec.lr, total_steps=spec.train_steps, pct_start=0.1
    )
    model.train()
    start = time.perf_counter()
    for step in range(spec.train_steps):
        idx = torch.randint(0, data.shape[0], (spec.batch_size,), generator=g)
        batch = data[idx]
        loss = model(input_ids=batch, labels=batch).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if log and step % 100 == 0:
            print(f"step {step} loss {loss.item():.3f} ({time.perf_counter() - start:.0f} s)")
    model.eval()
    return model
