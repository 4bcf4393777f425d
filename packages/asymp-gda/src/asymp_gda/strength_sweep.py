"""The strength sweep: exact invariance of the equilibrium below a threshold (Sec. 3, Fig. 1).

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Thm 3.1 / Cor. 3.2: the x-solution ``x^mu`` of the
asymmetrically perturbed game ``x^T A y + (mu/2)||x||^2`` is an equilibrium
strategy of the original game for every ``mu`` up to a game-dependent threshold,
and moves away from ``X*`` above it.

:func:`strength_sweep` runs AsymP-GDA for many strengths at once (one batch row
per ``mu``, Eq. (3) with a per-row ``mu``) and sets each last iterate beside the
exact QP solution (:func:`~asymp_gda.perturbed_solution.perturbed_solution`), so
the dynamics and the theory are checked against each other in one table;
:func:`strength_sweep_table` does so for several games, with each invariance threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .asymp_gda import asymp_gda_step, check_strength
from .exploitability import exploitability_x
from .matrix_game import MatrixGame
from .perturbed_solution import perturbed_solution
from .trajectory import check_step_size

__all__ = ["SweepRow", "strength_sweep", "strength_sweep_table"]


@dataclass
class SweepRow:
    """One strength of a sweep.

    Attributes
    ----------
    mu:
        Perturbation strength.
    expl_dynamics:
        Exploitability of AsymP-GDA's last iterate ``x^T`` in the original game.
    expl_qp:
        Exploitability of the exact perturbed solution ``x^mu`` (QP).
    distance:
        ``||x^T - x^mu||_1``: how close the dynamics came to the QP solution.
    """

    mu: float
    expl_dynamics: float
    expl_qp: float
    distance: float


def strength_sweep(
    game: MatrixGame, mus: Sequence[float], eta: float = 0.01, iterations: int = 100_000
) -> list[SweepRow]:
    """AsymP-GDA (perturbing x) for every ``mu`` in ``mus``, from the uniform start.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> rows = strength_sweep(biased_rps(), [1.0, 4.0], eta=0.1, iterations=2000)
    >>> [r.expl_dynamics < 1e-10 for r in rows]  # exact at mu = 1, shifted at mu = 4
    [True, False]
    """
    mus = [check_strength(mu) for mu in mus]
    if not mus:
        raise ValueError("strength_sweep needs at least one strength mu")
    check_step_size(eta, game, max(mus))
    m, n = game.shape
    K = len(mus)
    mu = torch.tensor(mus, dtype=torch.float64).view(K, 1)
    x = torch.full((K, m), 1.0 / m, dtype=torch.float64)
    y = torch.full((K, n), 1.0 / n, dtype=torch.float64)
    for _ in range(iterations):
        x, y = asymp_gda_step(game.A, x, y, mu, eta)
    expl = exploitability_x(game, x).clamp_min(0.0)
    rows = []
    for k, value in enumerate(mus):
        xq, _ = perturbed_solution(game, value)
        rows.append(
            SweepRow(
                mu=value,
                expl_dynamics=float(expl[k]),
                expl_qp=float(exploitability_x(game, xq).clamp_min(0.0)[0]),
                distance=float((x[k] - xq).abs().sum()),
            )
        )
    return rows


def strength_sweep_table(games: dict, eta: float, iterations: int):
    """The sweep on several games, with each game's invariance threshold, as one table.

    Args:
        games: ``{label: (MatrixGame, strengths)}``.
        eta: Step size.
        iterations: AsymP-GDA iterations per strength (uniform start).
    """
    from icml26_shared.results import Table

    from .perturbed_solution import invariance_threshold

    table = Table(
        "Strength sweep: exact invariance below a threshold",
        ["game", "mu", "threshold", "expl(x) AsymP-GDA", "expl(x^mu) QP", "|x_T - x^mu|_1"],
        notes=(
            f"AsymP-GDA perturbing x, {iterations} iterations, step size {eta}, "
            "uniform start; x^mu is the exact QP solution of the perturbed game; the threshold "
            "is the largest mu with x^mu in X*, by bisection on the QP (rel. width 1e-3)."
        ),
    )
    for name, (game, mus) in games.items():
        thr = invariance_threshold(game)
        for row in strength_sweep(game, mus, eta=eta, iterations=iterations):
            table.add_row(
                game=name, mu=row.mu, threshold=thr,
                **{"expl(x) AsymP-GDA": row.expl_dynamics, "expl(x^mu) QP": row.expl_qp,
                   "|x_T - x^mu|_1": row.distance},
            )  # fmt: skip
    return table
