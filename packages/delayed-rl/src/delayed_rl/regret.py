"""Cumulative regret of the learners under random delays: the study behind the paper's bound.

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480) prove that the delay-aware optimistic
learner has regret O~(H sqrt(D_max S A K)) against the optimal delay-aware policy, with a
matching lower bound. Here, with uniform delays on {0..D}, every learner of
:data:`~delayed_rl.agents.AGENT_NAMES` runs on the same MDP and seeds
(:func:`~delayed_rl.interaction.run_agent`), and its exact pseudo-regret
sum_k V*_1 - V^{pi_k}_1 is computed by DP on the true augmented MDP:

* :func:`regret_study` -- per (environment, D, learner): cumulative regret at K (mean +- s.e.
  over seeds), late per-episode regret and the fitted exponent in K; per environment: the
  delay-aware learner's exponents in K and in D, and a figure of regret against K and D;
* :func:`reduction_table` -- at D = 0 the delay-aware learner is plain UCBVI (Azar et al. 2017):
  identical per-episode regret;
* :func:`loglog_slope` -- the least-squares exponent of a power law.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from icml26_shared.progress import progress
from icml26_shared.results import Table

from .agents import AGENT_NAMES, make_agent, make_mdp
from .augmented import AugmentedMDP
from .delay import DelayDistribution
from .interaction import run_agent

__all__ = ["REFERENCE", "RegretRun", "loglog_slope", "reduction_table", "regret_study"]

#: The delay-aware learner whose exponents are fitted (Hoeffding bonus).
REFERENCE = "delay-ucbvi-h"


@dataclass(frozen=True)
class RegretRun:
    """One environment of the study: the delays D to run, K episodes, and the seeds.

    >>> RegretRun(env="chain", delays=[0, 1], episodes=10, seeds=2).episodes
    10
    """

    env: str  # a name of :func:`~delayed_rl.agents.make_mdp`
    delays: Sequence[int]
    episodes: int
    seeds: int

    def __post_init__(self) -> None:
        if not self.delays or any(int(d) != d or d < 0 for d in self.delays):
            raise ValueError(f"delays must be a non-empty list of integers >= 0, got {self.delays}")
        if self.episodes < 2 or self.seeds < 1:
            raise ValueError("need episodes >= 2 and seeds >= 1")


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of log y against log x (y floored at 1e-12).

    >>> round(loglog_slope(np.array([1.0, 4.0, 16.0]), np.array([1.0, 2.0, 4.0])), 6)
    0.5
    """
    return float(np.polyfit(np.log(x), np.log(np.maximum(y, 1e-12)), 1)[0])


def _learner_regret(name, mdp, D, q, aug, K, n_seeds, vstar, bonus_scale, delta, seed):
    """Cumulative (seeds, K) and per-episode (seeds, K) pseudo-regret of one learner."""
    cums, pseudos = [], []
    for s in range(n_seeds):
        agent = make_agent(name, mdp, D, q, bonus_scale, delta, True)
        res = run_agent(agent, aug, K, seed=seed * 1000 + s, optimum=vstar)
        cums.append(res.cumulative)
        pseudos.append(res.pseudo)
    return np.array(cums), np.array(pseudos)


