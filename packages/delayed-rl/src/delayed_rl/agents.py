"""Registry of the learners and benchmark environments by name (CLI, configs, reproduce).

Map: :data:`AGENT_NAMES` / :func:`make_agent` (the learners of
:mod:`delayed_rl.delay_ucbvi` and :mod:`delayed_rl.baselines`), :data:`ENV_NAMES` /
:func:`make_mdp` (the generated MDPs of :mod:`delayed_rl.mdp` and gymnasium's shipped
toy-text tables).
"""

from __future__ import annotations

from .baselines import BeliefGreedyUCBVI, DelayIgnorantUCBVI, NaiveAugmentedUCBVI, RandomAgent
from .delay import DelayDistribution
from .delay_ucbvi import DelayUCBVI
from .interaction import Agent
from .mdp import FiniteMDP, chain, from_gymnasium, garnet, slippery_corridor

AGENT_NAMES = (
    "delay-ucbvi-h",
    "delay-ucbvi-b",
    "naive-augmented",
    "delay-ignorant",
    "belief-greedy",
    "random",
)
ENV_NAMES = ("garnet", "corridor", "chain", "frozenlake", "cliffwalking")
DEFAULT_H = {"garnet": 8, "corridor": 8, "chain": 10, "frozenlake": 20, "cliffwalking": 20}


def make_mdp(name: str, H: int | None = None, seed: int = 0) -> FiniteMDP:  # noqa: N803
    """Benchmark MDP by name; ``seed`` only affects ``garnet``.

    Examples
    --------
    >>> make_mdp("corridor").name
    'corridor(S=6,slip=0.2)'
    """
    if name not in ENV_NAMES:
        raise ValueError(f"unknown environment {name!r}; choose from {', '.join(ENV_NAMES)}")
    H = DEFAULT_H[name] if H is None else H
    if isinstance(H, bool) or int(H) != H or H < 1:
        raise ValueError(f"horizon H must be an integer >= 1, got {H!r}")
    H = int(H)
    if name == "garnet":
        return garnet(S=6, A=2, H=H, branching=3, seed=seed)
    if name == "corridor":
        return slippery_corridor(S=6, H=H, slip=0.2)
    if name == "chain":
        return chain(S=6, H=H, fail=0.1)
    import gymnasium as gym

    if name == "frozenlake":
        return from_gymnasium(gym.make("FrozenLake-v1", map_name="4x4"), H=H, name="frozenlake-4x4")
    return from_gymnasium(gym.make("CliffWalking-v1"), H=H, name="cliffwalking")


def make_agent(
    name: str,
    mdp: FiniteMDP,
    d_max: int,
    delay: DelayDistribution | None = None,
    bonus_scale: float = 0.1,
    delta: float = 0.1,
    known_delay: bool = True,
) -> Agent:
    """Learner by name (see :data:`AGENT_NAMES`); ``delay`` is given to delay-aware agents.

    Examples
    --------
    >>> make_agent("delay-ucbvi-b", make_mdp("chain"), d_max=2).name
    'delay-ucbvi-b'
    """
    if name in {"delay-ucbvi-h", "delay-ucbvi-b", "delay-ucbvi"}:
        bonus = "bernstein" if name.endswith("-b") else "hoeffding"
        return DelayUCBVI.for_mdp(
            mdp,
            d_max,
            delay=delay if known_delay else None,
            bonus=bonus,
            bonus_scale=bonus_scale,
            delta=delta,
        )
    if name == "naive-augmented":
        return NaiveAugmentedUCBVI.for_mdp(mdp, d_max, bonus_scale=bonus_scale, delta=delta)
    if name == "delay-ignorant":
        return DelayIgnorantUCBVI.for_mdp(mdp, d_max, bonus_scale=bonus_scale, delta=delta)
    if name == "belief-greedy":
        return BeliefGreedyUCBVI.for_mdp(mdp, d_max, bonus_scale=bonus_scale, delta=delta)
    if name == "random":
        return RandomAgent.for_mdp(mdp, d_max)
    raise ValueError(f"unknown agent {name!r}; choose from {', '.join(AGENT_NAMES)}")
