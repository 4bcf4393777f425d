"""Baseline learners for delayed observations (the comparison of ``delayed-rl reproduce``).

Paper: Lee & Jamieson (ICML 2026, arXiv:2603.03480) contrast their shared-model
algorithm with naive augmentation, whose regret scales with sqrt(|X|) ~ sqrt(S A^D).

Map:

- :func:`ucbvi_q` / :class:`UCBVI` -- UCBVI of Azar, Osband & Munos (2017) on the original
  MDP; used directly, it is *delay-ignorant*: it acts on the last observed state as if it
  were current (:class:`DelayIgnorantUCBVI` is the same learner under its table name).
- :class:`NaiveAugmentedUCBVI` -- UCBVI on the augmented MDP treated as a black box, with
  separate counts (and reward estimates) per augmented state.
- :class:`BeliefGreedyUCBVI` -- optimistic Q on the original MDP, acting by
  argmax_a sum_s b_hat_x(s) Q_bar_h(s, a) (Walsh et al. 2009 style model-based simulation).
- :class:`RandomAgent` -- uniform actions.
"""

from __future__ import annotations

import numpy as np

from .augmented import augmented_size, beliefs, check_size
from .bonus import Bonus, empirical_kernel, log_term, make_bonus, resolve_scale
from .interaction import Agent, PolicyTable, Trajectory


def ucbvi_q(
    P_hat: np.ndarray,  # noqa: N803
    R: np.ndarray,  # noqa: N803
    beta: np.ndarray,
    H: int,  # noqa: N803
    r_max: float,
) -> np.ndarray:
    """Optimistic Q-values of UCBVI, shape (H, S, A).

    Q_t(s, a) = min((H - t) r_max, (r + beta_t)(s, a) + P_hat(. | s, a) . V_{t+1}) for t < H - 1
    and Q_{H-1} = r (known rewards, no transition left to be uncertain about).
    """
    S, A = R.shape
    Q = np.zeros((H, S, A))
    W = np.zeros(S)
    for t in range(H - 1, -1, -1):
        if t == H - 1:
            Q[t] = np.minimum(R, r_max)
        else:
            cont = np.einsum("sax,x->sa", P_hat, W)
            Q[t] = np.minimum((R + beta[t]) + cont, (H - t) * r_max)
        W = Q[t].max(axis=1)
    return Q


class UCBVI(Agent):
    """UCBVI on the original MDP, acting on the last observed state (delay-ignorant).

    Parameters
    ----------
    S, A, H, R, d_max, reward_range:
        See :class:`~delayed_rl.interaction.Agent`.
    bonus, bonus_scale, delta:
        As for :class:`~delayed_rl.delay_ucbvi.DelayUCBVI`.

    References
    ----------
    Azar, Osband & Munos (2017), "Minimax regret bounds for reinforcement learning", ICML.

    Examples
    --------
    >>> from delayed_rl.mdp import chain
    >>> mdp = chain(S=3, H=4)
    >>> agent = UCBVI.for_mdp(mdp, d_max=0)
    >>> agent.q_values().shape
    (4, 3, 2)
    """

    name = "ucbvi"

    def __init__(
        self,
        S: int,  # noqa: N803
        A: int,  # noqa: N803
        H: int,  # noqa: N803
        R: np.ndarray,  # noqa: N803
        d_max: int,
        reward_range: tuple[float, float] = (0.0, 1.0),
        bonus: str | Bonus = "hoeffding",
        bonus_scale: float | str = "theory",
        delta: float = 0.1,
    ) -> None:
        super().__init__(S, A, H, R, d_max, reward_range)
        self.bonus: Bonus = (
            make_bonus(bonus, bonus_scale, delta, self.span) if isinstance(bonus, str) else bonus
        )

    def q_values(self) -> np.ndarray:
        """Optimistic Q_bar of the current counts, shape (H, S, A)."""
        P_hat, _ = empirical_kernel(self.counts)
        beta = self.bonus(self.counts, self.R, self.H, self.episodes + 1)
        return ucbvi_q(P_hat, self.R, beta, self.H, self.r_max)

    def policy(self) -> PolicyTable:
        """Greedy in Q_bar at the last observed state, ignoring the action buffer."""
        return self.broadcast(self.q_values().argmax(axis=2))


