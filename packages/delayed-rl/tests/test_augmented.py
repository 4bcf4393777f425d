"""The augmented MDP: beliefs, jump law, exact DP against brute force, value properties."""

from collections import Counter, defaultdict

import numpy as np
import pytest
from delayed_rl.augmented import (
    AugmentedMDP,
    augmented_size,
    backward_induction,
    beliefs,
    check_size,
    decode_buffer,
    encode_buffer,
    jump_law,
)
from delayed_rl.baselines import RandomAgent
from delayed_rl.delay import DelayDistribution
from delayed_rl.interaction import run_episode
from delayed_rl.mdp import FiniteMDP, chain, garnet, slippery_corridor
from scipy import stats

DELAYS = [
    DelayDistribution.constant(2),
    DelayDistribution.uniform(2),
    DelayDistribution.geometric(0.4, 3),
    DelayDistribution(np.array([0.5, 0.0, 0.5])),
]


def test_buffer_code_round_trip():
    for length in range(4):
        for code in range(3**length):
            assert encode_buffer(decode_buffer(code, length, 3), 3) == code


@pytest.mark.parametrize("delay", DELAYS, ids=lambda q: q.label)
def test_jump_law_rows_are_distributions(delay):
    p = jump_law(delay)
    assert p.shape == (delay.D + 1, delay.D + 2)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    assert (p >= 0).all()
    for ell in range(delay.D + 1):
        assert np.all(p[ell, ell + 2 :] == 0)  # the frontier cannot pass the present
    assert p[delay.D, 0] == 0  # at level D the oldest pending state surely arrives


def test_beliefs_shapes_and_rows():
    mdp = garnet(S=4, A=3, H=3, seed=2)
    B = beliefs(mdp.P, 3)
    for ell, b in enumerate(B):
        assert b.shape == (4, 3**ell, 4)  # (S, A^l, S)
        np.testing.assert_allclose(b.sum(axis=2), 1.0, atol=1e-12)
    # B[2][s, code(a0, a1)] = e_s P_a0 P_a1
    np.testing.assert_allclose(B[2][1, encode_buffer((2, 0), 3)], mdp.P[1, 2] @ mdp.P[:, 0, :])


def test_transition_rows_sum_to_one_and_level_sizes():
    aug = AugmentedMDP(garnet(S=3, A=2, H=6, seed=0), DelayDistribution.uniform(2))
    assert aug.n_states == augmented_size(3, 2, 2) == 3 * (1 + 2 + 4)
    for h in range(4):
        assert len(aug.states(h)) == 3 * sum(2**ell for ell in range(min(2, h) + 1))
    for _ell, s, buf in aug.states():
        for a in range(2):
            out = aug.transition(s, buf, a)
            assert sum(p for p, _ in out) == pytest.approx(1.0)
            assert all(0 <= x[0] <= 2 for _, x in out)


def _simulate_frequencies(mdp, delay, episodes, seed):
    """Empirical law of the hidden current state and of the frontier jump, per (h, x)."""
    rng = np.random.default_rng(seed)
    agent = RandomAgent.for_mdp(mdp, d_max=delay.D)
    table = agent.policy()
    hidden = defaultdict(Counter)
    jumps = defaultdict(Counter)
    for _ in range(episodes):
        tr = run_episode(mdp, delay, table, rng)
        for h in range(mdp.H):
            x = (int(tr.ells[h]), int(tr.states[tr.taus[h]]), int(tr.codes[h]))
            hidden[x][int(tr.states[h])] += 1
            if h + 1 < mdp.H:
                jumps[int(tr.ells[h])][int(tr.taus[h + 1] - tr.taus[h])] += 1
    return hidden, jumps


