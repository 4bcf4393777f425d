"""Theory helpers: the exact perturbed solution, the invariance threshold, the least-norm equilibrium.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 3.

- :func:`perturbed_solution` -- the saddle point of ``x^T A y + (mu/2)||x||^2``,
  from the QP ``min_{x, v} v + (mu/2)||x||^2  s.t.  A^T x <= v 1, x in Delta``
  (its multipliers are the perturbed y strategy).
- :func:`least_norm_equilibrium` -- ``argmin {||x|| : x in X*}``; by Thm 3.1 /
  Cor. 3.2 (exact Tikhonov regularisation of an LP, Mangasarian & Meyer 1979)
  this is the point AsymP-GDA converges to for every ``mu`` below the threshold.
- :func:`invariance_threshold` -- the largest ``mu`` whose perturbed solution is
  still an equilibrium of the original game, by bisection on the QP.

The QPs are solved with scipy's SLSQP and then *polished*: the KKT system on the
detected active set is solved as a linear system and accepted only if it
satisfies the KKT conditions to 1e-11 (otherwise the SLSQP point is returned).
scipy has no dedicated QP solver; cvxpy/OSQP would be a heavy dependency for
games of this size.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.optimize import minimize

from .asymp_gda import check_strength
from .matrix_game import MatrixGame

__all__ = ["perturbed_solution", "least_norm_equilibrium", "invariance_threshold"]

_ACTIVE = 1e-7


def _slsqp(A: np.ndarray, mu: float, v_fixed: float | None) -> np.ndarray:
    """SLSQP on ``z = (x, v)``: ``v + mu/2 ||x||^2`` (or ``1/2 ||x||^2`` with ``v = v_fixed``)."""
    m, n = A.shape
    x0 = np.full(m, 1.0 / m)
    if v_fixed is None:
        z0 = np.append(x0, float((A.T @ x0).max()))

        def f(z):
            return z[-1] + 0.5 * mu * z[:m] @ z[:m], np.append(mu * z[:m], 1.0)

        cons = [
            {
                "type": "ineq",
                "fun": lambda z: z[-1] - A.T @ z[:m],
                "jac": lambda z: np.hstack([-A.T, np.ones((n, 1))]),
            },
            {
                "type": "eq",
                "fun": lambda z: z[:m].sum() - 1.0,
                "jac": lambda z: np.append(np.ones(m), 0.0)[None],
            },
        ]
        bounds = [(0.0, 1.0)] * m + [(None, None)]
    else:
        z0 = x0

        def f(z):
            return 0.5 * z @ z, z

        cons = [
            {"type": "ineq", "fun": lambda z: v_fixed - A.T @ z, "jac": lambda z: -A.T},
            {"type": "eq", "fun": lambda z: z.sum() - 1.0, "jac": lambda z: np.ones((1, m))},
        ]
        bounds = [(0.0, 1.0)] * m
    res = minimize(
        f,
        z0,
        jac=True,
        method="SLSQP",
        bounds=bounds,
        constraints=cons,
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x[:m]


def _polish(A: np.ndarray, x: np.ndarray, mu: float, v_fixed: float | None):
    """Solve the KKT system on the active set of ``x``; return ``(x, lam)`` or ``None``."""
    m, n = A.shape
    S = np.flatnonzero(x > _ACTIVE)
    g = A.T @ x
    v = g.max() if v_fixed is None else v_fixed
    J = np.flatnonzero(g >= v - _ACTIVE)
    s, j = len(S), len(J)
    AS = A[np.ix_(S, J)]  # (s, j)
    if v_fixed is None:
        # unknowns [x_S, lam_J, nu, v]: mu x_S + A_SJ lam - nu 1 = 0; A_SJ^T x_S - v 1 = 0; 1^T x_S = 1; 1^T lam = 1
        K = np.zeros((s + j + 2, s + j + 2))
        K[:s, :s] = mu * np.eye(s)
        K[:s, s : s + j] = AS
        K[:s, s + j] = -1.0
        K[s : s + j, :s] = AS.T
        K[s : s + j, s + j + 1] = -1.0
        K[s + j, :s] = 1.0
        K[s + j + 1, s : s + j] = 1.0
        rhs = np.zeros(s + j + 2)
        rhs[s + j] = rhs[s + j + 1] = 1.0
    else:
        # unknowns [x_S, lam_J, nu]: x_S + A_SJ lam - nu 1 = 0; A_SJ^T x_S = v 1; 1^T x_S = 1
        K = np.zeros((s + j + 1, s + j + 1))
        K[:s, :s] = np.eye(s)
        K[:s, s : s + j] = AS
        K[:s, s + j] = -1.0
        K[s : s + j, :s] = AS.T
        K[s + j, :s] = 1.0
        rhs = np.zeros(s + j + 1)
        rhs[s : s + j] = v
        rhs[s + j] = 1.0
    sol, *_ = np.linalg.lstsq(K, rhs, rcond=None)
    if not np.allclose(K @ sol, rhs, atol=1e-11):
        return None
    xp = np.zeros(m)
    xp[S] = sol[:s]
    lam = np.zeros(n)
    lam[J] = sol[s : s + j]
    nu = sol[s + j]
    tol = 1e-11
    scale = mu if v_fixed is None else 1.0
    stat = scale * xp + A @ lam - nu  # must be 0 on S and >= 0 off S (multiplier of x >= 0)
    vv = (A.T @ xp).max() if v_fixed is None else v_fixed
    ok = (
        (xp >= -tol).all()
        and (lam >= -tol).all()
        and abs(xp.sum() - 1.0) <= tol
        and (A.T @ xp <= vv + tol).all()
        and (stat >= -tol).all()
    )
    if not ok:
        return None
    xp = np.clip(xp, 0.0, None)
    return xp / xp.sum(), np.clip(lam, 0.0, None)


def perturbed_solution(game: MatrixGame, mu: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact saddle point ``(x^mu, y^mu)`` of ``min_x max_y x^T A y + (mu/2)||x||^2``.

    ``x^mu`` is unique (strong convexity); ``y^mu`` is one maximiser (the QP's
    multipliers, or ``None``-free best effort if the active set is degenerate).

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> x, y = perturbed_solution(biased_rps(), 1.0)
    >>> [round(v, 10) for v in x.tolist()]
    [0.2, 0.6, 0.2]
    """
    mu = check_strength(mu)
    A = game.A.numpy()
    x = _slsqp(A, mu, None)
    pol = _polish(A, x, mu, None)
    if pol is None:
        lam = np.zeros(A.shape[1])
        lam[np.argmax(A.T @ x)] = 1.0
        return torch.from_numpy(np.clip(x, 0, None) / np.clip(x, 0, None).sum()), torch.from_numpy(
            lam
        )
    return torch.from_numpy(pol[0]), torch.from_numpy(pol[1] / max(pol[1].sum(), 1e-300))


