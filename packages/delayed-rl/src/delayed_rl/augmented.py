"""The augmented MDP of delayed observations: sufficient statistic, beliefs, jump law, DP.

Paper: Lee & Jamieson, "Minimax Optimal Strategy for Delayed Observations in Online
Reinforcement Learning" (ICML 2026, arXiv:2603.03480). The paper casts delayed observation
as an MDP whose transition splits into a *known* component (the delay process) and an
*unknown but structured* one (built from the original kernel P). No public code or full
text was available to us; this module is our reconstruction of that construction:

1. Sufficient statistic (state augmentation). At step h let tau_h be the largest index whose
   state has been revealed and l_h = h - tau_h <= D. Delays are independent of states, so
   x_h = (l_h, s_{tau_h}, a_{tau_h}, ..., a_{h-1}) is sufficient. Level l holds S * A^l
   states; an action buffer (a_0, ..., a_{l-1}) is encoded as the base-A integer with the
   oldest action most significant (:func:`encode_buffer`).
2. Exact belief over the current state, b_x = e_{s_tau} P_{a_tau} ... P_{a_{h-1}}
   (:func:`beliefs`, tensors of shape (S, A^l, S)).
3. Known jump law of the revealed index (:func:`jump_law`): after acting at level l the
   reveal frontier advances by k in {0, ..., l + 1} with probability p_l(k), built from the
   delay hazards only.
4. Unknown, structured part: given a jump by k the newly revealed state is distributed as
   b over k one-step transitions of P, and the states it passes are revealed with it.
5. Dynamic programming (:func:`backward_induction`) in the "reward on reveal" form: the
   rewards r(s_i, a_i) of the indices the frontier passes are collected at the jump, so
   every reward and every optimism bonus attaches to one-step transitions of P that the
   jump reveals (each real step charged once per episode). With bonus 0 this is the exact
   delayed optimum (the oracle) and exact policy evaluation (pseudo-regret without
   sampling noise); it differs from the "reward at step h" form by a term that does not
   depend on the action, so greedy policies and V_1 coincide.

:class:`AugmentedMDP` bundles these for one (MDP, delay) pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .delay import DelayDistribution
from .mdp import FiniteMDP

DEFAULT_MAX_STATES = 2_000_000


def level_sizes(S: int, A: int, D: int) -> list[int]:  # noqa: N803
    """Number of augmented states S * A^l at each level l = 0..D."""
    return [S * A**ell for ell in range(D + 1)]


def augmented_size(S: int, A: int, D: int) -> int:  # noqa: N803
    """|X| = S * sum_{l <= D} A^l."""
    return sum(level_sizes(S, A, D))


def check_size(S: int, A: int, D: int, max_states: int = DEFAULT_MAX_STATES) -> int:  # noqa: N803
    """Refuse augmented spaces above ``max_states`` (naming how large they would be)."""
    n = augmented_size(S, A, D)
    # the belief tensor at level D + 1 is the largest array: S * A^(D+1) * S floats
    work = S * S * A ** (D + 1)
    if n > max_states or work > 50 * max_states:
        raise ValueError(
            f"augmented state space too large: S*sum_(l<=D) A^l = {S}*sum_(l<={D}) {A}^l = {n} "
            f"states (belief tensor {work} entries); the cap is {max_states} states. "
            "Use a smaller maximum delay or pass a larger max_states."
        )
    return n


def encode_buffer(actions: Sequence[int], A: int) -> int:  # noqa: N803
    """Base-A code of an action buffer, oldest action most significant."""
    code = 0
    for a in actions:
        code = code * A + int(a)
    return code


def decode_buffer(code: int, length: int, A: int) -> tuple[int, ...]:  # noqa: N803
    """Inverse of :func:`encode_buffer`."""
    out = []
    for _ in range(length):
        code, a = divmod(code, A)
        out.append(a)
    return tuple(reversed(out))


def jump_law(delay: DelayDistribution) -> np.ndarray:
    """p[l, k]: probability that the reveal frontier advances by k after acting at level l.

    Shape (D + 1, D + 2). At level l the pending indices have ages 0..l-1 (the newest has
    age 0); at the next step the new state is seen at once with q(0) (k = l + 1), otherwise
    the frontier moves to the newest pending index that is revealed, each being revealed
    independently with its hazard lambda(age); k = 0 when none is.

    Examples
    --------
    >>> p = jump_law(DelayDistribution.constant(2))
    >>> p[2].tolist()  # at l = D the oldest pending state arrives for sure
    [0.0, 1.0, 0.0, 0.0]
    >>> p[0].tolist()
    [1.0, 0.0, 0.0, 0.0]
    """
    D = delay.D
    q0 = float(delay.pmf[0])
    lam = delay.hazard()  # (D,)
    p = np.zeros((D + 1, D + 2))
    for ell in range(D + 1):
        p[ell, ell + 1] = q0
        none_newer = 1.0 - q0  # no index newer than the one examined was revealed
        for i in range(ell, 0, -1):  # pending index tau + i has age ell - i
            h = lam[ell - i]
            p[ell, i] = none_newer * h
            none_newer *= 1.0 - h
        p[ell, 0] = none_newer
    return p


def beliefs(P: np.ndarray, depth: int) -> list[np.ndarray]:  # noqa: N803
    """Open-loop beliefs B[l][s, code, :] = e_s P_{a_0} ... P_{a_{l-1}} for l = 0..depth.

    ``P`` has shape (S, A, S); ``B[l]`` has shape (S, A^l, S) and rows summing to 1.

    Examples
    --------
    >>> P = np.array([[[0.5, 0.5]], [[0.0, 1.0]]])  # S = 2, A = 1
    >>> beliefs(P, 2)[2][0, 0].tolist()
    [0.25, 0.75]
    """
    S, A, _ = P.shape
    out = [np.eye(S)[:, None, :]]  # (S, 1, S)
    for _ in range(depth):
        prev = out[-1]
        nxt = (prev.reshape(-1, S) @ P.reshape(S, A * S)).reshape(S, prev.shape[1] * A, S)
        out.append(nxt)
    return out


@dataclass
class PlanResult:
    """Output of :func:`backward_induction`.

    ``V[h][l]`` has shape (S, A^l) and ``Q[h][l]`` shape (S, A^l, A), both in reveal form;
    ``actions[h][l]`` (S, A^l) is the greedy (or given) action, for h = 0..H-1 and
    l = 0..min(D, h). ``V[H]`` is absent (zero).
    """

    V: list[list[np.ndarray]]
    Q: list[list[np.ndarray]]
    actions: list[list[np.ndarray]]
    mu: np.ndarray

    @property
    def value(self) -> float:
        """V_1 = sum_s mu(s) V_1(l = 0, s)."""
        return float(self.mu @ self.V[0][0][:, 0])


def backward_induction(
    P: np.ndarray,  # noqa: N803
    R: np.ndarray,  # noqa: N803
    H: int,  # noqa: N803
    jump: np.ndarray,
    mu: np.ndarray,
    bonus: np.ndarray | None = None,
    policy: list[list[np.ndarray]] | None = None,
    clip: float | None = None,
    belief: list[np.ndarray] | None = None,
) -> PlanResult:
    """Dynamic programming on the augmented MDP (reveal form).

    Q_h(x, a) = sum_k p_l(k) [ sum_{j<k} E_{s_j ~ B_j}(r + beta_{t_j})(s_j, a_j)
                               + E_{s' ~ B_k} V_{h+1}(l + 1 - k, s', a_{k:}) ]
    with t_j = h - l + j the original step of the j-th buffered transition; at h = H the
    pending rewards are collected without the bonus of the (unused) last transition.

    Parameters
    ----------
    P, R:
        Model used for planning, shapes (S, A, S) and (S, A) (the truth for the oracle,
        estimates for an optimistic agent).
    H:
        Horizon.
    jump:
        Known jump law from :func:`jump_law`, shape (D + 1, D + 2).
    mu:
        Initial law (S,).
    bonus:
        Optional per-transition bonus beta[t, s, a], shape (H, S, A); ``beta[H - 1]`` is
        ignored (no transition after the last step).
    policy:
        Optional fixed policy ``policy[h][l]``: int actions (S, A^l) or probabilities
        (S, A^l, A); evaluates it instead of maximising.
    clip:
        Optional per-reward upper bound (``r_max``): Q at level l is clipped to
        (l + H - h) * clip, the most the remaining rewards can sum to (optimism only).
    belief:
        Precomputed :func:`beliefs` of ``P`` up to depth D + 1.
    """
    S, A, _ = P.shape
    D = jump.shape[0] - 1
    B = belief if belief is not None else beliefs(P, D + 1)
    beta = np.zeros((H, S, A)) if bonus is None else np.asarray(bonus, dtype=np.float64)
    if beta.shape != (H, S, A):
        raise ValueError(f"bonus must have shape (H, S, A) = {(H, S, A)}, got {beta.shape}")
    beta = beta.copy()
    beta[H - 1] = 0.0  # Eq. (reveal form): no transition after the last step
    RB = R[None] + beta  # (H, S, A)
    V: list[list[np.ndarray]] = [[] for _ in range(H)]
    Qs: list[list[np.ndarray]] = [[] for _ in range(H)]
    acts: list[list[np.ndarray]] = [[] for _ in range(H)]
    V_next: list[np.ndarray] = []
    for h in range(H - 1, -1, -1):
        V_h, Q_h, act_h = [], [], []
        for ell in range(min(D, h) + 1):
            m = ell + 1  # length of the buffer a_tau..a_h once a_h is chosen
            # cumulative reward-plus-bonus of the first k buffered indices, (S, A^k)
            rcum = [np.zeros((S, 1))]
            for j in range(m):
                t = h - ell + j
                e_j = (B[j].reshape(-1, S) @ RB[t]).reshape(S, A ** (j + 1))
                rcum.append(np.repeat(rcum[-1], A, axis=1) + e_j)
            if h == H - 1:
                Qf = rcum[m]  # terminal: collect the pending rewards
            else:
                Qf = np.zeros((S, A**m))
                for k in range(m + 1):
                    pk = jump[ell, k]
                    if pk <= 0.0:
                        continue
                    cont = (B[k].reshape(-1, S) @ V_next[m - k]).reshape(S, A**m)
                    Qf += pk * (np.repeat(rcum[k], A ** (m - k), axis=1) + cont)
            Q = Qf.reshape(S, A**ell, A)
            if clip is not None:
                Q = np.minimum(Q, (ell + H - h) * clip)
            if policy is None:
                a = Q.argmax(axis=2)
                v = Q.max(axis=2)
            else:
                pol = np.asarray(policy[h][ell])
                if pol.ndim == 2:
                    a = pol.astype(np.int64)
                    v = np.take_along_axis(Q, a[..., None], axis=2)[..., 0]
                else:
                    a = pol.argmax(axis=2)
                    v = (pol * Q).sum(axis=2)
            V_h.append(v)
            Q_h.append(Q)
            act_h.append(a)
        V[h], Qs[h], acts[h] = V_h, Q_h, act_h
        V_next = V_h
    return PlanResult(V, Qs, acts, np.asarray(mu))


class AugmentedMDP:
    """The delayed-observation problem (MDP, delay) as an MDP on augmented states.

    Parameters
    ----------
    mdp:
        The undelayed :class:`~delayed_rl.mdp.FiniteMDP`.
    delay:
        The :class:`~delayed_rl.delay.DelayDistribution` of observation delays.
    max_states:
        Refuse (``ValueError`` naming S * sum A^l) larger augmented spaces.

    References
    ----------
    Lee & Jamieson (2026), the augmentation and the known/unknown decomposition;
    Katsikopoulos & Engelbrecht (2003), "Markov decision processes with delays and
    asynchronous cost collection" (augmented states for random delays).

    Examples
    --------
    >>> from delayed_rl.mdp import slippery_corridor
    >>> aug = AugmentedMDP(slippery_corridor(S=5, H=6), DelayDistribution.constant(2))
    >>> aug.n_states, aug.belief(1, (0, 1)).round(3).tolist()
    (35, [0.16, 0.68, 0.0, 0.16, 0.0])
    >>> v0, v2 = aug.mdp.value_iteration()[0][0] @ aug.mdp.mu, aug.solve().value
    >>> bool(v2 <= v0 + 1e-12)
    True
    """

    def __init__(
        self, mdp: FiniteMDP, delay: DelayDistribution, max_states: int = DEFAULT_MAX_STATES
    ) -> None:
        self.mdp = mdp
        self.delay = delay
        self.D = delay.D
        self.n_states = check_size(mdp.S, mdp.A, self.D, max_states)
        self.jump = jump_law(delay)  # (D + 1, D + 2)
        self._B = beliefs(mdp.P, self.D + 1)

    # ------------------------------------------------------------ states

    def states(self, h: int | None = None) -> list[tuple[int, int, tuple[int, ...]]]:
        """Augmented states (l, s, actions) reachable at 0-indexed step ``h`` (all if None)."""
        top = self.D if h is None else min(self.D, h)
        S, A = self.mdp.S, self.mdp.A
        return [
            (ell, s, decode_buffer(c, ell, A))
            for ell in range(top + 1)
            for s in range(S)
            for c in range(A**ell)
        ]

    def belief(self, s: int, actions: Sequence[int]) -> np.ndarray:
        """Exact belief over the current state given s_tau = s and the actions since, (S,)."""
        ell = len(actions)
        if ell > self.D:
            raise ValueError(f"buffer of {ell} actions exceeds the maximum delay D={self.D}")
        return self._B[ell][s, encode_buffer(actions, self.mdp.A)].copy()

    def transition(
        self, s: int, actions: Sequence[int], a: int
    ) -> list[tuple[float, tuple[int, int, tuple[int, ...]]]]:
        """Law of the next augmented state after action ``a``: [(prob, (l', s', buffer'))]."""
        ell = len(actions)
        if not 0 <= a < self.mdp.A:
            raise ValueError(f"action {a} out of range 0..{self.mdp.A - 1}")
        if ell > self.D:
            raise ValueError(f"buffer of {ell} actions exceeds the maximum delay D={self.D}")
        u = tuple(actions) + (int(a),)
        out = []
        for k in range(ell + 2):
            pk = self.jump[ell, k]
            if pk <= 0:
                continue
            b = self._B[k][s, encode_buffer(u[:k], self.mdp.A)]
            for s2 in np.flatnonzero(b > 0):
                out.append((float(pk * b[s2]), (ell + 1 - k, int(s2), u[k:])))
        return out

    def reward(self, s: int, actions: Sequence[int], a: int) -> float:
        """Expected reward of the current step r_bar(x, a) = sum_s b_x(s) r(s, a)."""
        return float(self.belief(s, actions) @ self.mdp.R[:, a])

    def index(self, ell: int, s: int, code: int) -> int:
        """Flat index of the augmented state (l, s, buffer code) in :meth:`to_finite_mdp`."""
        return (
            sum(level_sizes(self.mdp.S, self.mdp.A, ell - 1)) * (ell > 0)
            + s * self.mdp.A**ell
            + code
        )

    def to_finite_mdp(self, max_states: int = 3000) -> FiniteMDP:
        """Materialise the augmented MDP as an ordinary stationary :class:`FiniteMDP`.

        States are all (l, s_tau, buffer) with l <= D, ordered by :meth:`index`; the
        transition is :meth:`transition` (known jump law times beliefs), the reward the
        belief-averaged r_bar(x, a) and the initial law mu on level 0. The dynamics are
        stationary, so undelayed value iteration on this MDP (or any external finite-horizon
        solver) must give the delayed optimum of :meth:`solve` -- an independent check of the
        reveal-form DP. Dense, so refused above ``max_states`` augmented states.

        Examples
        --------
        >>> from delayed_rl.mdp import garnet
        >>> aug = AugmentedMDP(garnet(S=3, A=2, H=5), DelayDistribution.uniform(2))
        >>> flat = aug.to_finite_mdp()
        >>> flat.S, bool(abs(flat.value_iteration()[0][0] @ flat.mu - aug.solve().value) < 1e-12)
        (21, True)
        """
        S, A = self.mdp.S, self.mdp.A
        n = self.n_states
        if n > max_states:
            raise ValueError(
                f"materialising {n} augmented states as a dense MDP exceeds max_states={max_states}"
            )
        P = np.zeros((n, A, n))
        R = np.zeros((n, A))
        for ell, s, buf in self.states():
            i = self.index(ell, s, encode_buffer(buf, A))
            b = self._B[ell][s, encode_buffer(buf, A)]
            R[i] = b @ self.mdp.R
            for a in range(A):
                for p, (ell2, s2, buf2) in self.transition(s, buf, a):
                    P[i, a, self.index(ell2, s2, encode_buffer(buf2, A))] += p
        mu = np.zeros(n)
        mu[:S] = self.mdp.mu
        return FiniteMDP(
            P, R, self.mdp.H, mu, self.mdp.reward_range, f"aug[{self.mdp.name},{self.delay.label}]"
        )

    # ------------------------------------------------------------ DP

    def solve(self) -> PlanResult:
        """Exact delayed-optimal values and policy (the oracle)."""
        return backward_induction(
            self.mdp.P, self.mdp.R, self.mdp.H, self.jump, self.mdp.mu, belief=self._B
        )

    def evaluate(self, policy: list[list[np.ndarray]]) -> float:
        """Exact value V^pi_1 of an augmented policy ``policy[h][l]`` (no sampling noise)."""
        self.check_policy(policy)
        return backward_induction(
            self.mdp.P,
            self.mdp.R,
            self.mdp.H,
            self.jump,
            self.mdp.mu,
            policy=policy,
            belief=self._B,
        ).value

    def check_policy(self, policy: list[list[np.ndarray]]) -> None:
        """Validate the shapes of a policy table against this augmented space."""
        S, A, H = self.mdp.S, self.mdp.A, self.mdp.H
        if len(policy) != H:
            raise ValueError(f"policy must have H={H} steps, got {len(policy)}")
        for h in range(H):
            if len(policy[h]) < min(self.D, h) + 1:
                raise ValueError(f"policy at step {h} covers {len(policy[h])} delay levels")
            for ell in range(min(self.D, h) + 1):
                arr = np.asarray(policy[h][ell])
                if arr.shape[:2] != (S, A**ell):
                    raise ValueError(
                        f"policy[{h}][{ell}] has shape {arr.shape}, expected {(S, A**ell)}"
                    )
                if arr.ndim == 2 and ((arr < 0) | (arr >= A)).any():
                    raise ValueError(f"policy[{h}][{ell}] has actions outside 0..{A - 1}")

    def pseudo_regret(self, policy: list[list[np.ndarray]], optimum: float | None = None) -> float:
        """V*_1 - V^pi_1 (exact)."""
        vstar = self.solve().value if optimum is None else optimum
        return vstar - self.evaluate(policy)
