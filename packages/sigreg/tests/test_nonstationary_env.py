"""Non-stationarity wrapper: phases switch on schedule and do what they say."""

import numpy as np
import pytest
from sigreg.nonstationary_env import NonStationaryVectorEnv, build_env, make_vector_env


def _pair(kinds, period=2, **kw):
    base = make_vector_env("CartPole-v1", 2, seed=0)
    ref = make_vector_env("CartPole-v1", 2, seed=0)
    return NonStationaryVectorEnv(base, period, kinds, **kw), ref


def test_permutation_and_sign_follow_the_schedule():
    env, ref = _pair(("permute", "sign"), period=2, seed=1)
    obs, _ = env.reset(seed=3)
    robs, _ = ref.reset(seed=3)
    assert np.allclose(obs, robs)  # phase 0 is the unchanged environment
    a = np.zeros(2, dtype=np.int64)
    for step in range(1, 7):
        obs, r, *_ = env.step(a)
        robs, rr, *_ = ref.step(a)
        assert env.phase == step // 2
        assert np.allclose(obs, robs[:, env._perm] * env._sign)
        assert np.allclose(r, rr)
    assert not np.array_equal(env._perm, np.arange(4)) or not np.all(env._sign == 1)


def test_reward_scale_and_raw_episode_returns():
    env, _ = _pair(("reward",), period=1, reward_scales=(1.0, 0.5))
    env.reset(seed=0)
    rewards = [env.step(np.zeros(2, dtype=np.int64))[1][0] for _ in range(4)]
    assert rewards == [1.0, 0.5, 1.0, 0.5]
    for _ in range(200):
        env.step(np.zeros(2, dtype=np.int64))
    assert env.episodes and all(float(r).is_integer() for _, r in env.episodes)  # raw scale


def test_dynamics_change_sets_attributes():
    env = build_env("CartPole-v1", 2, period=1, kinds=("dynamics",))
    env.reset(seed=0)
    env.step(np.zeros(2, dtype=np.int64))
    assert env.env.get_attr("force_mag") == (5.0, 5.0)
    assert env.env.get_attr("gravity") == (19.6, 19.6)


def test_explicit_permutations_and_bad_input():
    base = make_vector_env("CartPole-v1", 1)
    env = NonStationaryVectorEnv(base, 1, ("permute",), permutations=[[0, 1, 2, 3], [3, 2, 1, 0]])
    env.reset(seed=0)
    env.step(np.zeros(1, dtype=np.int64))
    assert env._perm.tolist() == [3, 2, 1, 0]
    with pytest.raises(ValueError, match="permutation"):
        NonStationaryVectorEnv(
            make_vector_env("CartPole-v1", 1), 1, ("permute",), permutations=[[0, 1]]
        )
    with pytest.raises(ValueError, match="period"):
        NonStationaryVectorEnv(make_vector_env("CartPole-v1", 1), 0)
    with pytest.raises(ValueError, match="kinds"):
        NonStationaryVectorEnv(make_vector_env("CartPole-v1", 1), 1, ("bogus",))
    with pytest.raises(ValueError, match="unknown environment id"):
        make_vector_env("NoSuchEnv-v0", 1)
    with pytest.raises(ValueError, match="dynamics"):
        build_env("Acrobot-v1", 1, period=1, kinds=("dynamics",))


def test_minatar_breakout_builds_and_steps_when_installed():
    pytest.importorskip("minatar")
    env = build_env("MinAtar/Breakout-v1", 2, period=3, kinds=("permute", "sign"), seed=0)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2, 400) and obs.dtype == np.float32
    for _ in range(4):
        obs, r, term, trunc, _ = env.step(np.zeros(2, dtype=np.int64))
    assert env.phase == 1


def test_minatar_is_skipped_cleanly_without_the_package(monkeypatch):
    import sys

    from sigreg.rl_benchmark import control_benchmark

    monkeypatch.setitem(sys.modules, "minatar", None)  # import raises ImportError
    small = {"lr": 1e-3, "num_envs": 2, "num_steps": 4, "hidden": 8}
    tables, tasks, notes = control_benchmark(
        [0.0], 1, small, dict(small, num_minibatches=2), pqn_iterations=2, pqn_seeds=1,
        ppo_iterations=1, ppo_seeds=1, minatar_iterations=2, minatar_seeds=1,
    )  # fmt: skip
    assert list(tasks) == ["CartPole-v1"] and any("minatar" in n for n in notes)
    assert [t.title.split(":")[0] for t in tables] == [
        "Non-stationary CartPole",
        "Aggregate over tasks",
    ]
