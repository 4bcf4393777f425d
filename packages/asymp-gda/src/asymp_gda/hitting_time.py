"""Iterations to an ``eps``-equilibrium on batches of random games (Sec. 6, random games).

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 5-6: the parameter-free AsymP-GDA (Alg. 1) keeps
a linear rate, so it needs ``O(log 1/eps)`` iterations, like optimistic GDA.

- :func:`ogda_hitting_times` -- the first iteration (checked every ``check_every``)
  at which OGDA's last-iterate x is ``eps``-exploitable, batched over same-shape
  games (``A`` of shape ``(B, m, n)``, one step size per game);
- :func:`random_game_batch` -- seeded uniform ``[-1, 1]`` games of one size;
- :func:`random_games_table` -- both methods' iteration counts (median, quartiles) per size.

The parameter-free side is :func:`asymp_gda.parameter_free.parameter_free`, which
returns its iteration counts directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .matrix_game import MatrixGame, column_gradient, random_game, row_gradient
from .projection import project_simplex

__all__ = ["ogda_hitting_times", "random_game_batch", "random_games_table"]


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


def _quartiles(values: list[int]) -> tuple[float, float, float]:
    """``(q25, median, q75)`` (inclusive method; one value gives it three times)."""
    import statistics

    if len(values) == 1:
        return float(values[0]), float(values[0]), float(values[0])
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def random_games_table(
    sizes: Sequence[int], seeds: int, max_iterations: int, eps: float = 1e-6,
    eta_scale: float = 0.5, seed: int = 0,
):  # fmt: skip
    """Iterations to ``eps`` of parameter-free AsymP-GDA and OGDA on random games.

    Args:
        sizes: Game sizes ``m`` (``m x m`` uniform ``[-1, 1]`` games).
        seeds: Games per size (seeds ``seed .. seed + seeds - 1``).
        max_iterations: Budget per game.
        eps: Target exploitability of x.
        eta_scale: Step size of both methods, times ``1/||A||_2``.
        seed: First game seed.

    Returns:
        ``(table, figure)``: median and quartiles over the solved games, and a scatter of
        every game's iteration count.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml26_shared.results import Table

    from .parameter_free import parameter_free

    table = Table(
        "Iterations to 1e-6 exploitability on random games",
        ["m", "method", "solved", "median", "q25", "q75", "final mu (median)"],
        notes=(
            f"{seeds} uniform[-1, 1] m x m games per size (seeds {seed}..{seed + seeds - 1}), "
            f"uniform start, step size {eta_scale}/||A||_2 for both methods, target "
            f"expl(x) <= {eps:g} (checked every 50 iterations), budget "
            f"{max_iterations} iterations. Parameter-free AsymP-GDA: mu_0 = 4, halved "
            "when the perturbed gap certifies that mu is above the threshold. Quartiles over "
            "solved games only."
        ),
    )
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, m in enumerate(sizes):
        games = random_game_batch(m, range(seed, seed + seeds))
        pf = parameter_free(games, eps=eps, eta_scale=eta_scale, max_iterations=max_iterations)
        og = ogda_hitting_times(games, eps=eps, eta_scale=eta_scale, max_iterations=max_iterations)
        results = {
            "parameter-free AsymP-GDA": [
                int(it) for it, ok in zip(pf.iterations, pf.converged, strict=True) if ok
            ],
            "OGDA": [int(h) for h in og if h >= 0],
        }
        for j, (method, its) in enumerate(results.items()):
            q25, med, q75 = _quartiles(its) if its else (None, None, None)
            table.add_row(
                m=m, method=method, solved=f"{len(its)}/{seeds}", median=med, q25=q25, q75=q75,
                **{"final mu (median)": float(pf.mu.median()) if j == 0 else None},
            )  # fmt: skip
            xs = [i + (j - 0.5) * 0.25] * len(its)
            ax.scatter(xs, its, s=14, color=f"C{j}", label=method if i == 0 else None)
    ax.set_xticks(range(len(sizes)), [str(m) for m in sizes])
    ax.set_yscale("log")
    ax.set_xlabel("m (game size)")
    ax.set_ylabel(f"iterations to expl(x) <= {eps:g}")
    ax.legend(fontsize=8)
    return table, fig
