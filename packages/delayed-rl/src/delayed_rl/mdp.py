"""Tabular episodic MDPs: the undelayed model M = (S, A, H, P, r, mu).

Paper: Lee & Jamieson, "Minimax Optimal Strategy for Delayed Observations in Online
Reinforcement Learning" (ICML 2026, arXiv:2603.03480), Section 2 (setting): a finite
episodic MDP with stationary transition kernel ``P`` of shape (S, A, S), known mean
rewards ``r`` of shape (S, A) in a declared range, horizon ``H`` and initial law ``mu``.

Map:

- :class:`FiniteMDP` -- the model, validated; :meth:`FiniteMDP.value_iteration` is the
  undelayed optimum (the D = 0 oracle).
- :func:`from_gymnasium` -- conversion of gymnasium toy-text environments through their
  shipped tabular model ``env.unwrapped.P`` (FrozenLake, CliffWalking, Taxi, ...).
- :func:`garnet`, :func:`slippery_corridor`, :func:`chain` -- the generated benchmark MDPs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

ATOL = 1e-8


@dataclass(frozen=True)
class FiniteMDP:
    """A finite-horizon tabular MDP with stationary dynamics.

    Parameters
    ----------
    P:
        Transition kernel, shape (S, A, S); ``P[s, a]`` is a probability vector.
    R:
        Mean reward r(s, a), shape (S, A), inside ``reward_range``.
    H:
        Horizon (number of decisions per episode), ``H >= 1``.
    mu:
        Initial-state distribution, shape (S,).
    reward_range:
        Declared range ``(r_min, r_max)`` of the rewards; the optimism bonuses scale with
        ``H * (r_max - r_min)``.
    name:
        Label used in tables.

    References
    ----------
    Lee & Jamieson (2026), Section 2; Azar, Osband & Munos (2017), "Minimax regret bounds
    for reinforcement learning" (the UCBVI setting).

    Examples
    --------
    >>> import numpy as np
    >>> P = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]]])
    >>> R = np.array([[0.0, 0.0], [1.0, 1.0]])
    >>> mdp = FiniteMDP(P, R, H=3, mu=np.array([1.0, 0.0]))
    >>> mdp.S, mdp.A, mdp.H
    (2, 2, 3)
    >>> V, pi = mdp.value_iteration()
    >>> float(V[0] @ mdp.mu)  # go to state 1 at once, then collect 1 twice
    2.0
    """

    P: np.ndarray
    R: np.ndarray
    H: int
    mu: np.ndarray
    reward_range: tuple[float, float] = (0.0, 1.0)
    name: str = "mdp"
    info: dict[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        P = np.asarray(self.P, dtype=np.float64)
        R = np.asarray(self.R, dtype=np.float64)
        mu = np.asarray(self.mu, dtype=np.float64)
        if P.ndim != 3 or P.shape[0] != P.shape[2] or P.shape[0] < 1 or P.shape[1] < 1:
            raise ValueError(f"P must have shape (S, A, S), got {P.shape}")
        S, A, _ = P.shape
        if not np.all(np.isfinite(P)) or (P < -ATOL).any():
            s, a, _ = np.argwhere(~np.isfinite(P) | (P < -ATOL))[0]
            raise ValueError(f"P has a negative or non-finite entry in row (s={s}, a={a})")
        sums = P.sum(axis=2)
        bad = np.abs(sums - 1.0) > 1e-6
        if bad.any():
            s, a = np.argwhere(bad)[0]
            raise ValueError(
                f"transition row P[{s}, {a}] sums to {sums[s, a]:.6g}, not 1 "
                f"({int(bad.sum())} bad row(s))"
            )
        if R.shape != (S, A):
            raise ValueError(f"R must have shape (S, A) = ({S}, {A}), got {R.shape}")
        lo, hi = (float(x) for x in self.reward_range)
        if not lo < hi:
            raise ValueError(
                f"reward_range must be (low, high) with low < high, got {self.reward_range}"
            )
        if not np.all(np.isfinite(R)) or R.min() < lo - ATOL or R.max() > hi + ATOL:
            raise ValueError(
                f"rewards must lie in the declared range [{lo}, {hi}]; "
                f"got values in [{np.nanmin(R):.6g}, {np.nanmax(R):.6g}]"
            )
        if isinstance(self.H, bool) or not isinstance(self.H, (int, np.integer)) or self.H < 1:
            raise ValueError(f"horizon H must be an integer >= 1, got {self.H!r}")
        if mu.shape != (S,) or (mu < -ATOL).any() or abs(mu.sum() - 1.0) > 1e-6:
            raise ValueError(f"mu must be a probability vector of length S={S}")
        P = np.clip(P, 0.0, None)
        P = P / P.sum(axis=2, keepdims=True)
        mu = np.clip(mu, 0.0, None)
        mu = mu / mu.sum()
        for arr in (P, R, mu):
            arr.setflags(write=False)
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "H", int(self.H))
        object.__setattr__(self, "reward_range", (lo, hi))

    @property
    def S(self) -> int:  # noqa: N802 - the paper's symbol
        """Number of states."""
        return self.P.shape[0]

    @property
    def A(self) -> int:  # noqa: N802 - the paper's symbol
        """Number of actions."""
        return self.P.shape[1]

    @property
    def reward_span(self) -> float:
        """``r_max - r_min`` of the declared range."""
        return self.reward_range[1] - self.reward_range[0]

    def value_iteration(self) -> tuple[np.ndarray, np.ndarray]:
        """Undelayed optimal values and a greedy policy by backward induction.

        Returns ``V`` of shape (H + 1, S) (``V[H] = 0``) and ``pi`` of shape (H, S).
        """
        V = np.zeros((self.H + 1, self.S))
        pi = np.zeros((self.H, self.S), dtype=np.int64)
        for h in range(self.H - 1, -1, -1):
            Q = self.R + self.P @ V[h + 1]  # (S, A)
            pi[h] = Q.argmax(axis=1)
            V[h] = Q.max(axis=1)
        return V, pi

    def is_deterministic(self) -> bool:
        """Whether every transition row is a point mass."""
        return bool(np.all(np.isclose(self.P.max(axis=2), 1.0)))

    def sample_next(self, rng: np.random.Generator, s: int, a: int) -> int:
        """Draw s' ~ P(. | s, a)."""
        return int(rng.choice(self.S, p=self.P[s, a]))


