"""GPTQ (fixed-rate, groups, act-order) and entropy-coded "Huffman-GPTQ" baselines.

References: Frantar, Ashkboos, Hoefler, Alistarh, "GPTQ: Accurate post-training quantization
for generative pre-trained transformers", ICLR 2023 (arXiv:2210.17323); compared against in
Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956), where entropy-coded GPTQ is shown to
have a gap 0.255 + 1/2 log2(AM/GM) of the squared Cholesky diagonal (see :mod:`watersic.theory`).

Algorithm (GPTQ, Alg. 1): H = Sigma + delta I (delta = 0.01 mean diag, the standard damping),
dead columns (H_jj = 0) zeroed, optional act-order permutation by decreasing H_jj, upper
Cholesky U of H^{-1}; columns are quantized left to right and each error
(w_j - q_j) / U_jj is fed forward to the remaining columns through row j of U, lazily in blocks
of 128. GPTQ is the same successive cancellation as WaterSIC (GPTQ = LDLQ) but with one step per
row for all columns.

``huffman_gptq`` replaces the fixed min-max grid with an unbounded uniform grid of step
s * rms(row), entropy-codes the integers and searches s for a target entropy.
``gptq_reference`` is the plain Optimal-Brain-Quantizer loop (explicit inverse-Hessian
downdates) used by the tests to check the Cholesky implementation.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from watersic.entropy import per_column_entropy, pooled_entropy
from watersic.layer_quantizer import output_error
from watersic.quantized_matrix import QuantizedMatrix, round_scales
from watersic.rate_control import secant_search
from watersic.rtn import FixedRateMatrix, check_bits, fixed_rate, minmax_params, minmax_quantize
from watersic.validation import check_rate, check_second_moment, check_weight

#: Standard GPTQ damping (percdamp = 0.01 of the mean diagonal), GPTQ reference code.
GPTQ_DAMPING = 0.01


def prepare_hessian(
    W: torch.Tensor, sigma: torch.Tensor, damping: float, act_order: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Dead-column handling, act-order permutation and the upper Cholesky factor of H^{-1}.

    Returns the permuted ``W`` ``(a, n)``, ``U`` ``(n, n)`` with H^{-1} = U^T U, the
    permutation and the dead mask (original order).
    """
    H = sigma.clone()
    n = H.shape[0]
    dead = torch.diagonal(H) <= 0
    W = W.clone()
    W[:, dead] = 0
    H[dead, dead] = 1.0
    perm = (
        torch.argsort(torch.diagonal(H), descending=True, stable=True)
        if act_order
        else torch.arange(n)
    )
    W, H = W[:, perm], H[perm][:, perm]
    H = H + damping * torch.diagonal(H).mean() * torch.eye(n, dtype=H.dtype)
    Lh, info = torch.linalg.cholesky_ex(H)
    if int(info) != 0:
        raise ValueError(
            f"Cholesky of the damped Hessian failed (damping={damping:g}); increase damping"
        )
    U = torch.linalg.cholesky(torch.cholesky_inverse(Lh), upper=True)
    return W, U, perm, dead


