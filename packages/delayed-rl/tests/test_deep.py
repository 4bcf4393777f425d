"""The deep-RL observation schemes (shapes, delays) and one tiny PPO run."""

import numpy as np
import pytest
from delayed_rl.deep import make_env, parse_task


def test_observation_schemes():
    aug = make_env("CartPole-v1", "augmented", 3)
    assert aug.observation_space.shape == (4 + 3 * 2 + 4,)
    obs, _ = aug.reset(seed=0)
    assert obs[-4] == 1.0  # age 0 at reset
    gym_delay = make_env("CartPole-v1", "gymnasium-delay", 2)
    first, _ = gym_delay.reset(seed=0)
    assert np.all(first == 0)  # gymnasium shows zeros until the first observation arrives
    const = make_env("CartPole-v1", "augmented-constant", 2)
    const.reset(seed=0)
    ages = [int(np.argmax(const.step(0)[0][-3:])) for _ in range(3)]
    assert ages == [1, 2, 2]  # a constant delay of 2: the age saturates at 2
    assert parse_task("FrozenLake-v1:is_slippery=False")[1] == {"is_slippery": False}
    with pytest.raises(ValueError, match="cannot make gymnasium environment"):
        make_env("NoSuchEnv-v0", "augmented", 1)


def test_tiny_ppo_run_returns_a_finite_mean():
    pytest.importorskip("stable_baselines3")
    from delayed_rl.deep import train_and_evaluate

    ret = train_and_evaluate("FrozenLake-v1:is_slippery=False", "augmented", 1, 64, 0, 2)
    assert 0.0 <= ret <= 1.0
