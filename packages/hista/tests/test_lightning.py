"""Lightning parts: the shared contract, the critic learns, the policy warm start."""

import torch
from hista.arith_chain import NoisyTeacher, sample_problems
from hista.critic import ArithCriticDataModule, CriticModule, train_critic
from hista.policy import CharPolicy, sft_warm_start
from icml26_shared.contract import check_contract


def test_shared_contract(tmp_path):
    check_contract(
        lambda: CriticModule(hidden_size=16),
        lambda: ArithCriticDataModule(
            n_problems=4, group_size=2, sft_steps=2, hidden=16, batch_size=32
        ),
        tmp_path,
    )


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
        CharPolicy(hidden=32, layers=1), sample_problems(200), NoisyTeacher(), 60
    )
    assert sum(losses[-10:]) / 10 < 0.7 * sum(losses[:10]) / 10
