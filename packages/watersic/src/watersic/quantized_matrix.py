"""The quantized representation of one linear layer: What = diag(t) Z diag(s), dead columns zero.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from watersic import bitstream
from watersic.entropy import side_information_bits


@dataclass
class QuantizedMatrix:
    """Integer codes plus scales of a quantized weight matrix.

    ``What[:, live] = row_scale[:, None] * codes * col_scale[None, :]`` and
    ``What[:, dead] = 0``. Scales are stored exactly as the bitstream holds them (fp32
    normaliser x fp16), so ``dequantize()`` equals ``from_bytes(to_bytes()).dequantize()``.

    Attributes
    ----------
    codes: ``(a, n_live)`` int64 integer codes.
    row_scale: ``(a,)`` float64 row rescalers ``t``.
    col_scale: ``(n_live,)`` float64 column scales ``alpha * g``.
    dead: ``(n_dead,)`` int64 indices of dead input columns.
    shape: ``(a, n)`` of the original matrix.
    accounting: the entropy accounting the rate was targeted under.
    rate: achieved bits per weight under ``accounting`` (side information included).
    rate_pooled, rate_per_column, rate_coded: the same under each accounting.
    side_bits: side information in bits.
    distortion: E||W x - What xhat||^2 / (a n).
    relative_distortion: distortion / (E||W x||^2 / (a n)).
    method: name of the quantizer.
    info: extra diagnostics (nominal rate, step, rescaler iterations, ...).
    """

    codes: torch.Tensor
    row_scale: torch.Tensor
    col_scale: torch.Tensor
    dead: torch.Tensor
    shape: tuple[int, int]
    accounting: str = "pooled"
    rate: float = float("nan")
    rate_pooled: float = float("nan")
    rate_per_column: float = float("nan")
    rate_coded: float = float("nan")
    side_bits: int = 0
    distortion: float = float("nan")
    relative_distortion: float = float("nan")
    method: str = "watersic"
    info: dict = field(default_factory=dict)

    @property
    def live(self) -> torch.Tensor:
        """Boolean mask ``(n,)`` of the live input columns."""
        mask = torch.ones(self.shape[1], dtype=torch.bool)
        mask[self.dead] = False
        return mask

    def dequantize(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The reconstructed weight matrix ``(a, n)``."""
        a, n = self.shape
        W = torch.zeros(a, n, dtype=torch.float64)
        live = self.row_scale[:, None] * self.codes.to(torch.float64) * self.col_scale[None, :]
        W[:, self.live] = live
        return W.to(dtype)

    def to_bytes(self, mode: str | None = None) -> bytes:
        """Entropy-coded bitstream (``pooled`` or ``per_column`` model; default: the one that
        realises ``accounting``)."""
        return bitstream.encode(
            self.codes.numpy(),
            self.row_scale.numpy(),
            self.col_scale.numpy(),
            self.dead.numpy(),
            self.shape,
            mode=mode or bitstream.ACCOUNTING_MODE[self.accounting],
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> QuantizedMatrix:
        """Decode a bitstream written by :meth:`to_bytes` (codes and scales bit-exact)."""
        d = bitstream.decode(data)
        a, n = d["shape"]
        return cls(
            codes=torch.from_numpy(d["codes"]),
            row_scale=torch.from_numpy(d["row_scale"]),
            col_scale=torch.from_numpy(d["col_scale"]),
            dead=torch.from_numpy(d["dead"]),
            shape=(a, n),
            accounting=d["mode"],
            side_bits=side_information_bits(a, n, len(d["dead"])),
        )

    def coded_rate(self, mode: str | None = None) -> float:
        """Bits per weight of the real bitstream (everything in it: header, tables, scales)."""
        a, n = self.shape
        return 8 * len(self.to_bytes(mode)) / (a * n)

    def summary(self) -> dict:
        """JSON-serialisable per-layer report."""
        return {
            "method": self.method,
            "shape": list(self.shape),
            "accounting": self.accounting,
            "rate": self.rate,
            "rate_pooled": self.rate_pooled,
            "rate_per_column": self.rate_per_column,
            "rate_coded": self.rate_coded,
            "side_bits": self.side_bits,
            "dead_columns": int(self.dead.numel()),
            "distortion": self.distortion,
            "relative_distortion": self.relative_distortion,
            **{k: v for k, v in self.info.items() if isinstance(v, int | float | str | bool)},
        }


def round_scales(v: torch.Tensor) -> torch.Tensor:
    """Round scales to their stored precision (fp32 normaliser x fp16)."""
    return torch.from_numpy(bitstream.fp16_round(v.detach().cpu().numpy().astype(np.float64)))
