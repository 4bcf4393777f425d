"""Iterations to an ``eps``-equilibrium on batches of random games (Sec. 6, random games).

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 5-6: the parameter-free AsymP-GDA (Alg. 1) keeps
a linear rate, so it needs ``O(log 1/eps)`` iterations, like optimistic GDA.

- :func:`ogda_hitting_times` -- the first iteration (checked every ``check_every``)
  at which OGDA's last-iterate x is ``eps``-exploitable, batched over same-shape
  games (``A`` of shape ``(B, m, n)``, one step size per game);
- :func:`random_game_batch` -- seeded uniform ``[-1, 1]`` games of one size.

The parameter-free side is :func:`asymp_gda.parameter_free.parameter_free`, which
returns its iteration counts directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .matrix_game import MatrixGame, column_gradient, random_game, row_gradient
from .projection import project_simplex

__all__ = ["ogda_hitting_times", "random_game_batch"]


def random_game_batch(m: int, seeds: Sequence[int]) -> list[MatrixGame]:
    """``m x m`` uniform ``[-1, 1]`` games, one per seed."""
    return [random_game(m, seed=s) for s in seeds]


def ogda_hitting_times(
    games: Sequence[MatrixGame],
    eps: float = 1e-6,
    eta_scale: float = 0.1,
    max_iterations: int = 200_000,
    check_every: int = 50,
) -> torch.Tensor:
    """Iterations until OGDA's x is ``eps``-exploitable, per game (``-1``: not within the budget).

    Parameters
    ----------
    games:
        Games of one shape (run as one batch).
    eps:
        Target individual exploitability of x.
    eta_scale:
        Step size ``eta = eta_scale / ||A||_2`` per game.
    max_iterations, check_every:
        Budget and checking period.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> int(ogda_hitting_times([biased_rps()], eps=1e-6, eta_scale=0.3)[0]) > 0
    True
    """
    games = list(games)
    if not games:
        raise ValueError("ogda_hitting_times needs at least one game")
    if len({g.shape for g in games}) != 1:
        raise ValueError("all games of a batch must have one shape")
    if not eps > 0 or not eta_scale > 0:
        raise ValueError(f"eps and eta_scale must be > 0, got {eps} and {eta_scale}")
    A = torch.stack([g.A for g in games])  # (B, m, n)
    B, m, n = A.shape
    values = torch.tensor([g.value for g in games], dtype=torch.float64)
    eta = (eta_scale / torch.tensor([g.norm for g in games], dtype=torch.float64)).view(B, 1)
    x = torch.full((B, m), 1.0 / m, dtype=torch.float64)
    y = torch.full((B, n), 1.0 / n, dtype=torch.float64)
    gx, gy = row_gradient(A, y), column_gradient(A, x)
    hit = torch.full((B,), -1, dtype=torch.long)
    t = 0
    while t < max_iterations and bool((hit < 0).any()):
        for _ in range(check_every):
            ngx, ngy = row_gradient(A, y), column_gradient(A, x)
            x = project_simplex(x - eta * (2 * ngx - gx))
            y = project_simplex(y + eta * (2 * ngy - gy))
            gx, gy = ngx, ngy
        t += check_every
        expl = column_gradient(A, x).amax(-1) - values
        hit = torch.where((hit < 0) & (expl <= eps), torch.full_like(hit, t), hit)
    return hit
