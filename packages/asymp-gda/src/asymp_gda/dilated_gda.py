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
- :func:`dilated_perturbed_gap` -- the duality gap of the perturbed game (dilated proxes);
- :func:`parameter_free_dgda` -- Alg. 1 in sequence form: halve ``mu`` until the pair's
  NashConv, certified by the iterates' best-response values (no LP), is ``<= eps``;

The baselines are in :mod:`asymp_gda.dilated_baselines` (DOGDA, DOMWU, DMWU) and
:mod:`asymp_gda.cfr_anchors` (OpenSpiel's CFR+, DCFR, LCFR); the comparison table in
:mod:`asymp_gda.extensive_form`.
"""

from __future__ import annotations

import math

from .sequence_form import SequenceFormGame
from .trajectory import Trajectory, progress_bar, record_points

__all__ = ["asymp_dgda", "asymp_dgda_step", "dilated_perturbed_gap", "parameter_free_dgda"]


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


def dilated_perturbed_gap(game: SequenceFormGame, bx, by, mu: float, perturb: str = "x"):
    """Duality gap of the ``mu``-perturbed sequence-form game at ``(bx, by)``, ``(B,)``.

    ``perturb="x"``: ``f(x, y) = x^T A y + mu psi_X(x)``; ``"y"``: ``x^T A y - mu psi_Y(y)``.
    The perturbed best responses are dilated proxes (:meth:`Treeplex.dilated_prox`), so the
    gap needs no LP; it is 0 exactly at the perturbed saddle point.
    """
    A, tx, ty = game.A, game.tx, game.ty
    x, y = tx.realization(bx), ty.realization(by)
    if perturb == "x":
        upper = -ty.best_response(-(x @ A)) + mu * tx.dilated_value(bx)
        c = (y @ A.T) / mu
        br = tx.dilated_prox(c)
        lower = mu * ((tx.realization(br) * c).sum(-1) + tx.dilated_value(br))
    else:
        lower = tx.best_response(y @ A.T) - mu * ty.dilated_value(by)
        c = -(x @ A) / mu
        br = ty.dilated_prox(c)
        upper = -mu * ((ty.realization(br) * c).sum(-1) + ty.dilated_value(br))
    return upper - lower


def parameter_free_dgda(
    game: SequenceFormGame,
    eps: float = 1e-3,
    mu_init: float = 0.05,
    eta: float = 3.0,
    iterations: int = 10_000,
    check_every: int = 20,
    gap_ratio: float = 0.1,
) -> Trajectory:
    """Parameter-free AsymP-DGDA: Alg. 1 in sequence form, LP-free, last iterate.

    Both mirrored AsymP-DGDA processes (:func:`asymp_dgda_step`) run from the uniform
    strategy with strengths ``mu_x``, ``mu_y`` (start ``mu_init``). Every ``check_every``
    iterations the best pair so far is certified exactly from the iterates' value bounds
    ``U = min max_y x^T A y`` and ``L = max min_x x^T A y`` (sequence-form best responses;
    NashConv of the pair = ``U - L``, no LP), the run stops once ``U - L <= eps``
    (Alg. 1, step 2), and a process whose perturbed gap (:func:`dilated_perturbed_gap`) is
    ``<= gap_ratio * (U - L)`` has its ``mu`` halved (step 3), in lockstep with the other
    (a process halves only when its ``mu`` is not below the other's), as in
    :func:`asymp_gda.parameter_free.parameter_free`. The gap test is our heuristic (the paper
    states Alg. 1 with the game value); it can only cost iterations, never make the reported
    NashConv wrong.

    Parameters
    ----------
    game:
        A :class:`~asymp_gda.sequence_form.SequenceFormGame`.
    eps:
        Target NashConv of the returned pair.
    mu_init:
        Initial strength of both processes (``> 0``).
    eta:
        Step size (``> 0``).
    iterations:
        Budget in iterations of both processes (4 strategy updates each).
    check_every:
        Iterations between certificate / gap checks.
    gap_ratio:
        Halve a process's ``mu`` when its perturbed gap is below this fraction of the
        certified NashConv.

    Returns
    -------
    Trajectory
        Best certified pair ``x``, ``y`` (behavioural); curves ``nash_conv`` (certified, of
        the best pair), ``mu_x``, ``mu_y`` at every check; ``info["converged"]``.

    References
    ----------
    Abe et al. (ICML 2026), Alg. 1 and Sec. 6 (AsymP-DGDA).

    Examples
    --------
    >>> import pytest
    >>> _ = pytest.importorskip("pyspiel")
    >>> g = SequenceFormGame.from_openspiel("kuhn_poker")
    >>> tr = parameter_free_dgda(g, eps=1e-4, iterations=2000)
    >>> tr.info["converged"], float(tr.final("nash_conv")[0]) <= 1e-4
    (True, True)
    >>> abs(float(g.nash_conv(tr.x, tr.y)[0] - tr.final("nash_conv")[0])) < 1e-12  # exact
    True
    """
    for val, what in ((eps, "eps"), (mu_init, "mu_init"), (eta, "eta"), (gap_ratio, "gap_ratio")):
        if not (math.isfinite(val) and val > 0):
            raise ValueError(f"{what} must be > 0 and finite, got {val}")
    if iterations < 0 or check_every < 1:
        raise ValueError("iterations must be >= 0 and check_every >= 1")
    A, tx, ty = game.A, game.tx, game.ty
    bx0, by0 = tx.uniform(), ty.uniform()
    tr = Trajectory(
        "param-free AsymP-DGDA", bx0, by0, updates_per_step=4,
        info={"mu_init": mu_init, "eta": eta, "eps": eps},
    )  # fmt: skip
    state = {"x": (bx0.clone(), by0.clone()), "y": (bx0.clone(), by0.clone())}
    mu = {"x": float(mu_init), "y": float(mu_init)}

    def bounds(bx, by):
        upper = -ty.best_response(-(tx.realization(bx) @ A))  # max_y x^T A y >= v*
        return upper, tx.best_response(ty.realization(by) @ A.T)  # min_x x^T A y <= v*

    best_x, best_y = bx0.clone(), by0.clone()
    upper, lower = bounds(bx0, by0)
    nc = float((upper - lower)[0])
    tr.record_values(0, nash_conv=nc, mu_x=mu["x"], mu_y=mu["y"])
    t = 0
    bar = progress_bar(iterations, tr.method)
    while t < iterations and nc > eps:
        k = min(check_every, iterations - t)
        for _ in range(k):
            for p in ("x", "y"):
                state[p] = asymp_dgda_step(game, *state[p], mu[p], eta, perturb=p)
        t += k
        for p in ("x", "y"):  # either process's x and y may improve a bound
            u, low = bounds(*state[p])
            if float(u[0]) < float(upper[0]):
                upper, best_x = u, state[p][0].clone()
            if float(low[0]) > float(lower[0]):
                lower, best_y = low, state[p][1].clone()
        nc = float((upper - lower)[0])  # Alg. 1, step 2: exact NashConv of the best pair
        if nc > eps:  # step 3: halve a converged process, in lockstep
            gaps = {p: float(dilated_perturbed_gap(game, *state[p], mu[p], p)[0]) for p in "xy"}
            halve = [p for p, q in (("x", "y"), ("y", "x"))
                     if gaps[p] <= gap_ratio * nc and mu[p] >= mu[q]]  # fmt: skip
            for p in halve:
                mu[p] *= 0.5
        tr.record_values(t, nash_conv=nc, mu_x=mu["x"], mu_y=mu["y"])
        if bar is not None:
            bar.n = t
            bar.set_postfix(nash_conv=f"{nc:.2e}", refresh=False)
            bar.update(0)
    if bar is not None:
        bar.close()
    tr.x, tr.y = best_x, best_y
    tr.info.update(converged=nc <= eps, mu_x=mu["x"], mu_y=mu["y"], iterations=t)
    return tr
