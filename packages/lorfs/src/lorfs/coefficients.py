"""Per-axis Fourier coefficient vectors: alignment on a common mode count, and products.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

A factor ``phi(s) = sum_{k=-K}^{K} c_k e^{i omega k (s - a)}`` of a low-rank Fourier sum is
stored as its coefficient vector ``c`` of length ``2K + 1``, centred on ``k = 0`` (notes,
Sec. B1); ``T`` factors of one axis are a ``(T, 2K + 1)`` tensor. Two operations on them are
used by the sums (:mod:`lorfs.fourier_sum`), the closed-form losses (:mod:`lorfs.residual`) and
the spectral ceiling (:mod:`lorfs.spectral`):

1. :func:`pad_modes`: the same factors on ``K' >= K`` modes (zero coefficients for
   ``K < |k| <= K'``), so factors of different bandwidths share one basis;
2. :func:`convolve_coefficients`: the factors of all pairwise products
   ``phi_a(s) phi_b(s)``, whose coefficients are the convolution ``c_a * c_b``
   (bandwidth ``K_a + K_b``).
"""

from __future__ import annotations

import torch


def pad_modes(coeffs: torch.Tensor, modes: int) -> torch.Tensor:
    """Zero-pad ``(T, 2K+1)`` coefficients to ``(T, 2 modes + 1)`` (centred on ``k = 0``).

    Examples
    --------
    >>> pad_modes(torch.tensor([[1.0, 2.0, 3.0]]), 2)
    tensor([[0., 1., 2., 3., 0.]])
    """
    k = (coeffs.shape[-1] - 1) // 2
    if k == modes:
        return coeffs
    if k > modes:
        raise ValueError(f"cannot pad coefficients with {k} modes down to {modes}")
    return torch.nn.functional.pad(coeffs, (modes - k, modes - k))


def convolve_coefficients(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Coefficients of all pairwise products: ``(T1, 2K1+1) x (T2, 2K2+1) -> (T1 T2, 2(K1+K2)+1)``.

    Examples
    --------
    >>> e = torch.tensor([[0, 0, 1]], dtype=torch.complex128)   # e^{i s}
    >>> convolve_coefficients(e, e).abs().round().tolist()       # e^{2 i s}
    [[0.0, 0.0, 0.0, 0.0, 1.0]]
    """
    n = a.shape[-1] + b.shape[-1] - 1
    fa = torch.fft.fft(a, n=n)  # (T1, n)
    fb = torch.fft.fft(b, n=n)  # (T2, n)
    return torch.fft.ifft(fa[:, None, :] * fb[None, :, :]).reshape(-1, n)
