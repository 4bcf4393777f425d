"""GRPO properties, and the workspace contract for the SFT and GRPO LightningModules."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from icml26_shared.contract import check_contract
from videokr.lightning import (
    GRPOModule,
    SFTModule,
    SynthKRDataModule,
    group_advantages,
    grpo_loss,
    k3_kl,
)


def _dm():
    return SynthKRDataModule(n_videos=8, batch_size=4, filtered=False)


def _forward(model, batch):
    return model(batch["video"], batch["input_ids"], batch["attention_mask"])


def test_advantages_sum_to_zero_per_group():
    r = torch.rand(5, 8)
    assert torch.allclose(group_advantages(r).sum(-1), torch.zeros(5), atol=1e-5)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-20, 20), min_size=2, max_size=16),
    st.lists(st.floats(-20, 20), min_size=2, max_size=16),
)
def test_k3_kl_nonnegative(a, b):
    n = min(len(a), len(b))
    assert bool((k3_kl(torch.tensor(a[:n]), torch.tensor(b[:n])) >= -1e-6).all())


@pytest.mark.parametrize("reward", [0.1, 0.7, 0.9, 1.0])
def test_equal_rewards_give_zero_gradient(reward):
    # 0.1 and 0.9 are the rewards of a wrong and of an unformatted right answer (0.9 acc + 0.1
    # format); over a group of 8 their float32 mean is not exactly the reward.
    logp = torch.randn(8, 6, requires_grad=True)
    mask = torch.ones(8, 6)
    adv = group_advantages(torch.full((1, 8), reward)).flatten()
    assert torch.all(adv == 0)
    loss, _ = grpo_loss(logp, logp.detach(), logp.detach(), adv, mask, kl_coef=0.01)
    loss.backward()  # zero advantage, and the k3 KL has zero gradient at pi == ref
    assert torch.allclose(logp.grad, torch.zeros_like(logp.grad), atol=1e-7)


def test_sampled_group_rewards_and_advantages():
    torch.manual_seed(0)
    m = GRPOModule(d_model=32, layers=1, heads=2, group_size=3, max_new_tokens=6)
    dm = _dm()
    dm.setup("fit")
    roll = m.sample_groups(next(iter(dm.train_dataloader())))
    assert roll["tokens"].shape[0] == 12 and roll["rewards"].shape == (12,)
    assert torch.allclose(roll["adv"].view(4, 3).sum(-1), torch.zeros(4), atol=1e-4)


def test_sft_contract(tmp_path):
    check_contract(lambda: SFTModule(d_model=32, layers=1, heads=2, max_new_tokens=4), _dm, tmp_path,
                   forward_fn=_forward)  # fmt: skip


def test_grpo_contract_and_reference_frozen(tmp_path):
    res = check_contract(
        lambda: GRPOModule(d_model=32, layers=1, heads=2, group_size=2, max_new_tokens=4),
        _dm,
        tmp_path,
        forward_fn=_forward,
    )
    assert all(not p.requires_grad for p in res.model.reference.parameters())


def test_update_moves_policy_not_reference():
    torch.manual_seed(0)
    m = GRPOModule(d_model=32, layers=1, heads=2)
    before = [p.clone() for p in m.reference.parameters()]
    dm = _dm()
    dm.setup("fit")
    b = next(iter(dm.train_dataloader()))
    comp, cmask = b["input_ids"][:, :5], torch.ones(4, 5, dtype=torch.long)
    args = (b["video"], b["prompt_ids"], b["prompt_mask"], comp, cmask)
    logp = m.model.token_logprobs(*args)
    ref = m.reference.token_logprobs(*args)
    loss, _ = grpo_loss(logp, logp.detach(), ref, torch.tensor([1.0, -1.0, 0.5, -0.5]), cmask)
    opt = torch.optim.SGD(m.model.parameters(), lr=0.1)
    loss.backward()
    opt.step()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in m.model.parameters())
    assert all(torch.equal(p, q) for p, q in zip(before, m.reference.parameters(), strict=True))


def test_update_raises_the_advantage_weighted_log_probability():
    # The direction of a GRPO step: a small step on the loss raises sum_i A_i log pi(o_i), i.e.
    # completions with a positive advantage gain log-probability relative to negative ones.
    torch.manual_seed(0)
    m = GRPOModule(d_model=32, layers=1, heads=2)
    dm = _dm()
    dm.setup("fit")
    b = next(iter(dm.train_dataloader()))
    comp, cmask = b["input_ids"][:, :5], torch.ones(4, 5, dtype=torch.long)
    args = (b["video"], b["prompt_ids"], b["prompt_mask"], comp, cmask)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5])
    logp = m.model.token_logprobs(*args)
    loss, _ = grpo_loss(logp, logp.detach(), logp.detach(), adv, cmask, kl_coef=0.0)
    loss.backward()
    torch.optim.SGD(m.model.parameters(), lr=1e-3).step()
    with torch.no_grad():
        change = (m.model.token_logprobs(*args) - logp.detach()).sum(1)
    assert float((adv * change).sum()) > 0


def test_grpo_starts_from_sft_checkpoint(tmp_path):
    sft = SFTModule(d_model=32, layers=1, heads=2)
    path = tmp_path / "sft.ckpt"
    import lightning

    torch.save({"state_dict": sft.state_dict(), "hyper_parameters": dict(sft.hparams),
                "pytorch-lightning_version": lightning.__version__}, path)  # fmt: skip
    g = GRPOModule(d_model=32, layers=1, heads=2, init_ckpt=str(path))
    for p, q in zip(sft.model.parameters(), g.reference.parameters(), strict=True):
        assert torch.equal(p, q)


def test_token_mean_weighs_tokens_and_seq_mean_weighs_sequences():
    # closed form with ratio 1 (logp == old) and ref == logp (no KL): loss = -sum(m A) / norm
    torch.manual_seed(0)
    n, length = 5, 9
    logp = torch.randn(n, length)
    lengths = torch.tensor([1, 3, 9, 4, 2])
    mask = (torch.arange(length)[None, :] < lengths[:, None]).long()
    adv = torch.randn(n)
    tok, _ = grpo_loss(logp, logp, logp, adv, mask)
    seq, _ = grpo_loss(logp, logp, logp, adv, mask, loss_agg_mode="seq-mean-token-mean")
    assert float(tok) == pytest.approx(float(-(adv * lengths).sum() / lengths.sum()), abs=1e-6)
    assert float(seq) == pytest.approx(float(-adv.mean()), abs=1e-6)
    # with equal lengths the two modes agree
    full = torch.ones(n, length, dtype=torch.long)
    a, _ = grpo_loss(logp, logp, logp, adv, full)
    b, _ = grpo_loss(logp, logp, logp, adv, full, loss_agg_mode="seq-mean-token-mean")
    assert float(a) == pytest.approx(float(b), abs=1e-6)
    with pytest.raises(ValueError, match="loss_agg_mode"):
        grpo_loss(logp, logp, logp, adv, mask, loss_agg_mode="sum")


def test_grpo_module_default_is_token_mean():
    assert (
        GRPOModule(d_model=32, layers=1, heads=2, group_size=2).hparams.loss_agg_mode
        == "token-mean"
    )
