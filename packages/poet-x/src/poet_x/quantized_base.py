"""POET-XQ: the frozen base W0 stored as uint8 (group-wise asymmetric min-max quantisation).

Paper: "POET-X: Memory-efficient LLM Training by Scaling Orthogonal Transformation",
Qiu et al., ICML 2026 (arXiv 2603.05500), POET-XQ (8-bit base weight, group size 256 in the
authors' code). q = round((w - zero) / scale) in [0, 255], per contiguous group of
``group_size`` entries of the flattened weight; dequantised w_hat = q * scale + zero, so
|w - w_hat| <= scale / 2. At each merge the base is dequantised, merged and re-quantised
(spectrum kept approximately). The layer dequantises inside its recompute
(:class:`~poet_x.recompute.InputCentricRecompute`), so only the codes are saved for backward.
"""

from __future__ import annotations

import torch


def quantize_int8(w: torch.Tensor, group_size: int = 256):
    """Return ``(q uint8 of w.shape, scale (G,), zero (G,))`` for groups of ``group_size``.

    >>> w = torch.linspace(-1, 1, 8).reshape(2, 4)
    >>> q, s, z = quantize_int8(w, 4)
    >>> bool((dequantize_int8(q, s, z, 4) - w).abs().max() <= s.max() / 2 + 1e-7)
    True
    """
    flat = w.detach().reshape(-1).float()
    pad = (-flat.numel()) % group_size
    if pad:
        flat = torch.cat([flat, flat[-1:].expand(pad)])
    groups = flat.reshape(-1, group_size)
    lo, hi = groups.min(1).values, groups.max(1).values
    scale = ((hi - lo) / 255.0).clamp_min(1e-12)
    q = torch.round((groups - lo[:, None]) / scale[:, None]).clamp(0, 255).to(torch.uint8)
    q = q.reshape(-1)[: w.numel()].reshape(w.shape)
    return q, scale, lo


def dequantize_int8(
    q: torch.Tensor,
    scale: torch.Tensor,
    zero: torch.Tensor,
    group_size: int = 256,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Inverse of :func:`quantize_int8` (up to rounding), computed in ``dtype``."""
    n = q.numel()
    pad = (-n) % group_size
    flat = q.reshape(-1).to(dtype)
    if pad:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    out = flat.reshape(-1, group_size) * scale.to(dtype)[:, None] + zero.to(dtype)[:, None]
    return out.reshape(-1)[:n].reshape(q.shape)
