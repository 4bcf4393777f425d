"""A byte-level BPE tokenizer trained locally on the training text (no download).

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302 (the
paper uses a hub tokenizer on web text; offline, a BPE is trained here on the training
split only, so the validation text is never seen by the tokenizer).

1. Train a byte-level BPE with the ``tokenizers`` library (Hugging Face's Rust
   implementation; the field's standard, so no hand-written merge loop)
   -> :func:`train_bpe`.
2. Encode bytes to token ids ``(n,)`` int64 and back -> :func:`encode`, :func:`decode`.
"""

from __future__ import annotations

import functools

import numpy as np
import torch


def _lines(text: bytes, chunk: int = 1 << 16):
    s = text.decode("utf-8", errors="replace")
    for i in range(0, len(s), chunk):
        yield s[i : i + chunk]


@functools.cache
def train_bpe(text: bytes, vocab_size: int = 1024):
    """A byte-level BPE (``tokenizers.Tokenizer``) with ``vocab_size`` tokens trained on ``text``.

    Deterministic for a given text and size. ``vocab_size`` must exceed the 256 byte tokens.

    Examples:
        >>> tok = train_bpe(b"def f(x):\\n    return x\\n" * 50, vocab_size=300)
        >>> decode(tok, encode(tok, b"def f(x):")) == b"def f(x):"
        True
    """
    if vocab_size <= 256:
        raise ValueError(f"a byte-level BPE needs vocab_size > 256, got {vocab_size}")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        special_tokens=[],
    )
    tok.train_from_iterator(_lines(text), trainer=trainer)
    return tok


def encode(tok, text: bytes) -> torch.Tensor:
    """Token ids ``(n,)`` (int64) of ``text`` (UTF-8; invalid bytes become U+FFFD)."""
    ids: list[int] = []
    for piece in _lines(text):
        ids.extend(tok.encode(piece).ids)
    return torch.from_numpy(np.asarray(ids, dtype=np.int64))


def decode(tok, ids: torch.Tensor) -> bytes:
    """The UTF-8 bytes of token ids."""
    return tok.decode(ids.tolist()).encode("utf-8")