def least_norm_equilibrium(game: MatrixGame) -> torch.Tensor:
    """The minimum-norm equilibrium strategy of the x player, ``argmin {||x|| : x in X*}``.

    Examples
    --------
    >>> from asymp_gda.matrix_game import m_ne
    >>> [round(v, 8) for v in least_norm_equilibrium(m_ne()).tolist()]
    [0.33333333, 0.33333333, 0.33333333, 0.0, 0.0]
    """
    A = game.A.numpy()
    v = game.value
    x = _slsqp(A, 1.0, v)
    pol = _polish(A, x, 1.0, v)
    x = pol[0] if pol is not None else np.clip(x, 0.0, None) / np.clip(x, 0.0, None).sum()
    return torch.from_numpy(x)


def _is_exact(game: MatrixGame, mu: float, tol: float) -> bool:
    x, _ = perturbed_solution(game, mu)
    return float((x @ game.A).max()) - game.value <= tol


def invariance_threshold(
    game: MatrixGame, tol: float = 1e-9, rel: float = 1e-3, mu_max: float = 1e6
) -> float:
    """Largest ``mu`` with ``x^mu`` in ``X*`` (Cor. 3.2), by bisection on :func:`perturbed_solution`.

    Returns ``inf`` if ``x^mu`` is an equilibrium even at ``mu_max`` (e.g. the
    uniform strategy is optimal). Bisection stops at relative width ``rel``;
    the returned value is the largest ``mu`` verified exact.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> 2.0 <= invariance_threshold(biased_rps()) < 3.0
    True
    """
    lo, hi = 0.0, 1.0
    while _is_exact(game, hi, tol):
        lo, hi = hi, hi * 2.0
        if hi > mu_max:
            return math.inf
    if lo == 0.0:
        lo = hi
        while not _is_exact(game, lo, tol):
            hi, lo = lo, lo / 2.0
            if lo < 1e-12:
                return 0.0
    while hi - lo > rel * lo:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _is_exact(game, mid, tol) else (lo, mid)
    return lo
