"""RL pieces: advantage modes, loss types, one short training run."""

import pytest
import torch
from hista.hista_knn import HistaEstimator
from hista.lightning import ArithProblemsDataModule, PolicyRLModule, train_rl
from hista.numca import NumcaTable
from hista.rl_training import policy_loss, token_advantages


def test_group_advantages_are_constant_per_rollout_and_sum_to_zero():
    adv = token_advantages("group", "p", ["1;", "2 3;", "4;"], [1.0, 0.0, 0.0], [2, 4, 2])
    assert [len(a) for a in adv] == [2, 4, 2]
    assert sum(float(a[0]) for a in adv) == pytest.approx(0.0, abs=1e-5)


def test_hista_lambda_one_final_segment_is_reward_minus_neighbour_value():
    g = torch.Generator().manual_seed(0)
    embs = [torch.randn(4, 3, generator=g) for _ in range(3)]
    est = HistaEstimator(alpha=0.0, mean_window=1, min_interval=2, min_distance=0.01, k=100)
    adv = token_advantages("hista", "p", ["a"] * 3, [1.0, 0.0, 1.0], [4, 4, 4], None, embs, est)
    std = float(torch.tensor([1.0, 0.0, 1.0]).std()) + 1e-4
    assert float(adv[0][0]) * std == pytest.approx(1.0 - 2 / 3, abs=1e-4)  # first: R - mean
    # later segments: R minus a convex combination of the other two rewards (0 and 1)
    assert 0.0 - 1e-4 <= float(adv[0][-1]) * std <= 1.0 + 1e-4


def test_losses_agree_on_policy_and_reject_unknown():
    lp = torch.log(torch.full((2, 3), 0.5, requires_grad=True))
    adv = torch.tensor([[1.0, 1.0, 0.0], [-1.0, -1.0, -1.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    for loss in ("grpo", "dapo", "dr_grpo"):
        val = policy_loss(lp, lp.detach(), adv, mask, loss)
        assert torch.isfinite(val)
    # on-policy DAPO: -(sum of masked advantages) / tokens
    assert policy_loss(lp, lp.detach(), adv, mask, "dapo").item() == pytest.approx(-(2 - 3) / 5)
    with pytest.raises(ValueError, match="unknown loss type"):
        policy_loss(lp, lp, adv, mask, "ppo2")
    with pytest.raises(ValueError, match="unknown advantage"):
        token_advantages("vine", "p", ["a", "b"], [0.0, 1.0], [1, 1])
    with pytest.raises(ValueError, match=">= 2 rollouts"):
        token_advantages("group", "p", ["a"], [1.0], [1])
    with pytest.raises(ValueError, match="matching"):
        token_advantages("group", "p", ["a", "b"], [1.0], [1, 1])
    bads = ({"lr": 0.0}, {"max_grad_norm": -1.0}, {"group_size": 1}, {"loss_type": "ppo"})
    for bad in (*bads, {"advantage": "tree"}, {"vine_k": 0}, {"critic_lr": 0.0}):
        with pytest.raises(ValueError):
            PolicyRLModule(hidden=8, layers=1, heads=2, **bad)


@pytest.mark.parametrize("adv", ["group", "numca", "hista", "vine", "critic"])
def test_short_rl_run_is_finite(adv):
    torch.manual_seed(0)
    m = PolicyRLModule(advantage=adv, group_size=2, hidden=16, layers=1, heads=2, max_new=8)
    train_rl(m, 2, ArithProblemsDataModule(n_problems=16, n_held_out=2, batch_size=2))
    assert len(m.step_rewards) == 2
    assert all(torch.isfinite(p).all() for p in m.policy.parameters())
    if adv == "numca":
        assert isinstance(m.table, NumcaTable) and m.table.counts
    if adv == "critic":  # the value head was fitted after each step
        assert m._value_opt is not None and all(
            torch.isfinite(p).all() for p in m.value_head.parameters()
        )


def test_zero_std_groups_get_zero_advantages_and_numca_root_falls_back_to_group_mean():
    t = NumcaTable()
    for mode in ("group", "numca"):
        adv = token_advantages(mode, "p", ["1 2;", "3;"], [1.0, 1.0], [4, 2], t)
        assert all(float(a.abs().max()) == 0.0 for a in adv)
    adv = token_advantages("numca", "p", ["abc", "def"], [1.0, 0.0], [3, 3], NumcaTable())
    assert float(adv[0][0]) > 0 > float(adv[1][0])  # root = group mean 0.5, not 0


def test_token_advantages_use_the_given_token_spans():
    # two-character tokens: "7 " | "9;" -> a milestone after the first token
    t = NumcaTable()
    t.update("p", ["7"], 1.0)
    offs = [[(0, 2), (2, 4)], [(0, 2), (2, 4)]]
    adv = token_advantages("numca", "p", ["7 9;", "8 9;"], [1.0, 0.0], [2, 2], t, offsets=offs)
    assert [len(a) for a in adv] == [2, 2]
    with pytest.raises(ValueError, match="span per response token"):
        token_advantages("group", "p", ["7 9;", "8;"], [1.0, 0.0], [2, 2], offsets=[[(0, 2)]] * 2)


def test_unscaled_advantages_are_reward_minus_value():
    adv = token_advantages("group", "p", ["1;", "2;"], [1.0, 1.0], [2, 2], scale=False)
    assert all(float(a.abs().max()) == 0.0 for a in adv)
    adv = token_advantages("group", "p", ["1;", "2;"], [1.0, 0.0], [2, 2], scale=False)
    assert float(adv[0][0]) == pytest.approx(0.5) and float(adv[1][0]) == pytest.approx(-0.5)


def test_numca_update_modes_before_loo_after():
    offs = [[(i, i + 1) for i in range(4)]] * 2
    resp, rs = ["7 9;", "8 9;"], [1.0, 0.0]
    args = dict(offsets=offs, numca_at="end", numca_unseen="fallback", scale=False)
    t = NumcaTable()
    before = token_advantages("numca", "p", resp, rs, [4, 4], t, numca_update="before", **args)
    # the group is in the table: each rollout's own state {7} / {8} carries its own reward,
    # so after the first number the advantage is R - R = 0 (the self-reward of the reference)
    assert float(before[0][1:].abs().max()) == 0.0 and t.value("p", []) == 0.5
    t = NumcaTable()
    loo = token_advantages("numca", "p", resp, rs, [4, 4], t, numca_update="loo", **args)
    # leave-one-out: root = the other rollout's reward, {7} unseen without self -> group mean
    assert float(loo[0][0]) == pytest.approx(1.0) and float(loo[0][1]) == pytest.approx(0.5)
    assert t.value("p", ["7"]) == 1.0  # the table still holds the group afterwards
    t = NumcaTable()
    after = token_advantages("numca", "p", resp, rs, [4, 4], t, numca_update="after", **args)
    assert float(after[0][0]) == pytest.approx(0.5) and t.value("p", ["8"]) == 0.0
    with pytest.raises(ValueError, match="numca_update"):
        token_advantages("numca", "p", resp, rs, [4, 4], t, numca_update="never")
