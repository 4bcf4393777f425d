"""Vectorised gymnasium environments with scheduled non-stationarity.

The paper studies agents whose inputs and targets drift. Offline, the drift is made by a
vector-env wrapper that switches *phase* every ``period`` vector steps:

* ``permute``: a fresh random permutation of the (flattened) observation coordinates;
* ``sign``: a fresh random sign flip per coordinate;
* ``reward``: the reward is multiplied by ``reward_scales[phase % len]``;
* ``dynamics``: environment attributes cycle through given values (CartPole: the push
  force ``force_mag`` and ``gravity``), set on every sub-environment.

Phase 0 is the unchanged environment. Episode returns are recorded in the *raw* reward
scale (:attr:`NonStationaryVectorEnv.episodes`), so curves stay comparable across
reward-scale phases.

* environment construction with the checks the agents need -> :func:`make_vector_env`
* the wrapper -> :class:`NonStationaryVectorEnv`
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np

KINDS = ("permute", "sign", "reward", "dynamics")
CARTPOLE_DYNAMICS = {"force_mag": (10.0, 5.0, 20.0), "gravity": (9.8, 19.6, 4.9)}


def make_vector_env(env_id: str, num_envs: int, seed: int = 0) -> gym.vector.VectorEnv:
    """``num_envs`` synchronous copies of ``env_id`` with same-step autoreset.

    MinAtar ids (``MinAtar/Breakout-v1``) need the optional ``minatar`` package. Atari ids
    (``ALE/Breakout-v5``, the real path) need ``ale-py`` and get the paper's (CleanRL /
    PQN) preprocessing: no sticky actions, up to 30 no-ops, frame skip 4 with max-pooling,
    84 x 84 grayscale, reward clipped to its sign, 4 stacked frames.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    if env_id.startswith("ALE/"):
        return _make_atari_vector_env(env_id, num_envs, seed)
    if env_id.startswith("MinAtar/"):
        try:
            import minatar.gym
        except ImportError as err:
            raise ValueError(
                f"environment {env_id!r} needs the optional package 'minatar' "
                "(pip install 'sigreg[bench]')"
            ) from err
        if env_id not in gym.registry:  # minatar >= 1.0.15 registers on request only
            minatar.gym.register_envs()
    if env_id not in gym.registry:
        raise ValueError(f"unknown environment id {env_id!r} (not registered with gymnasium)")
    try:
        env = gym.make_vec(
            env_id,
            num_envs,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
        )
    except gym.error.Error as err:
        raise ValueError(f"cannot build environment {env_id!r}: {err}") from err
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env


def _make_atari_vector_env(env_id: str, num_envs: int, seed: int) -> gym.vector.VectorEnv:
    try:
        import ale_py
    except ImportError as err:
        raise ValueError(
            f"environment {env_id!r} needs the optional package 'ale-py' (pip install 'sigreg[real]')"
        ) from err
    gym.register_envs(ale_py)
    if env_id not in gym.registry:
        raise ValueError(f"unknown environment id {env_id!r} (not registered by ale-py)")

    def preprocess(env: gym.Env) -> gym.Env:
        env = gym.wrappers.AtariPreprocessing(
            env, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True
        )
        env = gym.wrappers.TransformReward(env, lambda r: float(np.sign(r)))
        return gym.wrappers.FrameStackObservation(env, 4)

    try:
        env = gym.make_vec(
            env_id,
            num_envs,
            vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP},
            wrappers=[preprocess],
            frameskip=1,
            repeat_action_probability=0.0,
        )
    except gym.error.Error as err:
        raise ValueError(f"cannot build environment {env_id!r}: {err}") from err
    env.reset(seed=seed)
    env.action_space.seed(seed)
    return env


