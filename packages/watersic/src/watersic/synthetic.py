"""Synthetic layers: Gaussian weights and input second moments with chosen spectra.

Offline benchmark (a) of Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956): W with i.i.d.
N(0, 1) entries, so the information-theoretic limit is reverse waterfilling over the eigenvalues
of Sigma (:mod:`watersic.theory`).

Spectra (``SPECTRA``):

* ``identity`` -- Sigma = I (WaterSIC's gap is exactly 0.255 bits at high rate, GPTQ's too);
* ``power1`` / ``power2`` -- diagonal lambda_i = i^-1 / i^-2;
* ``rotated_power2`` -- lambda_i = i^-2 in a random orthonormal basis;
* ``diag_1e2`` / ``diag_1e4`` -- diagonal, log-spaced from 1 down to 1e-2 / 1e-4;
* ``wishart`` -- sample second moment of T = 2n standard Gaussian vectors.
"""

from __future__ import annotations

import torch

SPECTRA = (
    "identity",
    "power1",
    "power2",
    "rotated_power2",
    "diag_1e2",
    "diag_1e4",
    "wishart",
)


def _random_rotation(n: int, generator: torch.Generator) -> torch.Tensor:
    A = torch.randn(n, n, generator=generator, dtype=torch.float64)
    Q, R = torch.linalg.qr(A)
    return Q * torch.sign(torch.diagonal(R))[None, :]


def spectrum_covariance(
    name: str, n: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Second-moment matrix ``(n, n)`` (float64) of the named spectrum family.

    >>> S = spectrum_covariance("diag_1e4", 3)
    >>> torch.diagonal(S).tolist()
    [1.0, 0.01, 0.0001]
    """
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    i = torch.arange(1, n + 1, dtype=torch.float64)
    if name == "identity":
        return torch.eye(n, dtype=torch.float64)
    if name == "power1":
        return torch.diag(1.0 / i)
    if name == "power2":
        return torch.diag(1.0 / i**2)
    if name == "rotated_power2":
        Q = _random_rotation(n, g)
        return (Q * (1.0 / i**2)[None, :]) @ Q.T
    if name in ("diag_1e2", "diag_1e4"):
        decades = 2 if name == "diag_1e2" else 4
        return torch.diag(torch.logspace(0, -decades, n, dtype=torch.float64))
    if name == "wishart":
        X = torch.randn(2 * n, n, generator=g, dtype=torch.float64)
        return X.T @ X / (2 * n)
    raise ValueError(f"unknown spectrum {name!r}; choose one of {SPECTRA}")


def gaussian_weights(a: int, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """I.i.d. N(0, 1) weights ``(a, n)`` in float64."""
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    return torch.randn(a, n, generator=g, dtype=torch.float64)


def eigenvalues(sigma: torch.Tensor) -> torch.Tensor:
    """Eigenvalues ``(n,)`` of a symmetric second moment, clipped at 0."""
    return torch.linalg.eigvalsh(sigma.to(torch.float64)).clamp_min(0)
