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
* :func:`bonus_sweep` -- every learner across a sweep of the bonus constant c, the theory
  value (:data:`~delayed_rl.bonus.THEORY_SCALE`) marked;
* :func:`delay_scaling` -- the delay-aware learner's regret against D (up to D = 8) with
  many seeds: the exponent in D (theory: at most 1/2, Theorem bound H sqrt(D_max S A K))
  fitted per seed, with its spread, and the exponent in K;
* :func:`loglog_slope` -- the least-squares exponent of a power law.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from icml26_shared.experiment import SectionResult
from icml26_shared.progress import progress
from icml26_shared.results import Table

from .agents import AGENT_NAMES, make_agent, make_mdp
from .augmented import AugmentedMDP
from .bonus import resolve_scale
from .delay import DelayDistribution
from .interaction import run_agent

__all__ = [
    "REFERENCE",
    "RegretRun",
    "bonus_sweep",
    "delay_scaling",
    "loglog_slope",
    "reduction_table",
    "regret_study",
]

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


def _c_label(scale: float | str, agent: str) -> str:
    """The constant as printed in the tables: the number, marked when it is the theory value."""
    family = "bernstein" if agent.endswith("-b") else "hoeffding"
    c = resolve_scale(scale, family)
    return f"{c:.3g} (theory)" if scale == "theory" else f"{c:.3g}"


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    return float(x.mean()), (float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0)


