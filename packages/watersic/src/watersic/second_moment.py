"""Input second moments: streaming accumulation, dead columns and the damped Cholesky factor.

Paper: Lifar, Savkin, Ordentlich, Polyanskiy, "WaterSIC: information-theoretically (near)
optimal linear layer quantization", ICML 2026 (arXiv:2603.04956).

Map to the method (shared by WaterSIC, GPTQ and Huffman-GPTQ):

1. ``SecondMoment`` -- streaming float64 estimates of Sigma_x = E[x x^T], Sigma_xhat =
   E[xhat xhat^T], the cross moment Sigma_{x,xhat} = E[x xhat^T] and the residual cross
   moment E[(R - Rhat) xhat^T] (drift correction and residual compensation).
2. ``dead_columns`` -- input coordinates with Sigma_jj <= 0 or below ``threshold`` times the
   *median* diagonal; they carry no signal and are removed before coding.
3. ``damped_cholesky`` -- H = Sigma + delta I with delta = damping * mean(diag Sigma), lower
   factor H = L L^T in float64 (WaterSIC uses damping 1e-4, GPTQ 1e-2).
4. ``times_lower`` -- A L for the lower factor in column blocks, skipping L's zero upper
   triangle: half the multiply-adds of a dense product (the whitened target Y = W L and the
   quadratic forms x^T Sigma x = ||x L||^2 - delta ||x||^2 of the quantizer and its rescalers).
"""

from __future__ import annotations

import warnings

import torch


def dead_columns(sigma: torch.Tensor, threshold: float = 1e-3) -> torch.Tensor:
    """Boolean mask ``(n,)`` of dead input columns of a second-moment matrix.

    A column is dead when its variance is non-positive or below ``threshold`` times the median
    of the diagonal (the median, not the mean, so a few huge outlier features do not kill the
    ordinary ones).
    """
    d = torch.diagonal(sigma)
    positive = d[d > 0]
    if positive.numel() == 0:
        return torch.ones_like(d, dtype=torch.bool)
    med = torch.median(d).clamp_min(0)
    return (d <= 0) | (d < threshold * med)


def damped_cholesky(sigma: torch.Tensor, damping: float) -> tuple[torch.Tensor, float]:
    """Lower Cholesky factor of ``sigma + delta I`` in float64 and the damping ``delta`` used.

    ``delta = damping * mean(diag(sigma))``. Raises ``ValueError`` (suggesting more damping)
    when the matrix is not positive definite even after damping.
    """
    if damping < 0:
        raise ValueError(f"damping must be >= 0, got {damping}")
    sigma = sigma.to(torch.float64)
    n = sigma.shape[0]
    delta = float(damping * torch.diagonal(sigma).mean().clamp_min(0).item())
    H = sigma + delta * torch.eye(n, dtype=torch.float64, device=sigma.device)
    L, info = torch.linalg.cholesky_ex(H)
    if int(info.item()) != 0:
        raise ValueError(
            f"Cholesky of the damped second moment failed (not positive definite at column "
            f"{int(info.item())}, damping={damping:g}); increase damping (e.g. damping="
            f"{max(10 * damping, 1e-4):g}) or remove dead input dimensions"
        )
    return L, delta


def times_lower(A: torch.Tensor, L: torch.Tensor, block: int = 512) -> torch.Tensor:
    """``A @ L`` ``(a, n)`` for ``A`` ``(a, n)`` and lower-triangular ``L`` ``(n, n)``.

    Column block ``J`` of the product only needs the rows ``k >= J`` of ``L``, so the zero
    upper triangle is never multiplied (about half the work of ``A @ L`` for large ``n``).

    >>> L = torch.linalg.cholesky(torch.eye(5, dtype=torch.float64) + 1.0)
    >>> A = torch.arange(15, dtype=torch.float64).reshape(3, 5)
    >>> torch.allclose(times_lower(A, L, block=2), A @ L)
    True
    """
    a, n = A.shape
    if n <= block:
        return A @ L
    out = torch.empty(a, n, dtype=A.dtype, device=A.device)
    for j0 in range(0, n, block):
        j1 = min(j0 + block, n)
        out[:, j0:j1] = A[:, j0:] @ L[j0:, j0:j1]
    return out


