"""Positional encodings compared in the paper: absolute (APE), RoPE, ALiBi, hybrid.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

1. absolute: a one-hot position over ``max_positions`` slots (2 * N_max + 1 = 65 by
   default), shifted by a random offset per training sequence -> :class:`AbsolutePositions`;
   either learned (an embedding added to the projected tokens) or, as in the authors' code,
   fixed one-hot channels concatenated to the raw tokens (``onehot=True``,
   :class:`OneHotTable`, used with :class:`ConcatEmbedding`);
2. RoPE (Su et al. 2021, theta = 1e4): rotate query/key pairs of channels by
   ``pos * theta^(-2i/d)`` so that ``<R_m q, R_n k>`` depends only on ``m - n``
   -> :func:`rope_angles`, :func:`apply_rope`;
3. ALiBi (Press et al. 2022): add ``-slope_h * (i - j)`` to the attention logits
   -> :func:`alibi_bias`;
4. hybrid: absolute embedding plus RoPE.
"""

from __future__ import annotations

import torch
from torch import nn

POSITION_KINDS = ("ape", "rope", "alibi", "hybrid", "none")


def rope_angles(positions: torch.Tensor, dim: int, theta: float = 1e4) -> torch.Tensor:
    """Rotation angles ``pos * theta^(-2i/dim)``, shape ``positions.shape + (dim // 2,)``."""
    if dim % 2:
        raise ValueError(f"RoPE needs an even head dimension, got {dim}")
    inv = theta ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    return positions.to(torch.float32)[..., None] * inv


def apply_rope(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate consecutive channel pairs of ``x`` (..., T, dim) by ``angles`` (T, dim/2).

    Examples
    --------
    >>> q = torch.randn(1, 3, 4)
    >>> a = rope_angles(torch.arange(3), 4)
    >>> bool(torch.allclose(apply_rope(q, a).norm(dim=-1), q.norm(dim=-1), atol=1e-6))
    True
    """
    x1, x2 = x[..., 0::2], x[..., 1::2]
    cos, sin = angles.cos(), angles.sin()
    out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return out.flatten(-2)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Geometric ALiBi slopes ``2^(-8 h / H)`` for ``h = 1..H``."""
    return 2.0 ** (-8.0 * torch.arange(1, n_heads + 1, dtype=torch.float32) / n_heads)


def alibi_bias(n_heads: int, T: int) -> torch.Tensor:
    """ALiBi logit bias ``-slope_h * (i - j)`` for ``j <= i``, shape (H, T, T)."""
    i = torch.arange(T)
    dist = (i[:, None] - i[None, :]).clamp_min(0).float()
    return -alibi_slopes(n_heads)[:, None, None] * dist


class OneHotTable(nn.Module):
    """Fixed position table: row ``p`` is the one-hot vector ``e_p`` in the first
    ``n_slots`` of ``width`` channels (a buffer, never trained, so unfreezing a decoder
    cannot make it learnable).

    Examples
    --------
    >>> OneHotTable(3, 5)(torch.tensor([1])).tolist()
    [[0.0, 1.0, 0.0, 0.0, 0.0]]
    """

    def __init__(self, n_slots: int, width: int) -> None:
        super().__init__()
        if width < n_slots:
            raise ValueError(f"{n_slots} one-hot position slots need width >= {n_slots}")
        self.register_buffer("weight", torch.eye(n_slots, width), persistent=False)

    def forward(self, pos: torch.Tensor) -> torch.Tensor:
        return self.weight[pos]


class ConcatEmbedding(nn.Module):
    """The authors' input layout: no learned input map; a token ``x`` (d_in) becomes
    ``[0_{width - d_in}, x]``, so the leading channels are free for one-hot positions
    (:class:`OneHotTable`) and ``tokens + positions`` is the concatenation
    ``[one-hot position, x]``.

    Examples
    --------
    >>> ConcatEmbedding(2, 5)(torch.tensor([[1.0, 2.0]])).tolist()
    [[0.0, 0.0, 0.0, 1.0, 2.0]]
    """

    def __init__(self, d_in: int, width: int) -> None:
        super().__init__()
        if width < d_in:
            raise ValueError(f"width {width} < token dimension {d_in}")
        self.d_in, self.width = d_in, width

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.pad(x, (self.width - self.d_in, 0))


class AbsolutePositions(nn.Module):
    """Absolute position embeddings with a random offset per training sequence.

    Parameters
    ----------
    max_positions:
        Position capacity (one-hot slots).
    d_model:
        Width of the embedding.
    random_shift:
        In training, shift each sequence's positions by a uniform offset in
        ``[0, max_positions - T]`` (the authors' trick, so every slot gets trained).
    onehot:
        Fixed one-hot vectors in the first ``max_positions`` channels (the authors' code)
        instead of a learned embedding (initialised ``N(0, 0.02)``).

    Examples
    --------
    >>> pe = AbsolutePositions(9, 4).eval()
    >>> pe(2, 5, torch.Generator()).shape
    torch.Size([2, 5, 4])
    """

    def __init__(
        self, max_positions: int, d_model: int, random_shift: bool = True, onehot: bool = False
    ) -> None:
        super().__init__()
        self.max_positions, self.onehot = max_positions, onehot
        self.embed = (
            OneHotTable(max_positions, d_model) if onehot else nn.Embedding(max_positions, d_model)
        )
        self.random_shift = random_shift

    def forward(self, S: int, T: int, g: torch.Generator | None = None) -> torch.Tensor:
        if self.max_positions < T:
            raise ValueError(
                f"sequence length {T} exceeds the position capacity {self.max_positions}"
            )
        pos = torch.arange(T, device=self.embed.weight.device).expand(S, T)  # (S, T)
        if self.training and self.random_shift and self.max_positions > T:
            shift = torch.randint(
                0, self.max_positions - T + 1, (S, 1), device=pos.device, generator=g
            )
            pos = pos + shift
        return self.embed(pos)
