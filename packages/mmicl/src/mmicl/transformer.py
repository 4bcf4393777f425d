"""The small modern decoder of the paper: pre-RMSNorm, SwiGLU MLP, causal attention.

Paper: "Dissecting Multimodal In-Context Learning", Huang et al., ICML 2026 (arXiv 2601.20796).

1. ``h <- h + Attn(RMSNorm(h))``; ``h <- h + MLP(RMSNorm(h))`` (pre-norm block)
   -> :class:`Block`;
2. ``RMSNorm(x) = x / sqrt(mean(x^2) + 1e-6) * g`` -> :class:`RMSNorm`;
3. MLP: ``swiglu`` is ``W2 (SiLU(W1 x) * W3 x)`` (Shazeer 2020); ``paper`` is the authors'
   variant ``W2 SiLU(W1 x * W3 x)`` (SiLU of the product), both with biases
   -> :class:`GatedMLP`;
4. causal softmax attention with RoPE / ALiBi / absolute / hybrid positions; one head has no
   output projection, several heads have one -> :class:`CausalSelfAttention`;
5. readout: a linear map of the last token to ``L`` label logits -> :class:`ICLDecoder`;
   the input is either a learned linear map of the tokens to ``d_model`` (``embedding=
   "linear"``) or, as in the authors' code, the raw tokens themselves with fixed one-hot
   position channels concatenated for absolute / hybrid positions (``embedding="concat"``,
   residual width ``d_in + max_positions``, or ``d_in`` for RoPE / ALiBi);
6. head knockout: zero a head's slice of the input to the output projection
   -> :func:`knockout`;
7. initialisation ``N(0, 0.02)``, zero biases.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from mmicl.positions import (
    POSITION_KINDS,
    AbsolutePositions,
    ConcatEmbedding,
    alibi_bias,
    apply_rope,
    rope_angles,
)

MLP_KINDS = ("swiglu", "paper")
EMBEDDINGS = ("linear", "concat")


def concat_width(d_in: int, pos: str, max_positions: int) -> int:
    """Residual width of the authors' layout: the token dimension, plus ``max_positions``
    one-hot channels for absolute / hybrid positions (one more zero channel when RoPE needs
    an even width, as the authors' hybrid layout has).

    Examples
    --------
    >>> concat_width(32, "ape", 65), concat_width(32, "rope", 65), concat_width(32, "hybrid", 65)
    (97, 32, 98)
    """
    width = d_in + (max_positions if pos in ("ape", "hybrid") else 0)
    return width + (width % 2 if pos in ("rope", "hybrid") else 0)


class RMSNorm(nn.Module):
    """Root-mean-square norm with a learned gain.

    Examples
    --------
    >>> y = RMSNorm(4)(torch.tensor([[3.0, -3.0, 3.0, -3.0]]))
    >>> [round(v, 4) for v in y[0].tolist()]
    [1.0, -1.0, 1.0, -1.0]
    """

    def __init__(self, d: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class GatedMLP(nn.Module):
    """Gated MLP: ``swiglu`` (SiLU on the gate) or the authors' ``paper`` variant.

    Examples
    --------
    >>> GatedMLP(8, 16, "swiglu")(torch.randn(2, 3, 8)).shape
    torch.Size([2, 3, 8])
    """

    def __init__(self, d_model: int, d_ff: int, kind: str = "swiglu") -> None:
        super().__init__()
        if kind not in MLP_KINDS:
            raise ValueError(f"unknown MLP kind {kind!r}; choose from {', '.join(MLP_KINDS)}")
        self.kind = kind
        self.w1 = nn.Linear(d_model, d_ff)
        self.w3 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "swiglu":
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.silu(self.w1(x) * self.w3(x)))


class CausalSelfAttention(nn.Module):
    """Causal multi-head attention that keeps its attention pattern for the measures.

    ``head_mask`` (H,) multiplies each head's output before the output projection (1 = on);
    :func:`knockout` sets it to 0 for chosen heads.

    Examples
    --------
    >>> att = CausalSelfAttention(8, 2, pos="rope")
    >>> y, a = att(torch.randn(1, 5, 8))
    >>> y.shape, a.shape, bool(torch.all(a.triu(1) == 0))
    (torch.Size([1, 5, 8]), torch.Size([1, 2, 5, 5]), True)
    """

    def __init__(self, d_model: int, n_heads: int, pos: str = "rope", theta: float = 1e4) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")
        self.n_heads, self.d_head, self.pos, self.theta = n_heads, d_model // n_heads, pos, theta
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        # one head: no output projection (as in the authors' code)
        self.out = nn.Linear(d_model, d_model, bias=False) if n_heads > 1 else nn.Identity()
        self.register_buffer("head_mask", torch.ones(n_heads), persistent=False)

    def scores(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Pre-softmax attention logits (S, H, T, T), before the causal mask."""
        q, k, _ = self._qkv(x, positions)
        return self._logits(q, k)

    def _qkv(self, x: torch.Tensor, positions: torch.Tensor | None):
        S, T, _ = x.shape
        q, k, v = self.qkv(x).view(S, T, 3, self.n_heads, self.d_head).permute(2, 0, 3, 1, 4)
        if self.pos in ("rope", "hybrid"):
            pos = torch.arange(T, device=x.device) if positions is None else positions
            ang = rope_angles(pos, self.d_head, self.theta).to(x.device)
            q, k = apply_rope(q, ang), apply_rope(k, ang)
        return q, k, v

    def _logits(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        logits = q @ k.transpose(-1, -2) / math.sqrt(self.d_head)
        if self.pos == "alibi":
            logits = logits + alibi_bias(self.n_heads, q.shape[-2]).to(q.device)
        return logits

    def forward(
        self, x: torch.Tensor, positions: torch.Tensor | None = None, need_weights: bool = True
    ):
        S, T, _ = x.shape
        q, k, v = self._qkv(x, positions)
        if not need_weights:  # fused kernel for training; same maths
            bias = None
            if self.pos == "alibi":
                causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
                bias = alibi_bias(self.n_heads, T).to(x.device).masked_fill(~causal, float("-inf"))
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=bias is None)
            heads = heads * self.head_mask.view(1, -1, 1, 1)
            return self.out(heads.transpose(1, 2).reshape(S, T, -1)), None
        logits = self._logits(q, k)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        attn = logits.masked_fill(~causal, float("-inf")).softmax(-1)  # (S, H, T, T)
        heads = (attn @ v) * self.head_mask.view(1, -1, 1, 1)
        y = heads.transpose(1, 2).reshape(S, T, self.n_heads * self.d_head)
        return self.out(y), attn


class Block(nn.Module):
    """Pre-norm decoder block (attention, then gated MLP)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, pos: str, mlp: str) -> None:
        super().__init__()
        self.norm1 = RMSNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, pos)
        self.norm2 = RMSNorm(d_model)
        self.mlp = GatedMLP(d_model, d_ff, mlp)

    def forward(self, h: torch.Tensor, need_weights: bool = True):
        a, attn = self.attn(self.norm1(h), need_weights=need_weights)
        h = h + a
        return h + self.mlp(self.norm2(h)), attn


def check_tokens(tokens: torch.Tensor, d_in: int, max_positions: int) -> tuple[int, int]:
    """``(S, T)`` of a token batch ``(S, T, d_in)``; a clear ``ValueError`` for a wrong shape
    or a sequence longer than the position capacity."""
    if tokens.dim() != 3 or tokens.shape[-1] != d_in:
        raise ValueError(f"expected tokens of shape (S, T, {d_in}), got {tuple(tokens.shape)}")
    S, T, _ = tokens.shape
    if max_positions < T:
        raise ValueError(f"sequence length {T} exceeds the position capacity {max_positions}")
    return S, T


class ICLDecoder(nn.Module):
    """Small pre-norm causal decoder that reads the label of the last token.

    Parameters
    ----------
    d_in:
        Dimension of the input tokens (items and label embeddings).
    n_labels:
        Number of labels ``L`` of the readout.
    d_model, n_layers, n_heads, d_ff:
        Width (default 64 with ``embedding="linear"``; with ``"concat"`` the layout's width,
        :func:`concat_width`, or more: extra channels start at zero, e.g. to give RoPE the
        width of the absolute layout), depth, heads per layer, MLP width (default
        ``2 * d_model``).
    pos:
        ``ape`` (learned absolute, random shift), ``rope``, ``alibi``, ``hybrid`` (ape + rope)
        or ``none``.
    mlp:
        ``swiglu`` or ``paper`` (SiLU of the product, the authors' variant).
    max_positions:
        Position capacity; longer sequences are rejected.
    embedding:
        ``linear``: a learned map of the tokens to ``d_model`` (absolute positions a learned
        embedding added to it); ``concat``: the authors' layout, no learned input map, the
        residual stream is ``[one-hot position, token]`` for ``ape`` / ``hybrid`` (fixed
        one-hot channels, random offset in training) and the raw token otherwise.

    Examples
    --------
    >>> torch.manual_seed(0) is not None
    True
    >>> m = ICLDecoder(d_in=8, n_labels=4, d_model=16, pos="rope").eval()
    >>> logits, attns = m(torch.randn(3, 17, 8), return_attention=True)
    >>> logits.shape, len(attns), attns[0].shape
    (torch.Size([3, 4]), 2, torch.Size([3, 1, 17, 17]))
    """

    def __init__(
        self,
        d_in: int,
        n_labels: int,
        d_model: int | None = None,
        n_layers: int = 2,
        n_heads: int = 1,
        d_ff: int | None = None,
        pos: str = "rope",
        mlp: str = "swiglu",
        max_positions: int = 65,
        embedding: str = "linear",
    ) -> None:
        super().__init__()
        if pos not in POSITION_KINDS:
            raise ValueError(f"unknown position encoding {pos!r}; choose from {POSITION_KINDS}")
        if embedding not in EMBEDDINGS:
            raise ValueError(f"unknown embedding {embedding!r}; choose from {EMBEDDINGS}")
        if embedding == "concat":
            width = concat_width(d_in, pos, max_positions)
            if d_model is not None and d_model < width:
                raise ValueError(
                    f"embedding='concat' needs a width of at least {width} for d_in={d_in}, "
                    f"pos={pos}, max_positions={max_positions}; got d_model={d_model}"
                )
            d_model = width if d_model is None else d_model  # extra channels start at zero
        d_model = 64 if d_model is None else d_model
        if min(d_in, n_labels, d_model, n_layers, n_heads, max_positions) < 1:
            raise ValueError(
                "d_in, n_labels, d_model, n_layers, n_heads, max_positions must be >= 1"
            )
        self.d_in, self.n_labels, self.pos, self.max_positions = d_in, n_labels, pos, max_positions
        self.n_layers, self.n_heads, self.d_model = n_layers, n_heads, d_model
        self.embedding = embedding
        concat = embedding == "concat"
        self.embed = ConcatEmbedding(d_in, d_model) if concat else nn.Linear(d_in, d_model)
        self.abs_pos = (
            AbsolutePositions(max_positions, d_model, onehot=concat)
            if pos in ("ape", "hybrid")
            else None
        )
        d_ff = d_ff or 2 * d_model
        self.blocks = nn.ModuleList(
            Block(d_model, n_heads, d_ff, pos, mlp) for _ in range(n_layers)
        )
        self.norm = RMSNorm(d_model)
        self.readout = nn.Linear(d_model, n_labels)
        self.apply(_init_weights)

    def forward(self, tokens: torch.Tensor, return_attention: bool = False):
        """Label logits (S, L) of the last token; with attention patterns per layer."""
        h, attns = self.hidden_states(tokens, return_attention)
        logits = self.readout(self.norm(h[:, -1]))
        return (logits, attns) if return_attention else logits

    def hidden_states(self, tokens: torch.Tensor, return_attention: bool = True):
        """Residual stream after the last block at every position (S, T, d_model), and the
        attention patterns (S, H, T, T) per layer (``None`` entries when not requested)."""
        S, T = check_tokens(tokens, self.d_in, self.max_positions)
        h = self.embed(tokens)
        if self.abs_pos is not None:
            h = h + self.abs_pos(S, T)
        attns = []
        for block in self.blocks:
            h, attn = block(h, need_weights=return_attention)
            attns.append(attn)
        return h, attns

    def heads(self) -> list[tuple[int, int]]:
        """All ``(layer, head)`` pairs."""
        return [(layer, h) for layer in range(self.n_layers) for h in range(self.n_heads)]


def _init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
        if getattr(module, "bias", None) is not None:
            nn.init.zeros_(module.bias)


@contextlib.contextmanager
def knockout(model: ICLDecoder, heads: Iterable[tuple[int, int]]) -> Iterator[ICLDecoder]:
    """Zero the outputs of ``(layer, head)`` pairs inside the ``with`` block.

    Examples
    --------
    >>> m = ICLDecoder(4, 2, d_model=8, n_heads=2).eval()
    >>> with knockout(m, [(0, 1)]):
    ...     m.blocks[0].attn.head_mask.tolist()
    [1.0, 0.0]
    >>> m.blocks[0].attn.head_mask.tolist()
    [1.0, 1.0]
    """
    heads = list(heads)
    saved = [block.attn.head_mask.clone() for block in model.blocks]
    try:
        for layer, h in heads:
            if not (0 <= layer < model.n_layers and 0 <= h < model.n_heads):
                raise ValueError(
                    f"no head ({layer}, {h}) in a {model.n_layers}x{model.n_heads} model"
                )
            model.blocks[layer].attn.head_mask[h] = 0.0
        yield model
    finally:
        for block, mask in zip(model.blocks, saved, strict=True):
            block.attn.head_mask.copy_(mask)
