"""The paper's baseline learning dynamics for matrix games, in the same batched API.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 6 (compared methods). All return a
:class:`~asymp_gda.trajectory.Trajectory` with last-iterate curves (MWU: average
iterate) and take the shared :class:`~asymp_gda.trajectory.StartOptions`.

Each method is one *geometry* (a "move" ``p, g -> p'`` ascending the gain ``g``)
combined with one *scheme*:

- Euclidean move ``Pi_Delta(p + eta g)`` (:func:`projected_move`) and entropic
  move ``p exp(eta g) / Z`` (:func:`entropic_move`);
- simultaneous / alternating GDA, ``z^{t+1} = move(z^t, g(z^t))``;
- optimistic, ``z^{t+1} = move(z^t, 2 g(z^t) - g(z^{t-1}))``;
- extragradient, a look-ahead ``z^{t+1/2} = move(z^t, g(z^t))`` then
  ``z^{t+1} = move(z^t, g(z^{t+1/2}))``.

Functions:

- :func:`gda` -- projected GDA (simultaneous, or ``alternating``); cycles on bilinear games.
- :func:`ogda` -- optimistic GDA (Daskalakis et al. 2018; last-iterate rate: Wei et al. 2021).
- :func:`extragradient` -- Korpelevich's extragradient (2 gradient calls per step).
- :func:`mwu` -- multiplicative weights (Freund & Schapire 1999), average iterate.
- :func:`omwu` -- optimistic MWU (Daskalakis & Panageas 2019; Wei et al. 2021).
- :func:`symp_gda` -- *symmetric* perturbation: both players regularised with
  strength ``mu`` (fixed, which converges to a shifted point, or halved every
  ``halve_every`` iterations, in the spirit of Liu et al. 2023's decreasing
  perturbation).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Unpack

import torch

from .asymp_gda import check_strength
from .matrix_game import MatrixGame, column_gradient, row_gradient
from .projection import project_simplex
from .trajectory import StartOptions, Trajectory, check_step_size, initial_strategies, simulate

__all__ = [
    "gda",
    "ogda",
    "extragradient",
    "mwu",
    "omwu",
    "symp_gda",
    "projected_move",
    "entropic_move",
    "BASELINES",
]

Move = Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]


def projected_move(p: torch.Tensor, gain: torch.Tensor, eta: float) -> torch.Tensor:
    """Euclidean step ``Pi_Delta(p + eta gain)`` (rows of ``p``: strategies)."""
    return project_simplex(p + eta * gain)


def entropic_move(p: torch.Tensor, gain: torch.Tensor, eta: float) -> torch.Tensor:
    """Multiplicative-weights step ``p exp(eta gain) / Z``."""
    return torch.softmax(torch.log(p.clamp_min(1e-300)) + eta * gain, dim=-1)


def _gains(A: torch.Tensor, s: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Gains of both players at ``(s["x"], s["y"])``: ``-A y`` for x (a minimiser), ``A^T x`` for y."""
    return -row_gradient(A, s["y"]), column_gradient(A, s["x"])


def _run(
    name: str,
    game: MatrixGame,
    eta: float,
    iterations: int,
    step: Callable[[dict, int], None],
    start: StartOptions,
    mu: float = 0.0,
    extra: Callable[[torch.Tensor, torch.Tensor], dict] | None = None,
    report: Callable[[dict], tuple[torch.Tensor, torch.Tensor]] | None = None,
    updates_per_step: int = 2,
    info: dict | None = None,
) -> Trajectory:
    opts = dict(start)
    record_every = opts.pop("record_every", None)
    check_step_size(eta, game, mu)
    x, y = initial_strategies(game, **opts)
    state = {"x": x, "y": y, **(extra(x, y) if extra else {})}
    tr = Trajectory(name, x, y, updates_per_step=updates_per_step, info=info or {})
    return simulate(game, tr, state, step, iterations, record_every, report)


def _plain(A: torch.Tensor, eta: float, move: Move, alternating: bool = False):
    def step(s: dict, t: int) -> None:
        gx, gy = _gains(A, s)
        nx = move(s["x"], gx, eta)
        if alternating:
            gy = column_gradient(A, nx)
        s["x"], s["y"] = nx, move(s["y"], gy, eta)

    return step


def _optimistic(A: torch.Tensor, eta: float, move: Move):
    def step(s: dict, t: int) -> None:
        gx, gy = _gains(A, s)
        s["x"] = move(s["x"], 2 * gx - s["gx"], eta)
        s["y"] = move(s["y"], 2 * gy - s["gy"], eta)
        s["gx"], s["gy"] = gx, gy

    return step


