"""AsymP-DGDA: asymmetrically perturbed *dilated* GDA for extensive-form games.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 6 (extensive-form games).

In sequence form the Euclidean proximal and perturbation terms of AsymP-GDA are
replaced by the dilated Euclidean regulariser ``psi`` of the treeplex
(:mod:`asymp_gda.sequence_form`). With Bregman divergence ``D_psi``:

    x^{t+1} = argmin_{x in X} eta <A y^t, x> + eta mu psi(x) + D_psi(x, x^t)
            = argmin_x <c, x> + psi(x),   c = (eta A y^t - grad psi(x^t)) / (1 + eta mu)
    y^{t+1} = argmin_{y in Y} -eta <A^T x^{t+1}, y> + D_psi(y, y^t)

Each argmin is one simplex projection per infoset, bottom-up
(:meth:`~asymp_gda.sequence_form.Treeplex.dilated_prox`). The paper gives no global
convergence proof here (the dilated regulariser's smoothness degrades near the
boundary); we report measured behaviour. ``mu = 0`` gives plain dilated GDA (DGDA).

- :func:`asymp_dgda` -- the solver (``side="x" | "y" | "both"``), last iterate;

The baselines are in :mod:`asymp_gda.dilated_baselines` (DOGDA, DOMWU, DMWU) and
:mod:`asymp_gda.cfr_anchors` (OpenSpiel's CFR+, DCFR, LCFR); the comparison table in
:mod:`asymp_gda.extensive_form`.
"""

from __future__ import annotations

import math

from .sequence_form import SequenceFormGame
from .trajectory import Trajectory, progress_bar, record_points

__all__ = ["asymp_dgda", "asymp_dgda_step"]


def asymp_dgda_step(game: SequenceFormGame, bx, by, mu: float, eta: float, perturb: str = "x"):
    """One alternating step on behavioural strategies ``bx (B, n_x)``, ``by (B, n_y)``.

    ``perturb="x"``: x moves first with the perturbation; ``"y"``: the mirror
    (y moves first, perturbed). Returns the new ``(bx, by)``.
    """
    A, tx, ty = game.A, game.tx, game.ty
    if perturb == "x":
        gx = ty.realization(by) @ A.T  # (B, n_x) loss gradient of x
        bx = tx.dilated_prox((eta * gx - tx.dilated_gradient(bx)) / (1.0 + eta * mu))
        gy = tx.realization(bx) @ A  # (B, n_y) gain gradient of y
        by = ty.dilated_prox(-eta * gy - ty.dilated_gradient(by))
    else:
        gy = tx.realization(bx) @ A
        by = ty.dilated_prox((-eta * gy - ty.dilated_gradient(by)) / (1.0 + eta * mu))
        gx = ty.realization(by) @ A.T
        bx = tx.dilated_prox(eta * gx - tx.dilated_gradient(bx))
    return bx, by


def asymp_dgda(
    game: SequenceFormGame,
    mu: float = 0.1,
    eta: float = 0.1,
    iterations: int = 1_000,
    side: str = "both",
    record_every: int | None = None,
) -> Trajectory:
    """Run AsymP-DGDA from the uniform strategy; curves of the last iterate.

    Parameters
    ----------
    game:
        A :class:`~asymp_gda.sequence_form.SequenceFormGame`.
    mu:
        Perturbation strength (``>= 0``; 0 gives unperturbed dilated GDA).
    eta:
        Step size ``> 0``.
    iterations:
        Iterations ``T``.
    side:
        ``"x"``, ``"y"``, or ``"both"`` (two mirrored processes: x from the
        x-perturbed one, y from the y-perturbed one; 4 strategy updates per iteration).

    Returns
    -------
    Trajectory
        Behavioural strategies ``x (1, n_x)``, ``y (1, n_y)``; curves
        ``expl_x``, ``expl_y``, ``nash_conv``.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspiel")
    >>> g = SequenceFormGame.from_openspiel("kuhn_poker")
    >>> tr = asymp_dgda(g, mu=0.1, eta=0.5, iterations=300)
    >>> float(tr.final("nash_conv")[0]) < float(tr.curve("nash_conv")[0, 0])
    True
    """
    if not (math.isfinite(mu) and mu >= 0):
        raise ValueError(f"perturbation strength mu must be >= 0 and finite, got {mu}")
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"step size eta must be > 0, got {eta}")
    if side not in ("x", "y", "both"):
        raise ValueError(f"side must be 'x', 'y' or 'both', got {side!r}")
    name = "DGDA" if mu == 0 else f"AsymP-DGDA ({side})"
    bx0, by0 = game.tx.uniform(), game.ty.uniform()
    tr = Trajectory(
        name, bx0, by0, updates_per_step=4 if side == "both" else 2, info={"mu": mu, "eta": eta}
    )
    procs = {"x": ["x"], "y": ["y"], "both": ["x", "y"]}[side]
    state = {p: (bx0.clone(), by0.clone()) for p in procs}
    points = record_points(iterations, record_every)
    nxt = 0
    bar = progress_bar(iterations, tr.method)
    for t in range(iterations + 1):
        if nxt < len(points) and t == points[nxt]:
            bx = state["x"][0] if "x" in state else state["y"][0]
            by = state["y"][1] if "y" in state else state["x"][1]
            tr.record_values(
                t,
                expl_x=game.exploitability_x(bx),
                expl_y=game.exploitability_y(by),
                nash_conv=game.nash_conv(bx, by),
            )
            nxt += 1
        if t == iterations:
            break
        for p in procs:
            state[p] = asymp_dgda_step(game, *state[p], mu, eta, perturb=p)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    tr.x = state["x"][0] if "x" in state else state["y"][0]
    tr.y = state["y"][1] if "y" in state else state["x"][1]
    return tr
