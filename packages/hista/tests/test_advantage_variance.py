"""The advantage-error diagnostic: exact advantages, oracle floor, decomposition."""

import pytest
import torch
from hista.advantage_variance import (
    advantage_errors,
    exact_segment_advantages,
    milestone_prefixes,
)
from hista.arith_chain import NoisyTeacher, Problem, sample_problems
from hista.hista_knn import HistaEstimator


def test_exact_advantages_telescope_to_reward_minus_root_value():
    t = NoisyTeacher()
    p = Problem((5, 7, 9, 3))
    for resp in ("12 21 24;", "12 22 25;", "13 22 25;"):
        values, adv = exact_segment_advantages(t, p, resp)
        assert len(values) == len(milestone_prefixes(resp)) == 3
        assert sum(adv) == pytest.approx(float(resp == "12 21 24;") - values[0])


def test_oracle_is_the_floor_and_value_error_adds_to_it():
    g = torch.Generator().manual_seed(0)

    def states(texts):
        return [torch.randn(len(t), 4, generator=g) for t in texts]

    est = HistaEstimator(alpha=0.5, mean_window=1, min_interval=2, min_distance=0.05, k=4)
    res = advantage_errors(NoisyTeacher(), sample_problems(12, seed=3), 6, states, est)
    assert res["oracle"]["value_mae"] == 0.0
    for name in ("group", "numca", "hista"):
        assert res[name]["adv_mse"] >= res["oracle"]["adv_mse"] - 0.02
        assert res[name]["segments"] == res["oracle"]["segments"]
    with pytest.raises(ValueError, match="group size"):
        advantage_errors(NoisyTeacher(), sample_problems(1), 1, states, est)
