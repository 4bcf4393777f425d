"""The paper's dilated last-iterate baselines for extensive-form games: DOGDA, DOMWU, DMWU.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 6 (extensive-form games: AsymP-DGDA against DGDA, DOGDA,
DMWU and DOMWU). In sequence form each method is a mirror-descent step with a *dilated*
regulariser ``psi`` (:class:`~asymp_gda.sequence_form.Treeplex`):

    x^{t+1} = argmin_{x in X} <eta g, x> + D_psi(x, x^t) = prox(eta g - grad psi(x^t))

with ``g = A y^t`` (plain, simultaneous) or ``g = 2 A y^t - A y^{t-1}`` (optimistic, the
single-sequence form of Daskalakis et al. 2018 / Lee, Kroer & Luo 2021), and the same for
y with ``-A^T x``. The Euclidean dilated regulariser gives DGDA / DOGDA, the dilated
entropy DMWU / DOMWU. All report the **last iterate**, uniform start.

- :func:`dilated_mirror_descent` -- the solver, ``method`` in :data:`DILATED_METHODS`.
"""

from __future__ import annotations

import math

from .sequence_form import SequenceFormGame
from .trajectory import Trajectory, progress_bar, record_points

__all__ = ["DILATED_METHODS", "dilated_mirror_descent"]

DILATED_METHODS = ("DGDA", "DOGDA", "DMWU", "DOMWU")


def _geometry(tp, entropic: bool):
    if entropic:
        return tp.entropy_gradient, tp.entropy_prox
    return tp.dilated_gradient, tp.dilated_prox


def dilated_mirror_descent(
    game: SequenceFormGame,
    method: str = "DOGDA",
    eta: float = 0.1,
    iterations: int = 1_000,
    record_every: int | None = None,
) -> Trajectory:
    """Run DGDA, DOGDA, DMWU or DOMWU (simultaneous, last iterate) from the uniform strategy.

    Parameters
    ----------
    game:
        A :class:`~asymp_gda.sequence_form.SequenceFormGame`.
    method:
        One of :data:`DILATED_METHODS`.
    eta:
        Step size ``> 0``.
    iterations:
        Iterations ``T`` (2 strategy updates and 2 gradient evaluations each).
    record_every:
        Recording period (default ~60 log-spaced points).

    Returns
    -------
    Trajectory
        Behavioural ``x (1, n_x)``, ``y (1, n_y)``; curves ``expl_x``, ``expl_y``, ``nash_conv``.

    References
    ----------
    Lee, Kroer & Luo, "Last-iterate convergence in extensive-form games", NeurIPS 2021.

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspiel")
    >>> g = SequenceFormGame.from_openspiel("kuhn_poker")
    >>> tr = dilated_mirror_descent(g, "DOGDA", eta=0.5, iterations=200)
    >>> float(tr.final("nash_conv")[0]) < float(tr.curve("nash_conv")[0, 0])
    True
    """
    if method not in DILATED_METHODS:
        raise ValueError(f"method must be one of {DILATED_METHODS}, got {method!r}")
    if not (math.isfinite(eta) and eta > 0):
        raise ValueError(f"step size eta must be > 0, got {eta}")
    A, tx, ty = game.A, game.tx, game.ty
    entropic, optimistic = "MWU" in method, method.startswith("DO")
    gradx, proxx = _geometry(tx, entropic)
    grady, proxy = _geometry(ty, entropic)
    bx, by = tx.uniform(), ty.uniform()
    tr = Trajectory(method, bx, by, updates_per_step=2, info={"eta": eta})
    prev = None
    points, nxt = record_points(iterations, record_every), 0
    bar = progress_bar(iterations, tr.method)
    for t in range(iterations + 1):
        if nxt < len(points) and t == points[nxt]:
            tr.record_values(
                t,
                expl_x=game.exploitability_x(bx),
                expl_y=game.exploitability_y(by),
                nash_conv=game.nash_conv(bx, by),
            )
            nxt += 1
        if t == iterations:
            break
        gx = ty.realization(by) @ A.T  # x's loss gradient
        gy = -(tx.realization(bx) @ A)  # y's loss gradient
        cx, cy = gx, gy
        if optimistic and prev is not None:
            cx, cy = 2 * gx - prev[0], 2 * gy - prev[1]
        prev = (gx, gy)
        bx, by = proxx(eta * cx - gradx(bx)), proxy(eta * cy - grady(by))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    tr.x, tr.y = bx, by
    return tr
