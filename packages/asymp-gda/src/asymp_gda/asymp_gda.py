"""AsymP-GDA: gradient descent ascent with an asymmetric perturbation (Sec. 4).

Paper: Abe, Sakamoto, Ariu, Iwasaki, "Asymmetric Perturbation in Solving Bilinear
Saddle-Point Optimization", ICML 2026, arXiv:2506.05747. Official code:
github.com/CyberAgentAILab/asymmetrically-perturbed-gda.

Only the x player's objective is perturbed, ``min_x max_y x^T A y + (mu/2)||x||^2``
(Sec. 3). By Thm 3.1 / Cor. 3.2 its x-solution *is* an equilibrium strategy of the
original game once ``mu`` is below a game-dependent threshold, so ``mu`` need not
decay. The learning dynamics (Eq. (3), alternating projected steps):

    x^{t+1} = Pi_X(x^t - eta (A y^t + mu x^t))
    y^{t+1} = Pi_Y(y^t + eta A^T x^{t+1})

converge linearly in the last iterate to the perturbed saddle point (Thm 4.1).
The y player of the x-perturbed game is *not* guaranteed to reach an equilibrium;
to get both, run the mirrored process (perturb y only) as well and count both
processes' updates (Sec. 4, "both players").

- :func:`asymp_gda_step` -- one step of Eq. (3), batched ``(B, m)``, ``(B, n)``;
- :func:`asymp_gda` -- the solver with ``side="x" | "y" | "both"``.
"""

from __future__ import annotations

from typing import Unpack

import torch

from .matrix_game import MatrixGame, column_gradient, row_gradient
from .projection import project_simplex
from .trajectory import StartOptions, Trajectory, check_step_size, initial_strategies, simulate

__all__ = ["asymp_gda", "asymp_gda_step", "check_strength"]


def check_strength(mu: float, name: str = "mu") -> float:
    """Reject a perturbation strength that is not a positive finite number."""
    try:
        mu = float(mu)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"perturbation strength {name} must be a number, got {mu!r}") from exc
    if not mu > 0 or mu == float("inf"):
        raise ValueError(f"perturbation strength {name} must be > 0 and finite, got {mu}")
    return mu


def asymp_gda_step(
    A: torch.Tensor, x: torch.Tensor, y: torch.Tensor, mu, eta
) -> tuple[torch.Tensor, torch.Tensor]:
    """One alternating AsymP-GDA step, Eq. (3): perturbed x moves first, y answers ``x^{t+1}``.

    Shapes: ``A (m, n)`` (or one game per row, ``(B, m, n)``), ``x (B, m)``,
    ``y (B, n)``; ``mu`` and ``eta`` are floats or ``(B, 1)`` tensors (one per row).
    Returns the new ``(x, y)``.
    """
    x = project_simplex(x - eta * (row_gradient(A, y) + mu * x))  # (B, m)
    y = project_simplex(y + eta * column_gradient(A, x))  # (B, n)
    return x, y


def asymp_gda(
    game: MatrixGame,
    mu: float = 1.0,
    eta: float = 0.01,
    iterations: int = 10_000,
    side: str = "x",
    **start: Unpack[StartOptions],
) -> Trajectory:
    """Run AsymP-GDA on a matrix game, batched over ``n_trials`` initialisations.

    Parameters
    ----------
    game:
        The zero-sum game ``min_x max_y x^T A y``.
    mu:
        Perturbation strength ``mu > 0`` (paper default 1, Sec. 6).
    eta:
        Step size ``eta > 0`` (paper default 0.01); a warning is raised above
        ``1/(||A||_2 + mu)``.
    iterations:
        Number of iterations ``T``.
    side:
        ``"x"`` perturbs x only (x converges to an equilibrium strategy),
        ``"y"`` perturbs y only, ``"both"`` runs both mirrored processes and
        pairs x of the first with y of the second (4 updates per iteration).
    **start:
        Batch size, starting points and recording schedule
        (:class:`~asymp_gda.trajectory.StartOptions`).

    Returns
    -------
    Trajectory
        Final ``x (B, m)``, ``y (B, n)`` and last-iterate curves.

    References
    ----------
    Abe et al. (ICML 2026), Eq. (3), Thm 3.1 and Thm 4.1.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> tr = asymp_gda(biased_rps(), mu=1.0, eta=0.01, iterations=10_000)
    >>> [round(v, 6) for v in tr.x[0].tolist()]
    [0.2, 0.6, 0.2]
    >>> float(tr.final("expl_x")[0]) < 1e-10
    True
    """
    mu = check_strength(mu)
    check_step_size(eta, game, mu)
    if side not in ("x", "y", "both"):
        raise ValueError(f"side must be 'x', 'y' or 'both', got {side!r}")
    opts = dict(start)
    record_every = opts.pop("record_every", None)
    x, y = initial_strategies(game, **opts)
    A, At = game.A, -game.A.T.contiguous()  # At: the role-swapped game, its x player is y
    tr = Trajectory(
        f"AsymP-GDA ({side})",
        x,
        y,
        updates_per_step=4 if side == "both" else 2,
        info={"mu": mu, "eta": eta},
    )
    # "px": the x-perturbed process (x, y); "py": the mirrored y-perturbed process (y, x)
    state = {p: (x, y) if p == "px" else (y, x) for p in _PROCESSES[side]}

    def step(s: dict, t: int) -> None:
        if "px" in s:
            s["px"] = asymp_gda_step(A, *s["px"], mu, eta)
        if "py" in s:
            s["py"] = asymp_gda_step(At, *s["py"], mu, eta)

    def report(s: dict) -> tuple[torch.Tensor, torch.Tensor]:
        if side == "x":
            return s["px"]
        if side == "y":
            return s["py"][1], s["py"][0]
        return s["px"][0], s["py"][0]

    return simulate(game, tr, state, step, iterations, record_every, report)


_PROCESSES = {"x": ("px",), "y": ("py",), "both": ("px", "py")}