# ---------------------------------------------------------------- gymnasium


def from_gymnasium(env: Any, H: int, rescale: bool = True, name: str | None = None) -> FiniteMDP:  # noqa: N803
    """Build a :class:`FiniteMDP` from a gymnasium toy-text environment's ``unwrapped.P``.

    ``P[s][a]`` is a list of ``(prob, next_state, reward, terminated)``. Terminal next
    states become absorbing with reward 0 (the episode has ended). The expected reward
    r(s, a) = sum prob * reward is mapped affinely onto [0, 1] when ``rescale``, using the
    extreme one-step rewards of the table and 0 (the map is kept in ``mdp.info``); the initial law is the environment's
    ``initial_state_distrib`` when it has one, else the empirical law of 200 resets.

    Examples
    --------
    >>> import gymnasium as gym
    >>> mdp = from_gymnasium(gym.make("FrozenLake-v1", map_name="4x4"), H=10)
    >>> mdp.S, mdp.A, mdp.reward_range
    (16, 4, (0.0, 1.0))
    """
    raw = getattr(getattr(env, "unwrapped", env), "P", None)
    if not isinstance(raw, dict) or not raw:
        raise ValueError(
            f"gymnasium environment {getattr(getattr(env, 'spec', None), 'id', type(env).__name__)!r} "
            "has no tabular model (env.unwrapped.P); only toy-text style environments can be converted"
        )
    obs_space, act_space = env.observation_space, env.action_space
    S = int(getattr(obs_space, "n", len(raw)))
    A = int(getattr(act_space, "n", 0))
    if A < 1:
        raise ValueError(
            "the environment's action space is not Discrete; cannot build a tabular model"
        )
    P = np.zeros((S, A, S))
    R = np.zeros((S, A))
    terminal = np.zeros(S, dtype=bool)
    raw_rewards = []
    for s in range(S):
        for a in range(A):
            for prob, s2, rew, done in raw[s][a]:
                P[s, a, int(s2)] += prob
                R[s, a] += prob * rew
                raw_rewards.append(float(rew))
                if done:
                    terminal[int(s2)] = True
    for s in np.flatnonzero(terminal):
        P[s] = 0.0
        P[s, :, s] = 1.0
        R[s] = 0.0
    info: dict[str, Any] = {
        "source": "gymnasium",
        "terminal_states": np.flatnonzero(terminal).tolist(),
    }
    lo, hi = min(raw_rewards + [0.0]), max(raw_rewards + [0.0])  # absorbing states pay 0
    if rescale:
        span = hi - lo if hi > lo else 1.0
        R = (R - lo) / span
        info["reward_map"] = f"(r - {lo:g}) / {span:g}"
        reward_range = (0.0, 1.0)
    else:
        reward_range = (lo, hi if hi > lo else lo + 1.0)
    unwrapped = getattr(env, "unwrapped", env)
    mu = getattr(unwrapped, "initial_state_distrib", None)
    if mu is None:
        counts = np.zeros(S)
        for i in range(200):
            s0, _ = env.reset(seed=i)
            counts[int(s0)] += 1
        mu = counts / counts.sum()
    spec_id = getattr(getattr(env, "spec", None), "id", None)
    return FiniteMDP(
        P, R, H, np.asarray(mu, dtype=np.float64), reward_range, name or spec_id or "gym", info
    )


