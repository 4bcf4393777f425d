"""AsymP-DGDA: asymmetrically perturbed *dilated* GDA for extensive-form games, and CFR+.

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
- :func:`cfr_plus` -- OpenSpiel's C++ CFR+ (average iterate), the anchor;
- :func:`extensive_form_table` -- both against CFR+ on OpenSpiel games (Fig. 4-5).
"""

from __future__ import annotations

import math

from .sequence_form import SequenceFormGame
from .trajectory import Trajectory, record_points

__all__ = ["asymp_dgda", "asymp_dgda_step", "cfr_plus", "extensive_form_table"]


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
    tr.x = state["x"][0] if "x" in state else state["y"][0]
    tr.y = state["y"][1] if "y" in state else state["x"][1]
    return tr


def cfr_plus(
    game: SequenceFormGame, iterations: int = 1_000, record_every: int | None = None
) -> Trajectory:
    """OpenSpiel's C++ CFR+ (``pyspiel.CFRPlusSolver``); NashConv of the **average** policy.

    Measured with OpenSpiel's own ``exploitability.nash_conv`` (2 strategy
    updates per iteration: CFR+ alternates the players).
    """
    if game.openspiel is None:
        raise ValueError("cfr_plus needs a game built with SequenceFormGame.from_openspiel")
    import pyspiel
    from open_spiel.python.algorithms import exploitability

    solver = pyspiel.CFRPlusSolver(game.openspiel)
    tr = Trajectory("CFR+ (avg)", game.tx.uniform(), game.ty.uniform())
    points = [p for p in record_points(iterations, record_every) if p > 0]
    done = 0
    for p in points:
        for _ in range(p - done):
            solver.evaluate_and_update_policy()
        done = p
        tr.record_values(
            p, nash_conv=exploitability.nash_conv(game.openspiel, solver.average_policy())
        )
    return tr


def extensive_form_table(games: list[dict]):
    """Last-iterate AsymP-DGDA and DGDA against CFR+'s average iterate on OpenSpiel games.

    Args:
        games: ``[{"game": OpenSpiel name, "iterations": T, "mu": strength, "eta": step}]``;
            AsymP-DGDA runs ``T`` iterations of both mirrored processes, DGDA and CFR+
            ``2 T`` (the same number of strategy updates).

    Returns:
        ``(table, figure)``, or ``None`` when OpenSpiel is not installed (the ``bench`` extra).
    """
    try:
        import pyspiel  # noqa: F401
    except ImportError:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from icml26_shared.results import Table
    from open_spiel.python.algorithms import exploitability

    table = Table(
        "Extensive-form games: last-iterate AsymP-DGDA vs CFR+ average iterate",
        ["game", "method", "updates", "NashConv @ 1/10", "NashConv", "NashConv (OpenSpiel)"],
        notes=(
            "AsymP-DGDA: dilated Euclidean regulariser, strength mu and step size eta as listed "
            "(chosen by us: Kuhn mu = 0.02, Leduc mu = 0.003, eta = 3), both mirrored processes (4 strategy updates per iteration), uniform start; DGDA is "
            "the same with mu = 0 (one process). CFR+ (OpenSpiel C++, alternating, 2 updates "
            "per iteration) gets the same number of strategy updates. NashConv is the "
            "package's sequence-form best response; the last column re-scores the final "
            "policy with OpenSpiel's exploitability.nash_conv."
        ),
    )
    fig, axes = plt.subplots(1, len(games), figsize=(6 * len(games), 4.2), squeeze=False)
    for ax, spec in zip(axes[0], games, strict=True):
        name, iters, mu, eta = spec["game"], spec["iterations"], spec["mu"], spec["eta"]
        game = SequenceFormGame.from_openspiel(name)
        runs = [
            asymp_dgda(game, mu=mu, eta=eta, iterations=iters, side="both"),
            asymp_dgda(game, mu=0.0, eta=eta, iterations=2 * iters, side="x"),
            cfr_plus(game, iterations=2 * iters),
        ]
        for tr in runs:
            nc = tr.curve("nash_conv")[:, 0]
            budget = tr.steps[-1]
            tenth = min(range(len(tr.steps)), key=lambda i: abs(tr.steps[i] - budget // 10))
            if tr.method.startswith("CFR"):
                os_nc = float(nc[-1])  # cfr_plus records OpenSpiel's own nash_conv
            else:
                os_nc = exploitability.nash_conv(game.openspiel, game.to_policy(tr.x, tr.y))
            table.add_row(
                game=name,
                method=tr.method + (f", mu={mu:g}" if tr.method.startswith("AsymP") else ""),
                updates=budget * tr.updates_per_step,
                **{"NashConv @ 1/10": float(nc[tenth]), "NashConv": float(nc[-1]),
                   "NashConv (OpenSpiel)": float(os_nc)},
            )  # fmt: skip
            upd = [s * tr.updates_per_step for s in tr.steps]
            ax.plot(upd, nc.clamp_min(1e-16), label=tr.method)
        ax.set_yscale("log")
        ax.set_xscale("log")
        ax.set_xlabel("strategy updates")
        ax.set_ylabel("NashConv")
        ax.set_title(name)
        ax.legend(fontsize=8)
    return table, fig
