"""WaterSIC layer quantizer: ``quantize_matrix``.

Paper: Lifar, Savkin, Ordentlich, Polyanskiy, "WaterSIC: information-theoretically (near)
optimal linear layer quantization", ICML 2026 (arXiv:2603.04956).

Steps of ``quantize_matrix`` (numbers refer to the method description of the paper/code):

1. dead input columns removed (:func:`watersic.second_moment.dead_columns`);
2. damped Cholesky H = Sigma_xhat + delta I = L L^T in float64
   (:func:`watersic.second_moment.damped_cholesky`, damping 1e-4);
3. whitened target Y = W L, or with drift correction (the inference input xhat differs from
   the calibration input x, Qronos-style) Y = (W Sigma_{x,xhat} + delta W) L^{-T}, plus
   E[(R - Rhat) xhat^T] L^{-T} under residual-stream compensation (:func:`whitened_target`);
4. one global step c = sqrt(12) GM_j(sigma_j L_jj) 2^{-R_nom} (high-rate formula) and
   successive interference cancellation with the per-column MMSE shrink (:func:`watersic.sic.sic`);
5. R_nom found by secant search so the entropy (pooled or per-column, side information
   included) hits the target rate -- first on a row subset in float32, then on all rows in
   float64 (:func:`watersic.rate_control.secant_search`);
6. row/column rescalers by alternating exact minimisation (:mod:`watersic.rescalers`).
"""

from __future__ import annotations

import math
import warnings

import torch

from watersic.entropy import (
    coded_entropy,
    entropy,
    per_column_entropy,
    pooled_entropy,
    side_information_bits,
)
from watersic.quantized_matrix import QuantizedMatrix, round_scales
from watersic.rate_control import secant_search
from watersic.rescalers import fit_rescalers
from watersic.second_moment import damped_cholesky, dead_columns, times_lower
from watersic.sic import sic
from watersic.validation import (
    check_accounting,
    check_cross_moment,
    check_rate,
    check_second_moment,
    check_weight,
)

#: Default damping of WaterSIC (fraction of the mean diagonal), authors' code.
WATERSIC_DAMPING = 1e-4