class NonStationaryVectorEnv(gym.vector.VectorWrapper):
    """Switch observation permutation / sign flips / reward scale / dynamics every ``period`` steps.

    Args:
        env: A vector env (observations are flattened to float32 vectors).
        period: Vector steps per phase (``None``: stationary).
        kinds: Subset of :data:`KINDS`.
        reward_scales: Reward multipliers cycled through by phase (``reward``).
        dynamics: ``{attribute: values}`` cycled through by phase (``dynamics``).
        permutations: Optional explicit per-phase permutations (each of the obs size).
        seed: Seed of the random permutations and signs.

    Examples:
        >>> env = NonStationaryVectorEnv(make_vector_env("CartPole-v1", 2), period=3, kinds=("permute",))
        >>> obs, _ = env.reset(seed=0)
        >>> for _ in range(3): obs, r, term, trunc, info = env.step(np.zeros(2, dtype=np.int64))
        >>> env.phase, obs.shape
        (1, (2, 4))
    """

    def __init__(
        self,
        env: gym.vector.VectorEnv,
        period: int | None = None,
        kinds: Sequence[str] = ("permute", "sign"),
        reward_scales: Sequence[float] = (1.0, 0.1, 10.0),
        dynamics: dict[str, Sequence[float]] | None = None,
        permutations: Sequence[Sequence[int]] | None = None,
        seed: int = 0,
    ) -> None:
        super().__init__(env)
        if period is not None and int(period) <= 0:
            raise ValueError(f"non-stationarity period must be > 0, got {period}")
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(
                f"unknown non-stationarity kinds {sorted(unknown)}; choose from {KINDS}"
            )
        self.period = None if period is None else int(period)
        self.kinds = tuple(kinds)
        self.reward_scales = tuple(float(r) for r in reward_scales)
        if not self.reward_scales:
            raise ValueError("reward_scales must not be empty")
        self.dynamics = dict(dynamics or {})
        self.raw_obs_shape = tuple(int(d) for d in env.single_observation_space.shape)
        self.obs_dim = int(np.prod(self.raw_obs_shape))
        self.perms = None
        if permutations is not None:
            self.perms = [np.asarray(p, dtype=np.int64) for p in permutations]
            for p in self.perms:
                if p.shape != (self.obs_dim,) or sorted(p.tolist()) != list(range(self.obs_dim)):
                    raise ValueError(
                        f"each permutation must be a permutation of range({self.obs_dim})"
                    )
        self.rng = np.random.default_rng(seed)
        self.single_observation_space = gym.spaces.Box(-np.inf, np.inf, (self.obs_dim,), np.float32)
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.steps = 0
        self.phase = 0
        self._perm = np.arange(self.obs_dim)
        self._sign = np.ones(self.obs_dim, dtype=np.float32)
        self._ret = np.zeros(self.num_envs)
        self.episodes: list[tuple[int, float]] = []  # (env steps at the end, raw return)
        self._base_dynamics = (
            {k: env.get_attr(k)[0] for k in self.dynamics} if self.dynamics else {}
        )

    # ------------------------------------------------------------------ phases
    def _enter_phase(self, phase: int) -> None:
        self.phase = phase
        if "permute" in self.kinds:
            if self.perms is not None:
                self._perm = self.perms[phase % len(self.perms)]
            else:
                self._perm = (
                    self.rng.permutation(self.obs_dim) if phase else np.arange(self.obs_dim)
                )
        if "sign" in self.kinds:
            self._sign = (
                self.rng.choice([-1.0, 1.0], self.obs_dim).astype(np.float32)
                if phase
                else np.ones(self.obs_dim, dtype=np.float32)
            )
        if "dynamics" in self.kinds:
            for attr, values in self.dynamics.items():
                self.env.set_attr(attr, [float(values[phase % len(values)])] * self.num_envs)

    @property
    def reward_scale(self) -> float:
        """Current reward multiplier."""
        return (
            self.reward_scales[self.phase % len(self.reward_scales)]
            if "reward" in self.kinds
            else 1.0
        )

    def transform(self, obs: np.ndarray) -> np.ndarray:
        """Flatten, cast and apply the current permutation and sign flip."""
        flat = np.asarray(obs, dtype=np.float32).reshape(self.num_envs, -1)
        return flat[:, self._perm] * self._sign

    # ------------------------------------------------------------------ API
    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        self._ret[:] = 0
        return self.transform(obs), info

    def step(self, actions):
        obs, reward, term, trunc, info = self.env.step(actions)
        raw = np.asarray(reward, dtype=np.float64)
        self._ret += raw
        done = np.logical_or(term, trunc)
        self.steps += 1
        for i in np.flatnonzero(done):
            self.episodes.append((self.steps * self.num_envs, float(self._ret[i])))
            self._ret[i] = 0.0
        scaled = (raw * self.reward_scale).astype(np.float32)
        if self.period is not None and self.steps % self.period == 0:
            self._enter_phase(self.phase + 1)
        return self.transform(obs), scaled, term, trunc, info


def build_env(
    env_id: str,
    num_envs: int,
    *,
    period: int | None = None,
    kinds: Sequence[str] = ("permute", "sign"),
    reward_scales: Sequence[float] = (1.0, 0.1, 10.0),
    seed: int = 0,
) -> NonStationaryVectorEnv:
    """:func:`make_vector_env` + :class:`NonStationaryVectorEnv` (CartPole dynamics preset)."""
    env = make_vector_env(env_id, num_envs, seed)
    dynamics = (
        CARTPOLE_DYNAMICS if ("dynamics" in kinds and env_id.startswith("CartPole")) else None
    )
    if "dynamics" in kinds and dynamics is None:
        raise ValueError(f"no dynamics schedule is defined for {env_id!r} (only CartPole)")
    return NonStationaryVectorEnv(env, period, kinds, reward_scales, dynamics, seed=seed)