def test_beliefs_match_simulated_hidden_state_frequencies():
    mdp = slippery_corridor(S=5, H=6, slip=0.3)
    delay = DelayDistribution.uniform(2)
    aug = AugmentedMDP(mdp, delay)
    hidden, jumps = _simulate_frequencies(mdp, delay, 4000, seed=1)
    tested = 0
    pvalues = []
    for (ell, s, code), counter in hidden.items():
        n = sum(counter.values())
        if n < 300 or ell == 0:
            continue
        b = aug.belief(s, decode_buffer(code, ell, mdp.A))
        support = b > 0
        obs = np.array([counter[i] for i in range(mdp.S)])
        assert obs[~support].sum() == 0  # never a state the belief excludes
        pvalues.append(stats.chisquare(obs[support], n * b[support]).pvalue)
        tested += 1
    assert tested >= 5
    # a Bonferroni-corrected goodness-of-fit test over all tested augmented states
    assert min(pvalues) > 1e-3 / tested
    # the jump law of the reveal frontier matches the simulated reveals
    p = jump_law(delay)
    for ell, counter in jumps.items():
        n = sum(counter.values())
        obs = np.array([counter[k] for k in range(ell + 2)])
        exp = n * p[ell, : ell + 2]
        keep = exp > 0
        assert obs[~keep].sum() == 0
        assert stats.chisquare(obs[keep], exp[keep]).pvalue > 1e-4


def _brute_force_optimum(mdp, delay):
    """Optimal value over *all* history-dependent policies, by expectimax over observations.

    Worlds are joint (hidden states, delays) prefixes; the agent's information at step h is
    the set {(j, s_j) : j + d_j <= h} seen so far (plus its own actions), so worlds are
    grouped by that observation. Does not use the sufficient statistic at all.
    """
    H, A = mdp.H, mdp.A
    q = delay.pmf

    def obs(states, delays, h):
        return frozenset((j, states[j]) for j in range(h + 1) if j + delays[j] <= h)

    def value(h, worlds):
        best = -np.inf
        for a in range(A):
            total = sum(w * mdp.R[st[h], a] for st, dl, w in worlds)
            if h + 1 < H:
                groups = defaultdict(list)
                for st, dl, w in worlds:
                    for s2 in np.flatnonzero(mdp.P[st[h], a]):
                        for d in np.flatnonzero(q):
                            nst, ndl = (*st, int(s2)), (*dl, int(d))
                            groups[obs(nst, ndl, h + 1)].append(
                                (nst, ndl, w * mdp.P[st[h], a, s2] * q[d])
                            )
                total += sum(value(h + 1, g) for g in groups.values())
            best = max(best, total)
        return best

    return sum(value(0, [((s,), (0,), mdp.mu[s])]) for s in np.flatnonzero(mdp.mu))


@pytest.mark.parametrize(
    "delay",
    [
        DelayDistribution.constant(1),
        DelayDistribution.uniform(2),
        DelayDistribution.geometric(0.5, 2),
    ],
    ids=lambda q: q.label,
)
def test_dp_oracle_matches_brute_force_enumeration(delay):
    mdp = garnet(S=2, A=2, H=4, branching=2, seed=3)
    exact = AugmentedMDP(mdp, delay).solve().value
    assert exact == pytest.approx(_brute_force_optimum(mdp, delay), abs=1e-10)


def test_optimal_value_non_increasing_in_constant_delay():
    for mdp in (slippery_corridor(S=6, H=8), garnet(seed=4), chain(S=5, H=8, fail=0.3)):
        values = [AugmentedMDP(mdp, DelayDistribution.constant(d)).solve().value for d in range(5)]
        assert np.all(np.diff(values) <= 1e-10), values
        assert values[0] == pytest.approx(mdp.value_iteration()[0][0] @ mdp.mu)


def test_random_delay_value_between_constant_and_undelayed():
    mdp = slippery_corridor(S=6, H=8, slip=0.25)
    v0 = AugmentedMDP(mdp, DelayDistribution.constant(0)).solve().value
    for D in range(1, 4):
        vconst = AugmentedMDP(mdp, DelayDistribution.constant(D)).solve().value
        vrand = AugmentedMDP(mdp, DelayDistribution.uniform(D)).solve().value
        assert vconst - 1e-10 <= vrand <= v0 + 1e-10


def test_deterministic_transitions_lose_nothing():
    rng = np.random.default_rng(0)
    S, A, H = 5, 3, 6
    P = np.zeros((S, A, S))
    P[np.arange(S)[:, None], np.arange(A)[None, :], rng.integers(0, S, size=(S, A))] = 1.0
    mdp = FiniteMDP(P, rng.uniform(size=(S, A)), H, np.eye(S)[0])
    assert mdp.is_deterministic()
    v0 = mdp.value_iteration()[0][0] @ mdp.mu
    for delay in DELAYS:
        assert AugmentedMDP(mdp, delay).solve().value == pytest.approx(v0, abs=1e-10)
    # and with noise the delay costs something
    assert AugmentedMDP(slippery_corridor(), DelayDistribution.constant(3)).solve().value < (
        slippery_corridor().value_iteration()[0][0] @ slippery_corridor().mu - 1e-3
    )