def whitened_target(B: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """``Y = B L^{-T}`` ``(a, n)`` by a triangular solve (``B`` ``(a, n)``, lower ``L``).

    With ``B = W (Sigma + delta I)`` this is exactly ``W L``; with ``B = W Sigma_{x,xhat} +
    delta W`` it is the drift-corrected target.
    """
    return torch.linalg.solve_triangular(L, B.T, upper=False).T


def output_error(
    W: torch.Tensor,
    What: torch.Tensor,
    sigma: torch.Tensor,
    sigma_hat: torch.Tensor | None = None,
    sigma_cross: torch.Tensor | None = None,
) -> float:
    """E||W x - What xhat||^2 = tr(W S W^T) - 2 tr(W S_x,xhat What^T) + tr(What S_xhat What^T).

    With ``sigma_hat = sigma_cross = sigma`` this is tr((W - What) Sigma (W - What)^T).
    """
    W = W.to(torch.float64)
    What = What.to(torch.float64)
    if sigma_hat is None and sigma_cross is None:  # one product, no cancellation of large terms
        E = W - What  # (a, n)
        return float(((E @ sigma) * E).sum())
    sh = sigma if sigma_hat is None else sigma_hat
    sc = sigma if sigma_cross is None else sigma_cross
    return float(((W @ sigma) * W).sum() - 2 * ((W @ sc) * What).sum() + ((What @ sh) * What).sum())


def quantize_matrix(
    W: torch.Tensor,
    sigma: torch.Tensor,
    *,
    rate: float,
    accounting: str = "pooled",
    damping: float = WATERSIC_DAMPING,
    mmse: bool = True,
    rescalers: bool = True,
    sigma_hat: torch.Tensor | None = None,
    sigma_cross: torch.Tensor | None = None,
    residual_cross: torch.Tensor | None = None,
    dead_threshold: float = 1e-3,
    nominal_rate: float | None = None,
    rate_tol: float = 0.005,
    search_rows: float = 0.1,
    block_size: int = 128,
    rescaler_iters: int = 50,
) -> QuantizedMatrix:
    """Quantize ``W`` ``(a, n)`` for inputs with second moment ``sigma`` ``(n, n)`` by WaterSIC.

    Parameters
    ----------
    W:
        Weight matrix (out_features x in_features).
    sigma:
        Second moment E[x x^T] of the calibration input.
    rate:
        Target bits per weight (entropy of the codes plus side information), in (0, 16].
    accounting:
        ``"pooled"`` (one histogram for the whole matrix, the paper's), ``"per_column"`` (one
        plug-in histogram per column) or ``"coded"`` (the per-column parametric models the
        bitstream uses, their parameters counted as side information).
    damping:
        delta = damping x mean(diag Sigma) is added before the Cholesky factorisation.
    mmse:
        Apply the per-column least-squares shrink gamma_j.
    rescalers:
        Fit the row/column rescalers t and g after coding.
    sigma_hat, sigma_cross:
        E[xhat xhat^T] and E[x xhat^T] when the inference input xhat (the quantized prefix's
        output) differs from x: enables the drift-corrected target.
    residual_cross:
        E[(R - Rhat) xhat^T] ``(a, n)`` for layers writing into the residual stream.
    dead_threshold:
        Columns with variance below this times the median variance are dead.
    nominal_rate:
        Skip the rate search and use this nominal rate for the step size.
    rate_tol:
        Accepted |achieved - target| in bits.
    search_rows:
        Fraction of rows used for the float32 part of the search (rows are independent).
    block_size:
        Column block of the lazy SIC updates.
    rescaler_iters:
        Maximum rounds of the rescaler alternation.

    Returns
    -------
    QuantizedMatrix
        Codes, scales, dead columns, achieved rate (both accountings) and distortion.

    References
    ----------
    Lifar, Savkin, Ordentlich, Polyanskiy, ICML 2026, arXiv:2603.04956.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> W = torch.randn(256, 32, generator=g, dtype=torch.float64)
    >>> X = torch.randn(2048, 32, generator=g, dtype=torch.float64)
    >>> q = quantize_matrix(W, X.T @ X / 2048, rate=3.0)
    >>> abs(q.rate - 3.0) < 0.01, q.dequantize().shape
    (True, torch.Size([256, 32]))
    """
    W = check_weight(W)
    a, n = W.shape
    sigma = check_second_moment(sigma, n)
    rate = check_rate(rate)
    accounting = check_accounting(accounting)
    drift = sigma_hat is not None or sigma_cross is not None or residual_cross is not None
    S_hat = sigma if sigma_hat is None else check_second_moment(sigma_hat, n, "sigma_hat")
    S_cross = (
        sigma if sigma_cross is None else check_cross_moment(sigma_cross, (n, n), "sigma_cross")
    )
    WSc = W @ S_cross  # (a, n), also the cross term of the final distortion
    C_full = WSc
    if residual_cross is not None:
        C_full = C_full + check_cross_moment(residual_cross, (a, n), "residual_cross")

    dead_mask = dead_columns(S_hat, dead_threshold)
    live = ~dead_mask
    n_live = int(live.sum())
    if n_live == 0:
        raise ValueError("all input columns are dead (zero variance); nothing to quantize")
    dead = torch.nonzero(dead_mask).reshape(-1)
    Wl = W[:, live]
    Sh = S_hat[live][:, live]
    C = C_full[:, live]
    L, delta = damped_cholesky(Sh, damping)
    Y = whitened_target(C + delta * Wl, L) if drift else times_lower(Wl, L)  # (a, n_live)

    side = side_information_bits(a, n, int(dead.numel()), accounting=accounting)
    side_pw = side / (a * n)
    side_scales_pw = side_information_bits(a, n, int(dead.numel())) / (a * n)
    side_rows_pw = side_information_bits(a, n, int(dead.numel()), accounting="coded") / (a * n)
    frac = n_live / n
    if rate <= side_pw:
        raise ValueError(
            f"rate={rate:g} is below the side information alone ({side_pw:.3g} bits/weight)"
        )
    diagL = torch.diagonal(L)
    col_rms = Wl.pow(2).mean(dim=0).sqrt()
    prod = col_rms * diagL
    log_gm = float(torch.log(prod[prod > 0]).mean()) if (prod > 0).any() else 0.0

    def step_for(r_nom: float) -> float:
        return math.sqrt(12.0) * math.exp(log_gm) * 2.0 ** (-r_nom)

    # Float32 search on a deterministic subset of rows (rows are coded independently).
    n_sub = a if a <= 512 else max(256, int(search_rows * a))
    rows = torch.randperm(a, generator=torch.Generator().manual_seed(0))[:n_sub]
    Y32, L32 = Y[rows].to(torch.float32), L.to(torch.float32)

    def sub_rate(r_nom: float) -> float:
        Z, _ = sic(Y32, L32, step_for(r_nom), mmse=mmse, block_size=block_size)
        return entropy(Z, accounting) * frac + side_pw

    # Only the codes closest to the target are kept (the search returns that point): one
    # (a, n) code matrix in memory however many steps the search takes.
    cache: dict[float, tuple[torch.Tensor, torch.Tensor, float]] = {}

    def full_rate(r_nom: float, keep: bool = False) -> float:
        Z, alpha = sic(Y, L, step_for(r_nom), mmse=mmse, block_size=block_size)
        r = entropy(Z, accounting) * frac + side_pw
        best = next(iter(cache.values()), None)
        if keep or best is None or abs(r - rate) < abs(best[2] - rate):
            cache.clear()
            cache[r_nom] = (Z, alpha, r)
        return r

    if nominal_rate is not None:
        r_nom = float(nominal_rate)
        full_rate(r_nom)
        converged = True
    else:
        x0 = rate
        if n_sub < a:
            x0 = secant_search(sub_rate, rate, x0=rate, tol=rate_tol).x
        res = secant_search(full_rate, rate, x0=x0, tol=rate_tol)
        r_nom, converged = res.x, res.converged
        if not converged:
            warnings.warn(
                f"rate search stopped at {res.value:.4f} bits for target {rate:g} "
                "(the matrix may be too small for a finer entropy resolution)",
                stacklevel=2,
            )
    if r_nom not in cache:  # not expected: the search returns its closest evaluation
        full_rate(r_nom, keep=True)
    Z, alpha, achieved = cache[r_nom]

    M = Z * alpha[None, :]  # (a, n_live)
    # E||W x||^2 = tr(W Sigma W^T); without drift Sigma is Sigma_cross and W Sigma is at hand.
    const = float(((WSc if sigma is S_cross else W @ sigma) * W).sum())
    info: dict = {"nominal_rate": r_nom, "step": step_for(r_nom), "damping_delta": delta}
    if rescalers:
        fit = fit_rescalers(M, C, Sh, const=const, max_iter=rescaler_iters, factor=(L, delta))
        t, g = fit.t, fit.g
        info["rescaler_iterations"] = len(fit.history) - 1
    else:
        t = torch.ones(a, dtype=torch.float64)
        g = torch.ones(n_live, dtype=torch.float64)
    col_scale = round_scales(alpha * g)
    col_scale[(Z == 0).all(dim=0)] = 0.0  # an all-zero column needs no scale (none is stored)
    q = QuantizedMatrix(
        codes=Z.to(torch.int64),
        row_scale=round_scales(t),
        col_scale=col_scale,
        dead=dead,
        shape=(a, n),
        accounting=accounting,
        rate=achieved,
        rate_pooled=pooled_entropy(Z) * frac + side_scales_pw,
        rate_per_column=per_column_entropy(Z) * frac + side_scales_pw,
        rate_coded=coded_entropy(Z) * frac + side_rows_pw,
        side_bits=side,
        method="watersic",
        info=info,
    )
    What = q.dequantize(torch.float64)  # (a, n), dead columns zero
    Wh_live = What[:, live]
    # tr(What S_hat What^T) = ||What_live L||^2 - delta ||What_live||^2 (L L^T = Sh + delta I)
    quad = float(times_lower(Wh_live, L).pow(2).sum()) - delta * float(Wh_live.pow(2).sum())
    D = const - 2 * float((WSc * What).sum()) + quad
    q.distortion = D / (a * n)
    q.relative_distortion = D / const if const > 0 else float("nan")
    return q
