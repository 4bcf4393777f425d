"""OpenSpiel's counterfactual-regret solvers as anchors: CFR+, DCFR, LCFR (average iterate).

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 6 (AsymP-DGDA's last iterate against CFR, CFR+, DCFR and
LCFR). We run OpenSpiel's own solvers -- never our re-implementation:

- ``"CFR+"``: ``pyspiel.CFRPlusSolver`` (C++; Tammelin 2014);
- ``"DCFR"``: ``open_spiel.python.algorithms.discounted_cfr.DCFRSolver`` (alpha = 3/2,
  beta = 0, gamma = 2; Brown & Sandholm 2019);
- ``"LCFR"``: ``...discounted_cfr.LCFRSolver`` (linear CFR, Brown & Sandholm 2019).

NashConv of the *average* policy is OpenSpiel's ``exploitability.nash_conv``. CFR
alternates the players: 2 strategy updates per iteration.

- :func:`cfr_anchor` -- one solver, recorded on a log schedule.
"""

from __future__ import annotations

from .sequence_form import SequenceFormGame
from .trajectory import Trajectory, record_points

__all__ = ["CFR_VARIANTS", "cfr_anchor", "cfr_plus"]

CFR_VARIANTS = ("CFR+", "DCFR", "LCFR")


def _solver(game, variant: str):
    import pyspiel
    from open_spiel.python.algorithms import discounted_cfr

    if variant == "CFR+":
        return pyspiel.CFRPlusSolver(game)
    if variant == "DCFR":
        return discounted_cfr.DCFRSolver(game)
    if variant == "LCFR":
        return discounted_cfr.LCFRSolver(game)
    raise ValueError(f"variant must be one of {CFR_VARIANTS}, got {variant!r}")


def cfr_anchor(
    game: SequenceFormGame, variant: str = "CFR+", iterations: int = 1_000,
    record_every: int | None = None, progress: bool = False,
) -> Trajectory:  # fmt: skip
    """Run an OpenSpiel CFR variant; NashConv of the average policy on a log schedule.

    Parameters
    ----------
    game:
        A :class:`~asymp_gda.sequence_form.SequenceFormGame` built from OpenSpiel.
    variant:
        ``"CFR+"``, ``"DCFR"`` or ``"LCFR"``.
    iterations:
        CFR iterations.
    record_every:
        Recording period (default ~60 log-spaced points).
    progress:
        tqdm bar.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspiel")
    >>> g = SequenceFormGame.from_openspiel("kuhn_poker")
    >>> float(cfr_anchor(g, "CFR+", iterations=100).final()[0]) < 0.01
    True
    """
    if game.openspiel is None:
        raise ValueError("cfr_anchor needs a game built with SequenceFormGame.from_openspiel")
    from open_spiel.python.algorithms import exploitability

    solver = _solver(game.openspiel, variant)
    tr = Trajectory(f"{variant} (avg)", game.tx.uniform(), game.ty.uniform())
    points = [p for p in record_points(iterations, record_every) if p > 0]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=iterations, desc=variant, unit="it", leave=False)
    done = 0
    for p in points:
        for _ in range(p - done):
            solver.evaluate_and_update_policy()
        if bar is not None:
            bar.update(p - done)
        done = p
        tr.record_values(
            p, nash_conv=exploitability.nash_conv(game.openspiel, solver.average_policy())
        )
    if bar is not None:
        bar.close()
    tr.info["policy"] = solver.average_policy()
    return tr


def cfr_plus(game: SequenceFormGame, iterations: int = 1_000, record_every: int | None = None):
    """OpenSpiel's C++ CFR+ (``cfr_anchor(game, "CFR+", ...)``)."""
    return cfr_anchor(game, "CFR+", iterations, record_every)
