"""Rate-distortion theory of linear-layer quantization with Gaussian weights.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956).

For weight rows w ~ N(0, s2 I_n) and the output distortion (w - what)^T Sigma (w - what), the
problem is equivalent (rotate to Sigma's eigenbasis) to n independent Gaussian components with
variances s2 * lambda_i under MSE, so the information-theoretic (IT) limit is reverse
waterfilling over the eigenvalues (Cover & Thomas, Thm. 10.3.3):

    D(theta) = mean_i min(theta, s2 lambda_i),   R(theta) = mean_i max(0, 1/2 log2(s2 lambda_i / theta)).

* :func:`gaussian_rd_rate` / :func:`gaussian_rd_distortion` -- R(D) and D(R) per weight;
* :func:`rate_gap` -- rate - R_IT(distortion) of a quantizer's result, in bits;
* :data:`WATERSIC_HIGH_RATE_GAP` = 1/2 log2(pi e / 6) ~ 0.2546 bits -- WaterSIC's high-rate gap
  for every Sigma (its distortion c^2/12 and rate 1/2 log2(2 pi e s2 GM(L_jj^2) / c^2) combine
  with prod L_jj^2 = det Sigma);
* :func:`gptq_extra_gap` -- 1/2 log2(AM / GM) of the squared Cholesky diagonal in GPTQ's
  column order: entropy-coded GPTQ (one step per row) exceeds WaterSIC's gap by this much at
  high rate, and it is unbounded over Sigma (the paper's "arbitrarily large gap").
"""

from __future__ import annotations

import math

import torch
from scipy.optimize import brentq

#: WaterSIC's high-rate gap to the IT limit, 1/2 log2(pi e / 6) bits (paper abstract: 0.255).
WATERSIC_HIGH_RATE_GAP = 0.5 * math.log2(math.pi * math.e / 6.0)


def _variances(eigenvalues: torch.Tensor, weight_variance: float) -> torch.Tensor:
    v = torch.as_tensor(eigenvalues, dtype=torch.float64).reshape(-1) * weight_variance
    if (v < 0).any() or not torch.isfinite(v).all():
        raise ValueError("eigenvalues must be finite and non-negative")
    return v


def gaussian_rd_rate(
    eigenvalues: torch.Tensor, distortion: float, weight_variance: float = 1.0
) -> float:
    """R(D) in bits per weight for per-weight distortion ``distortion`` (reverse waterfilling).

    >>> round(gaussian_rd_rate(torch.ones(4), 0.25), 6)  # D = 2^(-2R) for unit variances
    1.0
    """
    v = _variances(eigenvalues, weight_variance)
    v = v[v > 0]
    if distortion <= 0:
        return math.inf
    if distortion >= float(v.sum()) / max(len(eigenvalues), 1):
        return 0.0
    n = len(eigenvalues)

    def excess(log_theta: float) -> float:
        return (
            float(torch.minimum(torch.full_like(v, math.exp(log_theta)), v).sum()) / n - distortion
        )

    log_theta = brentq(excess, math.log(float(v.min())) - 60, math.log(float(v.max())), xtol=1e-14)
    theta = math.exp(log_theta)
    return float(torch.clamp(0.5 * torch.log2(v / theta), min=0).sum()) / n


def gaussian_rd_distortion(
    eigenvalues: torch.Tensor, rate: float, weight_variance: float = 1.0
) -> float:
    """D(R) per weight at ``rate`` bits per weight (reverse waterfilling).

    >>> round(gaussian_rd_distortion(torch.ones(4), 2.0), 6)
    0.0625
    """
    v = _variances(eigenvalues, weight_variance)
    n = len(eigenvalues)
    vp = v[v > 0]
    if rate <= 0:
        return float(v.sum()) / n

    def excess(log_theta: float) -> float:
        return (
            float(torch.clamp(0.5 * torch.log2(vp / math.exp(log_theta)), min=0).sum()) / n - rate
        )

    lo = math.log(float(vp.min())) - 2 * math.log(2) * rate * n / len(vp) - 10
    log_theta = brentq(excess, lo, math.log(float(vp.max())), xtol=1e-14)
    theta = math.exp(log_theta)
    return float(torch.minimum(torch.full_like(vp, theta), vp).sum()) / n


def rate_gap(
    rate: float, distortion: float, eigenvalues: torch.Tensor, weight_variance: float = 1.0
) -> float:
    """Gap ``rate - R_IT(distortion)`` in bits per weight (0 = information-theoretic limit)."""
    return rate - gaussian_rd_rate(eigenvalues, distortion, weight_variance)


def gptq_cholesky_diagonal(sigma: torch.Tensor, damping: float = 0.0) -> torch.Tensor:
    """Squared effective Cholesky diagonal d_j^2 = Var(x_j | x_{j+1..n}) in GPTQ's order.

    GPTQ codes column 0 first and compensates with the later columns; with H^{-1} = U^T U
    (upper U) the residual variance of column j is 1 / U_jj^2.
    """
    S = sigma.to(torch.float64)
    n = S.shape[0]
    S = S + damping * torch.diagonal(S).mean() * torch.eye(n, dtype=torch.float64)
    U = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(S)), upper=True)
    return 1.0 / torch.diagonal(U) ** 2


def gptq_extra_gap(sigma: torch.Tensor, damping: float = 0.0) -> float:
    """1/2 log2(AM(d^2) / GM(d^2)) of GPTQ's squared Cholesky diagonal, in bits.

    >>> gptq_extra_gap(torch.eye(3))
    0.0
    >>> round(gptq_extra_gap(torch.diag(torch.tensor([1.0, 4.0]))), 4)  # 1/2 log2(2.5 / 2)
    0.161
    """
    d2 = gptq_cholesky_diagonal(sigma, damping)
    am = float(d2.mean())
    gm = math.exp(float(torch.log(d2).mean()))
    return max(0.0, 0.5 * math.log2(am / gm))


def predicted_huffman_gptq_gap(sigma: torch.Tensor, damping: float = 0.0) -> float:
    """High-rate gap of entropy-coded GPTQ: 0.2546 + :func:`gptq_extra_gap`."""
    return WATERSIC_HIGH_RATE_GAP + gptq_extra_gap(sigma, damping)