def regret_study(
    runs: Sequence[RegretRun], bonus_scale: float = 0.1, delta: float = 0.1, seed: int = 0
) -> tuple[list[Table], dict]:
    """Regret of every learner on each environment of ``runs`` for each uniform delay.

    Args:
        runs: One :class:`RegretRun` per environment.
        bonus_scale, delta: Bonus constant c and confidence delta of the optimistic learners.
        seed: Seed of the generated MDPs; seed ``s`` of a learner runs episodes from
            ``seed * 1000 + s``.

    Returns:
        ``([regret table, exponent table], {"regret_<env>.png": figure})``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = Table(
        "Cumulative exact pseudo-regret at K episodes (mean +- s.e. over seeds), uniform delay on {0..D}",
        ["env", "D", "agent", "K", "seeds", "regret", "se", "last10pct_per_episode", "slope_K"],
        notes=(
            "regret = sum_k V*_1 - V^{pi_k}_1 (exact, by DP on the true augmented MDP); "
            "last10pct_per_episode = mean pseudo-regret per episode over the last 10% of episodes; "
            "slope_K = fitted exponent of cumulative regret in K over the second half of the run; "
            f"bonus c={bonus_scale}, delta={delta}; all learners on the same MDP and seeds."
        ),
    )  # fmt: skip
    expo = Table(
        f"Fitted exponents of the delay-aware learner ({REFERENCE})",
        ["env", "K", "slope_K_at_Dtop", "slope_D", "regret_ratio_Dtop_over_D1"],
        notes=(
            "slope_K: exponent of cumulative regret in K (second half of the run) at the largest D; "
            "slope_D: fit of log regret at K against log D over D >= 1 (theory: 0.5 for the "
            "worst case over MDPs; a given MDP can be less delay sensitive)."
        ),
    )  # fmt: skip
    figures = {}
    for run in runs:
        env = run.env
        mdp = make_mdp(env, None, seed)
        K, curves, finals = run.episodes, {}, {}
        for D in progress(list(run.delays), desc=f"regret {env}"):
            q = DelayDistribution.uniform(D)
            aug = AugmentedMDP(mdp, q)
            vstar = aug.solve().value
            for name in AGENT_NAMES:
                cums, _ = _learner_regret(name, mdp, D, q, aug, K, run.seeds, vstar,
                                          bonus_scale, delta, seed)  # fmt: skip
                f = cums[:, -1]
                se = float(f.std(ddof=1) / np.sqrt(len(f))) if len(f) > 1 else 0.0
                kk = np.arange(K // 2, K) + 1
                tail = max(1, K // 10)
                table.add_row(
                    env=env, D=D, agent=name, K=K, seeds=run.seeds, regret=float(f.mean()), se=se,
                    last10pct_per_episode=float((cums[:, -1] - cums[:, -tail - 1]).mean() / tail),
                    slope_K=loglog_slope(kk, cums.mean(axis=0)[K // 2 :]),
                )  # fmt: skip
                curves[(D, name)] = cums.mean(axis=0)
                finals[(D, name)] = float(f.mean())
        delays = list(run.delays)
        Ds = [d for d in delays if d >= 1]
        top = max(delays)
        kk = np.arange(K // 2, K) + 1
        ratio = (finals[(top, REFERENCE)] / finals[(1, REFERENCE)]
                 if 1 in delays and finals[(1, REFERENCE)] > 0 else float("nan"))  # fmt: skip
        slope_d = (loglog_slope(np.array(Ds, float), np.array([finals[(d, REFERENCE)] for d in Ds]))
                   if len(Ds) >= 2 else float("nan"))  # fmt: skip
        expo.add_row(env=env, K=K, slope_K_at_Dtop=loglog_slope(kk, curves[(top, REFERENCE)][K // 2 :]),
                     slope_D=slope_d, regret_ratio_Dtop_over_D1=ratio)  # fmt: skip
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for name in AGENT_NAMES:
            axes[0].plot(np.arange(1, K + 1), np.maximum(curves[(top, name)], 1e-6), label=name)
            axes[1].plot(delays, [finals[(d, name)] for d in delays], "o-", label=name)
        axes[0].set(xscale="log", yscale="log", xlabel="episode k", ylabel="cumulative regret",
                    title=f"{mdp.name}: regret vs K (D={top})")  # fmt: skip
        axes[1].set(xlabel="D (uniform delay on 0..D)", ylabel=f"regret at K={K}",
                    title=f"{mdp.name}: regret vs D")  # fmt: skip
        axes[1].legend(fontsize=7)
        figures[f"regret_{env}.png"] = fig
    return [table, expo], figures


def reduction_table(
    runs: Sequence[RegretRun], bonus_scale: float = 0.1, delta: float = 0.1, seed: int = 0
) -> Table:
    """At D = 0 the delay-aware learner equals plain UCBVI: both learners' regret per episode.

    Runs :data:`REFERENCE` and the delay-ignorant learner (UCBVI with the same Hoeffding bonus
    when there is no delay) on the same seeds as :func:`regret_study`.
    """
    table = Table(
        "Anchor: at D = 0 the delay-aware learner is plain UCBVI",
        ["env", "K", "seeds", "regret_delay_ucbvi_h", "regret_ucbvi", "max_abs_diff_per_episode"],
        notes="ucbvi = the delay-ignorant learner, which at D = 0 is UCBVI of Azar et al. (2017) "
        "with the same Hoeffding bonus.",
    )  # fmt: skip
    for run in runs:
        env = run.env
        mdp = make_mdp(env, None, seed)
        q = DelayDistribution.uniform(0)
        aug = AugmentedMDP(mdp, q)
        vstar = aug.solve().value
        K = run.episodes
        _, a = _learner_regret(REFERENCE, mdp, 0, q, aug, K, run.seeds, vstar, bonus_scale,
                               delta, seed)  # fmt: skip
        _, b = _learner_regret("delay-ignorant", mdp, 0, q, aug, K, run.seeds, vstar,
                               bonus_scale, delta, seed)  # fmt: skip
        table.add_row(env=env, K=K, seeds=run.seeds, regret_delay_ucbvi_h=float(a.sum(axis=1).mean()),
                      regret_ucbvi=float(b.sum(axis=1).mean()),
                      max_abs_diff_per_episode=float(np.abs(a - b).max()))  # fmt: skip
    return table
