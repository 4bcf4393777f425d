"""Rate accounting: plug-in entropies of integer codes and the side information.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956). WaterSIC's rate is the
*entropy* of its integer codes in bits per weight plus side information, not log2 of the
number of levels. Two accountings are reported:

* ``pooled_entropy`` -- all codes of the matrix in one histogram (the authors' accounting);
* ``per_column_entropy`` -- one histogram per input column (a cheaper code when columns get
  very different step sizes: a mixture has more entropy than its parts);
* ``coded`` (:func:`column_models`, :func:`coded_entropy`) -- the code length under the
  per-column parametric models (quantized Gaussian or Laplace, whichever is shorter) that
  :mod:`watersic.bitstream` really uses, with everything a column needs counted: its model
  (:data:`COLUMN_MODEL_BITS`: a zero flag, the family, an 8-bit log-scale and an 8-bit mean
  index) and its fp16 scale; a column whose codes are all zero costs only its zero flag
  (:data:`ZERO_COLUMN_BITS`; reverse waterfilling gives many at low rates). Unlike the plug-in
  per-column entropy it has no small-sample bias and is what the file holds (the ANS coder adds
  a few words per matrix).

:mod:`watersic.bitstream` produces a real bitstream whose size, side information included, is
reported next to them.
"""

from __future__ import annotations

import math

import torch

#: Bits of one stored scale (fp16), Sec. "rate accounting" of the authors' code.
SCALE_BITS = 16
#: Smallest Gaussian std / Laplace scale of a column model (in code units).
MIN_MODEL_SCALE = 0.05
#: A model's scale is stored as an 8-bit index on a log2 grid of this many steps per octave
#: (from MIN_MODEL_SCALE up to 0.05 * 2^(255/16) ~ 3100); its mean as an int8 multiple of
#: scale / MEAN_STEPS (|mean| up to ~16 scales). The mismatch costs < 0.002 bits per code.
SCALE_STEPS_PER_OCTAVE = 16
MEAN_STEPS = 8
#: Bits of one non-zero column's entropy model in the per-column bitstream: zero flag, family
#: flag, scale index and mean index.
COLUMN_MODEL_BITS = 1 + 1 + 8 + 8
#: Bits of an all-zero column in the per-column bitstream (its zero flag; no model, no scale).
ZERO_COLUMN_BITS = 1
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


