"""Rate accounting: plug-in entropies of integer codes and the side information.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956). WaterSIC's rate is the
*entropy* of its integer codes in bits per weight plus side information, not log2 of the
number of levels. Two accountings are reported:

* ``pooled_entropy`` -- all codes of the matrix in one histogram (the authors' accounting);
* ``per_column_entropy`` -- one histogram per input column (a cheaper code when columns get
  very different step sizes: a mixture has more entropy than its parts).

Both are ideal code lengths; :mod:`watersic.bitstream` produces a real bitstream whose size,
side information included, is reported next to them.
"""

from __future__ import annotations

import math

import torch

#: Bits of one stored scale (fp16), Sec. "rate accounting" of the authors' code.
SCALE_BITS = 16


def _histogram_entropy_bits(counts: torch.Tensor) -> torch.Tensor:
    """Total plug-in code length ``-sum c log2(c / N)`` for each row of ``counts`` ``(m, K)``."""
    counts = counts.to(torch.float64)
    totals = counts.sum(dim=-1, keepdim=True)
    p = torch.where(counts > 0, counts / totals.clamp_min(1), torch.ones_like(counts))
    return -(counts * torch.log2(p)).sum(dim=-1)


def pooled_entropy(Z: torch.Tensor) -> float:
    """Plug-in entropy in bits per symbol of all codes of ``Z`` pooled into one histogram.

    >>> pooled_entropy(torch.tensor([[0, 1], [2, 3]]))
    2.0
    """
    z = Z.reshape(-1).to(torch.int64)
    if z.numel() == 0:
        return 0.0
    counts = torch.bincount(z - z.min())
    return float(_histogram_entropy_bits(counts[None])[0]) / z.numel()


def per_column_entropy(Z: torch.Tensor) -> float:
    """Mean over columns of the plug-in entropy of each column's codes, bits per symbol.

    >>> per_column_entropy(torch.tensor([[0, 5], [1, 5]]))
    0.5
    """
    if Z.numel() == 0:
        return 0.0
    z = Z.to(torch.int64)
    a, n = z.shape
    z = z - z.min()
    K = int(z.max()) + 1
    idx = (torch.arange(n)[None, :] * K + z).reshape(-1)
    counts = torch.bincount(idx, minlength=n * K).reshape(n, K)
    return float(_histogram_entropy_bits(counts).sum()) / (a * n)


def entropy(Z: torch.Tensor, accounting: str) -> float:
    """Entropy of ``Z`` in bits per symbol under ``accounting`` (``pooled``/``per_column``)."""
    if accounting == "pooled":
        return pooled_entropy(Z)
    if accounting == "per_column":
        return per_column_entropy(Z)
    raise ValueError(f"unknown accounting mode {accounting!r}; choose 'pooled' or 'per_column'")


def side_information_bits(a: int, n: int, n_dead: int, n_row_scales: int | None = None) -> int:
    """Side information of a WaterSIC matrix in bits.

    fp16 row scales ``t`` (``a``) and column scales ``alpha * g`` (live columns), two fp32
    normalisers, and one index per dead column (16 bits each up to 65 536 columns, else 32).
    """
    rows = a if n_row_scales is None else n_row_scales
    index_bits = 16 if n <= 65536 else 32
    return SCALE_BITS * (rows + (n - n_dead)) + 2 * 32 + index_bits * n_dead


def miller_madow_correction(Z: torch.Tensor) -> float:
    """Miller--Madow bias correction ``(K - 1) / (2 N ln 2)`` bits for a pooled histogram."""
    z = Z.reshape(-1)
    K = int(torch.unique(z).numel())
    return (K - 1) / (2 * z.numel() * math.log(2))
