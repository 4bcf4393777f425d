"""Attention-weighted second moments of the q/k/v inputs (the authors' ``attn_weighted_qkv``).

Paper: Lifar, Savkin, Ordentlich, Polyanskiy, "WaterSIC", ICML 2026 (arXiv:2603.04956); the
paper-reproduction commands of the authors' code weight the calibration tokens of the
q/k/v projections by how much attention the full-precision model pays to them.

* :func:`attention_importance` -- per-token importance of one attention layer,
  ``p_j = sum_{h,i} P[h, i, j] / (H * (T - j))``: the attention probability key ``j`` receives,
  averaged over the heads and over the ``T - j`` causal queries that can see it;
* :func:`block_attention_importance` -- the same for a Llama-style decoder block, computed from
  the block's own ``self_attn`` (q/k projections, rotary embedding, causal softmax);
* the weighted moment is ``E_w[x x^T] = (1/N) sum_t p_t x_t x_t^T`` (rows scaled by
  ``sqrt(p_t)``, :class:`watersic.second_moment.SecondMoment` ``weights=``), mixed with the
  unweighted one as ``(1 - eps) E_w + eps E`` with :data:`ATTENTION_EPS` (:func:`mix`).
"""

from __future__ import annotations

import contextlib

import torch
from torch import nn

#: Weight of the unweighted moment in the mix, ``attn_weighted_qkv_eps`` of the authors' code.
ATTENTION_EPS = 0.01


def attention_importance(probs: torch.Tensor) -> torch.Tensor:
    """Per-key importance ``(B, T)`` from causal attention probabilities ``(B, H, T, T)``.

    ``p_j`` is the mean attention probability that key ``j`` receives from the queries that can
    see it (``i >= j``): a uniform causal attention gives ``p_j = (1/(T-j)) sum_{i>=j} 1/(i+1)``.

    >>> T = 4
    >>> P = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]
    >>> p = attention_importance(P[None, None])
    >>> bool(torch.allclose(p[0, -1], torch.tensor(0.25)))
    True
    """
    if probs.dim() != 4 or probs.shape[-1] != probs.shape[-2]:
        raise ValueError(f"expected attention probabilities (B, H, T, T), got {tuple(probs.shape)}")
    _, heads, T, _ = probs.shape
    count = torch.arange(T, 0, -1, dtype=probs.dtype, device=probs.device)  # T - j
    return probs.sum(dim=(1, 2)) / (heads * count)


def supports(block: nn.Module) -> bool:
    """Whether ``block`` is a Llama-style decoder block this module can weight."""
    attn = getattr(block, "self_attn", None)
    return (
        attn is not None
        and all(hasattr(attn, k) for k in ("q_proj", "k_proj", "head_dim", "scaling"))
        and hasattr(block, "input_layernorm")
    )


class _Stop(Exception):
    pass


def block_attention_importance(block: nn.Module, x: torch.Tensor, kw: dict) -> torch.Tensor:
    """Attention importance ``(B, T)`` of a Llama-style decoder ``block`` on its input ``x``.

    The attention's own inputs (the normed hidden states and the rotary ``position_embeddings``)
    are captured by a pre-hook; the probabilities are recomputed causally in float64 (no padding
    in calibration windows), so the result does not depend on the attention kernel.
    """
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb, repeat_kv

    if not supports(block):
        raise ValueError(f"{type(block).__name__} is not a Llama-style decoder block")
    attn = block.self_attn
    got: dict = {}

    def hook(module, args, kwargs):
        got["h"] = args[0] if args else kwargs["hidden_states"]
        got["pe"] = kwargs.get("position_embeddings")
        raise _Stop

    handle = attn.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        kw = dict(kw)
        extra = kw.pop("_extra_args", ())
        with torch.no_grad(), contextlib.suppress(_Stop):
            block(x, *extra, **kw)
    finally:
        handle.remove()
    h = got["h"]
    B, T, _ = h.shape
    with torch.no_grad():
        q = attn.q_proj(h).view(B, T, -1, attn.head_dim).transpose(1, 2)
        k = attn.k_proj(h).view(B, T, -1, attn.head_dim).transpose(1, 2)
        if got["pe"] is not None:
            cos, sin = got["pe"]
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k = repeat_kv(k, q.shape[1] // k.shape[1])
        scores = (q.double() @ k.double().transpose(2, 3)) * float(attn.scaling)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    return attention_importance(probs)


def mix(weighted: torch.Tensor, plain: torch.Tensor, eps: float = ATTENTION_EPS) -> torch.Tensor:
    """``(1 - eps) weighted + eps plain`` (the authors' fixed-eps mix of the two moments)."""
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"attention eps must be in [0, 1], got {eps}")
    return (1.0 - eps) * weighted + eps * plain
