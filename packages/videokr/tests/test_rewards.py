import numpy as np
from videokr.rewards import compute_score, format_reward, group_advantage


def test_reward_weights_and_format():
    sol = "<answer>B</answer>"
    assert compute_score("<think>a</think>\n<answer>B</answer>", sol) == 1.0
    assert abs(compute_score("<think>a</think><answer>C</answer>", sol) - 0.1) < 1e-12
    assert abs(compute_score("<answer>B</answer>", sol) - 0.9) < 1e-12
    assert format_reward("<think>a</think>") == 0.0


def test_group_advantage_sums_to_zero_and_equal_rewards_give_zero():
    a = group_advantage(np.array([[1.0, 0.0, 0.5, 0.1], [0.3, 0.3, 0.3, 0.3]]))
    assert np.allclose(a.sum(-1), 0.0)
    assert np.allclose(a[1], 0.0)
