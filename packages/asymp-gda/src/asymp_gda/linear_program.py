"""Exact equilibria of matrix games by linear programming (scipy HiGHS).

The reference the paper's metrics need: the value ``v*`` (for individual
exploitability, Sec. 2) and one equilibrium. We solve

    min_{x, v} v   s.t.  A^T x <= v 1,  1^T x = 1,  x >= 0          (x side)
    max_{y, w} w   s.t.  A y >= w 1,    1^T y = 1,  y >= 0          (y side)

with :func:`scipy.optimize.linprog` (method ``"highs"``).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linprog

__all__ = ["solve_lp"]


def _solve_side(M: np.ndarray) -> tuple[np.ndarray, float]:
    """``min_{x in Delta} max_j (M^T x)_j`` for ``M`` of shape ``(m, n)``."""
    m, n = M.shape
    c = np.zeros(m + 1)
    c[-1] = 1.0
    A_ub = np.hstack([M.T, -np.ones((n, 1))])  # M^T x - v <= 0
    A_eq = np.hstack([np.ones((1, m)), np.zeros((1, 1))])
    bounds = [(0.0, None)] * m + [(None, None)]
    res = linprog(
        c, A_ub=A_ub, b_ub=np.zeros(n), A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs"
    )
    if res.status != 0:  # pragma: no cover - a bounded feasible LP always solves
        raise RuntimeError(f"linprog failed: {res.message}")
    x = np.clip(res.x[:m], 0.0, None)
    return x / x.sum(), float(res.x[-1])


def solve_lp(A) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Return ``(x*, y*, v*)`` for ``min_x max_y x^T A y``.

    Parameters
    ----------
    A:
        ``(m, n)`` loss matrix of the x player.

    Examples
    --------
    >>> x, y, v = solve_lp([[1.0, -1.0], [-1.0, 1.0]])
    >>> x.tolist(), y.tolist(), round(v, 12)
    ([0.5, 0.5], [0.5, 0.5], 0.0)
    """
    M = np.asarray(torch.as_tensor(A, dtype=torch.float64), dtype=np.float64)
    x, v = _solve_side(M)
    y, w = _solve_side(-M.T)  # min_y max_i (-A y)_i = -max_y min_i (A y)_i
    return torch.from_numpy(x), torch.from_numpy(y), 0.5 * (v - w)
