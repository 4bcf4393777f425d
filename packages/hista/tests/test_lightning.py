"""Lightning parts: the shared contract, the critic learns, the policy warm start."""

import pytest
import torch
from hista.arith_chain import NoisyTeacher, sample_problems
from hista.lightning import (
    ArithCriticDataModule,
    ArithProblemsDataModule,
    CriticModule,
    PolicyRLModule,
    SFTModule,
    TeacherTracesDataModule,
    sft_warm_start,
    train_critic,
)
from hista.policy import CausalLMPolicy, sft_loss
from icml26_shared.contract import check_contract


def test_shared_contract(tmp_path):
    check_contract(
        lambda: CriticModule(hidden_size=16),
        lambda: ArithCriticDataModule(
            n_problems=4, group_size=2, sft_steps=2, hidden=16, heads=2, batch_size=32
        ),
        tmp_path,
    )


def test_shared_contract_sft(tmp_path):
    check_contract(
        lambda: SFTModule(hidden=16, layers=1, heads=2),
        lambda: TeacherTracesDataModule(
            n_problems=8, batch_size=4, steps_per_epoch=2, val_batches=1
        ),
        tmp_path,
        forward_fn=lambda m, batch: sft_loss(m.policy, *batch),
    )


def test_sft_checkpoint_seeds_the_rl_policy(tmp_path):
    import lightning.pytorch as pl

    torch.manual_seed(0)
    sft = SFTModule(hidden=16, layers=1, heads=2)
    trainer = pl.Trainer(
        max_steps=2,
        accelerator="cpu",
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        limit_val_batches=0,
    )
    trainer.fit(sft, TeacherTracesDataModule(n_problems=8, batch_size=4, steps_per_epoch=2))
    ckpt = tmp_path / "sft.ckpt"
    trainer.save_checkpoint(ckpt)
    rl = PolicyRLModule(hidden=16, layers=1, heads=2, group_size=2, sft_checkpoint=str(ckpt))
    rl.on_fit_start()
    for a, b in zip(sft.policy.parameters(), rl.policy.parameters(), strict=True):
        assert torch.equal(a, b)


def test_policy_is_a_transformers_lm_with_fast_char_tokenizer():
    pol = CausalLMPolicy(hidden=16, layers=1, heads=2)
    assert type(pol.model).__name__ == "Qwen2ForCausalLM"
    assert pol.tokenizer.is_fast and pol.decode(pol.encode("3+4=7;")) == "3+4=7;"
    with pytest.raises(ValueError, match="fast tokenizer"):
        CausalLMPolicy(model=pol.model, tokenizer=object())
    outs = pol.generate_many(["1+2=", "3+4+5="], 3, max_new=6)
    assert [len(o) for o in outs] == [3, 3]


def test_rl_data_module_batches_problems():
    dm = ArithProblemsDataModule(n_problems=10, n_held_out=3, batch_size=4)
    dm.setup("fit")
    assert len(next(iter(dm.train_dataloader()))) == 4
    assert len(dm.held_out) == 3 and len(next(iter(dm.val_dataloader()))) == 3


def test_critic_regresses_onto_planted_values():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2000, 4, generator=g)
    p = torch.sigmoid(2 * x[:, 0])  # planted value
    y = (torch.rand(2000, generator=g) < p).float()
    critic = train_critic(x, y, epochs=15)
    with torch.no_grad():
        err = (critic(x) - p).abs().mean()
    assert err < 0.08, err


def test_sft_warm_start_reduces_the_loss():
    torch.manual_seed(0)
    losses = sft_warm_start(
        CausalLMPolicy(hidden=32, layers=1, heads=2), sample_problems(200), NoisyTeacher(), 60
    )
    assert sum(losses[-10:]) / 10 < 0.7 * sum(losses[:10]) / 10
