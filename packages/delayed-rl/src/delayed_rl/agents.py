"""Registry of the learners and benchmark environments by name (CLI, configs, reproduce).

Map: :data:`AGENT_NAMES` / :func:`make_agent` (the learners of
:mod:`delayed_rl.delay_ucbvi` and :mod:`delayed_rl.baselines`), :data:`ENV_NAMES` /
:func:`make_mdp` (the generated MDPs of :mod:`delayed_rl.mdp`, gymnasium's shipped
toy-text tables, ``gym:<id>``) and :func:`load_mdp` (a user MDP from an ``.npz`` file).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

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


def load_mdp(path: str | Path, H: int | None = None) -> FiniteMDP:  # noqa: N803
    """A user MDP from an ``.npz`` file with arrays ``P`` (S, A, S) and ``R`` (S, A).

    Optional arrays: ``mu`` (S,) (default: start in state 0), ``H`` (scalar; ``H`` given
    here wins) and ``reward_range`` (2,) (default (0, 1)). Everything is validated by
    :class:`~delayed_rl.mdp.FiniteMDP`.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> f = tempfile.NamedTemporaryFile(suffix=".npz", delete=False).name
    >>> np.savez(f, P=np.full((2, 1, 2), 0.5), R=np.ones((2, 1)), H=3)
    >>> load_mdp(f).H, load_mdp(f, H=5).H
    (3, 5)
    """
    path = Path(path)
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: np.asarray(data[k]) for k in data.files}
    missing = [k for k in ("P", "R") if k not in arrays]
    if missing:
        raise ValueError(f"MDP file {str(path)!r} lacks array(s) {', '.join(missing)}")
    P, R = arrays["P"], arrays["R"]  # noqa: N806
    if P.ndim != 3:
        raise ValueError(f"P in {str(path)!r} must have shape (S, A, S), got {P.shape}")
    mu = arrays.get("mu")
    if mu is None:
        mu = np.eye(P.shape[0])[0]
    if H is None:
        if "H" not in arrays:
            raise ValueError(f"MDP file {str(path)!r} has no horizon H; pass --horizon")
        H = arrays["H"].item()  # noqa: N806
    if isinstance(H, float) and H.is_integer():
        H = int(H)  # noqa: N806
    rr = tuple(float(x) for x in arrays.get("reward_range", np.array([0.0, 1.0])).ravel())
    if len(rr) != 2:
        raise ValueError(f"reward_range in {str(path)!r} must hold two numbers (low, high)")
    return FiniteMDP(P, R, H, mu, rr, name=path.stem)


def make_mdp(name: str, H: int | None = None, seed: int = 0) -> FiniteMDP:  # noqa: N803
    """Benchmark MDP by name; ``seed`` only affects ``garnet``.

    Besides :data:`ENV_NAMES`, ``gym:<id>`` converts any gymnasium environment with a
    shipped tabular model (``gym:Taxi-v3``; default H = 20) and a path ending in ``.npz``
    loads a user MDP (:func:`load_mdp`).

    Examples
    --------
    >>> make_mdp("corridor").name
    'corridor(S=6,slip=0.2)'
    >>> make_mdp("gym:FrozenLake-v1", H=5).S
    16
    """
    if H is not None and (isinstance(H, bool) or int(H) != H or H < 1):
        raise ValueError(f"horizon H must be an integer >= 1, got {H!r}")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise ValueError(f"the environment seed must be an integer >= 0, got {seed!r}")
    if name.endswith(".npz"):
        return load_mdp(name, H)
    if name.startswith("gym:"):
        import gymnasium as gym

        env_id = name[len("gym:") :]
        try:
            env = gym.make(env_id)
        except gym.error.Error as exc:
            raise ValueError(f"cannot make gymnasium environment {env_id!r}: {exc}") from None
        return from_gymnasium(env, H=20 if H is None else int(H), name=env_id)
    if name not in ENV_NAMES:
        raise ValueError(
            f"unknown environment {name!r}; choose from {', '.join(ENV_NAMES)}, "
            "gym:<id> or a .npz file"
        )
    H = DEFAULT_H[name] if H is None else int(H)  # noqa: N806
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
    bonus_scale: float | str = "theory",
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
