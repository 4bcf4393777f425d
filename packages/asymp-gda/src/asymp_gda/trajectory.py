"""Last-iterate trajectories of batched saddle-point solvers.

Every matrix-game solver of the package (AsymP-GDA and the baselines) runs
``B`` independent initialisations in one batch and returns a :class:`Trajectory`:
the final strategies plus the exploitability curves the paper plots (Fig. 2-4:
last-iterate exploitability against iterations, on a log scale).

- :func:`initial_strategies` -- uniform start (the paper's default) or
  Dirichlet(1) random starts, seeded.
- :class:`Trajectory` -- final ``x`` ``(B, m)``, ``y`` ``(B, n)`` and recorded curves ``(R, B)``.
- :class:`StartOptions` -- the keyword options every solver shares (batch, start, recording).
- :func:`simulate` -- the common loop: step a state ``T`` times, recording on a schedule.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

import torch

from .exploitability import exploitability_x, exploitability_y, nash_conv
from .matrix_game import MatrixGame

__all__ = [
    "Trajectory",
    "StartOptions",
    "initial_strategies",
    "check_step_size",
    "record_points",
    "simulate",
    "show_progress",
    "progress_bar",
]

_PROGRESS = {"on": False}


@contextlib.contextmanager
def show_progress(on: bool = True):
    """Within this block, every solver loop shows a tqdm bar (the CLI turns it on)."""
    old = _PROGRESS["on"]
    _PROGRESS["on"] = on
    try:
        yield
    finally:
        _PROGRESS["on"] = old


def progress_bar(total: int, desc: str):
    """A tqdm bar when :func:`show_progress` is on, else ``None``."""
    if not _PROGRESS["on"]:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="it", leave=False, mininterval=0.5)


class StartOptions(TypedDict, total=False):
    """Keyword options shared by every matrix-game solver.

    ``n_trials`` (batch size ``B``, default 1), ``init`` (``"uniform"``, the
    paper's default, or ``"random"``: seeded Dirichlet(1)), ``seed``, explicit
    starting points ``x0`` ``(m,)``/``(B, m)`` and ``y0``, and ``record_every``
    (record curves every this many iterations; default ~60 log-spaced points).
    """

    n_trials: int
    init: str
    seed: int
    x0: torch.Tensor | None
    y0: torch.Tensor | None
    record_every: int | None


def initial_strategies(
    game: MatrixGame,
    n_trials: int = 1,
    seed: int = 0,
    init: str = "uniform",
    x0: torch.Tensor | None = None,
    y0: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Batched starting points ``x (B, m)``, ``y (B, n)``.

    ``init="uniform"`` starts every trial at the simplex centre; ``"random"``
    draws Dirichlet(1) points from a seeded generator. Explicit ``x0``/``y0``
    (validated: shape and simplex) override either.
    """
    if n_trials < 1:
        raise ValueError(f"n_trials must be >= 1, got {n_trials}")
    m, n = game.shape
    if init == "uniform":
        x = torch.full((n_trials, m), 1.0 / m, dtype=torch.float64)
        y = torch.full((n_trials, n), 1.0 / n, dtype=torch.float64)
    elif init == "random":
        gen = torch.Generator().manual_seed(int(seed))
        ex = -torch.log(
            torch.rand(n_trials, m, generator=gen, dtype=torch.float64).clamp_min(1e-300)
        )
        ey = -torch.log(
            torch.rand(n_trials, n, generator=gen, dtype=torch.float64).clamp_min(1e-300)
        )
        x, y = ex / ex.sum(-1, keepdim=True), ey / ey.sum(-1, keepdim=True)
    else:
        raise ValueError(f"init must be 'uniform' or 'random', got {init!r}")
    cx, cy = game.check_strategies(x0, y0)
    if cx is not None:
        x = cx.expand(n_trials, m).clone() if cx.shape[0] == 1 else cx.clone()
    if cy is not None:
        y = cy.expand(n_trials, n).clone() if cy.shape[0] == 1 else cy.clone()
    if x.shape[0] != y.shape[0]:
        raise ValueError(
            f"x0 has {x.shape[0]} rows but y0 has {y.shape[0]}: batch sizes must match"
        )
    return x, y


def check_step_size(eta: float, game: MatrixGame, mu: float = 0.0, name: str = "eta") -> None:
    """Reject ``eta <= 0``; warn above the stability bound ``eta <= 1 / (||A||_2 + mu)``.

    The bound is the sufficient condition used throughout this package (the
    smoothness constant of the perturbed gradient operator is ``||A||_2 + mu``).
    """
    if not (isinstance(eta, (int, float)) and math.isfinite(eta)) or eta <= 0:
        raise ValueError(f"step size {name} must be a positive finite number, got {eta}")
    bound = 1.0 / (game.norm + mu)
    if eta > bound:
        warnings.warn(
            f"step size {name}={eta:g} is above the stability bound 1/(||A||_2 + mu) = {bound:.4g}; "
            "the iterates may diverge or cycle",
            RuntimeWarning,
            stacklevel=3,
        )


def record_points(iterations: int, every: int | None = None, n_log: int = 60) -> list[int]:
    """Iterations at which curves are recorded: ``0, every, 2 every, ...`` or ~``n_log`` log-spaced points."""
    if iterations < 0:
        raise ValueError(f"iterations must be >= 0, got {iterations}")
    if every:
        pts = list(range(0, iterations + 1, every))
    else:
        pts = sorted(
            {0, iterations}
            | {round(10 ** (k * math.log10(max(iterations, 1)) / n_log)) for k in range(n_log + 1)}
        )
    if pts[-1] != iterations:
        pts.append(iterations)
    return pts


@dataclass
class Trajectory:
    """Result of a batched solver run.

    Parameters
    ----------
    method:
        Solver name (``"AsymP-GDA"``, ``"OGDA"``, ...).
    x, y:
        Final (reported) strategies, shapes ``(B, m)`` and ``(B, n)``; the last
        iterate, except for MWU which reports its average iterate.
    steps:
        ``(R,)`` iteration counts at which the curves were recorded.
    updates_per_step:
        Strategy updates per iteration (2 for one alternating process, 4 for
        AsymP run on both sides, 2 more per extragradient half step).
    curves:
        ``{"expl_x", "expl_y", "nash_conv"}`` -> ``(R, B)`` tensors.
    info:
        Solver-specific extras (final ``mu`` of the parameter-free variant, ...).
    """

    method: str
    x: torch.Tensor
    y: torch.Tensor
    steps: list[int] = field(default_factory=list)
    updates_per_step: int = 2
    curves: dict[str, list[torch.Tensor]] = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    def record(self, game: MatrixGame, t: int, x: torch.Tensor, y: torch.Tensor) -> None:
        """Append the metrics of ``(x, y)`` at iteration ``t``."""
        self.steps.append(int(t))
        for key, val in (
            ("expl_x", exploitability_x(game, x)),
            ("expl_y", exploitability_y(game, y)),
            ("nash_conv", nash_conv(game, x, y)),
        ):
            self.curves.setdefault(key, []).append(val.clamp_min(0.0))

    def record_values(self, t: int, **values: torch.Tensor) -> None:
        """Append precomputed metrics (e.g. of an extensive-form game) at iteration ``t``."""
        self.steps.append(int(t))
        for key, val in values.items():
            self.curves.setdefault(key, []).append(
                torch.as_tensor(val, dtype=torch.float64).reshape(-1).clamp_min(0.0)
            )

    def curve(self, key: str = "nash_conv") -> torch.Tensor:
        """Recorded curve as an ``(R, B)`` tensor."""
        return torch.stack(self.curves[key])

    def final(self, key: str = "nash_conv") -> torch.Tensor:
        """Last recorded value per trial, ``(B,)``."""
        return self.curves[key][-1]


def simulate(
    game: MatrixGame,
    tr: Trajectory,
    state: dict,
    step: Callable[[dict, int], None],
    iterations: int,
    record_every: int | None = None,
    report: Callable[[dict], tuple[torch.Tensor, torch.Tensor]] | None = None,
) -> Trajectory:
    """Advance ``state`` with ``step(state, t)`` for ``t < iterations``, recording on a schedule.

    ``report(state)`` gives the ``(x, y)`` the curves are measured on (default
    ``state["x"], state["y"]``); it also sets the trajectory's final strategies.
    """
    report = report or (lambda s: (s["x"], s["y"]))
    points = record_points(iterations, record_every)
    nxt = 0
    bar = progress_bar(iterations, tr.method)
    for t in range(iterations + 1):
        if nxt < len(points) and t == points[nxt]:
            tr.record(game, t, *report(state))
            nxt += 1
        if t == iterations:
            break
        step(state, t)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    tr.x, tr.y = report(state)
    return tr
