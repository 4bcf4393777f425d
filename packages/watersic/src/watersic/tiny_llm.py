"""A tiny Llama-style causal LM with a byte vocabulary, trained on CPython's sources.

Offline benchmark (c) of the package: the whole-model pipeline of Lifar et al., "WaterSIC",
ICML 2026 (arXiv:2603.04956) needs a pretrained causal LM; with no hub access we pretrain a
``transformers.LlamaConfig`` model (byte vocabulary 256, RMSNorm, rotary, SwiGLU) for a couple
of minutes with a fixed seed on the standard-library sources of :mod:`watersic.text_corpus`.

* :class:`TinyLlamaSpec` -- size and training budget;
* :func:`build_tiny_llama` -- the untrained ``LlamaForCausalLM``;
* pretraining: :class:`watersic.lightning.TinyLlamaPretrain` (next-byte cross-entropy) and
  :func:`watersic.lightning.train_tiny_llama`, which runs it under the quiet ``Trainer``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


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
