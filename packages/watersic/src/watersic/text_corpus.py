"""Offline text: CPython's own standard-library sources and docstrings.

The offline stand-in for WikiText-2 / RedPajama calibration text in Lifar et al., "WaterSIC",
ICML 2026 (arXiv:2603.04956): every Python installation ships its standard library as ``.py``
files, so the same text is available without a network. Files are read in sorted order and
the SHA-256 of the text is recorded, because a different Python version gives different text.

* :func:`stdlib_text` -- concatenated top-level ``*.py`` sources (train / held-out split by file);
* :func:`stdlib_docstrings` -- module, class and function docstrings (English sentences);
* :func:`byte_sequences` -- fixed-length byte-token windows ``(N, T)`` for a byte-level LM
  (served as a LightningDataModule by :class:`watersic.lightning.ByteTextDataModule`).
"""

from __future__ import annotations

import ast
import hashlib
import sysconfig
from functools import cache
from pathlib import Path

import torch


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_path("stdlib"))
    files = sorted(root.glob("*.py"))
    if not files:
        raise FileNotFoundError(f"no standard-library .py sources found under {root}")
    return files


@cache
def stdlib_text(split: str = "train", max_bytes: int = 2_000_000) -> bytes:
    """UTF-8 bytes of the stdlib sources: ``train`` uses files 0, 1, 2 mod 4, ``heldout`` 3 mod 4."""
    if split not in ("train", "heldout"):
        raise ValueError(f"unknown split {split!r}; choose 'train' or 'heldout'")
    chunks, total = [], 0
    for i, f in enumerate(_stdlib_files()):
        if (i % 4 == 3) != (split == "heldout"):
            continue
        data = f.read_bytes()
        chunks.append(data)
        total += len(data)
        if total >= max_bytes:
            break
    return b"\n".join(chunks)[:max_bytes]


def text_hash(data: bytes) -> str:
    """Short SHA-256 of a text, recorded in reports."""
    return hashlib.sha256(data).hexdigest()[:16]


@cache
def stdlib_docstrings(min_words: int = 6, max_items: int = 4000) -> tuple[str, ...]:
    """First paragraphs of stdlib docstrings with at least ``min_words`` words (sorted files)."""
    out: list[str] = []
    for f in _stdlib_files():
        try:
            tree = ast.parse(f.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if not doc:
                    continue
                para = " ".join(doc.strip().split("\n\n")[0].split())
                if len(para.split()) >= min_words:
                    out.append(para)
        if len(out) >= max_items:
            break
    return tuple(out[:max_items])


def byte_sequences(
    data: bytes, seq_len: int, n: int | None = None, offset: int = 0
) -> torch.Tensor:
    """Non-overlapping byte windows ``(N, seq_len)`` (int64 token ids 0..255).

    >>> byte_sequences(b"abcdefgh", 3).tolist()
    [[97, 98, 99], [100, 101, 102]]
    """
    t = torch.frombuffer(bytearray(data[offset:]), dtype=torch.uint8).to(torch.int64)
    count = t.numel() // seq_len if n is None else min(n, t.numel() // seq_len)
    if count == 0:
        raise ValueError(f"text of {t.numel()} bytes is shorter than one window of {seq_len}")
    return t[: count * seq_len].reshape(count, seq_len)
