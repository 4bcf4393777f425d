"""Rate accounting: plug-in entropies of integer codes and the side information.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956). WaterSIC's rate is the
*entropy* of its integer codes in bits per weight plus side information, not log2 of the
number of levels. Two accountings are reported:

* ``pooled_entropy`` -- all codes of the matrix in one histogram (the authors' accounting);
* ``per_column_entropy`` -- one histogram per input column (a cheaper code when columns get
  very different step sizes: a mixture has more entropy than its parts);
* ``coded`` (:func:`column_models`) -- the code length under the per-column parametric models
  (quantized Gaussian or Laplace, whichever is shorter) that :mod:`watersic.bitstream` really
  uses, with those models' parameters (:data:`COLUMN_MODEL_BITS` per column) counted as side
  information. Unlike the plug-in per-column entropy it has no small-sample bias and is what
  the file holds (the ANS coder adds a few words per matrix).

:mod:`watersic.bitstream` produces a real bitstream whose size, side information included, is
reported next to them.
"""

from __future__ import annotations

import math

import torch

#: Bits of one stored scale (fp16), Sec. "rate accounting" of the authors' code.
SCALE_BITS = 16
#: Bits of one column's entropy model in the per-column bitstream: family flag, fp16 mean and
#: fp16 scale.
COLUMN_MODEL_BITS = 1 + 2 * SCALE_BITS
#: Smallest Gaussian std / Laplace scale of a column model (in code units).
MIN_MODEL_SCALE = 0.05
#: Smallest probability a column model gives a symbol in the code-length estimate.
MIN_MODEL_PROB = 2.0**-24


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


def _fp16(v: torch.Tensor) -> torch.Tensor:
    return v.to(torch.float16).to(torch.float64)


def column_models(Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-column parametric entropy models of the codes ``Z`` ``(a, n)`` and their code lengths.

    Each column gets a quantized Gaussian (mean, population std) and a quantized Laplace (mean,
    mean absolute deviation), parameters rounded to fp16 as the bitstream stores them; the
    shorter one is kept. Returns ``family`` ``(n,)`` uint8 (0 Gaussian, 1 Laplace), ``mean`` and
    ``scale`` ``(n,)`` float64 (fp16 values) and ``bits`` ``(n,)``, each column's code length.

    >>> fam, mean, scale, bits = column_models(torch.tensor([[0, 3], [0, 3], [0, 3], [0, 3]]))
    >>> mean.tolist(), bool(bits.max() < 1e-3)
    ([0.0, 3.0], True)
    """
    z = Z.to(torch.float64)
    mean = _fp16(z.mean(dim=0))
    std = _fp16(z.std(dim=0, correction=0).clamp_min(MIN_MODEL_SCALE))
    lap = _fp16((z - mean).abs().mean(dim=0).clamp_min(MIN_MODEL_SCALE))

    def gauss_cdf(x):
        return 0.5 * torch.special.erfc(-x / math.sqrt(2.0))

    def laplace_cdf(x):
        return torch.where(
            x < 0, 0.5 * torch.exp(x.clamp_max(0)), 1 - 0.5 * torch.exp(-x.clamp_min(0))
        )

    def bits(cdf, scale):
        p = cdf((z + 0.5 - mean) / scale) - cdf((z - 0.5 - mean) / scale)
        return -torch.log2(p.clamp_min(MIN_MODEL_PROB)).sum(dim=0)

    b_gauss, b_lap = bits(gauss_cdf, std), bits(laplace_cdf, lap)
    family = (b_lap < b_gauss).to(torch.uint8)
    return family, mean, torch.where(family == 1, lap, std), torch.minimum(b_gauss, b_lap)


def coded_entropy(Z: torch.Tensor) -> float:
    """Bits per symbol of ``Z`` under its per-column parametric models (:func:`column_models`).

    The models' own parameters are side information (:data:`COLUMN_MODEL_BITS` per column).
    """
    if Z.numel() == 0:
        return 0.0
    return float(column_models(Z)[3].sum()) / Z.numel()


def entropy(Z: torch.Tensor, accounting: str) -> float:
    """Bits per symbol of ``Z`` under ``accounting`` (``pooled``, ``per_column`` or ``coded``)."""
    if accounting == "pooled":
        return pooled_entropy(Z)
    if accounting == "per_column":
        return per_column_entropy(Z)
    if accounting == "coded":
        return coded_entropy(Z)
    raise ValueError(
        f"unknown accounting mode {accounting!r}; choose 'pooled', 'per_column' or 'coded'"
    )


def side_information_bits(
    a: int, n: int, n_dead: int, n_row_scales: int | None = None, accounting: str = "pooled"
) -> int:
    """Side information of a WaterSIC matrix in bits.

    fp16 row scales ``t`` (``a``) and column scales ``alpha * g`` (live columns), two fp32
    normalisers, and one index per dead column (16 bits each up to 65 536 columns, else 32);
    under the ``coded`` accounting also each live column's entropy model.
    """
    rows = a if n_row_scales is None else n_row_scales
    index_bits = 16 if n <= 65536 else 32
    models = COLUMN_MODEL_BITS * (n - n_dead) if accounting == "coded" else 0
    return SCALE_BITS * (rows + (n - n_dead)) + 2 * 32 + index_bits * n_dead + models


def miller_madow_correction(Z: torch.Tensor) -> float:
    """Miller--Madow bias correction ``(K - 1) / (2 N ln 2)`` bits for a pooled histogram."""
    z = Z.reshape(-1)
    K = int(torch.unique(z).numel())
    return (K - 1) / (2 * z.numel() * math.log(2))
