"""External CPU quantizers from PyPI used as anchors (optional ``bench`` extra).

Anchors of the comparison in Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956), run in
the same process as WaterSIC / GPTQ / RTN:

* :func:`hqq_quantize` -- HQQ (Badri & Shaji 2023, PyPI ``hqq``), data-free half-quadratic
  optimisation of the zero point of an asymmetric b-bit grid per group of input columns,
  called through ``hqq.core.quantize.Quantizer.quantize`` (PyTorch backend, CPU);
* :func:`quanto_quantize` -- optimum-quanto (PyPI ``optimum-quanto``) ``qint2``/``qint4``
  weight-only quantization of an ``nn.Linear`` (group-wise scale and shift, ``freeze``d).

Both return a :class:`~watersic.rtn.FixedRateMatrix` whose ``rate`` counts what the
format really stores per weight: the b-bit code plus an fp16 scale and an fp16 zero
(HQQ) or shift (quanto) per group, i.e. ``b + 32 / group_size``.

The libraries are imported lazily; :func:`available` tells which are installed,
:func:`supports` whether a benchmark row can run, and the callers skip an anchor that is
absent (:func:`missing` names them for the report).
"""

from __future__ import annotations

import importlib.util
import os
import warnings

import torch

from watersic.layer_quantizer import output_error
from watersic.rtn import FixedRateMatrix, check_bits
from watersic.validation import check_second_moment, check_weight

#: Bits a group stores besides the codes: fp16 scale + fp16 zero/shift.
GROUP_SIDE_BITS = 32
HQQ_BITS = (1, 2, 3, 4, 8)
QUANTO_BITS = (2, 4, 8)
ANCHORS = ("hqq", "quanto")


def available(name: str) -> bool:
    """Whether the anchor library ``hqq`` or ``quanto`` can be imported."""
    module = {"hqq": "hqq", "quanto": "optimum.quanto"}.get(name)
    if module is None:
        raise ValueError(f"unknown anchor {name!r}; choose one of {ANCHORS}")
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def supports(method: str, bits: float) -> bool:
    """Whether ``method`` can run at ``bits``: ours always; an anchor when installed and its
    grid has that many bits (HQQ: 1, 2, 3, 4, 8; quanto: 2, 4, 8).

    >>> supports("watersic", 1.5)
    True
    """
    if method == "hqq":
        return available("hqq") and round(bits) in HQQ_BITS
    if method == "quanto":
        return available("quanto") and round(bits) in QUANTO_BITS
    return True


def missing() -> list[str]:
    """The anchors that are not installed (each is skipped with a note in the benchmarks)."""
    return [a for a in ANCHORS if not available(a)]


def _finish(
    W: torch.Tensor,
    What: torch.Tensor,
    codes: torch.Tensor,
    scales: torch.Tensor,
    zeros: torch.Tensor,
    bits: int,
    gs: int,
    sigma: torch.Tensor | None,
    method: str,
) -> FixedRateMatrix:
    a, n = W.shape
    out = FixedRateMatrix(
        weight=What,
        codes=codes.to(torch.int64),
        scales=scales,
        zeros=zeros,
        bits=int(bits),
        group_size=gs,
        rate=bits + GROUP_SIDE_BITS / gs,
        method=method,
        info={"float_zeros": True},
    )
    if sigma is not None:
        sigma = check_second_moment(sigma, n)
        D = output_error(W, What, sigma)
        ref = float(((W @ sigma) * W).sum())
        out.distortion = D / (a * n)
        out.relative_distortion = D / ref if ref > 0 else float("nan")
    return out


def hqq_quantize(
    W: torch.Tensor,
    sigma: torch.Tensor | None = None,
    *,
    bits: int = 4,
    group_size: int | None = 64,
) -> FixedRateMatrix:
    """HQQ on groups of ``group_size`` input columns (None: whole rows), data-free.

    Examples
    --------
    >>> W = torch.randn(8, 64, generator=torch.Generator().manual_seed(0))
    >>> q = hqq_quantize(W, bits=4, group_size=32)  # doctest: +SKIP
    >>> q.rate  # doctest: +SKIP
    5.0
    """
    if not available("hqq"):
        raise ImportError(
            "hqq is not installed; install the bench extra: pip install watersic[bench]"
        )
    from hqq.core.quantize import Quantizer

    W = check_weight(W)
    a, n = W.shape
    gs = check_bits(bits, group_size, n)
    if bits not in HQQ_BITS:
        raise ValueError(f"HQQ supports bits {HQQ_BITS}, got {bits}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Wq, meta = Quantizer.quantize(
            W.to(torch.float32),
            nbits=int(bits),
            group_size=gs,
            optimize=True,
            axis=1,
            bitpack=False,
            compute_dtype=torch.float32,
            device="cpu",
        )
    scale = meta["scale"].to(torch.float64).reshape(a, n // gs)  # (a, groups)
    zero = meta["zero"].to(torch.float64).reshape(a, n // gs)
    codes = Wq.to(torch.float64).reshape(a, n)
    groups = torch.arange(n) // gs
    What = scale[:, groups] * (codes - zero[:, groups])
    return _finish(W, What, codes, scale, zero, bits, gs, sigma, "hqq")


def quanto_quantize(
    W: torch.Tensor, sigma: torch.Tensor | None = None, *, bits: int = 4
) -> FixedRateMatrix:
    """optimum-quanto ``qint{bits}`` weight-only quantization of ``nn.Linear(W)``.

    quanto picks the group size itself (128 input columns, reduced by 32 until it divides
    ``n``; per output channel otherwise); the scale and shift are stored per group.
    """
    if not available("quanto"):
        raise ImportError(
            "optimum-quanto is not installed; install the bench extra: pip install watersic[bench]"
        )
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    from optimum.quanto import freeze, qint2, qint4, qint8, quantize

    W = check_weight(W)
    a, n = W.shape
    qtype = {2: qint2, 4: qint4, 8: qint8}.get(int(bits))
    if qtype is None:
        raise ValueError(f"optimum-quanto supports bits {QUANTO_BITS}, got {bits}")
    lin = torch.nn.Sequential(torch.nn.Linear(n, a, bias=False))
    with torch.no_grad():
        lin[0].weight.copy_(W.to(torch.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize(lin, weights=qtype)
        freeze(lin)
    qw = lin[0].weight
    gs = lin[0].weight_group_size or n
    What = qw.dequantize().to(torch.float64)
    scale = getattr(qw, "_scale", torch.ones(1)).detach().to(torch.float64).reshape(a, -1)
    shift = getattr(qw, "_shift", torch.zeros(1)).detach().to(torch.float64).reshape(a, -1)
    # quanto keeps its packed codes private; the artifact stores its dequantized weights
    codes = torch.zeros(0, dtype=torch.int64)
    return _finish(W, What, codes, scale, shift, bits, gs, sigma, "quanto")