class DelayIgnorantUCBVI(UCBVI):
    """:class:`UCBVI` under the name used in the tables (acts on s_tau as if it were s_h)."""

    name = "delay-ignorant"


class BeliefGreedyUCBVI(UCBVI):
    """Belief-greedy optimism: argmax_a b_hat_x . Q_bar_h(., a) with UCBVI's undelayed Q_bar.

    Examples
    --------
    >>> from delayed_rl.mdp import slippery_corridor
    >>> agent = BeliefGreedyUCBVI.for_mdp(slippery_corridor(S=4, H=5), d_max=2)
    >>> [t.shape for t in agent.policy()[4]]
    [(4, 1), (4, 2), (4, 4)]
    """

    name = "belief-greedy"

    def policy(self) -> PolicyTable:
        """Act on the belief over the current state propagated through P_hat."""
        Q = self.q_values()  # (H, S, A)
        P_hat, _ = empirical_kernel(self.counts)
        B = beliefs(P_hat, self.D)
        return [
            [
                (B[ell].reshape(-1, self.S) @ Q[h])
                .reshape(self.S, self.A**ell, self.A)
                .argmax(axis=2)
                for ell in range(min(self.D, h) + 1)
            ]
            for h in range(self.H)
        ]


class NaiveAugmentedUCBVI(Agent):
    """UCBVI on augmented states with separate counts per augmented state, known rewards.

    Each (x, a) has its own empirical law over the next augmented state (indexed by the
    frontier advance k and the revealed state s'). Like every other learner it is *given* the
    mean rewards R(s, a); what it cannot know without a model of P is the law of the hidden
    current state given x, so it keeps a separate empirical law m_hat(s | x) per augmented
    state (counted once the state is revealed) and uses r_hat(x, a) = sum_s m_hat(s | x) R(s, a).
    At level 0 (x = the current state) this is R exactly, as for UCBVI.

    One bonus c * H * span * sqrt(L / n(x, a)), L = log(|X| A H k / delta), covers the
    estimated reward and transition of (x, a) together; at the last step only the reward is
    uncertain, so the bonus there is c * span * sqrt(L / n) and 0 at level 0 (known reward, as
    UCBVI). Unvisited (x, a) are fully optimistic. Nothing is shared across augmented states,
    so exploration costs grow with |X| ~ S A^D.

    Examples
    --------
    >>> from delayed_rl.mdp import garnet
    >>> agent = NaiveAugmentedUCBVI.for_mdp(garnet(S=3, H=4), d_max=1)
    >>> [c.shape for c in agent.aug_counts]
    [(3, 1, 2, 2, 3), (3, 2, 2, 3, 3)]
    """

    name = "naive-augmented"

    def __init__(
        self,
        S: int,  # noqa: N803
        A: int,  # noqa: N803
        H: int,  # noqa: N803
        R: np.ndarray,  # noqa: N803
        d_max: int,
        reward_range: tuple[float, float] = (0.0, 1.0),
        bonus_scale: float | str = "theory",
        delta: float = 0.1,
        max_states: int = 2_000_000,
    ) -> None:
        super().__init__(S, A, H, R, d_max, reward_range)
        check_size(self.S, self.A, self.D, max_states)
        self.bonus_scale, self.delta = resolve_scale(bonus_scale, "hoeffding"), float(delta)
        # (s_tau, code, a, k, s') for each level l
        self.aug_counts = [
            np.zeros((self.S, self.A**ell, self.A, ell + 2, self.S)) for ell in range(self.D + 1)
        ]
        # (s_tau, code, s_h): the hidden current state seen once revealed
        self.state_counts = [np.zeros((self.S, self.A**ell, self.S)) for ell in range(self.D + 1)]
        self.visits = [np.zeros((self.S, self.A**ell, self.A)) for ell in range(self.D + 1)]

    def update(self, traj: Trajectory) -> None:
        """Add the augmented transitions (x_h, a_h, x_{h+1}) and hidden states of the episode."""
        super().update(traj)
        H = self.H
        for h in range(H):
            ell, s, c, a = traj.ells[h], traj.states[traj.taus[h]], traj.codes[h], traj.actions[h]
            self.visits[ell][s, c, a] += 1
            self.state_counts[ell][s, c, traj.states[h]] += 1
            if h + 1 < H:
                k = traj.taus[h + 1] - traj.taus[h]
                s2 = traj.states[traj.taus[h + 1]]
                self.aug_counts[ell][s, c, a, k, s2] += 1

    def state_dict(self) -> dict[str, np.ndarray]:
        """Counts of the base class plus the per-augmented-state statistics."""
        out = super().state_dict()
        for ell in range(self.D + 1):
            out[f"aug_counts_{ell}"] = self.aug_counts[ell]
            out[f"state_counts_{ell}"] = self.state_counts[ell]
            out[f"visits_{ell}"] = self.visits[ell]
        return out

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Restore :meth:`state_dict`."""
        super().load_state_dict(state)
        for ell in range(self.D + 1):
            self.aug_counts[ell] = np.array(state[f"aug_counts_{ell}"], dtype=np.float64)
            self.state_counts[ell] = np.array(state[f"state_counts_{ell}"], dtype=np.float64)
            self.visits[ell] = np.array(state[f"visits_{ell}"], dtype=np.float64)

    def policy(self) -> PolicyTable:
        """Greedy actions of optimistic value iteration over the augmented MDP."""
        S, A, H, D = self.S, self.A, self.H, self.D
        L = log_term(augmented_size(S, A, D), A, H, self.episodes + 1, self.delta)
        vmax = H * self.span
        V_next: list[np.ndarray] = []
        table: PolicyTable = [[] for _ in range(H)]
        for h in range(H - 1, -1, -1):
            V_h, act_h = [], []
            for ell in range(min(D, h) + 1):
                n = np.maximum(self.visits[ell], 1.0)  # (S, A^l, A)
                seen = self.state_counts[ell]  # (S, A^l, S)
                m_hat = seen / np.maximum(seen.sum(axis=2, keepdims=True), 1.0)
                if ell == 0:  # x = (0, s): the current state is s
                    m_hat = np.eye(S)[:, None, :]
                r_hat = m_hat @ self.R  # (S, A^l, A): known R, estimated hidden-state law
                if h + 1 < H:
                    beta = np.minimum(vmax, self.bonus_scale * vmax * np.sqrt(L / n))
                    m = ell + 1
                    cnt = self.aug_counts[ell].reshape(S, A**m, ell + 2, S)
                    tot = np.maximum(cnt.sum(axis=(2, 3)), 1.0)  # (S, A^m)
                    cont = np.zeros((S, A**m))
                    for k in range(m + 1):
                        if m - k > min(D, h + 1):
                            continue
                        suffix = np.arange(A**m) % A ** (m - k)
                        Vk = V_next[m - k][:, suffix]  # (S', A^m)
                        cont += np.einsum("sux,xu->su", cnt[:, :, k, :], Vk)
                    Q = r_hat + beta + (cont / tot).reshape(S, A**ell, A)
                else:
                    beta = 0.0 if ell == 0 else self.bonus_scale * self.span * np.sqrt(L / n)
                    Q = r_hat + beta
                Q = np.minimum(Q, (H - h) * self.r_max)
                unvisited = self.visits[ell] == 0
                if h + 1 < H:
                    Q[unvisited] = (H - h) * self.r_max  # unvisited: fully optimistic
                elif ell > 0:  # last step: the best reward any hidden state could give
                    Q = np.where(unvisited, self.R.max(axis=0)[None, None, :], Q)
                a = Q.argmax(axis=2)
                V_h.append(np.take_along_axis(Q, a[..., None], axis=2)[..., 0])
                act_h.append(a)
            table[h] = act_h
            V_next = V_h
        return table


class RandomAgent(Agent):
    """Uniformly random actions (probability table).

    Examples
    --------
    >>> from delayed_rl.mdp import chain
    >>> RandomAgent.for_mdp(chain(S=3, H=2), d_max=1).policy()[1][1].shape
    (3, 2, 2)
    """

    name = "random"

    def policy(self) -> PolicyTable:
        """Uniform probabilities over actions at every augmented state."""
        return [
            [
                np.full((self.S, self.A**ell, self.A), 1.0 / self.A)
                for ell in range(min(self.D, h) + 1)
            ]
            for h in range(self.H)
        ]
