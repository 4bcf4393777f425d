"""Euclidean projection onto the probability simplex (batched).

Every projected step of the paper (AsymP-GDA, Eq. (3); AsymP-DGDA's per-infoset
steps) needs ``Pi_Delta(v) = argmin_{p in Delta} ||p - v||``. We use the
sorting-based algorithm of Held, Wolfe and Crowder (1974) as presented by
Duchi et al. (2008) and Condat (2016, Alg. 1):

1. sort ``v`` in decreasing order, ``u``;
2. ``rho = max{j : u_j - (sum_{i<=j} u_i - 1) / j > 0}``;
3. ``tau = (sum_{i<=rho} u_i - 1) / rho`` and ``p = max(v - tau, 0)``.

It is O(n log n) per row, vectorised over any leading batch dimensions. Hand
written because neither torch nor scipy ships a simplex projection.
"""

from __future__ import annotations

import torch

__all__ = ["project_simplex", "on_simplex"]


_POSITIONS: dict = {}


def _positions(n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    key = (n, dtype, device)
    if key not in _POSITIONS:
        _POSITIONS[key] = torch.arange(1, n + 1, dtype=dtype, device=device)
    return _POSITIONS[key]


def project_simplex(v: torch.Tensor) -> torch.Tensor:
    """Project every row of ``v`` onto the probability simplex.

    Parameters
    ----------
    v:
        Tensor of shape ``(..., n)`` with ``n >= 1``; the last axis is projected.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``v``; each ``(..., :)`` slice is non-negative and sums to 1.

    Examples
    --------
    >>> import torch
    >>> project_simplex(torch.tensor([[0.5, 0.5, 0.5], [2.0, 0.0, -1.0]], dtype=torch.float64))
    tensor([[0.3333, 0.3333, 0.3333],
            [1.0000, 0.0000, 0.0000]], dtype=torch.float64)
    """
    if v.ndim == 0 or v.shape[-1] == 0:
        raise ValueError(f"project_simplex needs a non-empty last axis, got shape {tuple(v.shape)}")
    u, _ = torch.sort(v, dim=-1, descending=True)  # (..., n)
    css = torch.cumsum(u, dim=-1).sub_(1.0)  # (..., n)
    j = _positions(v.shape[-1], v.dtype, v.device)  # (n,) = 1..n
    # The condition u_j > css_j / j holds exactly for j = 1..rho (a prefix), so rho is its count.
    rho = (u * j > css).sum(-1, keepdim=True)  # (..., 1), >= 1 since j = 1 always qualifies
    tau = css.gather(-1, rho - 1) / rho  # (..., 1)
    return torch.clamp(v - tau, min=0.0)


def on_simplex(p: torch.Tensor, atol: float = 1e-8) -> bool:
    """Whether every row of ``p`` (shape ``(..., n)``) is a probability vector up to ``atol``."""
    if p.ndim == 0 or p.shape[-1] == 0 or not torch.isfinite(p).all():
        return False
    return bool(
        (p >= -atol).all() and ((p.sum(-1) - 1.0).abs() <= atol * max(1, p.shape[-1])).all()
    )
