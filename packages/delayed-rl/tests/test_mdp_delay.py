"""FiniteMDP and DelayDistribution: validation, constructors, gymnasium conversion."""

import gymnasium as gym
import numpy as np
import pytest
from delayed_rl.delay import DelayDistribution
from delayed_rl.mdp import FiniteMDP, chain, from_gymnasium, garnet, slippery_corridor


def _ok():
    P = np.full((2, 2, 2), 0.5)
    return P, np.zeros((2, 2)), np.array([1.0, 0.0])


def test_mdp_rejects_bad_transitions_rewards_horizon():
    P, R, mu = _ok()
    bad = P.copy()
    bad[1, 0] = [0.7, 0.7]
    with pytest.raises(ValueError, match=r"P\[1, 0\] sums to 1.4, not 1"):
        FiniteMDP(bad, R, 3, mu)
    neg = P.copy()
    neg[0, 1] = [1.5, -0.5]
    with pytest.raises(ValueError, match="negative"):
        FiniteMDP(neg, R, 3, mu)
    with pytest.raises(ValueError, match="declared range"):
        FiniteMDP(P, R + 2.0, 3, mu)
    with pytest.raises(ValueError, match="horizon H must be an integer >= 1"):
        FiniteMDP(P, R, 0, mu)
    with pytest.raises(ValueError, match="shape"):
        FiniteMDP(P[:, :, :1], R, 3, mu)
    with pytest.raises(ValueError, match="mu must be"):
        FiniteMDP(P, R, 3, np.array([0.5, 0.6]))
    # a declared wider range accepts the rewards
    assert FiniteMDP(P, R + 2.0, 3, mu, reward_range=(0.0, 3.0)).reward_span == 3.0


def test_generated_mdps_are_valid():
    for mdp in (garnet(), slippery_corridor(), chain()):
        np.testing.assert_allclose(mdp.P.sum(axis=2), 1.0)
        assert mdp.P.shape == (mdp.S, mdp.A, mdp.S)
    with pytest.raises(ValueError, match="branching"):
        garnet(S=3, branching=5)


def test_from_gymnasium_frozenlake_and_cliffwalking():
    fl = from_gymnasium(gym.make("FrozenLake-v1", map_name="4x4", is_slippery=True), H=12)
    assert (fl.S, fl.A) == (16, 4)
    assert fl.mu[0] == 1.0
    assert set(fl.info["terminal_states"]) == {5, 7, 11, 12, 15}
    np.testing.assert_allclose(fl.P[15, :, 15], 1.0)  # the goal is absorbing
    assert fl.R[14, 2] == pytest.approx(
        1 / 3
    )  # slippery: 'right' from 14 reaches the goal w.p. 1/3
    cw = from_gymnasium(gym.make("CliffWalking-v1"), H=20)
    assert (cw.S, cw.A) == (48, 4)
    assert cw.R.min() == 0.0 and cw.R.max() == 1.0  # -100 .. -1 mapped onto [0, 1]
    v = cw.value_iteration()[0][0] @ cw.mu
    assert v > 0


def test_from_gymnasium_refuses_non_tabular_env():
    with pytest.raises(ValueError, match="has no tabular model"):
        from_gymnasium(gym.make("CartPole-v1"), H=10)


def test_delay_constructors():
    assert DelayDistribution.constant(3).pmf.tolist() == [0, 0, 0, 1]
    np.testing.assert_allclose(DelayDistribution.uniform(3).pmf, 0.25)
    g = DelayDistribution.geometric(0.5, 2)
    np.testing.assert_allclose(g.pmf, np.array([4, 2, 1]) / 7)
    assert DelayDistribution.parse("uniform:2") == DelayDistribution.uniform(2)
    assert DelayDistribution.parse("pmf:0.5,0.5").D == 1
    assert DelayDistribution.parse("none").D == 0
    est = DelayDistribution.from_samples(
        np.random.default_rng(0).choice(3, 20000, p=[0.2, 0.5, 0.3]), 2
    )
    np.testing.assert_allclose(est.pmf, [0.2, 0.5, 0.3], atol=0.02)


def test_delay_hazard_and_survival():
    q = DelayDistribution(np.array([0.1, 0.2, 0.3, 0.4]))
    np.testing.assert_allclose(q.survival(), [0.9, 0.7, 0.4, 0.0])
    np.testing.assert_allclose(q.hazard(), [0.2 / 0.9, 0.3 / 0.7, 1.0])
    # hazards reproduce the pmf: q(m+1) = lambda(m) * prod_{i<m} (1 - lambda(i)) * (1 - q0)
    lam = q.hazard()
    surv = 1.0 - q.pmf[0]
    for m in range(3):
        assert q.pmf[m + 1] == pytest.approx(surv * lam[m])
        surv *= 1 - lam[m]


def test_delay_rejects_bad_pmf():
    with pytest.raises(ValueError, match="sum to 1"):
        DelayDistribution(np.array([0.5, 0.4]))
    with pytest.raises(ValueError, match="negative"):
        DelayDistribution(np.array([1.5, -0.5]))
    with pytest.raises(ValueError, match="beyond D_max=1"):
        DelayDistribution(np.array([0.5, 0.25, 0.25]), d_max=1)
    with pytest.raises(ValueError, match="bad delay"):
        DelayDistribution.parse("poisson:3")
    with pytest.raises(ValueError, match="bad delay"):
        DelayDistribution.parse("uniform:x")
    with pytest.raises(ValueError, match="exceeds D_max"):
        DelayDistribution.from_samples(np.array([0, 5]), d_max=2)
