"""Successive interference cancellation (SIC) with one global step in the whitened basis.

Paper: Lifar et al., "WaterSIC", ICML 2026 (arXiv:2603.04956); the core loop is called
ZSIC in the authors' code.

With H = L L^T (lower L) the distortion tr((W - What) H (W - What)^T) equals
||What L - Y||_F^2 for the whitened target Y = W L, and because L is lower triangular the
whitened column k only depends on the original columns j >= k. Coding columns from the last to
the first, each column sees the error of the columns already coded and cancels it:

    z_j    = round(Y[:, j] / c)                       (integer codes, ties to even)
    gamma_j = <z_j, Y[:, j]> / (c ||z_j||^2)          (least-squares / MMSE shrink, 0 if z_j=0)
    w_j    = gamma_j (c / L_jj) z_j                   (step alpha_j = c / L_jj in the original basis)
    Y     <- Y - w_j L[j, :]                          (rank-1 interference cancellation)

Every column gets the same step ``c`` -- hence the same distortion c^2/12 -- in the whitened
basis, so its rate is about h(w_j) + log2(L_jj / c): reverse waterfilling over the Cholesky
diagonal (columns with sigma_j L_jj << c get all-zero codes and cost nothing).

``sic`` applies the updates lazily in blocks (as GPTQ does): inside a block the rank-1 updates
touch only the block, and the accumulated block update reaches the earlier columns as one
matrix product. ``sic_reference`` is the plain column-by-column loop, kept for the tests.
"""

from __future__ import annotations

import torch


def _code_column(
    y: torch.Tensor, step: float, l_jj: float, mmse: bool
) -> tuple[torch.Tensor, float, torch.Tensor]:
    z = torch.round(y / step)
    zz = float(torch.dot(z, z))
    if zz == 0.0:
        gamma = 0.0
    elif mmse:
        gamma = float(torch.dot(z, y)) / (step * zz)
    else:
        gamma = 1.0
    w = (gamma * step / l_jj) * z
    return z, gamma, w


def sic(
    Y: torch.Tensor, L: torch.Tensor, step: float, mmse: bool = True, block_size: int = 128
) -> tuple[torch.Tensor, torch.Tensor]:
    """Blocked SIC of the whitened target ``Y`` ``(a, n)`` with lower factor ``L`` ``(n, n)``.

    Returns integer codes ``Z`` ``(a, n)`` (as the dtype of ``Y``) and per-column scales
    ``alpha`` ``(n,)`` with ``What = Z * alpha`` (``alpha_j = gamma_j c / L_jj``).

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> L = torch.linalg.cholesky(torch.eye(3, dtype=torch.float64) * 4)
    >>> Z, alpha = sic(torch.randn(5, 3, generator=g, dtype=torch.float64) @ L, L, 0.5)
    >>> tuple(Z.shape), tuple(alpha.shape)
    ((5, 3), (3,))
    """
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    a, n = Y.shape
    L = L.to(Y.dtype)
    # Work on transposes so that one column of Y is one contiguous row in memory.
    Yt = Y.T.contiguous()  # (n, a)
    Zt = torch.zeros_like(Yt)  # (n, a)
    Wt = torch.zeros_like(Yt)  # (n, a) coded weights
    alpha = torch.zeros(n, dtype=Y.dtype, device=Y.device)
    diag = torch.diagonal(L).tolist()
    for b1 in range(n, 0, -block_size):
        b0 = max(0, b1 - block_size)
        if b1 < n:  # lazy update: interference of all columns coded in earlier blocks
            Yt[b0:b1] -= L[b1:, b0:b1].T @ Wt[b1:]
        for j in range(b1 - 1, b0 - 1, -1):
            y = Yt[j]
            if j + 1 < b1:  # interference from the columns already coded in this block
                y = y - L[j + 1 : b1, j] @ Wt[j + 1 : b1]
            z, gamma, w = _code_column(y, step, diag[j], mmse)
            Zt[j] = z
            alpha[j] = gamma * step / diag[j]
            Wt[j] = w
    return Zt.T, alpha


def sic_reference(
    Y: torch.Tensor, L: torch.Tensor, step: float, mmse: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """Unblocked column-by-column SIC (same result as :func:`sic`, for tests)."""
    Y = Y.clone()
    a, n = Y.shape
    Z = torch.zeros_like(Y)
    alpha = torch.zeros(n, dtype=Y.dtype)
    for j in range(n - 1, -1, -1):
        l_jj = float(L[j, j])
        z, gamma, w = _code_column(Y[:, j], step, l_jj, mmse)
        Z[:, j] = z
        alpha[j] = gamma * step / l_jj
        Y -= torch.outer(w, L[j, :].to(Y.dtype))
    return Z, alpha
