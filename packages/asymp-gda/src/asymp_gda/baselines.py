"""The paper's baseline learning dynamics for matrix games, in the same batched API.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 6 (compared methods). All return a
:class:`~asymp_gda.trajectory.Trajectory` with last-iterate curves (MWU: average iterate).

- :func:`gda` -- projected gradient descent ascent (simultaneous, or alternating);
  cycles / spirals out on bilinear games.
- :func:`ogda` -- optimistic GDA, ``x^{t+1} = Pi(x^t - eta (2 g^t - g^{t-1}))``
  (Daskalakis et al. 2018; last-iterate rate: Wei et al. 2021).
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

import torch

from .asymp_gda import check_strength
from .matrix_game import MatrixGame, column_gradient, row_gradient
from .projection import project_simplex
from .trajectory import Trajectory, check_step_size, initial_strategies, record_points

__all__ = ["gda", "ogda", "extragradient", "mwu", "omwu", "symp_gda", "BASELINES"]


def _loop(
    game: MatrixGame,
    tr: Trajectory,
    state: dict,
    step: Callable[[dict, int], None],
    iterations: int,
    record_every: int | None,
    report: Callable[[dict], tuple[torch.Tensor, torch.Tensor]] = lambda s: (s["x"], s["y"]),
) -> Trajectory:
    points = record_points(iterations, record_every)
    nxt = 0
    for t in range(iterations + 1):
        if nxt < len(points) and t == points[nxt]:
            tr.record(game, t, *report(state))
            nxt += 1
        if t == iterations:
            break
        step(state, t)
    tr.x, tr.y = report(state)
    return tr


def _start(game, eta, n_trials, init, seed, x0, y0, mu=0.0):
    check_step_size(eta, game, mu)
    return initial_strategies(game, n_trials, seed, init, x0, y0)


def gda(
    game: MatrixGame,
    eta: float = 0.01,
    iterations: int = 10_000,
    alternating: bool = False,
    n_trials: int = 1,
    init: str = "uniform",
    seed: int = 0,
    x0=None,
    y0=None,
    record_every: int | None = None,
) -> Trajectory:
    """Projected gradient descent ascent; ``alternating=True`` lets y answer ``x^{t+1}``.

    Examples
    --------
    >>> from asymp_gda.matrix_game import biased_rps
    >>> float(gda(biased_rps(), iterations=2000).final()[0]) > 0.1  # no last-iterate convergence
    True
    """
    x, y = _start(game, eta, n_trials, init, seed, x0, y0)
    A = game.A

    def step(s, t):
        gx = row_gradient(A, s["y"])
        nx = project_simplex(s["x"] - eta * gx)
        gy = column_gradient(A, nx if alternating else s["x"])
        s["y"] = project_simplex(s["y"] + eta * gy)
        s["x"] = nx

    return _loop(game, Trajectory("GDA", x, y), {"x": x, "y": y}, step, iterations, record_every)


def ogda(
    game: MatrixGame,
    eta: float = 0.01,
    iterations: int = 10_000,
    n_trials: int = 1,
    init: str = "uniform",
    seed: int = 0,
    x0=None,
    y0=None,
    record_every: int | None = None,
) -> Trajectory:
    """Optimistic GDA with the previous gradient as the prediction."""
    x, y = _start(game, eta, n_trials, init, seed, x0, y0)
    A = game.A
    state = {"x": x, "y": y, "gx": row_gradient(A, y), "gy": column_gradient(A, x)}

    def step(s, t):
        gx, gy = row_gradient(A, s["y"]), column_gradient(A, s["x"])
        s["x"] = project_simplex(s["x"] - eta * (2 * gx - s["gx"]))
        s["y"] = project_simplex(s["y"] + eta * (2 * gy - s["gy"]))
        s["gx"], s["gy"] = gx, gy

    return _loop(game, Trajectory("OGDA", x, y), state, step, iterations, record_every)


def extragradient(
    game: MatrixGame,
    eta: float = 0.01,
    iterations: int = 10_000,
    n_trials: int = 1,
    init: str = "uniform",
    seed: int = 0,
    x0=None,
    y0=None,
    record_every: int | None = None,
) -> Trajectory:
    """Extragradient: a look-ahead step, then the real step with the look-ahead gradient."""
    x, y = _start(game, eta, n_trials, init, seed, x0, y0)
    A = game.A

    def step(s, t):
        xh = project_simplex(s["x"] - eta * row_gradient(A, s["y"]))
        yh = project_simplex(s["y"] + eta * column_gradient(A, s["x"]))
        s["x"] = project_simplex(s["x"] - eta * row_gradient(A, yh))
        s["y"] = project_simplex(s["y"] + eta * column_gradient(A, xh))

    tr = Trajectory("EG", x, y, updates_per_step=4)
    return _loop(game, tr, {"x": x, "y": y}, step, iterations, record_every)


def _softmax_step(p: torch.Tensor, g: torch.Tensor, eta: float) -> torch.Tensor:
    logits = torch.log(p.clamp_min(1e-300)) + eta * g
    return torch.softmax(logits, dim=-1)


def mwu(
    game: MatrixGame,
    eta: float = 0.01,
    iterations: int = 10_000,
    n_trials: int = 1,
    init: str = "uniform",
    seed: int = 0,
    x0=None,
    y0=None,
    record_every: int | None = None,
) -> Trajectory:
    """Multiplicative weights, simultaneous; reports the **average** iterate (its guarantee)."""
    x, y = _start(game, eta, n_trials, init, seed, x0, y0)
    A = game.A
    state = {"x": x, "y": y, "sx": x.clone(), "sy": y.clone(), "k": 1}

    def step(s, t):
        gx, gy = row_gradient(A, s["y"]), column_gradient(A, s["x"])
        s["x"], s["y"] = _softmax_step(s["x"], -gx, eta), _softmax_step(s["y"], gy, eta)
        s["sx"] += s["x"]
        s["sy"] += s["y"]
        s["k"] += 1

    tr = Trajectory("MWU (avg)", x, y)
    return _loop(
        game,
        tr,
        state,
        step,
        iterations,
        record_every,
        lambda s: (s["sx"] / s["k"], s["sy"] / s["k"]),
    )


def omwu(
    game: MatrixGame,
    eta: float = 0.01,
    iterations: int = 10_000,
    n_trials: int = 1,
    init: str = "uniform",
    seed: int = 0,
    x0=None,
    y0=None,
    record_every: int | None = None,
) -> Trajectory:
    """Optimistic multiplicative weights (last iterate)."""
    x, y = _start(game, eta, n_trials, init, seed, x0, y0)
    A = game.A
    state = {"x": x, "y": y, "gx": row_gradient(A, y), "gy": column_gradient(A, x)}

    def step(s, t):
        gx, gy = row_gradient(A, s["y"]), column_gradient(A, s["x"])
        s["x"] = _softmax_step(s["x"], -(2 * gx - s["gx"]), eta)
        s["y"] = _softmax_step(s["y"], 2 * gy - s["gy"], eta)
        s["gx"], s["gy"] = gx, gy

    return _loop(game, Trajectory("OMWU", x, y), state, step, iterations, record_every)


def symp_gda(
    game: MatrixGame,
    mu: float = 1.0,
    eta: float = 0.01,
    iterations: int = 10_000,
    schedule: str = "fixed",
    halve_every: int = 2_000,
    n_trials: int = 1,
    init: str = "uniform",
    seed: int = 0,
    x0=None,
    y0=None,
    record_every: int | None = None,
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
    x, y = _start(game, eta, n_trials, init, seed, x0, y0, mu)
    A = game.A

    def step(s, t):
        m = mu if schedule == "fixed" else mu * 0.5 ** (t // halve_every)
        s["x"] = project_simplex(s["x"] - eta * (row_gradient(A, s["y"]) + m * s["x"]))
        s["y"] = project_simplex(s["y"] + eta * (column_gradient(A, s["x"]) - m * s["y"]))

    name = f"SymP-GDA ({schedule})"
    tr = Trajectory(name, x, y, info={"mu": mu, "schedule": schedule})
    return _loop(game, tr, {"x": x, "y": y}, step, iterations, record_every)


BASELINES = {
    "gda": gda,
    "ogda": ogda,
    "eg": extragradient,
    "mwu": mwu,
    "omwu": omwu,
    "symp_gda": symp_gda,
}