def model_indices(mean: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Stored indices of column models: uint8 log-scale index and int8 mean index.

    A mean beyond the int8 range (more than 127 / MEAN_STEPS scales from zero, e.g. a column
    whose codes are all 3) widens the stored scale until it fits, so every column keeps a
    bounded code length.

    >>> si, mi = model_indices(torch.tensor([3.0]), torch.tensor([0.0]))
    >>> abs(float(model_mean(si, mi)[0]) - 3.0) < 0.1 * float(model_scale(si)[0])
    True
    """
    need = mean.abs() * MEAN_STEPS / 127
    s = torch.maximum(scale.clamp_min(MIN_MODEL_SCALE), need)
    idx = torch.ceil(SCALE_STEPS_PER_OCTAVE * torch.log2(s / MIN_MODEL_SCALE) - 1e-9)
    idx = torch.where(
        scale >= need, torch.round(SCALE_STEPS_PER_OCTAVE * torch.log2(s / MIN_MODEL_SCALE)), idx
    )
    scale_idx = idx.clamp(0, 255).to(torch.int64)
    step = model_scale(scale_idx) / MEAN_STEPS
    mean_idx = torch.round(mean / step).clamp(-127, 127).to(torch.int64)
    return scale_idx, mean_idx


def model_scale(scale_idx: torch.Tensor) -> torch.Tensor:
    """The scale a stored index stands for (float64, bit-identical in encoder and decoder)."""
    return MIN_MODEL_SCALE * torch.exp2(scale_idx.to(torch.float64) / SCALE_STEPS_PER_OCTAVE)


def model_mean(scale_idx: torch.Tensor, mean_idx: torch.Tensor) -> torch.Tensor:
    """The mean a stored (scale, mean) index pair stands for."""
    return mean_idx.to(torch.float64) * (model_scale(scale_idx) / MEAN_STEPS)


def column_models(Z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-column parametric entropy models of the codes ``Z`` ``(a, n)`` and their code lengths.

    Each column gets a quantized Gaussian (mean, population std) and a quantized Laplace (mean,
    mean absolute deviation), parameters rounded to the stored indices
    (:func:`model_indices`); the shorter one is kept. Returns ``family`` ``(n,)`` uint8 (0
    Gaussian, 1 Laplace), ``mean`` and ``scale`` ``(n,)`` float64 (the stored values) and
    ``bits`` ``(n,)``, each column's code length (0 for an all-zero column, which is not coded).

    >>> fam, mean, scale, bits = column_models(torch.tensor([[0, 3], [0, 3], [0, 3], [0, 3]]))
    >>> [round(m, 1) for m in mean.tolist()], bool(bits.max() < 0.1)  # 4 codes, < 0.1 bit
    ([0.0, 3.0], True)
    """
    z = Z.to(torch.float64)
    mean = z.mean(dim=0)

    def stored(scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        si, mi = model_indices(mean, scale)
        return model_mean(si, mi), model_scale(si)

    mean_g, std = stored(z.std(dim=0, correction=0))
    mean_l, lap = stored((z - mean).abs().mean(dim=0))

    def gauss_cdf(x):
        return 0.5 * torch.special.erfc(-x / math.sqrt(2.0))

    def laplace_cdf(x):
        return torch.where(
            x < 0, 0.5 * torch.exp(x.clamp_max(0)), 1 - 0.5 * torch.exp(-x.clamp_min(0))
        )

    def bits(cdf, m, scale):
        p = cdf((z + 0.5 - m) / scale) - cdf((z - 0.5 - m) / scale)
        return -torch.log2(p.clamp_min(MIN_MODEL_PROB)).sum(dim=0)

    b_gauss, b_lap = bits(gauss_cdf, mean_g, std), bits(laplace_cdf, mean_l, lap)
    family = (b_lap < b_gauss).to(torch.uint8)
    zero = (Z == 0).all(dim=0)
    code = torch.where(zero, torch.zeros_like(b_gauss), torch.minimum(b_gauss, b_lap))
    return (family, torch.where(family == 1, mean_l, mean_g), torch.where(family == 1, lap, std),
            code)  # fmt: skip


def column_side_bits(Z: torch.Tensor) -> float:
    """Per-column side information of the ``coded`` accounting: a model and an fp16 scale per
    column with a non-zero code, the zero flag alone for an all-zero column."""
    if Z.numel() == 0:
        return 0.0
    zero = int((Z == 0).all(dim=0).sum())
    return float(zero * ZERO_COLUMN_BITS + (Z.shape[1] - zero) * (COLUMN_MODEL_BITS + SCALE_BITS))


def coded_entropy(Z: torch.Tensor) -> float:
    """Bits per symbol of ``Z`` under its per-column models (:func:`column_models`), each
    column's model and scale included (:func:`column_side_bits`)."""
    if Z.numel() == 0:
        return 0.0
    return (float(column_models(Z)[3].sum()) + column_side_bits(Z)) / Z.numel()


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
    normalisers, and one index per dead column (16 bits each up to 65 536 columns, else 32).
    Under the ``coded`` accounting the column scales are left out here: they are counted per
    column with the column models (:func:`column_side_bits`, inside :func:`coded_entropy`).
    """
    rows = a if n_row_scales is None else n_row_scales
    index_bits = 16 if n <= 65536 else 32
    cols = 0 if accounting == "coded" else n - n_dead
    return SCALE_BITS * (rows + cols) + 2 * 32 + index_bits * n_dead


def miller_madow_correction(Z: torch.Tensor) -> float:
    """Miller--Madow bias correction ``(K - 1) / (2 N ln 2)`` bits for a pooled histogram."""
    z = Z.reshape(-1)
    K = int(torch.unique(z).numel())
    return (K - 1) / (2 * z.numel() * math.log(2))
