"""Deep RL under random observation delays: the augmented observation with a PPO agent.

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480) show that, under random observation
delays, the state augmentation x_h = (l_h, s_{tau_h}, a_{tau_h}, ..., a_{h-1}) is the
sufficient statistic an agent should act on; their algorithm is tabular. This module carries
the same augmentation to function approximation: a stable-baselines3 PPO agent (Schulman et
al. 2017, the `stable-baselines3` implementation of Raffin et al. 2021) is trained on the flat
augmented observation of :class:`~delayed_rl.env.AugmentedObservationWrapper` and compared
with the same agent on

- ``last-observation``: the newest revealed observation only (delay-ignorant, same delays);
- ``gymnasium-delay``: gymnasium's own ``DelayObservation`` wrapper, which only knows a
  *constant* delay (and shows zeros until the first observation arrives), against
- ``augmented-constant``: our wrapper under the same constant delay;
- ``undelayed``: the task without delay (the ceiling).

Map: :data:`VARIANTS`, :func:`make_env` (one variant of one task), :func:`train_and_evaluate`
(one PPO run, mean return of the final policy), :func:`deep_table` (tasks x variants x seeds).
Training budgets are short (CPU scale): the numbers compare the observation schemes at a fixed
budget, they are not converged returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from icml26_shared.experiment import SectionResult
from icml26_shared.progress import progress
from icml26_shared.results import Table

from .delay import DelayDistribution
from .env import AugmentedObservationWrapper, DelayedObservationEnv

#: Observation schemes of :func:`make_env`.
VARIANTS = ("augmented", "last-observation", "augmented-constant", "gymnasium-delay", "undelayed")


def parse_task(task: str) -> tuple[str, dict]:
    """``"FrozenLake-v1:is_slippery=False"`` -> ``("FrozenLake-v1", {"is_slippery": False})``.

    >>> parse_task("FrozenLake-v1:is_slippery=False,map_name=4x4")
    ('FrozenLake-v1', {'is_slippery': False, 'map_name': '4x4'})
    """
    import yaml

    env_id, _, rest = task.partition(":")
    kwargs = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"task option {item!r} of {task!r} is not key=value")
        kwargs[key.strip()] = yaml.safe_load(value)
    return env_id, kwargs


def _base(task: str) -> gym.Env:
    env_id, kwargs = parse_task(task)
    try:
        return gym.make(env_id, **kwargs)
    except (gym.error.Error, TypeError) as exc:
        raise ValueError(f"cannot make gymnasium environment {task!r}: {exc}") from None


def make_env(task: str, variant: str, D: int) -> gym.Env:  # noqa: N803
    """Task ``task`` (a gymnasium id) seen through observation scheme ``variant``.

    ``augmented`` / ``last-observation`` draw delays uniformly on {0..D}; ``augmented-constant``
    and ``gymnasium-delay`` use the constant delay D.

    Examples
    --------
    >>> env = make_env("CartPole-v1", "augmented", 2)
    >>> env.observation_space.shape  # 4 + 2 slots x 2 actions + 3 ages
    (11,)
    >>> make_env("CartPole-v1", "sideways", 2)
    Traceback (most recent call last):
    ValueError: unknown variant 'sideways'; choose from augmented, last-observation, augmented-constant, gymnasium-delay, undelayed
    """
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    if isinstance(D, bool) or int(D) != D or D < 0:
        raise ValueError(f"the delay D must be an integer >= 0, got {D!r}")
    env = _base(task)
    if variant == "undelayed":
        return env
    if variant == "gymnasium-delay":
        from gymnasium.wrappers import DelayObservation

        return DelayObservation(env, int(D))
    const = variant == "augmented-constant"
    q = DelayDistribution.constant(D) if const else DelayDistribution.uniform(D)
    delayed = DelayedObservationEnv(env, q)
    if variant == "last-observation":
        return delayed
    return AugmentedObservationWrapper(delayed)


def _require_sb3():
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the deep-RL comparison needs stable-baselines3: pip install 'delayed-rl[bench]'"
        ) from None


def train_and_evaluate(
    task: str,
    variant: str,
    D: int,  # noqa: N803
    steps: int,
    seed: int,
    eval_episodes: int = 20,
) -> float:
    """Train PPO for ``steps`` environment steps; mean return of the final greedy policy.

    The evaluation runs ``eval_episodes`` fresh episodes of the same variant (seeded apart
    from training).
    """
    _require_sb3()
    import torch
    from stable_baselines3 import PPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        env = make_env(task, variant, D)
        env.reset(seed=seed)
        model = PPO("MlpPolicy", env, seed=seed, n_steps=512, batch_size=64, n_epochs=4,
                    verbose=0, device="cpu")  # fmt: skip
        model.learn(total_timesteps=int(steps))
        ev = make_env(task, variant, D)
        returns = []
        for i in range(int(eval_episodes)):
            obs, _ = ev.reset(seed=10_000 + 1000 * seed + i)
            done, total = False, 0.0
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                obs, r, term, trunc, _ = ev.step(int(action))
                total += float(r)
                done = term or trunc
            returns.append(total)
        return float(np.mean(returns))
    finally:
        torch.set_num_threads(threads)


def deep_table(
    tasks: Sequence[str],
    variants: Sequence[str],
    D: int,  # noqa: N803
    steps: dict[str, int] | int,
    seeds: int,
    eval_episodes: int = 20,
    seed: int = 0,
) -> Table:
    """PPO's return under each observation scheme, per task: mean +- s.e. over seeds.

    ``steps`` is a training budget per task (``{task: steps}``) or one for all.
    """
    _require_sb3()
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}")
    table = Table(
        f"Deep RL under observation delays: PPO (stable-baselines3) return after a short budget, "
        f"mean +- s.e. over {seeds} seeds",
        ["task", "variant", "delay", "steps", "seeds", "return", "se"],
        notes=(
            "augmented = last revealed observation + one-hot actions since + one-hot age "
            "(AugmentedObservationWrapper); last-observation = the newest revealed observation only; "
            "gymnasium-delay = gymnasium.wrappers.DelayObservation (constant delay only, zeros "
            "before the first observation); return = mean undiscounted return of the final "
            f"deterministic policy over {eval_episodes} fresh episodes; PPO defaults except "
            "n_steps=512, batch_size=64, n_epochs=4; one CPU thread."
        ),
    )  # fmt: skip
    cells = [(t, v, s) for t in tasks for v in variants for s in range(int(seeds))]
    got: dict[tuple[str, str], list[float]] = {}
    for task, v, s in progress(cells, desc="deep RL"):
        n = steps[task] if isinstance(steps, dict) else steps
        got.setdefault((task, v), []).append(
            train_and_evaluate(task, v, D, n, seed * 1000 + s, eval_episodes)
        )
    for task in tasks:
        n = steps[task] if isinstance(steps, dict) else steps
        for v in variants:
            x = np.array(got[(task, v)])
            se = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0
            label = {"undelayed": "none", "augmented-constant": f"constant {D}",
                     "gymnasium-delay": f"constant {D}"}.get(v, f"uniform 0..{D}")  # fmt: skip
            table.add_row(task=task, variant=v, delay=label, steps=int(n), seeds=int(seeds),
                          **{"return": float(x.mean())}, se=se)  # fmt: skip
    return table


@dataclass
class DeepSetting:
    tasks: list[dict]  # [{task: "CartPole-v1", steps: N}, ...]
    variants: list[str]
    D: int  # noqa: N815
    seeds: int
    eval_episodes: int

    def __post_init__(self) -> None:
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad or not self.tasks or self.seeds < 1 or self.D < 0 or self.eval_episodes < 1:
            raise ValueError(f"need tasks, variants from {VARIANTS}, seeds >= 1, D >= 0")
        for t in self.tasks:
            if set(t) != {"task", "steps"} or int(t["steps"]) < 1:
                raise ValueError(f"each task needs exactly 'task' and 'steps' >= 1, got {t}")


def deep_section(s: DeepSetting, seed: int) -> SectionResult:
    """``reproduce`` section ``deep``: :func:`deep_table` (a note when SB3 is absent)."""
    try:
        import stable_baselines3  # noqa: F401
    except ImportError:
        return SectionResult(notes=["The deep-RL comparison needs `pip install delayed-rl[bench]` "
                                    "(stable-baselines3 is not installed in this run)."])  # fmt: skip

    steps = {t["task"]: int(t["steps"]) for t in s.tasks}
    table = deep_table(list(steps), s.variants, s.D, steps, s.seeds, s.eval_episodes, seed)
    return SectionResult([table])


__all__ = [
    "VARIANTS",
    "DeepSetting",
    "deep_section",
    "deep_table",
    "make_env",
    "train_and_evaluate",
]