def _previous_gains(A: torch.Tensor):
    return lambda x, y: dict(zip(("gx", "gy"), _gains(A, {"x": x, "y": y}), strict=True))


def gda(
    game: MatrixGame,
    eta: float = 0.01,
    iterations: int = 10_000,
    alternating: bool = False,
    **start: Unpack[StartOptions],
) -> Trajectory:
    """Projected gradient descent ascent; ``alternating=True`` lets y answer ``x^{t+1}``.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> float(gda(biased_rps(), iterations=2000).final()[0]) > 0.1  # no last-iterate convergence
    True
    """
    step = _plain(game.A, eta, projected_move, alternating)
    return _run("GDA", game, eta, iterations, step, start)


def ogda(
    game: MatrixGame, eta: float = 0.01, iterations: int = 10_000, **start: Unpack[StartOptions]
) -> Trajectory:
    """Optimistic GDA with the previous gradient as the prediction.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> float(ogda(biased_rps(), eta=0.1, iterations=3000).final()[0]) < 1e-8
    True
    """
    step = _optimistic(game.A, eta, projected_move)
    return _run("OGDA", game, eta, iterations, step, start, extra=_previous_gains(game.A))


def extragradient(
    game: MatrixGame, eta: float = 0.01, iterations: int = 10_000, **start: Unpack[StartOptions]
) -> Trajectory:
    """Extragradient: a look-ahead step, then the real step with the look-ahead gradient."""
    A = game.A

    def step(s: dict, t: int) -> None:
        gx, gy = _gains(A, s)
        half = {"x": projected_move(s["x"], gx, eta), "y": projected_move(s["y"], gy, eta)}
        hx, hy = _gains(A, half)
        s["x"], s["y"] = projected_move(s["x"], hx, eta), projected_move(s["y"], hy, eta)

    return _run("EG", game, eta, iterations, step, start, updates_per_step=4)


def mwu(
    game: MatrixGame, eta: float = 0.01, iterations: int = 10_000, **start: Unpack[StartOptions]
) -> Trajectory:
    """Multiplicative weights, simultaneous; reports the **average** iterate (its guarantee)."""
    plain = _plain(game.A, eta, entropic_move)

    def step(s: dict, t: int) -> None:
        plain(s, t)
        s["sx"] += s["x"]
        s["sy"] += s["y"]
        s["k"] += 1

    return _run(
        "MWU (avg)",
        game,
        eta,
        iterations,
        step,
        start,
        extra=lambda x, y: {"sx": x.clone(), "sy": y.clone(), "k": 1},
        report=lambda s: (s["sx"] / s["k"], s["sy"] / s["k"]),
    )


def omwu(
    game: MatrixGame, eta: float = 0.01, iterations: int = 10_000, **start: Unpack[StartOptions]
) -> Trajectory:
    """Optimistic multiplicative weights (last iterate)."""
    step = _optimistic(game.A, eta, entropic_move)
    return _run("OMWU", game, eta, iterations, step, start, extra=_previous_gains(game.A))


def symp_gda(
    game: MatrixGame,
    mu: float = 1.0,
    eta: float = 0.01,
    iterations: int = 10_000,
    schedule: str = "fixed",
    halve_every: int = 2_000,
    **start: Unpack[StartOptions],
) -> Trajectory:
    """Symmetrically perturbed GDA: both players regularised, alternating steps.

    ``schedule="fixed"`` keeps ``mu`` (converges to the perturbed, *shifted*
    equilibrium); ``"halving"`` halves ``mu`` every ``halve_every`` iterations.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> round(float(symp_gda(biased_rps(), mu=1.0, iterations=5000).final()[0]), 3)  # stalls
    0.286
    """
    mu = check_strength(mu)
    if schedule not in ("fixed", "halving"):
        raise ValueError(f"schedule must be 'fixed' or 'halving', got {schedule!r}")
    if schedule == "halving" and halve_every < 1:
        raise ValueError(f"halve_every must be >= 1, got {halve_every}")
    A = game.A

    def step(s: dict, t: int) -> None:
        m = mu if schedule == "fixed" else mu * 0.5 ** (t // halve_every)
        s["x"] = projected_move(s["x"], -(row_gradient(A, s["y"]) + m * s["x"]), eta)
        s["y"] = projected_move(s["y"], column_gradient(A, s["x"]) - m * s["y"], eta)

    info = {"mu": mu, "schedule": schedule}
    return _run(f"SymP-GDA ({schedule})", game, eta, iterations, step, start, mu=mu, info=info)


BASELINES = {
    "gda": gda,
    "ogda": ogda,
    "eg": extragradient,
    "mwu": mwu,
    "omwu": omwu,
    "symp_gda": symp_gda,
}
