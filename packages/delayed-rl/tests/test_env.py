"""Gymnasium wrappers: delayed observations with reveal information, augmented observation."""

import gymnasium as gym
import numpy as np
import pytest
from delayed_rl.delay import DelayDistribution
from delayed_rl.env import AugmentedObservationWrapper, DelayedObservationEnv, TabularEnv
from delayed_rl.mdp import garnet
from gymnasium.utils.env_checker import check_env


def test_tabular_env_passes_gymnasium_checker():
    check_env(TabularEnv(garnet(S=4, A=2, H=5)), skip_render_check=True)


@pytest.mark.parametrize("delay", [DelayDistribution.uniform(3), DelayDistribution.constant(2)])
def test_delayed_env_reveals_every_state_once_and_in_time(delay):
    mdp = garnet(S=5, A=2, H=12, seed=1)
    env = DelayedObservationEnv(TabularEnv(mdp), delay)
    hidden = []
    _, info = env.reset(seed=3)
    hidden.append(env.unwrapped._s)
    seen = dict(info["revealed"])
    rng = np.random.default_rng(0)
    done = False
    while not done:
        obs, _, term, trunc, info = env.step(int(rng.integers(2)))
        hidden.append(env.unwrapped._s)
        done = term or trunc
        assert 0 <= info["age"] <= delay.D
        assert obs == hidden[info["tau"]]  # the returned observation is the newest revealed
        for j, o in info["revealed"]:
            assert j not in seen
            seen[j] = o
        if not done:
            assert all(j <= info["step"] for j in seen)
            assert all(j in seen for j in range(info["step"] - delay.D + 1))  # d <= D
    assert [seen[j] for j in range(len(hidden))] == hidden  # whole trajectory revealed


def test_constant_delay_ages():
    env = DelayedObservationEnv(TabularEnv(garnet(S=3, H=6)), DelayDistribution.constant(2))
    env.reset(seed=0)
    ages = [env.step(0)[4]["age"] for _ in range(5)]
    assert ages == [1, 2, 2, 2, 2]


def test_augmented_observation_encodes_the_sufficient_statistic():
    mdp = garnet(S=4, A=3, H=8, seed=2)
    base = DelayedObservationEnv(TabularEnv(mdp), DelayDistribution.uniform(2))
    env = AugmentedObservationWrapper(base)
    assert env.observation_space.shape == (4 + 2 * 3 + 3,)
    obs, _ = env.reset(seed=1)
    assert obs.dtype == np.float32 and env.observation_space.contains(obs)
    actions, hidden = [], [base.unwrapped._s]
    for a in [2, 1, 0, 2, 1]:
        obs, _, _, _, info = env.step(a)
        actions.append(a)
        hidden.append(base.unwrapped._s)
        s_tau, slots, age = obs[:4], obs[4:10].reshape(2, 3), obs[10:]  # (S,), (D, A), (D + 1,)
        assert s_tau.sum() == 1 and s_tau.argmax() == hidden[info["tau"]]
        assert age.argmax() == info["age"]
        buf = actions[info["tau"] :]
        assert [int(r.argmax()) for r in slots[: len(buf)]] == buf
        assert slots[len(buf) :].sum() == 0


def test_augmented_wrapper_bad_input():
    with pytest.raises(ValueError, match="wraps a DelayedObservationEnv"):
        AugmentedObservationWrapper(TabularEnv(garnet(S=3, H=3)))
    env = DelayedObservationEnv(gym.make("Pendulum-v1"), DelayDistribution.constant(1))
    with pytest.raises(ValueError, match="Discrete action space"):
        AugmentedObservationWrapper(env)
