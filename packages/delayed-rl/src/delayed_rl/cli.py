"""Command line of delayed-rl: ``delayed-rl --help``.

``fit|validate|test|predict`` (LightningCLI on :class:`~delayed_rl.lightning.TabularAgentModule`),
``reproduce`` (the headline comparison, :data:`delayed_rl.reproduce.EXPERIMENT`), ``solve``
(the exact delayed optimum) and ``regret`` (learners' exact pseudo-regret, optionally to CSV).

Nothing heavy is imported until a command runs: ``delayed-rl --help`` reads the commands'
summaries without importing them, and ``solve`` and ``regret`` never import Lightning.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from icml26_shared.cli import PaperCLI, UsageError

from .paper import PAPER


def solve(
    env: str = "garnet",
    delay: str = "uniform:2",
    d_max: int | None = None,
    horizon: int | None = None,
    env_seed: int = 0,
    max_states: int = 2_000_000,
) -> None:
    """Exact delayed-optimal value V*_1 by dynamic programming on the augmented MDP.

    Args:
        env: garnet, corridor, chain, frozenlake, cliffwalking, gym:<id> (a gymnasium
            toy-text environment) or a .npz file with arrays P, R (and mu, H, reward_range).
        delay: none, constant:d, uniform:D, geometric:p:D or pmf:q0,q1,...
        d_max: Declared maximum delay D_max (default: the support of the delay); a delay
            with mass beyond it is refused, learners plan up to it.
        horizon: Episode length H (default: the environment's).
        env_seed: Seed of the generated MDP (garnet).
        max_states: Refuse augmented state spaces larger than this.
    """
    from .agents import make_mdp
    from .augmented import AugmentedMDP
    from .delay import DelayDistribution

    mdp = make_mdp(env, horizon, env_seed)
    q = DelayDistribution.parse(delay, d_max)
    aug = AugmentedMDP(mdp, q, max_states=max_states)
    v0 = float(mdp.value_iteration()[0][0] @ mdp.mu)
    vd = aug.solve().value
    print(f"{mdp.name}: S={mdp.S} A={mdp.A} H={mdp.H}; delay {q.label} (D_max={q.d_max})")
    print(f"augmented states: {aug.n_states}")
    print(f"V*_1 without delay: {v0:.6f}")
    print(f"V*_1 with delay:    {vd:.6f}  (cost of the delay {v0 - vd:.6f})")


def regret(
    env: str = "garnet",
    delay: str = "uniform:2",
    d_max: int | None = None,
    agents: list[str] | None = None,
    episodes: int = 500,
    seeds: int = 3,
    horizon: int | None = None,
    env_seed: int = 0,
    bonus_scale: float = 0.1,
    known_delay: bool = True,
    out: Path | None = None,
) -> None:
    """Exact cumulative pseudo-regret of the learners (mean +- s.e. over seeds).

    Args:
        env: garnet, corridor, chain, frozenlake, cliffwalking, gym:<id> (a gymnasium
            toy-text environment) or a .npz file with arrays P, R (and mu, H, reward_range).
        delay: none, constant:d, uniform:D, geometric:p:D or pmf:q0,q1,...
        d_max: Declared maximum delay D_max (default: the support of the delay); a delay
            with mass beyond it is refused, learners plan up to it.
        agents: Learners (default: all of them).
        episodes: Number of episodes K.
        seeds: Number of independent runs.
        horizon: Episode length H (default: the environment's).
        env_seed: Seed of the generated MDP (garnet).
        bonus_scale: Bonus constant c of the optimistic learners.
        known_delay: Give the delay pmf to the delay-aware learner (else estimated).
        out: Optional CSV of the cumulative regret per agent, seed and episode.
    """
    import numpy as np

    from .agents import AGENT_NAMES, make_agent, make_mdp
    from .augmented import AugmentedMDP
    from .delay import DelayDistribution
    from .interaction import run_agent

    if episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {episodes}")
    if seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {seeds}")
    names = list(agents) if agents else list(AGENT_NAMES)
    unknown = [a for a in names if a not in AGENT_NAMES]
    if unknown:
        raise UsageError(
            f"unknown agent(s) {', '.join(unknown)}; choose from {', '.join(AGENT_NAMES)}"
        )
    mdp = make_mdp(env, horizon, env_seed)
    q = DelayDistribution.parse(delay, d_max)
    aug = AugmentedMDP(mdp, q)
    vstar = aug.solve().value
    rows = []
    print(f"{mdp.name}, delay {q.label}, K={episodes}, {seeds} seed(s); V*_1 = {vstar:.4f}")
    for name in names:
        finals = []
        for seed in range(seeds):
            agent = make_agent(name, mdp, q.d_max, q, bonus_scale, 0.1, known_delay)
            res = run_agent(agent, aug, episodes, seed=seed, optimum=vstar)
            cum = res.cumulative
            finals.append(cum[-1])
            rows += [(name, seed, k + 1, float(c)) for k, c in enumerate(cum)]
        f = np.array(finals)
        se = f.std(ddof=1) / np.sqrt(len(f)) if len(f) > 1 else 0.0
        print(f"  {name:16s} regret {f.mean():9.3f} +- {se:.3f}")
    if out is not None:
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["agent", "seed", "episode", "cumulative_regret"])
            writer.writerows(rows)
        print(f"wrote {out}")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="delayed_rl.lightning:TabularAgentModule",
        datamodule_class="delayed_rl.lightning:EpisodeDataModule",
        commands={"solve": "delayed_rl.cli:solve", "regret": "delayed_rl.cli:regret"},
        trainer_defaults={"accelerator": "cpu", "devices": 1, "max_epochs": 1},
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``delayed-rl`` console script."""
    return build_cli().main(args)