def bonus_sweep(
    env: str,
    D: int,  # noqa: N803
    episodes: int,
    seeds: int,
    scales: Sequence[float | str],
    horizon: int | None = None,
    delta: float = 0.1,
    seed: int = 0,
) -> tuple[Table, dict]:
    """Every learner of :data:`AGENT_NAMES` at each bonus constant c of ``scales``.

    ``"theory"`` in ``scales`` is the theory value of each learner's bonus family
    (:func:`~delayed_rl.bonus.resolve_scale`): 1/sqrt(2) for the Hoeffding learners, 1 for the
    Bernstein one. All learners know the rewards R(s, a) (the naive learner too) and run on the
    same MDP, delays and seeds; ``random`` has no bonus and is run once.

    Returns:
        ``(table, {"bonus_sweep_<env>.png": figure})``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mdp = make_mdp(env, horizon, seed)
    q = DelayDistribution.uniform(D)
    aug = AugmentedMDP(mdp, q)
    vstar = aug.solve().value
    K = int(episodes)
    table = Table(
        f"Bonus constant sweep on {env} (H={mdp.H}), uniform delay on {{0..{D}}}: cumulative "
        f"regret at K={K} (mean +- s.e. over {seeds} seeds)",
        ["env", "D", "K", "seeds", "agent", "c", "regret", "se", "last10pct_per_episode"],
        notes=(
            "c multiplies the bonus (Hoeffding: c H sqrt(L/n), L = log(S A H k / delta); Bernstein: "
            "c (sqrt(2 L Var / n) + 7 H L / (3 n))); '(theory)' marks the value our derivation gives "
            "(Hoeffding 1/sqrt(2), Bernstein 1; the paper's own constant could not be read); "
            f"delta={delta}; every learner, the naive augmented one included, is given the mean "
            "rewards R(s, a); random has no bonus."
        ),
    )  # fmt: skip
    finals: dict[tuple[str, str], float] = {}
    cells = [(name, sc) for name in AGENT_NAMES if name != "random" for sc in scales]
    cells.append(("random", scales[0]))
    tail = max(1, K // 10)
    for name, sc in progress(cells, desc=f"bonus sweep {env}"):
        cums, _ = _learner_regret(name, mdp, D, q, aug, K, seeds, vstar, sc, delta, seed)
        m, se = _mean_se(cums[:, -1])
        label = "-" if name == "random" else _c_label(sc, name)
        table.add_row(env=env, D=D, K=K, seeds=seeds, agent=name, c=label, regret=m, se=se,
                      last10pct_per_episode=float((cums[:, -1] - cums[:, -tail - 1]).mean() / tail))  # fmt: skip
        finals[(name, str(sc))] = m
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in AGENT_NAMES:
        if name == "random":
            ax.axhline(finals[("random", str(scales[0]))], color="grey", ls=":", label="random")
            continue
        xs = [
            resolve_scale(sc, "bernstein" if name.endswith("-b") else "hoeffding") for sc in scales
        ]
        ax.plot(xs, [finals[(name, str(sc))] for sc in scales], "o-", label=name)
    for sc in scales:
        if sc == "theory":
            ax.axvline(
                resolve_scale("theory"), color="k", lw=0.8, ls="--", label="theory c (Hoeffding)"
            )
    ax.set(xscale="log", yscale="log", xlabel="bonus constant c", ylabel=f"regret at K={K}",
           title=f"{mdp.name}, uniform delay 0..{D}")  # fmt: skip
    ax.legend(fontsize=7)
    return table, {f"bonus_sweep_{env}.png": fig}


def delay_scaling(
    env: str,
    delays: Sequence[int],
    episodes: int,
    seeds: int,
    bonus_scale: float | str,
    horizon: int | None = None,
    agent: str = REFERENCE,
    delta: float = 0.1,
    seed: int = 0,
) -> tuple[list[Table], dict]:
    """Regret of ``agent`` against the maximum delay D (uniform on {0..D}) with many seeds.

    The exponent in D is fitted per seed (log regret at K against log D over the D >= 1 of
    ``delays``) and reported as mean +- s.e. over seeds; the theory bound
    O~(H sqrt(D_max S A K)) allows at most 1/2 (a worst case over MDPs). The exponent in K is
    fitted on the second half of the mean curve at each D.

    Returns:
        ``([per-D table, slope table], {"delay_scaling_<env>.png": figure})``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mdp = make_mdp(env, horizon, seed)
    K = int(episodes)
    Ds = [int(d) for d in delays]
    per_seed = np.zeros((seeds, len(Ds)))
    curves = {}
    rows = Table(
        f"Regret of {agent} against D on {mdp.name} (H={mdp.H}), K={K}, {seeds} seeds",
        ["env", "H", "D", "augmented_states", "K", "seeds", "c", "V_star", "regret", "se",
         "slope_K"],
        notes=(
            "uniform delay on {0..D}, pmf known; regret = exact cumulative pseudo-regret at K "
            "(mean +- s.e. over seeds); slope_K = exponent of the mean cumulative regret in K over "
            "the second half of the run; beliefs and values are computed only on the augmented "
            "states reachable at each step (levels l <= min(D, h))."
        ),
    )  # fmt: skip
    kk = np.arange(K // 2, K) + 1
    for j, D in enumerate(progress(Ds, desc=f"delay scaling {env}")):
        q = DelayDistribution.uniform(D)
        aug = AugmentedMDP(mdp, q)
        vstar = aug.solve().value
        cums, _ = _learner_regret(agent, mdp, D, q, aug, K, seeds, vstar, bonus_scale, delta, seed)
        per_seed[:, j] = cums[:, -1]
        curves[D] = cums.mean(axis=0)
        m, se = _mean_se(cums[:, -1])
        rows.add_row(env=env, H=mdp.H, D=D, augmented_states=aug.n_states, K=K, seeds=seeds,
                     c=_c_label(bonus_scale, agent), V_star=vstar, regret=m, se=se,
                     slope_K=loglog_slope(kk, curves[D][K // 2 :]))  # fmt: skip
    pos = [j for j, d in enumerate(Ds) if d >= 1]
    slopes = Table(
        f"Exponent of {agent}'s regret in D on {mdp.name} (fitted per seed)",
        ["env", "K", "seeds", "D_values", "slope_D", "se", "slope_D_of_mean", "theory_max"],
        notes=(
            "slope_D: least-squares slope of log regret at K against log D over D >= 1, one fit per "
            "seed, mean +- s.e. over seeds; slope_D_of_mean: the same fit on the seed-mean regret; "
            "theory_max: the exponent of D_max in the minimax bound H sqrt(D_max S A K)."
        ),
    )  # fmt: skip
    if len(pos) >= 2:
        xs = np.array([Ds[j] for j in pos], dtype=float)
        each = np.array([loglog_slope(xs, per_seed[i, pos]) for i in range(seeds)])
        m, se = _mean_se(each)
        slopes.add_row(env=env, K=K, seeds=seeds, D_values=",".join(str(Ds[j]) for j in pos),
                       slope_D=m, se=se, slope_D_of_mean=loglog_slope(xs, per_seed[:, pos].mean(axis=0)),
                       theory_max=0.5)  # fmt: skip
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for D in Ds:
        axes[0].plot(np.arange(1, K + 1), np.maximum(curves[D], 1e-6), label=f"D={D}")
    axes[0].set(xscale="log", yscale="log", xlabel="episode k", ylabel="cumulative regret",
                title=f"{agent} on {mdp.name}")  # fmt: skip
    axes[0].legend(fontsize=7)
    mean = per_seed.mean(axis=0)
    err = per_seed.std(axis=0, ddof=1) / np.sqrt(seeds) if seeds > 1 else np.zeros(len(Ds))
    axes[1].errorbar([max(d, 0.5) for d in Ds], mean, yerr=err, fmt="o-", label=agent)
    if pos:
        ref = mean[pos[0]] * np.sqrt(np.array([Ds[j] for j in pos]) / Ds[pos[0]])
        axes[1].plot([Ds[j] for j in pos], ref, "k--", lw=0.8, label="sqrt(D) reference")
    axes[1].set(xscale="log", yscale="log", xlabel="D (uniform delay on 0..D; D=0 drawn at 0.5)",
                ylabel=f"regret at K={K}", title="regret vs D")  # fmt: skip
    axes[1].legend(fontsize=7)
    return [rows, slopes], {f"delay_scaling_{env}.png": fig}


# ---------------------------------------------------------------- reproduce sections


@dataclass
class BonusSetting:
    env: str
    D: int  # noqa: N815 - the paper's symbol
    episodes: int
    seeds: int
    scales: list  # constants c, numbers or "theory"
    delta: float
    horizon: int | None = None

    def __post_init__(self) -> None:
        RegretRun(self.env, [self.D], self.episodes, self.seeds)
        if not self.scales:
            raise ValueError("scales must list at least one bonus constant")
        for c in self.scales:
            resolve_scale(c)


def bonus_section(s: BonusSetting, seed: int) -> SectionResult:
    """``reproduce`` section ``bonus``: :func:`bonus_sweep` of the preset's setting."""
    table, figures = bonus_sweep(s.env, s.D, s.episodes, s.seeds, s.scales, s.horizon, s.delta,
                                 seed)  # fmt: skip
    return SectionResult([table], figures)


@dataclass
class ScalingSetting:
    env: str
    delays: list[int]
    episodes: int
    seeds: int
    bonus_scale: float | str
    delta: float
    horizon: int | None = None

    def __post_init__(self) -> None:
        RegretRun(self.env, self.delays, self.episodes, self.seeds)
        resolve_scale(self.bonus_scale)


def scaling_section(s: ScalingSetting, seed: int) -> SectionResult:
    """``reproduce`` section ``scaling``: :func:`delay_scaling` of the preset's setting."""
    tables, figures = delay_scaling(s.env, s.delays, s.episodes, s.seeds, s.bonus_scale,
                                    s.horizon, delta=s.delta, seed=seed)  # fmt: skip
    return SectionResult(tables, figures)
