"""Gymnasium environments with randomly delayed observations, and the augmented observation.

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480), Section 2 (the state of step t is
observed at step t + d_t, d_t i.i.d. ~ q, d_0 = 0). This module exposes that protocol to
any gymnasium agent:

- :class:`TabularEnv` -- a :class:`~delayed_rl.mdp.FiniteMDP` as a gymnasium env
  (Discrete observations and actions, truncated after H steps).
- :class:`DelayedObservationEnv` -- wraps any gymnasium env; each step returns the newest
  *revealed* observation and, in ``info``, what was revealed (``revealed``: list of
  ``(index, observation)``), the reveal frontier ``tau`` and its age ``age = t - tau``.
  Rewards are passed through undelayed. When the episode ends every pending observation is
  flushed into ``info["revealed"]`` (the whole trajectory is revealed at the end).
- :class:`AugmentedObservationWrapper` -- the sufficient statistic as a flat Box for deep
  RL: [last revealed observation (one-hot if Discrete), one-hot actions taken since it
  (D slots, zero padded), one-hot age (D + 1)].

``gymnasium.wrappers.DelayObservation`` covers constant delays only; this supports any
pmf and reports the reveals a delay-aware learner needs.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .delay import DelayDistribution
from .mdp import FiniteMDP


class TabularEnv(gym.Env):
    """A :class:`FiniteMDP` as a gymnasium environment (truncated after H steps).

    Examples
    --------
    >>> from delayed_rl.mdp import chain
    >>> env = TabularEnv(chain(S=3, H=2))
    >>> env.reset(seed=0)[0], env.step(1)[1:4]
    (0, (0.0, False, False))
    """

    metadata = {"render_modes": []}

    def __init__(self, mdp: FiniteMDP) -> None:
        self.mdp = mdp
        self.observation_space = spaces.Discrete(mdp.S)
        self.action_space = spaces.Discrete(mdp.A)
        self._s = 0
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._s = int(self.np_random.choice(self.mdp.S, p=self.mdp.mu))
        self._t = 0
        return self._s, {}

    def step(self, action):
        a = int(action)
        if not self.action_space.contains(a):
            raise ValueError(f"action {action!r} outside 0..{self.mdp.A - 1}")
        reward = float(self.mdp.R[self._s, a])
        self._s = int(self.np_random.choice(self.mdp.S, p=self.mdp.P[self._s, a]))
        self._t += 1
        return self._s, reward, False, self._t >= self.mdp.H, {}


class DelayedObservationEnv(gym.Wrapper):
    """Observations arrive after random delays d ~ ``delay`` (the first one at once).

    Parameters
    ----------
    env:
        Any gymnasium environment.
    delay:
        The :class:`~delayed_rl.delay.DelayDistribution` of observation delays.

    Examples
    --------
    >>> from delayed_rl.mdp import slippery_corridor
    >>> env = DelayedObservationEnv(TabularEnv(slippery_corridor(S=5, H=4)),
    ...                             DelayDistribution.constant(2))
    >>> obs, info = env.reset(seed=0)
    >>> [env.step(1)[4]["age"] for _ in range(3)]
    [1, 2, 2]
    """

    def __init__(self, env: gym.Env, delay: DelayDistribution) -> None:
        super().__init__(env)
        self.delay = delay
        self._obs: list[Any] = []
        self._due: list[int] = []
        self._seen: list[bool] = []
        self._tau = 0
        self._rng = np.random.default_rng()

    @property
    def tau(self) -> int:
        """Index of the newest revealed observation."""
        return self._tau

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        obs, info = self.env.reset(seed=seed, options=options)
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._obs, self._due, self._seen, self._tau = [obs], [0], [True], 0
        return obs, {**info, "revealed": [(0, obs)], "tau": 0, "age": 0, "step": 0}

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        t = len(self._obs)
        self._obs.append(obs)
        self._due.append(t + int(self.delay.sample(self._rng, 1)[0]))
        self._seen.append(False)
        done = terminated or truncated
        revealed = []
        for j in range(t + 1):
            if not self._seen[j] and (self._due[j] <= t or done):
                self._seen[j] = True
                revealed.append((j, self._obs[j]))
                if self._due[j] <= t:
                    self._tau = max(self._tau, j)
        out_info = {**info, "revealed": revealed, "tau": self._tau, "age": t - self._tau, "step": t}
        return self._obs[self._tau], reward, terminated, truncated, out_info


class AugmentedObservationWrapper(gym.ObservationWrapper):
    """Flat augmented observation [last revealed obs, actions since it, one-hot age].

    Parameters
    ----------
    env:
        A :class:`DelayedObservationEnv` (its action space must be Discrete).

    Examples
    --------
    >>> from delayed_rl.mdp import garnet
    >>> env = AugmentedObservationWrapper(DelayedObservationEnv(
    ...     TabularEnv(garnet(S=4, A=2, H=5)), DelayDistribution.uniform(2)))
    >>> obs, _ = env.reset(seed=0)
    >>> obs.shape  # 4 (state) + 2 * 2 (two action slots) + 3 (age)
    (11,)
    """

    def __init__(self, env: DelayedObservationEnv) -> None:
        if not isinstance(env, DelayedObservationEnv):
            raise ValueError("AugmentedObservationWrapper wraps a DelayedObservationEnv")
        if not isinstance(env.action_space, spaces.Discrete):
            raise ValueError("the augmented observation needs a Discrete action space")
        super().__init__(env)
        self.D = env.delay.D
        self.nA = int(env.action_space.n)
        self._base = env.observation_space
        base_dim = spaces.flatdim(self._base)
        dim = base_dim + self.D * self.nA + self.D + 1
        low = np.full(dim, -np.inf, dtype=np.float32)
        high = np.full(dim, np.inf, dtype=np.float32)
        low[base_dim:], high[base_dim:] = 0.0, 1.0
        if isinstance(self._base, spaces.Discrete):
            low[:base_dim], high[:base_dim] = 0.0, 1.0
        self.observation_space = spaces.Box(low, high, dtype=np.float32)
        self._actions: list[int] = []

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._actions = []
        return super().reset(seed=seed, options=options)

    def step(self, action):
        self._actions.append(int(action))
        return super().step(action)

    def observation(self, observation):
        env: DelayedObservationEnv = self.env  # type: ignore[assignment]
        tau = env.tau
        age = len(self._actions) - tau
        buf = self._actions[tau:]
        parts = [spaces.flatten(self._base, observation).astype(np.float32)]
        slots = np.zeros((self.D, self.nA), dtype=np.float32)
        for i, a in enumerate(buf[: self.D]):
            slots[i, a] = 1.0
        parts.append(slots.ravel())
        ages = np.zeros(self.D + 1, dtype=np.float32)
        ages[min(age, self.D)] = 1.0
        parts.append(ages)
        return np.concatenate(parts)