ColumnQuantizer = Callable[[int, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


def gptq_core(
    W: torch.Tensor, U: torch.Tensor, quantize_column: ColumnQuantizer, block_size: int = 128
) -> tuple[torch.Tensor, torch.Tensor]:
    """GPTQ's lazy-batch error feedback; returns codes and dequantized weights ``(a, n)``.

    ``quantize_column(j, w_j, Wt)`` returns (codes, values) of column ``j`` given the current
    (error-updated) column ``w_j`` ``(a,)`` and the transposed working matrix ``Wt`` ``(n, a)``.
    """
    a, n = W.shape
    Wt = W.T.contiguous()  # (n, a): one column per contiguous row
    Qt = torch.zeros_like(Wt)
    Ct = torch.zeros_like(Wt)
    for i1 in range(0, n, block_size):
        i2 = min(i1 + block_size, n)
        Err = torch.zeros(i2 - i1, a, dtype=W.dtype)
        for i in range(i1, i2):
            w = Wt[i].clone()
            c, q = quantize_column(i, w, Wt)
            Ct[i], Qt[i] = c, q
            err = (w - q) / U[i, i]
            if i + 1 < i2:
                Wt[i + 1 : i2] -= torch.outer(U[i, i + 1 : i2], err)
            Err[i - i1] = err
        if i2 < n:
            Wt[i2:] -= U[i1:i2, i2:].T @ Err
    return Ct.T, Qt.T


def _unpermute(M: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(M)
    out[:, perm] = M
    return out


def gptq_quantize(
    W: torch.Tensor,
    sigma: torch.Tensor,
    *,
    bits: int = 4,
    group_size: int | None = None,
    act_order: bool = False,
    damping: float = GPTQ_DAMPING,
    block_size: int = 128,
) -> FixedRateMatrix:
    """Fixed-rate GPTQ on the asymmetric min-max grid (per row or per group).

    Parameters
    ----------
    W, sigma:
        Weights ``(a, n)`` and input second moment ``(n, n)``.
    bits:
        Grid bits b (2^b levels).
    group_size:
        Input columns per scale/zero group (None or -1: one group per row).
    act_order:
        Process columns by decreasing H_jj.
    damping:
        Fraction of the mean diagonal added to H (0.01 standard).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> W = torch.randn(16, 8, generator=g, dtype=torch.float64)
    >>> X = torch.randn(256, 8, generator=g, dtype=torch.float64)
    >>> q = gptq_quantize(W, X.T @ X / 256, bits=3)
    >>> q.rate, q.codes.max().item() <= 7
    (5.375, True)
    """
    W = check_weight(W)
    a, n = W.shape
    sigma = check_second_moment(sigma, n)
    gs = check_bits(bits, group_size, n)
    Wp, U, perm, dead = prepare_hessian(W, sigma, damping, act_order)
    n_groups = n // gs
    scales = torch.zeros(a, n_groups, dtype=torch.float64)
    zeros = torch.zeros(a, n_groups, dtype=torch.float64)
    state: dict[str, torch.Tensor] = {}

    def quantize_column(j: int, w: torch.Tensor, Wt: torch.Tensor):
        if j % gs == 0:
            s, z = minmax_params(Wt[j : j + gs].T, bits)
            state["s"], state["z"] = s, z
            scales[:, j // gs], zeros[:, j // gs] = s, z
        return minmax_quantize(w, state["s"], state["z"], bits)

    codes, What = gptq_core(Wp, U, quantize_column, block_size)
    codes, What = _unpermute(codes, perm), _unpermute(What, perm)
    D = output_error(W, What, sigma)
    ref = float(((W @ sigma) * W).sum())
    return FixedRateMatrix(
        weight=What,
        codes=codes.to(torch.int64),
        scales=scales,
        zeros=zeros,
        bits=int(bits),
        group_size=gs,
        rate=fixed_rate(bits, gs),
        distortion=D / (a * n),
        relative_distortion=D / ref if ref > 0 else float("nan"),
        method="gptq",
        info={"act_order": act_order, "damping": damping, "perm": perm},
    )


def gptq_reference(
    W: torch.Tensor, sigma: torch.Tensor, *, bits: int = 4, damping: float = GPTQ_DAMPING
) -> torch.Tensor:
    """Straightforward OBQ-style GPTQ (per-row grid, no blocking): explicit H^{-1} downdates.

    For each column j in order: q_j = grid(w_j); the remaining columns get
    -(w_j - q_j) / Hinv_jj * Hinv_{j, :}; then Hinv <- Hinv - Hinv_{:, j} Hinv_{j, :} / Hinv_jj.
    """
    W = W.to(torch.float64).clone()
    a, n = W.shape
    H = sigma.to(torch.float64).clone()
    dead = torch.diagonal(H) <= 0
    W[:, dead] = 0
    H[dead, dead] = 1.0
    H = H + damping * torch.diagonal(H).mean() * torch.eye(n, dtype=torch.float64)
    Hinv = torch.linalg.inv(H)
    s, z = minmax_params(W, bits)
    Q = torch.zeros_like(W)
    for j in range(n):
        _, q = minmax_quantize(W[:, j], s, z, bits)
        Q[:, j] = q
        err = (W[:, j] - q) / Hinv[j, j]
        W[:, j:] -= torch.outer(err, Hinv[j, j:])
        Hinv = Hinv - torch.outer(Hinv[:, j], Hinv[j, :]) / Hinv[j, j]
    return Q


def huffman_gptq(
    W: torch.Tensor,
    sigma: torch.Tensor,
    *,
    rate: float,
    damping: float = GPTQ_DAMPING,
    rate_tol: float = 0.005,
    block_size: int = 128,
    act_order: bool = False,
    search_rows: float = 0.1,
) -> QuantizedMatrix:
    """Entropy-coded GPTQ: unbounded uniform grid, step = s * rms(row), s searched for ``rate``.

    The rate is the pooled entropy of the codes plus fp16 row scales (16 / n bits per weight).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> W = torch.randn(256, 32, generator=g, dtype=torch.float64)
    >>> q = huffman_gptq(W, torch.eye(32, dtype=torch.float64), rate=3.0)
    >>> abs(q.rate - 3.0) < 0.01
    True
    """
    W = check_weight(W)
    a, n = W.shape
    sigma = check_second_moment(sigma, n)
    rate = check_rate(rate)
    Wp, U, perm, dead = prepare_hessian(W, sigma, damping, act_order)
    rms = Wp.pow(2).mean(dim=1).sqrt().clamp_min(1e-300)  # (a,)
    n_dead = int(dead.sum())
    side = 16 * a + 32 + 16 * n_dead
    side_pw = side / (a * n)
    frac = (n - n_dead) / n
    live_p = ~dead[perm]

    def run(x: float, Wm: torch.Tensor, r: torch.Tensor):
        step = r * (math.sqrt(12.0) * 2.0 ** (-x))  # (rows,)

        def qcol(j: int, w: torch.Tensor, Wt: torch.Tensor):
            z = torch.round(w / step)
            return z, z * step

        codes, What = gptq_core(Wm, U.to(Wm.dtype), qcol, block_size)
        return codes, What, pooled_entropy(codes[:, live_p]) * frac + side_pw

    n_sub = a if a <= 512 else max(256, int(search_rows * a))
    rows = torch.randperm(a, generator=torch.Generator().manual_seed(0))[:n_sub]
    x0 = rate
    if n_sub < a:
        Wsub, rsub = Wp[rows].to(torch.float32), rms[rows].to(torch.float32)
        x0 = secant_search(lambda x: run(x, Wsub, rsub)[2], rate, x0=rate, tol=rate_tol).x
    cache: dict[float, tuple] = {}

    def full(x: float) -> float:
        cache[x] = run(x, Wp, rms)
        return cache[x][2]

    res = secant_search(full, rate, x0=x0, tol=rate_tol)
    codes, What, achieved = cache[res.x]
    step = rms * (math.sqrt(12.0) * 2.0 ** (-res.x))
    codes = _unpermute(codes, perm)[:, ~dead]
    q = QuantizedMatrix(
        codes=codes.to(torch.int64),
        row_scale=round_scales(step),
        col_scale=torch.ones(n - n_dead, dtype=torch.float64),
        dead=torch.nonzero(dead).reshape(-1),
        shape=(a, n),
        accounting="pooled",
        rate=achieved,
        rate_pooled=achieved,
        side_bits=side,
        method="huffman-gptq",
        info={"nominal_rate": res.x, "damping": damping},
    )

    q.rate_per_column = per_column_entropy(q.codes) * frac + side_pw
    D = output_error(W, q.dequantize(torch.float64), sigma)
    ref = float(((W @ sigma) * W).sum())
    q.distortion = D / (a * n)
    q.relative_distortion = D / ref if ref > 0 else float("nan")
    return q