# ---------------------------------------------------------------- generated MDPs


def garnet(
    S: int = 6,  # noqa: N803
    A: int = 2,  # noqa: N803
    H: int = 8,  # noqa: N803
    branching: int = 3,
    seed: int = 0,
) -> FiniteMDP:
    """Random Garnet MDP: each (s, a) moves to ``branching`` random states with Dirichlet weights.

    Rewards are uniform on [0, 1]; the initial state is 0.

    Examples
    --------
    >>> mdp = garnet(S=5, A=2, H=4, branching=2, seed=1)
    >>> mdp.P.shape, bool((mdp.P > 0).sum(axis=2).max() <= 2)
    ((5, 2, 5), True)
    """
    if not 1 <= branching <= S:
        raise ValueError(f"branching must be in 1..S={S}, got {branching}")
    rng = np.random.default_rng(seed)
    P = np.zeros((S, A, S))
    for s in range(S):
        for a in range(A):
            nxt = rng.choice(S, size=branching, replace=False)
            P[s, a, nxt] = rng.dirichlet(np.ones(branching))
    R = rng.uniform(0.0, 1.0, size=(S, A))
    mu = np.zeros(S)
    mu[0] = 1.0
    return FiniteMDP(P, R, H, mu, name=f"garnet(S={S},A={A},b={branching})")


def slippery_corridor(S: int = 6, H: int = 8, slip: float = 0.2) -> FiniteMDP:  # noqa: N803
    """Corridor 0..S-1 with actions left/right; each move slips the other way w.p. ``slip``.

    Reward 1 for being at the right end and 0.5 (a safe but smaller prize) at the left end;
    the agent starts in the middle. Open-loop drift makes observation delays costly here.

    Examples
    --------
    >>> mdp = slippery_corridor(S=5, H=6, slip=0.1)
    >>> float(mdp.P[2, 1, 3]), float(mdp.P[2, 1, 1])
    (0.9, 0.1)
    """
    if S < 3:
        raise ValueError(f"the corridor needs S >= 3 states, got {S}")
    if not 0.0 <= slip < 0.5:
        raise ValueError(f"slip must be in [0, 0.5), got {slip}")
    P = np.zeros((S, 2, S))
    for s in range(S):
        left, right = max(s - 1, 0), min(s + 1, S - 1)
        P[s, 0, left] += 1 - slip
        P[s, 0, right] += slip
        P[s, 1, right] += 1 - slip
        P[s, 1, left] += slip
    R = np.zeros((S, 2))
    R[S - 1] = 1.0
    R[0] = 0.5
    mu = np.zeros(S)
    mu[S // 2] = 1.0
    return FiniteMDP(P, R, H, mu, name=f"corridor(S={S},slip={slip:g})")


def chain(S: int = 6, H: int = 10, fail: float = 0.1) -> FiniteMDP:  # noqa: N803
    """Chain (RiverSwim-like): ``right`` advances w.p. 1 - ``fail``; ``left`` returns to 0.

    Reward 0.05 in state 0 under ``left`` and 1 at the far end, so optimism must push past
    a small, safe reward.

    Examples
    --------
    >>> mdp = chain(S=4, H=5)
    >>> float(mdp.R[3, 1]), float(mdp.R[0, 0])
    (1.0, 0.05)
    """
    if S < 2:
        raise ValueError(f"the chain needs S >= 2 states, got {S}")
    if not 0.0 <= fail < 1.0:
        raise ValueError(f"fail must be in [0, 1), got {fail}")
    P = np.zeros((S, 2, S))
    for s in range(S):
        P[s, 0, 0] = 1.0
        P[s, 1, min(s + 1, S - 1)] += 1 - fail
        P[s, 1, s] += fail
    R = np.zeros((S, 2))
    R[0, 0] = 0.05
    R[S - 1, :] = 1.0
    mu = np.zeros(S)
    mu[0] = 1.0
    return FiniteMDP(P, R, H, mu, name=f"chain(S={S})")
