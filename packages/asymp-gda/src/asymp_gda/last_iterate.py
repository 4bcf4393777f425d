"""Last-iterate comparison on the paper's normal-form games (Sec. 6, Fig. 2-3).

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026. On biased rock-paper-scissors (BRPS), biased matching pennies
(BMP) and M-Ne, from the same random starts and with the same step size ``eta``:

- AsymP-GDA (Eq. 3) with both mirrored processes (:func:`asymp_gda.asymp_gda.asymp_gda`);
- SymP-GDA at fixed ``mu`` and with ``mu`` halved every ``T/10`` iterations, GDA, OGDA,
  extragradient, OMWU (last iterates) and MWU (average iterate) (:mod:`asymp_gda.baselines`).

:func:`last_iterate_comparison` tabulates the median NashConv ``max_j (A^T x)_j -
min_i (A y)_i`` at ``T/10`` and ``T`` and the x player's exploitability at ``T``, and plots
the median NashConv against strategy updates.
"""

from __future__ import annotations

from icml26_shared.results import Table

from .asymp_gda import asymp_gda
from .baselines import extragradient, gda, mwu, ogda, omwu, symp_gda
from .matrix_game import biased_matching_pennies, biased_rps, m_ne

__all__ = ["PAPER_GAMES", "last_iterate_comparison"]

PAPER_GAMES = {"BRPS": biased_rps, "BMP": biased_matching_pennies, "M-Ne": m_ne}


def _runs(game, eta: float, T: int, start: dict) -> dict:
    """The methods of Fig. 2-3, labelled, on one game."""
    return {
        "AsymP-GDA (both), mu=1": asymp_gda(game, mu=1.0, eta=eta, iterations=T, side="both", **start),
        "SymP-GDA, mu=1": symp_gda(game, mu=1.0, eta=eta, iterations=T, **start),
        "SymP-GDA, mu=0.1": symp_gda(game, mu=0.1, eta=eta, iterations=T, **start),
        "SymP-GDA (halving)": symp_gda(game, mu=1.0, eta=eta, iterations=T, schedule="halving",
                                       halve_every=T // 10, **start),
        "GDA": gda(game, eta=eta, iterations=T, **start),
        "OGDA": ogda(game, eta=eta, iterations=T, **start),
        "EG": extragradient(game, eta=eta, iterations=T, **start),
        "OMWU": omwu(game, eta=eta, iterations=T, **start),
        "MWU (avg)": mwu(game, eta=eta, iterations=T, **start),
    }  # fmt: skip


def last_iterate_comparison(
    eta: float, iterations: int, trials: int, seed: int = 0, games: tuple[str, ...] = tuple(PAPER_GAMES)
):  # fmt: skip
    """Median NashConv of every method on the paper's games, and the curves' figure.

    Args:
        eta: Step size of every method (paper: 0.01).
        iterations: Iterations ``T``.
        trials: Dirichlet(1) random starts (paper: 100); medians over them.
        seed: Seed of the starts.
        games: Names in :data:`PAPER_GAMES`.

    Returns:
        ``(table, figure)``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    T = iterations
    start = {"n_trials": trials, "init": "random", "seed": seed}
    table = Table(
        "Last-iterate exploitability on the paper's normal-form games",
        ["game", "method", "updates", "NashConv @ T/10", "NashConv @ T", "expl(x) @ T"],
        notes=(
            f"T = {T} iterations, step size {eta}, median over {trials} Dirichlet(1) starts. "
            "AsymP-GDA (both) runs the x-perturbed and the mirrored y-perturbed process "
            "(4 strategy updates per iteration; its x is the x-process iterate); SymP-GDA "
            f"(halving) starts at mu = 1 and halves mu every T/10 = {T // 10} iterations; "
            "MWU reports its average iterate, every other method its last iterate."
        ),
    )
    fig, axes = plt.subplots(1, len(games), figsize=(5 * len(games), 4.2), squeeze=False)
    for ax, name in zip(axes[0], games, strict=True):
        game = PAPER_GAMES[name]()
        for label, tr in _runs(game, eta, T, start).items():
            nc = tr.curve("nash_conv")  # (R, B)
            tenth = min(range(len(tr.steps)), key=lambda i: abs(tr.steps[i] - T // 10))
            table.add_row(
                game=game.name, method=label, updates=T * tr.updates_per_step,
                **{"NashConv @ T/10": float(nc[tenth].median()),
                   "NashConv @ T": float(nc[-1].median()),
                   "expl(x) @ T": float(tr.final("expl_x").median())},
            )  # fmt: skip
            upd = [s * tr.updates_per_step for s in tr.steps]
            ax.plot(upd, nc.median(1).values.clamp_min(1e-16), label=label)
        ax.set_yscale("log")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(left=0)
        ax.set_title(f"{game.name}: median NashConv (last iterate)")
        ax.set_xlabel("strategy updates")
    axes[0][0].set_ylabel("NashConv")
    axes[0][-1].legend(fontsize=7, loc="lower left")
    return table, fig
