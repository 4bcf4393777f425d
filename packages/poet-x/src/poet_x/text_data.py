"""Offline language-model data.

* :func:`stdlib_bytes`: CPython's own standard-library sources as byte-level text (vocab 256),
  split into train / validation by a hash of the relative file path (fixed across machines).
* :class:`MarkovChain2`: an order-2 Markov chain over V symbols with Dirichlet(alpha)
  transitions and its exact entropy rate H = sum_{a,b} pi(a,b) H(T[a,b,:]), so a model's
  *excess loss* (val loss - H, nats/token) is known.
* :class:`~poet_x.lightning.TextDataModule`: fixed windows of ``seq_len + 1`` tokens from either source.
"""

from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

import numpy as np
import torch


def stdlib_bytes(max_bytes: int = 2_000_000, val_fraction: float = 0.1):
    """(train, val) uint8 arrays from the stdlib ``.py`` files (tests excluded)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(
        p for p in root.rglob("*.py")
        if "test" not in p.relative_to(root).parts[0] and "site-packages" not in p.parts
    )  # fmt: skip
    train, val, n_train, n_val = [], [], 0, 0
    cap_val = int(max_bytes * val_fraction)
    for p in files:
        rel = p.relative_to(root).as_posix()
        bucket = int(hashlib.md5(rel.encode()).hexdigest(), 16) % 1000
        is_val = bucket < 1000 * val_fraction
        if (is_val and n_val >= cap_val) or (not is_val and n_train >= max_bytes):
            continue
        data = p.read_bytes()
        (val if is_val else train).append(data)
        if is_val:
            n_val += len(data)
        else:
            n_train += len(data)
        if n_train >= max_bytes and n_val >= cap_val:
            break
    if not train or not val:
        raise RuntimeError(f"no standard-library sources found under {root}")
    return (
        np.frombuffer(b"".join(train), dtype=np.uint8)[:max_bytes],
        np.frombuffer(b"".join(val), dtype=np.uint8)[:cap_val],
    )


class MarkovChain2:
    """Order-2 Markov chain with an exact entropy rate.

    Examples
    --------
    >>> chain = MarkovChain2(vocab=8, alpha=0.1, seed=0)
    >>> bool(0.0 < chain.entropy_rate() < np.log(8))
    True
    >>> chain.sample(100, seed=1).shape
    (100,)
    """

    def __init__(self, vocab: int = 64, alpha: float = 0.1, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.vocab = vocab
        self.trans = rng.dirichlet(np.full(vocab, alpha), size=(vocab, vocab))  # (V, V, V)

    def stationary(self, iters: int = 2000) -> np.ndarray:
        """Stationary distribution pi(a, b) of the pair chain (power iteration)."""
        v = self.vocab
        pi = np.full((v, v), 1.0 / v**2)
        for _ in range(iters):
            new = np.einsum("ab,abc->bc", pi, self.trans)
            if np.abs(new - pi).max() < 1e-13:
                pi = new
                break
            pi = new
        return pi

    def entropy_rate(self) -> float:
        """H = sum_{a,b} pi(a,b) * H(T[a,b,:]) in nats per token."""
        t = self.trans
        h = -(t * np.log(np.clip(t, 1e-300, None))).sum(-1)
        return float((self.stationary() * h).sum())

    def sample(self, n: int, seed: int = 0) -> np.ndarray:
        """n tokens of the chain."""
        rng = np.random.default_rng(seed)
        out = np.empty(n, dtype=np.int64)
        out[:2] = rng.integers(0, self.vocab, 2)
        cum = self.trans.cumsum(-1)
        u = rng.random(n)
        for i in range(2, n):
            out[i] = min(np.searchsorted(cum[out[i - 2], out[i - 1]], u[i]), self.vocab - 1)
        return out


def windows(tokens: np.ndarray, n: int, length: int, seed: int) -> torch.Tensor:
    """n random windows of ``length`` tokens (int64), reproducible from ``seed``."""
    if len(tokens) <= length:
        raise ValueError(f"text of {len(tokens)} tokens is shorter than a window of {length}")
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(tokens) - length, n)
    return torch.from_numpy(np.stack([tokens[s : s + length] for s in starts]).astype(np.int64))
