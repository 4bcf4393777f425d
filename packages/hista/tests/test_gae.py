"""Segment GAE closed forms and the group-average baseline."""

import pytest
import torch
from hista.segment_gae import group_advantages, segment_gae


def test_lambda_one_equals_reward_minus_segment_start_value():
    v = torch.tensor([0.3, 0.6, 0.1])
    adv = segment_gae(v, [0, 2, 5], 7, final_reward=1.0, lam=1.0)
    assert adv.tolist() == pytest.approx([0.7, 0.7, 0.4, 0.4, 0.4, 0.9, 0.9])


def test_general_lambda_matches_the_discounted_sum_of_deltas():
    v = torch.tensor([0.2, 0.5, 0.9, 0.4])
    r, lam = 0.0, 0.6
    adv = segment_gae(v, [0, 1, 2, 3], 4, r, lam)
    nxt = torch.tensor([0.5, 0.9, 0.4, r])
    delta = nxt - v
    expect = [sum(lam ** (j - i) * delta[j] for j in range(i, 4)) for i in range(4)]
    assert adv.tolist() == pytest.approx([float(e) for e in expect], abs=1e-6)


def test_segment_gae_rejects_bad_boundaries():
    with pytest.raises(ValueError, match="values for"):
        segment_gae(torch.tensor([0.1, 0.2]), [0], 3, 1.0)
    with pytest.raises(ValueError, match="start at 0"):
        segment_gae(torch.tensor([0.1, 0.2]), [1, 2], 3, 1.0)
    with pytest.raises(ValueError, match="not inside"):
        segment_gae(torch.tensor([0.1, 0.2]), [0, 3], 3, 1.0)


def test_group_advantages_sum_to_zero_per_group_and_have_unit_scale():
    g = torch.Generator().manual_seed(0)
    r = (torch.rand(5, 8, generator=g) > 0.5).float()
    r[:, 0], r[:, 1] = 0.0, 1.0  # mixed groups
    a = group_advantages(r)
    assert torch.allclose(a.sum(1), torch.zeros(5), atol=1e-5)
    assert torch.allclose(a.std(1), torch.ones(5), atol=1e-3)
    assert torch.allclose(group_advantages(r, "none"), r - r.mean(1, keepdim=True))


def test_group_advantages_bad_input():
    with pytest.raises(ValueError, match="G >= 2"):
        group_advantages(torch.ones(3, 1))
    with pytest.raises(ValueError, match="unknown scale"):
        group_advantages(torch.ones(2, 2), "batch")
