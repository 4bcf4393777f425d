"""The regularised least-squares estimator over all environments.

Paper: "One Intervention per Component is Enough" (ICML 2026), the joint
estimator of the steady-state mean and Lyapunov equations:

    min_theta  sum_e w_e (lambda_mu ||A_e m_e + b_e||^2 + ||A_e S_e + S_e A_e^T + D_e||_F^2)
               + ridge ||offdiag A||_2^2 + l1 ||offdiag A||_1      s.t.  tr D = p

1. ``l1 = 0``: closed form (equality-constrained ridge least squares,
   :func:`ou_ident.moment_equations.solve_normalized`).
2. ``l1 > 0``: ADMM on the lasso in the normalised coordinates (one Cholesky
   factorisation, soft-thresholding of the off-diagonal drift).
3. Knock-down factors: variable projection over ``rho``
   (:func:`ou_ident.moment_equations.profile_knockdowns`).

The gradient refinement with an optional exact Gaussian likelihood is the
LightningModule :class:`ou_ident.lightning.SteadyStateOU`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg

from ou_ident.drift_graph import DriftGraph
from ou_ident.moment_equations import (
    EnvironmentMoments,
    ParameterLayout,
    check_environments,
    design_matrix,
    initial_knockdowns,
    profile_knockdowns,
    residuals,
    solve_normalized,
)
from ou_ident.recursive import fit_recursive
from ou_ident.steady_state_fit import OUFit

__all__ = ["fit_joint"]


def _lasso_normalized(
    M: np.ndarray,
    norm_cols: np.ndarray,
    total: float,
    l1_cols: np.ndarray,
    l1: float,
    ridge: float,
    n_iter: int,
    tol: float = 1e-9,
) -> np.ndarray:
    """ADMM for ``min ||M x||^2 + ridge ||x_L||^2 + l1 ||x_L||_1`` s.t. ``sum x[norm] = total``."""
    n = M.shape[1]
    q = int(norm_cols[0])
    keep = np.setdiff1d(np.arange(n), [q])
    x0 = np.zeros(n)
    x0[q] = total
    N = np.zeros((n, n - 1))
    N[keep, np.arange(n - 1)] = 1.0
    N[q, np.searchsorted(keep, norm_cols[norm_cols != q])] = -1.0
    K = M @ N
    y = -(M @ x0)
    L = np.searchsorted(keep, l1_cols)
    G = 2.0 * (K.T @ K)
    h = 2.0 * (K.T @ y)
    rho = max(float(np.trace(G)) / (n - 1), 1e-12)
    H = G.copy()
    H[L, L] += 2.0 * ridge + rho
    H[np.diag_indices_from(H)] += 1e-12 * rho
    cho = scipy.linalg.cho_factor(H)
    w = np.zeros(len(L))
    u = np.zeros(len(L))
    z = np.zeros(n - 1)
    for _ in range(n_iter):
        rhs = h.copy()
        rhs[L] += rho * (w - u)
        z = scipy.linalg.cho_solve(cho, rhs)
        w_old = w
        v = z[L] + u
        w = np.sign(v) * np.maximum(np.abs(v) - l1 / rho, 0.0)
        u = u + z[L] - w
        primal = np.linalg.norm(z[L] - w)
        dual = rho * np.linalg.norm(w - w_old)
        if primal < tol * max(1.0, np.linalg.norm(w)) and dual < tol * max(1.0, rho):
            break
    z[L] = w  # exact zeros on the thresholded entries
    return x0 + N @ z


def fit_joint(
    data: Sequence[EnvironmentMoments],
    mask=None,
    ridge: float = 0.0,
    l1: float = 0.0,
    lambda_mean: float = 1.0,
    admm_iterations: int = 2000,
) -> OUFit:
    """Regularised least squares over all environments (closed form without L1).

    Parameters
    ----------
    data:
        Moments of every environment.
    mask:
        ``(p, p)`` drift support with the diagonal; ``None`` = all edges allowed.
    ridge, l1:
        Penalties on the off-diagonal drift entries.
    lambda_mean:
        Weight of the mean equations.
    admm_iterations:
        Iteration limit of ADMM (``l1 > 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from ou_ident.ou_process import OUParams
    >>> from ou_ident.interventions import Environment, Degradation
    >>> theta = OUParams([[-1.0, 0.5], [0.3, -1.2]], [1.0, -0.5], [1.0, 0.8]).normalized()
    >>> envs = [Environment("obs"), Environment("deg1", (Degradation(1, 0.6),))]
    >>> data = [EnvironmentMoments.population(e, theta) for e in envs]
    >>> fit = fit_joint(data)
    >>> bool(np.allclose(fit.A, theta.A, atol=1e-8))
    True
    """
    p = check_environments(data)
    mask = np.ones((p, p), dtype=bool) if mask is None else mask
    if ridge < 0 or l1 < 0:
        raise ValueError(f"penalties must be >= 0, got ridge={ridge}, l1={l1}")
    layout = ParameterLayout(mask, [d.environment for d in data])
    if layout.p != p:
        raise ValueError(f"support mask is {layout.p}x{layout.p}, data have p={p}")
    rhos = initial_knockdowns(layout)
    norm_cols = np.arange(layout.dim)[layout.d_slice]
    pen_cols = layout.offdiag_a

    def solve(rh):
        M, _ = design_matrix(layout, data, rh, lambda_mean=lambda_mean)
        if l1 > 0:
            th = _lasso_normalized(M, norm_cols, float(p), pen_cols, l1, ridge, admm_iterations)
        else:
            th = solve_normalized(M, norm_cols, float(p), ridge, pen_cols)
        r = M @ th
        pen = ridge * float(th[pen_cols] @ th[pen_cols]) + l1 * float(np.abs(th[pen_cols]).sum())
        return th, float(r @ r) + pen

    keys = [(e, j) for e, j, _ in layout.knockdowns()]
    if keys:  # knock-down factors: variable projection (bilinear family)
        graph = DriftGraph(layout.mask)
        if graph.is_connected() and len(graph.roots) == 1:
            # start from the recursive estimate (cheap per-component profiles), refine locally
            start = fit_recursive(data, layout.mask, lambda_mean=lambda_mean).rhos
            rhos = profile_knockdowns(keys, start, lambda rh: solve(rh)[1], n_grid=5, width=0.02)
        else:
            rhos = profile_knockdowns(keys, rhos, lambda rh: solve(rh)[1], n_grid=50)
    theta, _ = solve(rhos)
    res = residuals(layout, data, theta[None, :], rhos, lambda_mean)[0]
    diag = {"objective": float(res @ res), "ridge": ridge, "l1": l1}
    return OUFit.from_theta(layout, theta, rhos, "joint", diag)
