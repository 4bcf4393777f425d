"""Round-to-nearest (RTN) and the min-max integer grid shared with GPTQ.

Baseline of Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956). Asymmetric min-max grid
per row (or per group of ``group_size`` input columns): scale = (max - min) / (2^b - 1),
zero = round(-min / scale), q = clamp(round(w / scale) + zero, 0, 2^b - 1). The rate counts the
fp16 scale and the b-bit zero point of every group: b + (16 + b) / group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from watersic.layer_quantizer import output_error
from watersic.validation import check_second_moment, check_weight


def minmax_params(w: torch.Tensor, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row scale and zero point ``(a,)`` of the asymmetric b-bit grid covering ``w`` (a, k)."""
    maxq = 2**bits - 1
    xmin = w.min(dim=1).values.clamp(max=0)
    xmax = w.max(dim=1).values.clamp(min=0)
    same = xmax == xmin
    xmin = torch.where(same, xmin - 1, xmin)
    xmax = torch.where(same, xmax + 1, xmax)
    scale = (xmax - xmin) / maxq
    zero = torch.round(-xmin / scale)
    return scale, zero


def minmax_quantize(
    w: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, bits: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Codes and dequantized values of ``w`` ``(a,)`` or ``(a, k)`` on the given grid."""
    maxq = 2**bits - 1
    s = scale if w.dim() == 1 else scale[:, None]
    z = zero if w.dim() == 1 else zero[:, None]
    q = torch.clamp(torch.round(w / s) + z, 0, maxq)
    return q, s * (q - z)


def check_bits(bits: int, group_size: int | None, n: int) -> int:
    """Validate a fixed-rate configuration; returns the effective group size."""
    if int(bits) != bits or not 1 <= bits <= 16:
        raise ValueError(f"bits must be an integer in [1, 16], got {bits!r}")
    gs = n if group_size in (None, -1, 0) else int(group_size)
    if gs <= 0 or n % gs != 0:
        raise ValueError(f"group_size={group_size} must divide the {n} input columns")
    return gs


@dataclass
class FixedRateMatrix:
    """Result of a fixed-rate quantizer (RTN, GPTQ): dequantized weights, codes and grid.

    ``rate`` is bits per weight including the fp16 scales and b-bit zero points.
    """

    weight: torch.Tensor
    codes: torch.Tensor
    scales: torch.Tensor
    zeros: torch.Tensor
    bits: int
    group_size: int
    rate: float
    distortion: float = float("nan")
    relative_distortion: float = float("nan")
    method: str = "rtn"
    info: dict = field(default_factory=dict)

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The reconstructed weight matrix ``(a, n)``."""
        return self.weight.to(dtype)

    def summary(self) -> dict:
        """JSON-serialisable per-layer report."""
        return {
            "method": self.method,
            "shape": list(self.weight.shape),
            "bits": self.bits,
            "group_size": self.group_size,
            "rate": self.rate,
            "distortion": self.distortion,
            "relative_distortion": self.relative_distortion,
        }


def fixed_rate(bits: int, group_size: int) -> float:
    """Bits per weight of a b-bit grid with an fp16 scale and b-bit zero per group."""
    return bits + (16 + bits) / group_size


def rtn_quantize(
    W: torch.Tensor,
    sigma: torch.Tensor | None = None,
    *,
    bits: int = 4,
    group_size: int | None = None,
) -> FixedRateMatrix:
    """Round-to-nearest on the per-row (per-group) min-max grid.

    Examples
    --------
    >>> W = torch.tensor([[0.0, 1.0, 2.0, 3.0]])
    >>> rtn_quantize(W, bits=2).weight.tolist()
    [[0.0, 1.0, 2.0, 3.0]]
    """
    W = check_weight(W)
    a, n = W.shape
    gs = check_bits(bits, group_size, n)
    What = torch.empty_like(W)
    codes = torch.empty_like(W)
    scales, zeros = [], []
    for g0 in range(0, n, gs):
        blk = W[:, g0 : g0 + gs]
        s, z = minmax_params(blk, bits)
        q, deq = minmax_quantize(blk, s, z, bits)
        codes[:, g0 : g0 + gs], What[:, g0 : g0 + gs] = q, deq
        scales.append(s)
        zeros.append(z)
    out = FixedRateMatrix(
        weight=What,
        codes=codes.to(torch.int64),
        scales=torch.stack(scales, 1),
        zeros=torch.stack(zeros, 1),
        bits=bits,
        group_size=gs,
        rate=fixed_rate(bits, gs),
        method="rtn",
    )
    if sigma is not None:
        sigma = check_second_moment(sigma, n)
        D = output_error(W, What, sigma)
        out.distortion = D / (a * n)
        ref = float(((W @ sigma) * W).sum())
        out.relative_distortion = D / ref if ref > 0 else float("nan")
    return out