def test_policy_evaluation_matches_monte_carlo_and_optimum():
    mdp = slippery_corridor(S=5, H=6, slip=0.3)
    delay = DelayDistribution.uniform(2)
    aug = AugmentedMDP(mdp, delay)
    plan = aug.solve()
    assert aug.evaluate(plan.actions) == pytest.approx(plan.value, abs=1e-12)
    rng = np.random.default_rng(5)
    returns = np.array([run_episode(mdp, delay, plan.actions, rng).ret for _ in range(4000)])
    se = returns.std() / np.sqrt(len(returns))
    assert abs(returns.mean() - plan.value) < 4 * se
    # any other policy is no better (the oracle is optimal over augmented policies)
    rnd = RandomAgent.for_mdp(mdp, d_max=2).policy()
    assert aug.evaluate(rnd) <= plan.value + 1e-12
    assert aug.pseudo_regret(rnd) >= 0


def test_q_tensor_shapes():
    mdp = garnet(S=3, A=2, H=4)
    aug = AugmentedMDP(mdp, DelayDistribution.uniform(2))
    plan = backward_induction(mdp.P, mdp.R, mdp.H, aug.jump, mdp.mu)
    for h in range(4):
        assert len(plan.Q[h]) == min(2, h) + 1
        for ell, Q in enumerate(plan.Q[h]):
            assert Q.shape == (3, 2**ell, 2)  # (S, A^l, A)
            assert plan.V[h][ell].shape == (3, 2**ell)


def test_size_cap_refuses_and_names_the_size():
    with pytest.raises(ValueError, match=r"too large: .*= 5461 states"):
        check_size(1, 4, 6, max_states=1000)
    with pytest.raises(ValueError, match="augmented state space too large"):
        AugmentedMDP(garnet(S=4, A=4, H=3), DelayDistribution.constant(5), max_states=1000)


def test_bad_policy_table_is_refused():
    aug = AugmentedMDP(garnet(S=3, A=2, H=3), DelayDistribution.constant(1))
    with pytest.raises(ValueError, match="H=3 steps"):
        aug.evaluate([])
    bad = [[np.full((3, 2**ell), 5) for ell in range(min(1, h) + 1)] for h in range(3)]
    with pytest.raises(ValueError, match="actions outside"):
        aug.evaluate(bad)
    with pytest.raises(ValueError, match="out of range"):
        aug.transition(0, (), 7)


@pytest.mark.parametrize("delay", DELAYS, ids=lambda q: q.label)
def test_materialised_augmented_mdp_gives_the_same_optimum(delay):
    # undelayed VI on the written-out augmented MDP (rewards when earned, not when revealed)
    from delayed_rl.anchors import materialised_value

    for mdp in (garnet(S=3, A=2, H=6, seed=7), slippery_corridor(S=4, H=5, slip=0.3)):
        aug = AugmentedMDP(mdp, delay)
        flat = aug.to_finite_mdp()
        assert aug.n_states == flat.S
        np.testing.assert_allclose(flat.P.sum(axis=2), 1.0, atol=1e-12)
        assert materialised_value(aug) == pytest.approx(aug.solve().value, abs=1e-10)


def test_materialising_refuses_large_spaces():
    aug = AugmentedMDP(garnet(S=6, A=2, H=4), DelayDistribution.constant(4))
    with pytest.raises(ValueError, match="186 augmented states"):
        aug.to_finite_mdp(max_states=100)


def test_mdptoolbox_anchor_agrees():
    pytest.importorskip("mdptoolbox")
    from delayed_rl.anchors import mdptoolbox_value

    aug = AugmentedMDP(chain(S=4, H=6, fail=0.3), DelayDistribution.geometric(0.5, 2))
    assert mdptoolbox_value(aug) == pytest.approx(aug.solve().value, abs=1e-10)
