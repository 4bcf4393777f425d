"""Lightning parts: the shared contract, the data module, the cached prior training."""

import pytest
import torch
from icml26_shared.contract import check_contract
from weakprior.ddim import FewStepDDIM
from weakprior.lightning import DDPMPriorModule, ImageDomainDataModule, train_prior


def test_shared_contract(tmp_path):
    result = check_contract(
        lambda: DDPMPriorModule(image_size=8, width=8),
        lambda: ImageDomainDataModule("digits", image_size=8, batch_size=8, val_size=8),
        tmp_path,
        forward_fn=lambda m, batch: m(batch[0], torch.arange(batch[0].shape[0]) * 100),
    )
    assert result.output.shape == (8, 1, 8, 8)


def test_datamodule_domains_and_range():
    for domain in ("faces", "digits"):
        dm = ImageDomainDataModule(domain, image_size=8, batch_size=4, val_size=4)
        dm.setup("fit")
        x = next(iter(dm.train_dataloader()))[0]
        assert x.shape == (4, 1, 8, 8) and x.min() >= -1 and x.max() <= 1
        assert len(dm.val_set) == 4


def test_train_prior_caches_and_lowers_the_loss(tmp_path):
    a = train_prior("digits", 30, image_size=8, width=8, batch_size=16, cache=tmp_path)
    files = list(tmp_path.glob("prior-digits-*.pt"))
    assert len(files) == 1
    b = train_prior("digits", 30, image_size=8, width=8, batch_size=16, cache=tmp_path)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)  # loaded from the cache
    untrained = DDPMPriorModule(image_size=8, width=8)
    x = ImageDomainDataModule("digits", image_size=8)
    x.setup()
    batch = x.val_set.tensors[0][:32]
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        trained_loss = a.eps_loss(batch, gen)
        gen = torch.Generator().manual_seed(0)
        base_loss = untrained.eps_loss(batch, gen)
    assert trained_loss < base_loss
    samples = FewStepDDIM(a.eps)(torch.randn(4, 1, 8, 8))
    assert samples.shape == (4, 1, 8, 8) and samples.abs().max() <= 1.0 + 1e-5


def test_issue_scale_24px_end_to_end(tmp_path):
    """The issue's 24-32 px priors: data, training, G(z) and the paper's solver run at 24 px."""
    from weakprior.image_domains import load_domain
    from weakprior.noise_optimisation import NoiseOptimisationSolver
    from weakprior.operators import RandomInpainting, measure

    for size in (24,):
        prior = train_prior("faces", 2, image_size=size, width=8, batch_size=4, cache=tmp_path)
        prior.requires_grad_(False)
        x = load_domain("faces", "test", size, n=2)
        assert x.shape == (2, 1, size, size)
        op = RandomInpainting(tuple(x.shape), 0.5, seed=0)
        solver = NoiseOptimisationSolver(FewStepDDIM(prior.eps), op, iterations=2, best_k=1)
        est = solver.solve(measure(op, x, 0.01), tuple(x.shape)).x
        assert est.shape == x.shape and est.abs().max() <= 1.0 + 1e-5


def test_ema_weights_are_the_exponential_average_and_are_the_prior():
    """ema <- d_n ema + (1 - d_n) theta after each step, d_n = min(decay, (1 + n) / (10 + n))
    (the first step copies); eps uses the EMA; the first weights are forgotten."""
    from weakprior.lightning import WarmupEMA

    m = DDPMPriorModule(image_size=8, width=8, ema_decay=0.75)
    m.on_train_batch_end(None, None, 0)  # first update: a copy of the weights
    theta0 = [p.detach().clone() for p in m.net.parameters()]
    with torch.no_grad():
        for p in m.net.parameters():
            p.add_(1.0)
    m.on_train_batch_end(None, None, 1)  # n = 1: d_1 = 2 / 11 < 0.75
    for p0, pe in zip(theta0, m.ema_net.module.parameters(), strict=True):
        torch.testing.assert_close(pe, p0 + 9 / 11)
    for step in range(2, 60):
        m.on_train_batch_end(None, None, step)
    for p0, pe in zip(theta0, m.ema_net.module.parameters(), strict=True):
        torch.testing.assert_close(pe, p0 + 1.0)  # 0.75 ** 58 of the first weights: none left
    assert float(WarmupEMA(0.75)(torch.tensor(0.0), torch.tensor(1.0), 1000)) == 0.25
    x, t = torch.randn(2, 1, 8, 8), torch.tensor([3, 500])
    torch.testing.assert_close(m.eps(x, t), m.ema_net.module(x, t))
    assert not torch.allclose(m.eps(x, t), m.net(x, t))
    with pytest.raises(ValueError, match="ema_decay"):
        DDPMPriorModule(image_size=8, width=8, ema_decay=1.0)
