"""``asymp-gda reproduce``: the paper's headline comparison at CPU scale, anchors in the same run.

Paper: Abe et al., "Asymmetric Perturbation in Solving Bilinear Saddle-Point
Optimization", ICML 2026, Sec. 6. Four parts, each a table (and a log-scale plot):

1. last-iterate exploitability on BRPS, biased matching pennies and M-Ne for
   AsymP-GDA (both mirrored processes), SymP-GDA (fixed and halving strength),
   GDA, OGDA, extragradient, OMWU and MWU (average iterate) -- Fig. 2-3;
2. the strength sweep: AsymP-GDA's last iterate and the exact QP solution for
   strengths around the invariance threshold (found by bisection) -- Sec. 3;
3. iterations to ``1e-6`` exploitability on random ``m x m`` games, parameter-free
   AsymP-GDA (Alg. 1) against OGDA, median and quartiles over seeds -- Sec. 6;
4. Kuhn poker (and Leduc in the full run): last-iterate AsymP-DGDA and DGDA
   against OpenSpiel's CFR+ average iterate, in strategy updates; the final
   AsymP-DGDA policy is also scored by OpenSpiel's own ``nash_conv`` -- Fig. 4-5.

``quick`` shrinks iteration counts, trials and game sizes so the run takes 1-3
minutes on a loaded 2-core CPU; it uses a 10x larger step size (0.1, still below
every game's stability bound ``1 / (||A||_2 + mu)``) than the paper's 0.01 so
that the same ``eta * T`` is reached in fewer iterations.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import torch
from icml26_shared.results import Report, Table

from .asymp_gda import asymp_gda
from .baselines import extragradient, gda, mwu, ogda, omwu, symp_gda
from .hitting_time import ogda_hitting_times, random_game_batch
from .matrix_game import biased_matching_pennies, biased_rps, m_ne
from .parameter_free import parameter_free
from .perturbed_solution import invariance_threshold
from .strength_sweep import strength_sweep
from .trajectory import Trajectory

__all__ = ["ReproduceSettings", "SETTINGS", "reproduce"]


@dataclass(frozen=True)
class ReproduceSettings:
    """Budgets of one ``reproduce`` run (``SETTINGS["quick"]`` / ``SETTINGS["full"]``)."""

    eta: float  # step size of part 1 and 2 (paper: 0.01)
    iterations: int  # part 1 iterations T
    trials: int  # part 1 random initialisations (paper: 100)
    sweep_iterations: int  # part 2 iterations
    sizes: tuple[int, ...]  # part 3 game sizes m
    seeds: int  # part 3 games per size
    max_iterations: int  # part 3 budget per game
    efg: tuple[tuple[str, int, float, float], ...]  # part 4 (OpenSpiel game, iterations, mu, eta)


SETTINGS = {
    "quick": ReproduceSettings(
        eta=0.1,
        iterations=1_500,
        trials=8,
        sweep_iterations=4_000,
        sizes=(5, 10),
        seeds=5,
        max_iterations=60_000,
        efg=(("kuhn_poker", 800, 0.02, 3.0),),
    ),
    "full": ReproduceSettings(
        eta=0.01,
        iterations=20_000,
        trials=32,
        sweep_iterations=100_000,
        sizes=(5, 20, 50, 100),
        seeds=10,
        max_iterations=400_000,
        efg=(("kuhn_poker", 3_000, 0.02, 3.0), ("leduc_poker", 1_000, 0.003, 3.0)),
    ),
}

# part 3: the step size of both methods relative to 1 / ||A||_2, and the target
RANDOM_ETA_SCALE = 0.5
RANDOM_EPS = 1e-6

SWEEPS = {
    "BRPS": (biased_rps, (0.5, 1.0, 2.0, 2.5, 3.0, 4.0)),
    "M-Ne": (m_ne, (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)),
    "BMP": (biased_matching_pennies, (1.0, 4.0, 6.0, 7.0, 8.0)),
}


def _median(t: torch.Tensor) -> float:
    return float(t.median())


def _normal_form(report: Report, cfg: ReproduceSettings, seed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    T, eta = cfg.iterations, cfg.eta
    start = {"n_trials": cfg.trials, "init": "random", "seed": seed}
    table = Table(
        "Last-iterate exploitability on the paper's normal-form games",
        ["game", "method", "updates", "NashConv @ T/10", "NashConv @ T", "expl(x) @ T"],
        notes=(
            f"T = {T} iterations, step size {eta}, median over {cfg.trials} Dirichlet(1) starts. "
            "AsymP-GDA (both) runs the x-perturbed and the mirrored y-perturbed process "
            "(4 strategy updates per iteration; its x is the x-process iterate); SymP-GDA "
            f"(halving) starts at mu = 1 and halves mu every T/10 = {T // 10} iterations; "
            "MWU reports its average iterate, every other method its last iterate."
        ),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, make in zip(axes, (biased_rps, biased_matching_pennies, m_ne), strict=True):
        game = make()
        runs: list[Trajectory] = [
            asymp_gda(game, mu=1.0, eta=eta, iterations=T, side="both", **start),
            symp_gda(game, mu=1.0, eta=eta, iterations=T, **start),
            symp_gda(game, mu=0.1, eta=eta, iterations=T, **start),
            symp_gda(
                game,
                mu=1.0,
                eta=eta,
                iterations=T,
                schedule="halving",
                halve_every=T // 10,
                **start,
            ),
            gda(game, eta=eta, iterations=T, **start),
            ogda(game, eta=eta, iterations=T, **start),
            extragradient(game, eta=eta, iterations=T, **start),
            omwu(game, eta=eta, iterations=T, **start),
            mwu(game, eta=eta, iterations=T, **start),
        ]
        labels = [
            "AsymP-GDA (both), mu=1",
            "SymP-GDA, mu=1",
            "SymP-GDA, mu=0.1",
            "SymP-GDA (halving)",
            "GDA",
            "OGDA",
            "EG",
            "OMWU",
            "MWU (avg)",
        ]
        for tr, label in zip(runs, labels, strict=True):
            nc = tr.curve("nash_conv")  # (R, B)
            tenth = min(range(len(tr.steps)), key=lambda i: abs(tr.steps[i] - T // 10))
            table.add_row(
                game=game.name,
                method=label,
                updates=T * tr.updates_per_step,
                **{
                    "NashConv @ T/10": _median(nc[tenth]),
                    "NashConv @ T": _median(nc[-1]),
                    "expl(x) @ T": _median(tr.final("expl_x")),
                },
            )
            upd = [s * tr.updates_per_step for s in tr.steps]
            ax.plot(upd, nc.median(1).values.clamp_min(1e-16), label=label)
        ax.set_yscale("log")
        ax.set_xscale("symlog", linthresh=10)
        ax.set_xlim(left=0)
        ax.set_title(f"{game.name}: median NashConv (last iterate)")
        ax.set_xlabel("strategy updates")
    axes[0].set_ylabel("NashConv")
    axes[-1].legend(fontsize=7, loc="lower left")
    report.add_table(table)
    report.save_figure(fig, "normal_form_nashconv.png")


def _sweep(report: Report, cfg: ReproduceSettings) -> None:
    table = Table(
        "Strength sweep: exact invariance below a threshold",
        ["game", "mu", "threshold", "expl(x) AsymP-GDA", "expl(x^mu) QP", "|x_T - x^mu|_1"],
        notes=(
            f"AsymP-GDA perturbing x, {cfg.sweep_iterations} iterations, step size {cfg.eta}, "
            "uniform start; x^mu is the exact QP solution of the perturbed game; the threshold "
            "is the largest mu with x^mu in X*, by bisection on the QP (rel. width 1e-3)."
        ),
    )
    for name, (make, mus) in SWEEPS.items():
        game = make()
        thr = invariance_threshold(game)
        for row in strength_sweep(game, mus, eta=cfg.eta, iterations=cfg.sweep_iterations):
            table.add_row(
                game=name,
                mu=row.mu,
                threshold=thr,
                **{
                    "expl(x) AsymP-GDA": row.expl_dynamics,
                    "expl(x^mu) QP": row.expl_qp,
                    "|x_T - x^mu|_1": row.distance,
                },
            )
    report.add_table(table)


def _quartiles(values: list[int]) -> tuple[float, float, float]:
    if len(values) == 1:
        return float(values[0]), float(values[0]), float(values[0])
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def _random_games(report: Report, cfg: ReproduceSettings, seed: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = Table(
        "Iterations to 1e-6 exploitability on random games",
        ["m", "method", "solved", "median", "q25", "q75", "final mu (median)"],
        notes=(
            f"{cfg.seeds} uniform[-1, 1] m x m games per size (seeds {seed}..{seed + cfg.seeds - 1}), "
            f"uniform start, step size {RANDOM_ETA_SCALE}/||A||_2 for both methods, target "
            f"expl(x) <= {RANDOM_EPS:g} (checked every 50 iterations), budget "
            f"{cfg.max_iterations} iterations. Parameter-free AsymP-GDA: mu_0 = 4, halved "
            "when the perturbed gap certifies that mu is above the threshold. Quartiles over "
            "solved games only."
        ),
    )
    seeds = range(seed, seed + cfg.seeds)
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, m in enumerate(cfg.sizes):
        games = random_game_batch(m, seeds)
        pf = parameter_free(
            games, eps=RANDOM_EPS, eta_scale=RANDOM_ETA_SCALE, max_iterations=cfg.max_iterations
        )
        og = ogda_hitting_times(
            games, eps=RANDOM_EPS, eta_scale=RANDOM_ETA_SCALE, max_iterations=cfg.max_iterations
        )
        results = {
            "parameter-free AsymP-GDA": [
                int(it) for it, ok in zip(pf.iterations, pf.converged, strict=True) if ok
            ],
            "OGDA": [int(h) for h in og if h >= 0],
        }
        for j, (method, its) in enumerate(results.items()):
            q25, med, q75 = _quartiles(its) if its else (None, None, None)
            table.add_row(
                m=m,
                method=method,
                solved=f"{len(its)}/{cfg.seeds}",
                median=med,
                q25=q25,
                q75=q75,
                **{"final mu (median)": _median(pf.mu) if j == 0 else None},
            )
            xs = [i + (j - 0.5) * 0.25] * len(its)
            ax.scatter(xs, its, s=14, color=f"C{j}", label=method if i == 0 else None)
    ax.set_xticks(range(len(cfg.sizes)), [str(m) for m in cfg.sizes])
    ax.set_yscale("log")
    ax.set_xlabel("m (game size)")
    ax.set_ylabel(f"iterations to expl(x) <= {RANDOM_EPS:g}")
    ax.legend(fontsize=8)
    report.add_table(table)
    report.save_figure(fig, "random_games_iterations.png")


def _extensive_form(report: Report, cfg: ReproduceSettings) -> None:
    try:
        import pyspiel  # noqa: F401
    except ImportError:
        report.note(
            "Part 4 (Kuhn/Leduc) skipped: OpenSpiel is not installed (pip install 'asymp-gda[bench]')."
        )
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from open_spiel.python.algorithms import exploitability

    from .dilated_gda import asymp_dgda, cfr_plus
    from .sequence_form import SequenceFormGame

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
    fig, axes = plt.subplots(1, len(cfg.efg), figsize=(6 * len(cfg.efg), 4.2), squeeze=False)
    for ax, (name, iters, mu, eta) in zip(axes[0], cfg.efg, strict=True):
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
            os_nc = None
            if not tr.method.startswith("CFR"):
                os_nc = exploitability.nash_conv(game.openspiel, game.to_policy(tr.x, tr.y))
            else:
                os_nc = float(nc[-1])  # cfr_plus records OpenSpiel's own nash_conv
            table.add_row(
                game=name,
                method=tr.method + (f", mu={mu:g}" if tr.method.startswith("AsymP") else ""),
                updates=budget * tr.updates_per_step,
                **{
                    "NashConv @ 1/10": float(nc[tenth]),
                    "NashConv": float(nc[-1]),
                    "NashConv (OpenSpiel)": float(os_nc),
                },
            )
            upd = [s * tr.updates_per_step for s in tr.steps]
            ax.plot(upd, nc.clamp_min(1e-16), label=tr.method)
        ax.set_yscale("log")
        ax.set_xscale("log")
        ax.set_xlabel("strategy updates")
        ax.set_ylabel("NashConv")
        ax.set_title(name)
        ax.legend(fontsize=8)
    report.add_table(table)
    report.save_figure(fig, "extensive_form_nashconv.png")


def reproduce(out: Path, quick: bool = False, seed: int = 0) -> Report:
    """Run the four parts of the headline comparison and return the report.

    Parameters
    ----------
    out:
        Output folder (figures are written there; the caller writes ``results.*``).
    quick:
        Use :data:`SETTINGS` ``["quick"]`` (1-3 minutes) instead of ``["full"]``.
    seed:
        Seed of the random starts (part 1) and of the random games (part 3).
    """
    torch.set_num_threads(1)
    cfg = SETTINGS["quick" if quick else "full"]
    report = Report("asymp-gda", Path(out))
    _normal_form(report, cfg, seed)
    _sweep(report, cfg)
    _random_games(report, cfg, seed)
    _extensive_form(report, cfg)
    report.note(
        "Differences from the paper: CPU-sized budgets (see the table notes); part 1 uses "
        f"{cfg.trials} random starts instead of 100; part 3 uses a step size of "
        f"{RANDOM_ETA_SCALE}/||A||_2 and stops the inner loop of Alg. 1 on a gap-based "
        "certificate (our choice); part 4's mu and step size were chosen by us (short runs on Kuhn and Leduc)."
    )
    return report
