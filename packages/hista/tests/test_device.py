"""Device-agnostic on CPU: no hidden CUDA calls anywhere on the training / estimation path.

The authors' k-NN hard-moves tensors to CUDA; here every tensor follows its input or the
module's device. With CUDA calls made to fail, one RL step per advantage mode, the Hista
estimator and the providers run on a plain CPU, and their outputs live there.
"""

import pytest
import torch
from hista.advantage_provider import CriticAdvantages, RolloutGroup, make_provider
from hista.hista_knn import HistaEstimator
from hista.lightning import ArithProblemsDataModule, PolicyRLModule, train_rl


@pytest.fixture
def no_cuda(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("CUDA was called on the CPU path")

    monkeypatch.setattr(torch.Tensor, "cuda", boom)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.parametrize("adv", ["group", "numca", "hista", "vine", "critic"])
def test_rl_step_runs_on_cpu_without_cuda(no_cuda, adv):
    torch.manual_seed(0)
    m = PolicyRLModule(advantage=adv, group_size=2, hidden=16, layers=1, heads=2, max_new=6)
    train_rl(m, 1, ArithProblemsDataModule(n_problems=4, n_held_out=2, batch_size=2))
    assert m.device.type == "cpu"
    assert all(p.device.type == "cpu" for p in m.policy.parameters())


def test_estimators_and_providers_keep_cpu_tensors(no_cuda):
    g = torch.Generator().manual_seed(0)
    hid = [torch.randn(6, 4, generator=g) for _ in range(3)]
    offs = [[(i, i + 1) for i in range(3)]] * 3
    group = RolloutGroup("p", ["7 9;"[:3]] * 3, [1.0, 0.0, 1.0], offs, hid, [3, 3, 3])
    est = HistaEstimator(alpha=0.7, mean_window=1, min_interval=1, min_distance=0.05, k=4)
    providers = [
        make_provider("group"),
        make_provider("numca"),
        make_provider("hista", estimator=est),
        CriticAdvantages(lambda h: torch.sigmoid(h[:, 0])),
        make_provider("vine", sampler=lambda pid, prefix, k: [0.5] * k, k=2, merge_threshold=1),
    ]
    for prov in providers:
        adv = prov(group)
        assert [a.shape for a in adv] == [torch.Size([3])] * 3  # (n_tokens,) per rollout
        assert all(a.device.type == "cpu" and torch.isfinite(a).all() for a in adv)
