"""Tiny randomly initialised Llama-style causal LMs (``transformers.LlamaConfig``).

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302
(Llama-3-style models of 74M-973M parameters; here 20k-500k for a CPU).

1. Model sizes N (non-embedding parameters, the paper's N) -> :func:`count_params`,
   with the closed form :func:`analytic_params`.
2. Named sizes of the CPU grid -> :data:`SIZES`, built by :func:`tiny_llama`.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn


@dataclass(frozen=True)
class LlamaSize:
    """Width, depth and FFN size of one tiny Llama (dims divisible by every G used)."""

    hidden: int
    layers: int
    ffn: int
    heads: int = 4

    def non_embedding_params(self) -> int:
        """The paper's N for this size (see :func:`analytic_params`)."""
        return analytic_params(self.hidden, self.layers, self.ffn)


#: The CPU grid: widths divisible by G <= 32 (s16: G <= 16), FFN sizes powers of two
#: (Hadamard anchor on FC2).
SIZES: dict[str, LlamaSize] = {
    "s16": LlamaSize(16, 2, 32, 2),
    "s32": LlamaSize(32, 2, 64, 2),
    "s32x3": LlamaSize(32, 3, 128, 2),
    "s64": LlamaSize(64, 2, 128, 4),
    "s96": LlamaSize(96, 3, 256, 4),
    "s128": LlamaSize(128, 4, 256, 4),
    # The paper's scale (configs/reproduce/paper.yaml, for GPUs): Llama-3-style shapes with
    # head dim 64 whose non-embedding N is close to the paper's 74M / 145M / 297M / 595M (the
    # exact shapes were not available; inferred), every dim divisible by G <= 256.
    "p74m": LlamaSize(768, 10, 2048, 12),
    "p145m": LlamaSize(1024, 12, 2816, 16),
    "p297m": LlamaSize(1280, 16, 3584, 20),
    "p595m": LlamaSize(1536, 20, 4096, 24),
}


def analytic_params(hidden: int, layers: int, ffn: int) -> int:
    """Non-embedding parameters of a Llama with full multi-head attention, no biases.

    Per block: 4 h^2 (q, k, v, o) + 3 h f (gate, up, down) + 2 h (two RMSNorms); plus the
    final RMSNorm h. Embedding and (untied) LM head are excluded.

    >>> analytic_params(32, 2, 64)
    20640
    """
    return layers * (4 * hidden * hidden + 3 * hidden * ffn + 2 * hidden) + hidden


def tiny_llama(
    hidden: int = 32,
    layers: int = 2,
    ffn: int = 64,
    heads: int = 2,
    vocab_size: int = 256,
    max_seq_len: int = 128,
    seed: int | None = None,
):
    """A randomly initialised ``LlamaForCausalLM`` of the given size (float32, eager attention).

    >>> model = tiny_llama(32, 2, 64, heads=2, vocab_size=64, seed=0)
    >>> count_params(model) == analytic_params(32, 2, 64)
    True
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not divisible by heads {heads}")
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=ffn,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_seq_len,
        tie_word_embeddings=False,
        attn_implementation="eager",
    )
    if seed is not None:
        torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def count_params(model: nn.Module, non_embedding: bool = True) -> int:
    """Number of parameters; without the token embedding and LM head when ``non_embedding``."""
    skip: set[int] = set()
    if non_embedding:
        for name, module in model.named_modules():
            if isinstance(module, nn.Embedding) or name.endswith("lm_head"):
                skip.update(id(p) for p in module.parameters())
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) in seen or id(p) in skip:
            continue
        seen.add(id(p))
        total += p.numel()
    return total
