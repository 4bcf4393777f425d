"""Episodes under delayed observation, the agent interface and the regret protocol.

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480), Section 2 (protocol) and the regret
Regret(K) = sum_k [V*_1 - V^{pi_k}_1] against the optimal *delay-aware* policy.

Map:

- :class:`Trajectory` -- one episode: hidden states, actions, delays, reveal frontier.
- :func:`run_episode` -- simulate one episode of an augmented policy table under delays
  (the state of step h is seen at step h + d_h; d_1 = 0).
- :class:`Agent` -- interface of the tabular learners (plan a policy table at the start
  of an episode, learn from the fully revealed trajectory at its end).
- :func:`run_agent` -- K episodes with the exact pseudo-regret of every episode's policy
  (policy evaluation by DP, no sampling noise) and the realised regret.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from .augmented import AugmentedMDP, encode_buffer
from .delay import DelayDistribution
from .mdp import FiniteMDP

PolicyTable = list[list[np.ndarray]]


@dataclass
class Trajectory:
    """One episode; every array has shape (H,).

    ``taus[h]`` is the largest index revealed at step h, ``ells[h] = h - taus[h]`` the
    augmented level, ``codes[h]`` the action-buffer code of ``actions[taus[h]:h]``.
    """

    states: np.ndarray
    actions: np.ndarray
    delays: np.ndarray
    taus: np.ndarray
    ells: np.ndarray
    codes: np.ndarray
    rewards: np.ndarray

    @property
    def ret(self) -> float:
        """Realised return sum_h r(s_h, a_h)."""
        return float(self.rewards.sum())


def run_episode(
    mdp: FiniteMDP,
    delay: DelayDistribution,
    policy: PolicyTable,
    rng: np.random.Generator,
) -> Trajectory:
    """Simulate one episode of ``policy[h][l]`` (int actions or probabilities) under delays.

    Examples
    --------
    >>> from delayed_rl.mdp import chain
    >>> mdp = chain(S=3, H=4)
    >>> always_right = [[np.ones((3, 2**l), dtype=int) for l in range(min(1, h) + 1)]
    ...                 for h in range(4)]
    >>> tr = run_episode(mdp, DelayDistribution.constant(1), always_right,
    ...                  np.random.default_rng(0))
    >>> tr.ells.tolist(), tr.actions.tolist()
    ([0, 1, 1, 1], [1, 1, 1, 1])
    """
    S, A, H = mdp.S, mdp.A, mdp.H
    states = np.zeros(H, dtype=np.int64)
    actions = np.zeros(H, dtype=np.int64)
    delays = np.zeros(H, dtype=np.int64)
    if H > 1:
        delays[1:] = delay.sample(rng, H - 1)  # d_1 = 0 by convention
    taus = np.zeros(H, dtype=np.int64)
    ells = np.zeros(H, dtype=np.int64)
    codes = np.zeros(H, dtype=np.int64)
    rewards = np.zeros(H)
    states[0] = rng.choice(S, p=mdp.mu)
    tau = 0
    for h in range(H):
        for j in range(h, tau, -1):  # newest revealed index wins
            if j + delays[j] <= h:
                tau = j
                break
        ell = h - tau
        code = encode_buffer(actions[tau:h], A)
        pol = policy[h][ell]
        if pol.ndim == 2:
            a = int(pol[states[tau], code])
        else:
            a = int(rng.choice(A, p=pol[states[tau], code]))
        taus[h], ells[h], codes[h], actions[h] = tau, ell, code, a
        rewards[h] = mdp.R[states[h], a]
        if h + 1 < H:
            states[h + 1] = rng.choice(S, p=mdp.P[states[h], a])
    return Trajectory(states, actions, delays, taus, ells, codes, rewards)


class Agent(ABC):
    """Abstract base class of the tabular learners.

    Subclasses must implement :meth:`policy` (the table for the coming episode) and may extend
    :meth:`update`. The base class keeps the counts n(s, a, s') of the revealed one-step
    transitions and the observed delays, both of which every learner here may use.

    Parameters
    ----------
    S, A, H:
        Sizes and horizon.
    R:
        Known mean rewards (S, A).
    d_max:
        Known maximum delay D_max (sizes the policy table).
    reward_range:
        Declared reward range; ``r_max`` bounds the optimistic values.

    Examples
    --------
    >>> class AlwaysFirst(Agent):
    ...     def policy(self):
    ...         return self.broadcast(np.zeros((self.H, self.S), dtype=np.int64))
    >>> AlwaysFirst(S=2, A=3, H=3, R=np.zeros((2, 3)), d_max=1).policy()[2][1].shape
    (2, 3)
    >>> Agent(S=2, A=3, H=3, R=np.zeros((2, 3)), d_max=1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    TypeError: Can't instantiate abstract class Agent...
    """

    name = "agent"

    def __init__(
        self,
        S: int,  # noqa: N803
        A: int,  # noqa: N803
        H: int,  # noqa: N803
        R: np.ndarray,  # noqa: N803
        d_max: int,
        reward_range: tuple[float, float] = (0.0, 1.0),
    ) -> None:
        self.S, self.A, self.H, self.D = int(S), int(A), int(H), int(d_max)
        self.R = np.asarray(R, dtype=np.float64)
        if self.R.shape != (self.S, self.A):
            raise ValueError(f"R must have shape {(self.S, self.A)}, got {self.R.shape}")
        self.reward_range = reward_range
        self.r_max = float(reward_range[1])
        self.span = float(reward_range[1] - reward_range[0])
        self.counts = np.zeros((self.S, self.A, self.S))
        self.delay_counts = np.zeros(self.D + 1)
        self.episodes = 0

    @classmethod
    def for_mdp(cls, mdp: FiniteMDP, d_max: int, **kwargs) -> Agent:
        """Build the agent with the sizes, horizon and known rewards of ``mdp``."""
        return cls(mdp.S, mdp.A, mdp.H, mdp.R, d_max, mdp.reward_range, **kwargs)

    @abstractmethod
    def policy(self) -> PolicyTable:
        """Policy table ``[h][l] -> (S, A^l)`` actions (or (S, A^l, A) probabilities)."""

    def update(self, traj: Trajectory) -> None:
        """Learn from an episode once its whole trajectory has been revealed."""
        s, a = traj.states, traj.actions
        np.add.at(self.counts, (s[:-1], a[:-1], s[1:]), 1.0)
        self.delay_counts += np.bincount(traj.delays[1:], minlength=self.D + 1)[: self.D + 1]
        self.episodes += 1

    def state_dict(self) -> dict[str, np.ndarray]:
        """Arrays that define the agent's state (for checkpoints)."""
        return {
            "counts": self.counts,
            "delay_counts": self.delay_counts,
            "episodes": np.array(self.episodes),
        }

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore :meth:`state_dict`."""
        self.counts = np.array(state["counts"], dtype=np.float64)
        self.delay_counts = np.array(state["delay_counts"], dtype=np.float64)
        self.episodes = int(np.asarray(state["episodes"]))

    def broadcast(self, actions: np.ndarray) -> PolicyTable:
        """Table that plays ``actions[h, s]`` at s_tau whatever the buffer, shape (H, S) in."""
        return [
            [
                np.repeat(actions[h][:, None], self.A**ell, axis=1)
                for ell in range(min(self.D, h) + 1)
            ]
            for h in range(self.H)
        ]


@dataclass
class RegretResult:
    """Per-episode exact pseudo-regret and realised regret of one run, shapes (K,)."""

    agent: str
    pseudo: np.ndarray
    realised: np.ndarray
    optimum: float
    extras: dict = field(default_factory=dict)

    @property
    def cumulative(self) -> np.ndarray:
        """Cumulative exact pseudo-regret, shape (K,)."""
        return np.cumsum(self.pseudo)


def _same_table(a: PolicyTable | None, b: PolicyTable) -> bool:
    if a is None:
        return False
    return all(
        x.shape == y.shape and np.array_equal(x, y)
        for ra, rb in zip(a, b, strict=True)
        for x, y in zip(ra, rb, strict=True)
    )


def run_agent(
    agent: Agent,
    aug: AugmentedMDP,
    K: int,  # noqa: N803
    seed: int = 0,
    optimum: float | None = None,
) -> RegretResult:
    """Run ``agent`` for K episodes on ``aug``; exact pseudo-regret of every episode's policy.

    Examples
    --------
    >>> from delayed_rl.mdp import garnet
    >>> from delayed_rl.baselines import RandomAgent
    >>> aug = AugmentedMDP(garnet(S=4, H=4, seed=0), DelayDistribution.uniform(1))
    >>> res = run_agent(RandomAgent.for_mdp(aug.mdp, d_max=1), aug, K=5, seed=0)
    >>> res.pseudo.shape, bool((res.pseudo >= 0).all())
    ((5,), True)
    """
    if isinstance(K, bool) or int(K) != K or K < 1:
        raise ValueError(f"number of episodes K must be an integer >= 1, got {K!r}")
    if agent.D < aug.D:
        raise ValueError(f"agent knows D_max={agent.D} but delays reach {aug.D}")
    rng = np.random.default_rng(seed)
    vstar = aug.solve().value if optimum is None else optimum
    pseudo = np.zeros(int(K))
    realised = np.zeros(int(K))
    last_table: PolicyTable | None = None
    last_value = 0.0
    for k in range(int(K)):
        table = agent.policy()
        if agent.D > aug.D:  # drop levels the delay process never reaches
            table = [row[: min(aug.D, h) + 1] for h, row in enumerate(table)]
        if not _same_table(last_table, table):
            last_value = aug.evaluate(table)
            last_table = table
        traj = run_episode(aug.mdp, aug.delay, table, rng)
        agent.update(traj)
        gap = vstar - last_value
        pseudo[k] = 0.0 if -1e-9 < gap < 0.0 else gap  # round-off only; real negatives stay
        realised[k] = vstar - traj.ret
    return RegretResult(agent.name, pseudo, realised, vstar)
