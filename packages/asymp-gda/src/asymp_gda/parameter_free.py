"""Parameter-free AsymP-GDA (Alg. 1 of the paper): halve ``mu`` until it is small enough.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 5, Alg. 1.

The invariance threshold of ``mu`` (Cor. 3.2) is unknown in practice, so Alg. 1
starts from ``mu_init`` and repeats:

1. run AsymP-GDA on the ``mu``-perturbed game, warm-started from the previous
   iterate, until its *perturbed* duality gap (:func:`~asymp_gda.exploitability.perturbed_gap`)
   is below ``gap_tol(mu)``;
2. if the x player's exploitability in the *original* game is ``<= eps``, stop;
3. otherwise ``mu <- mu / 2`` and go to 1.

Below the threshold step 2 succeeds, so only O(log(mu_init / mu*)) halvings
happen and each stage converges linearly: O(log 1/eps) iterations overall.

Design choices of this implementation (not fixed by the paper):

- the exploitability check of step 2 is made every ``check_every`` iterations
  (so a stage stops as soon as ``eps`` is reached) and uses the game value from
  an LP (:mod:`asymp_gda.linear_program`);
- the inner stop is a *certificate* that ``mu`` is above the threshold: by
  ``mu``-strong convexity ``||x - x^mu||_1 <= sqrt(2 m gap / mu)``, so
  ``expl(x^mu) >= expl(x) - max|A| sqrt(2 m gap / mu)``; once that lower bound is
  positive, ``x^mu`` is not an equilibrium and ``mu`` is halved. The default fixed
  ``gap_tol(mu) = mu eps^2 / (2 m max|A|^2)`` (floored at 1e-14) is the worst case of
  this rule (a gap below it certifies ``||x - x^mu||_1 <= eps / max|A|``, so had
  ``mu`` been exact, ``x`` would already be ``eps``-exploitable). A step-norm stop
  was found unreliable in prototyping.
- batched: many games of one shape (``(B, m, n)``) run together, each with its own ``mu``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .asymp_gda import asymp_gda_step, check_strength
from .matrix_game import MatrixGame, column_gradient, row_gradient
from .projection import project_simplex

__all__ = ["ParameterFreeResult", "parameter_free"]


@dataclass
class ParameterFreeResult:
    """Outcome of :func:`parameter_free`, one entry per game.

    Attributes
    ----------
    x, y:
        ``(B, m)`` certified x strategies and the matching y iterates ``(B, n)``
        (for ``side="y"``/``"both"`` the roles are filled accordingly).
    iterations:
        ``(B,)`` iterations used (summed over both processes for ``side="both"``).
    mu:
        ``(B,)`` final perturbation strengths (for ``"both"``: of the x process).
    exploitability:
        ``(B,)`` exploitability of the certified strategy (``"both"``: NashConv).
    converged:
        ``(B,)`` bool, ``exploitability <= eps`` within ``max_iterations``.
    halvings:
        ``(B,)`` number of ``mu`` halvings.
    """

    x: torch.Tensor
    y: torch.Tensor
    iterations: torch.Tensor
    mu: torch.Tensor
    exploitability: torch.Tensor
    converged: torch.Tensor
    halvings: torch.Tensor


def _stack(games) -> tuple[torch.Tensor, list[MatrixGame]]:
    games = [games] if isinstance(games, MatrixGame) else list(games)
    if not games:
        raise ValueError("parameter_free needs at least one game")
    shapes = {g.shape for g in games}
    if len(shapes) != 1:
        raise ValueError(f"all games of a batch must have one shape, got {sorted(shapes)}")
    return torch.stack([g.A for g in games]), games


def _x_side(A, values, eps, mu_init, eta, gap_tol, max_iterations, check_every):
    B, m, n = A.shape
    x = torch.full((B, m), 1.0 / m, dtype=torch.float64)
    y = torch.full((B, n), 1.0 / n, dtype=torch.float64)
    mu = torch.full((B, 1), float(mu_init), dtype=torch.float64)
    eta_t = eta.view(B, 1)
    done = torch.zeros(B, dtype=torch.bool)
    iters = torch.zeros(B, dtype=torch.long)
    halvings = torch.zeros(B, dtype=torch.long)
    amax = A.abs().flatten(1).amax(1)  # (B,)
    expl = torch.full((B,), float("inf"), dtype=torch.float64)
    while not bool(done.all()) and int(iters.max()) < max_iterations:
        active = ~done
        for _ in range(check_every):
            nx, ny = asymp_gda_step(A, x, y, mu, eta_t)
            x = torch.where(active[:, None], nx, x)
            y = torch.where(active[:, None], ny, y)
        iters += active.long() * check_every
        expl = column_gradient(A, x).amax(-1) - values  # original game, Alg. 1 step 2
        newly = active & (expl <= eps)
        done |= newly
        # perturbed gap per game (each row has its own game and mu)
        upper = column_gradient(A, x).amax(-1) + 0.5 * mu[:, 0] * (x * x).sum(-1)
        g = row_gradient(A, y)
        xb = project_simplex(-g / mu)
        lower = (xb * g).sum(-1) + 0.5 * mu[:, 0] * (xb * xb).sum(-1)
        gap = upper - lower
        tol = (
            gap_tol(mu[:, 0], amax, m)
            if callable(gap_tol)
            else torch.full_like(gap, float(gap_tol))
        )
        # certified too large: expl(x^mu) >= expl(x) - amax ||x - x^mu||_1 > 0, where
        # ||x - x^mu||_1 <= sqrt(2 m gap / mu) by mu-strong convexity of the perturbed game
        dist = torch.sqrt(2.0 * m * gap.clamp_min(0.0) / mu[:, 0])
        too_big = expl > amax * dist + 1e-3 * eps
        halve = active & ~done & ((gap <= tol) | too_big)
        mu = torch.where(halve[:, None], mu * 0.5, mu)
        halvings += halve.long()
    return x, y, iters, mu[:, 0], expl, done, halvings


def _default_gap_tol(eps: float):
    def tol(mu: torch.Tensor, amax: torch.Tensor, m: int) -> torch.Tensor:
        return torch.clamp(mu * eps**2 / (2.0 * m * amax**2), min=1e-14)

    return tol


def parameter_free(
    games: MatrixGame | Sequence[MatrixGame],
    eps: float = 1e-6,
    mu_init: float = 4.0,
    eta: float | None = None,
    side: str = "x",
    eta_scale: float = 0.1,
    gap_tol: float | None = None,
    max_iterations: int = 1_000_000,
    check_every: int = 50,
) -> ParameterFreeResult:
    """Parameter-free AsymP-GDA (Alg. 1) on one game or a batch of same-shape games.

    Parameters
    ----------
    games:
        A :class:`~asymp_gda.matrix_game.MatrixGame` or a list of games of one shape.
    eps:
        Target exploitability (of x; of y for ``side="y"``; NashConv of the pair for ``"both"``).
    mu_init:
        Initial strength ``mu_0`` (halved until the target is met).
    eta:
        Step size; default ``eta_scale / ||A||_2`` per game.
    side:
        ``"x"``, ``"y"`` (the mirrored process) or ``"both"`` (both, iterations summed).
    gap_tol:
        Inner stopping tolerance on the perturbed gap; default ``mu eps^2 / (2 m max|A|^2)``.
    eta_scale:
        Step size relative to ``1 / ||A||_2`` when ``eta`` is not given.
    max_iterations, check_every:
        Budget per game and how often gap and exploitability are checked.

    Examples
    --------
    >>> from asymp_gda.matrix_game import random_game
    >>> r = parameter_free(random_game(5, seed=0), eps=1e-6)
    >>> bool(r.converged[0]), float(r.exploitability[0]) <= 1e-6
    (True, True)
    """
    if not (eps > 0):
        raise ValueError(f"eps must be > 0, got {eps}")
    check_strength(mu_init, "mu_init")
    if side not in ("x", "y", "both"):
        raise ValueError(f"side must be 'x', 'y' or 'both', got {side!r}")
    if check_every < 1 or max_iterations < 1:
        raise ValueError("check_every and max_iterations must be >= 1")
    A, glist = _stack(games)
    if eta is not None and not eta > 0:
        raise ValueError(f"step size eta must be > 0, got {eta}")
    norms = torch.tensor([g.norm for g in glist], dtype=torch.float64)
    if not 0 < eta_scale < 1:
        raise ValueError(f"eta_scale must be in (0, 1), got {eta_scale}")
    eta_t = (eta_scale / norms) if eta is None else torch.full_like(norms, float(eta))
    tol = _default_gap_tol(eps) if gap_tol is None else gap_tol
    values = torch.tensor([g.value for g in glist], dtype=torch.float64)

    def run_x():
        return _x_side(A, values, eps, mu_init, eta_t, tol, max_iterations, check_every)

    def run_y():
        At = -A.transpose(1, 2).contiguous()
        return _x_side(At, -values, eps, mu_init, eta_t, tol, max_iterations, check_every)

    if side == "x":
        x, y, it, mu, ex, ok, hv = run_x()
        return ParameterFreeResult(x, y, it, mu, ex, ok, hv)
    if side == "y":
        y, x, it, mu, ex, ok, hv = run_y()
        return ParameterFreeResult(x, y, it, mu, ex, ok, hv)
    x, _, it1, mu, e1, ok1, hv1 = run_x()
    y, _, it2, _, e2, ok2, hv2 = run_y()
    return ParameterFreeResult(x, y, it1 + it2, mu, e1 + e2, ok1 & ok2, hv1 + hv2)
