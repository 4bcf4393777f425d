"""Command line of delayed-rl: ``delayed-rl --help``.

``fit|validate|test|predict`` (LightningCLI on :class:`~delayed_rl.lightning.TabularAgentModule`),
``reproduce`` (the headline comparison, :data:`delayed_rl.reproduce.EXPERIMENT`), ``solve``
(the exact delayed optimum) and ``regret`` (learners' exact pseudo-regret, optionally to CSV).

Nothing heavy is imported until a command runs: ``delayed-rl --help`` reads the commands'
summaries without importing them, and ``solve`` and ``regret`` never import Lightning.
"""

from __future__ import annotations

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


def _scale(value: str) -> float | str:
    """``--bonus_scale``: a number >= 0 or ``theory``."""
    from .bonus import resolve_scale

    if str(value) == "theory":
        return "theory"
    try:
        c = float(value)
        resolve_scale(c)
    except ValueError:
        raise UsageError(
            f"--bonus_scale must be a number >= 0 or 'theory', got {value!r}"
        ) from None
    return c


def regret(
    env: str = "garnet",
    delay: str = "uniform:2",
    d_max: int | None = None,
    agents: list[str] | None = None,
    episodes: int = 500,
    seeds: int = 3,
    horizon: int | None = None,
    env_seed: int = 0,
    bonus_scale: str = "theory",
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
        bonus_scale: Bonus constant c of the optimistic learners, a number or "theory"
            (1/sqrt(2) for the Hoeffding bonus, 1 for the Bernstein one).
        known_delay: Give the delay pmf to the delay-aware learner (else estimated).
        out: Optional folder: regret.csv (cumulative regret per agent, seed and episode),
            regret.png (mean regret curves with their s.e. band) and result.json (summary).
    """
    import json

    import numpy as np
    from icml26_shared.progress import progress
    from icml26_shared.results import atomic_write_figure, atomic_write_text, ensure_writable_dir

    from .agents import AGENT_NAMES, make_agent, make_mdp
    from .augmented import AugmentedMDP
    from .bonus import resolve_scale
    from .delay import DelayDistribution
    from .interaction import run_agent

    if episodes < 1:
        raise UsageError(f"--episodes must be >= 1, got {episodes}")
    if seeds < 1:
        raise UsageError(f"--seeds must be >= 1, got {seeds}")
    c = _scale(bonus_scale)
    names = list(agents) if agents else list(AGENT_NAMES)
    unknown = [a for a in names if a not in AGENT_NAMES]
    if unknown:
        raise UsageError(
            f"unknown agent(s) {', '.join(unknown)}; choose from {', '.join(AGENT_NAMES)}"
        )
    if out is not None:
        out = ensure_writable_dir(out)
    mdp = make_mdp(env, horizon, env_seed)
    q = DelayDistribution.parse(delay, d_max)
    aug = AugmentedMDP(mdp, q)
    vstar = aug.solve().value
    print(f"{mdp.name}, delay {q.label}, K={episodes}, {seeds} seed(s), c={c}; V*_1 = {vstar:.4f}")
    curves: dict[str, np.ndarray] = {}
    summary = {}
    for name in progress(names, desc="learners"):
        cums = []
        for seed in progress(range(seeds), desc=name, total=seeds):
            agent = make_agent(name, mdp, q.d_max, q, c, 0.1, known_delay)
            cums.append(run_agent(agent, aug, episodes, seed=seed, optimum=vstar).cumulative)
        curves[name] = np.array(cums)
        f = curves[name][:, -1]
        se = float(f.std(ddof=1) / np.sqrt(len(f))) if len(f) > 1 else 0.0
        summary[name] = {"regret": float(f.mean()), "se": se}
        print(f"  {name:16s} regret {f.mean():9.3f} +- {se:.3f}")
    if out is None:
        return
    lines = ["agent,seed,episode,cumulative_regret"]
    for name, arr in curves.items():
        for seed, row in enumerate(arr):
            lines += [f"{name},{seed},{k + 1},{v:.10g}" for k, v in enumerate(row)]
    atomic_write_text(out / "regret.csv", "\n".join(lines) + "\n")
    result = {
        "env": mdp.name, "delay": q.label, "d_max": q.d_max, "episodes": episodes,
        "seeds": seeds, "bonus_scale": c, "c_hoeffding": resolve_scale(c, "hoeffding"),
        "c_bernstein": resolve_scale(c, "bernstein"), "known_delay": known_delay, "V_star": vstar,
        "regret": summary,
    }  # fmt: skip
    atomic_write_text(out / "result.json", json.dumps(result, indent=2) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    k = np.arange(1, episodes + 1)
    for name, arr in curves.items():
        m = arr.mean(axis=0)
        se = arr.std(axis=0, ddof=1) / np.sqrt(len(arr)) if len(arr) > 1 else np.zeros_like(m)
        ax.plot(k, m, label=name)
        ax.fill_between(k, m - se, m + se, alpha=0.2)
    ax.set(xlabel="episode k", ylabel="cumulative exact pseudo-regret",
           title=f"{mdp.name}, delay {q.label}, c={c}")  # fmt: skip
    ax.legend(fontsize=7)
    atomic_write_figure(out / "regret.png", fig, dpi=110)
    print(f"wrote {out / 'regret.csv'}, {out / 'regret.png'} and {out / 'result.json'}")


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