class SecondMoment:
    """Streaming float64 second moments of a layer's inputs (and of a drifted copy).

    Parameters
    ----------
    n:
        Number of input features.
    cross:
        Also track the quantized-path input ``xhat``: ``Sigma_xhat`` and ``Sigma_{x,xhat}``.
    residual_dim:
        If given, also track ``E[(R - Rhat) xhat^T]`` for residual compensation, with
        ``R`` of this width.

    Examples
    --------
    >>> g = torch.Generator().manual_seed(0)
    >>> acc = SecondMoment(4)
    >>> for _ in range(3):
    ...     acc.update(torch.randn(100, 4, generator=g))
    >>> acc.count, tuple(acc.sigma.shape)
    (300, (4, 4))
    """

    def __init__(self, n: int, cross: bool = False, residual_dim: int | None = None) -> None:
        self.n = n
        self.count = 0
        self._xx = torch.zeros(n, n, dtype=torch.float64)
        self._hh = torch.zeros(n, n, dtype=torch.float64) if cross else None
        self._xh = torch.zeros(n, n, dtype=torch.float64) if cross else None
        self._rh = (
            torch.zeros(residual_dim, n, dtype=torch.float64) if residual_dim is not None else None
        )

    def update(
        self,
        x: torch.Tensor,
        x_hat: torch.Tensor | None = None,
        residual_error: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> None:
        """Add a batch of inputs ``x`` ``(..., n)`` (and ``x_hat``, ``R - Rhat`` alike).

        ``weights`` (one non-negative number per token, e.g. the attention importance of
        :mod:`watersic.attention_importance`) gives the weighted moment ``(1/N) sum_t w_t x_t
        x_t^T`` (rows of ``x`` and ``x_hat`` scaled by ``sqrt(w_t)``; ``N`` counts tokens).
        """
        x = x.detach().reshape(-1, self.n).to(torch.float64)
        root = None
        if weights is not None:
            root = weights.detach().reshape(-1, 1).to(torch.float64)
            if root.shape[0] != x.shape[0] or bool((root < 0).any()):
                raise ValueError("weights must hold one non-negative number per token")
            root = root.sqrt()
            x = x * root
        self._xx += x.T @ x
        if self._hh is not None:
            if x_hat is None:
                raise ValueError("this SecondMoment tracks x_hat; pass x_hat to update()")
            xh = x_hat.detach().reshape(-1, self.n).to(torch.float64)
            if xh.shape[0] != x.shape[0]:
                raise ValueError("x and x_hat must hold the same number of tokens")
            if root is not None:
                xh = xh * root
            self._hh += xh.T @ xh
            self._xh += x.T @ xh
            if self._rh is not None:
                if residual_error is None:
                    raise ValueError("this SecondMoment tracks residuals; pass residual_error")
                r = residual_error.detach().reshape(xh.shape[0], -1).to(torch.float64)
                if root is not None:
                    r = r * root
                self._rh += r.T @ xh
        self.count += x.shape[0]

    def _mean(self, m: torch.Tensor | None) -> torch.Tensor | None:
        if m is None:
            return None
        if self.count == 0:
            raise ValueError("no calibration tokens were accumulated")
        return m / self.count

    @property
    def sigma(self) -> torch.Tensor:
        """``E[x x^T]``, shape ``(n, n)``; warns when rank-deficient (fewer tokens than n)."""
        if 0 < self.count < self.n:
            warnings.warn(
                f"only {self.count} calibration tokens for {self.n} input features: the second "
                "moment is rank-deficient (damping keeps it invertible; use more calibration data)",
                stacklevel=2,
            )
        return self._mean(self._xx)

    @property
    def sigma_hat(self) -> torch.Tensor | None:
        """``E[xhat xhat^T]`` ``(n, n)`` or None."""
        return self._mean(self._hh)

    @property
    def sigma_cross(self) -> torch.Tensor | None:
        """``E[x xhat^T]`` ``(n, n)`` or None."""
        return self._mean(self._xh)

    @property
    def residual_cross(self) -> torch.Tensor | None:
        """``E[(R - Rhat) xhat^T]`` ``(d, n)`` or None."""
        return self._mean(self._rh)
