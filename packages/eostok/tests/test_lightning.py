"""Lightning parts: the shared contract, the three stages, a short joint run lowers the loss."""

import pytest
import torch
from eostok.lightning import DigitsDataModule, EOSTokModule
from icml26_shared.contract import check_contract

TINY = dict(width=16, depth=1, heads=2, prior_depth=1, codebook_size=8, num_latent_tokens=4)


def _data():
    return DigitsDataModule(batch_size=8)


@pytest.mark.parametrize("stage", ["tokenizer", "joint"])
def test_shared_contract(tmp_path, stage):
    result = check_contract(
        lambda: EOSTokModule(stage=stage, apr_weight=1.0, nested_dropout=False, **TINY),
        _data,
        tmp_path,
        forward_fn=lambda m, b: m(b[0]),
    )
    assert result.output.shape == (8, 1, 16, 16)


def test_prior_stage_freezes_the_tokenizer_and_trains_the_prior():
    torch.manual_seed(0)
    m = EOSTokModule(stage="prior", **TINY)
    x, y = torch.rand(4, 1, 16, 16), torch.tensor([0, 1, 2, 3])
    m.losses((x, y))["loss"].backward()
    assert all(p.grad is None for p in m.tokenizer.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in m.prior.parameters())


def test_ar_gradient_reaches_the_encoder_only_when_switched_on():
    x, y = torch.rand(4, 1, 16, 16), torch.tensor([0, 1, 2, 3])
    grads = {}
    for on in (True, False):
        torch.manual_seed(0)
        m = EOSTokModule(stage="joint", ar_grad_to_tokenizer=on, nested_dropout=False, **TINY)
        m.losses((x, y))  # codebook init from data happens on the first call
        m.prior.nll(*(lambda zq, c: (zq if on else zq.detach(), c))(*m.tokenizer.encode(x)[:2]), y)[
            0
        ].backward()
        grads[on] = m.tokenizer.patch_in.weight.grad
    assert grads[True] is not None and grads[True].abs().sum() > 0
    assert grads[False] is None


def test_short_joint_run_lowers_the_loss():
    torch.manual_seed(0)
    dm = DigitsDataModule(batch_size=32)
    dm.setup("fit")
    m = EOSTokModule(stage="joint", apr_weight=1.0, **TINY)
    opt = m.configure_optimizers()
    batches = list(iter(dm.train_dataloader()))[:30]
    first = m.losses(batches[0])["loss"].item()
    for b in batches:
        loss = m.losses(b)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        last = m.losses(batches[0])["loss"].item()
    assert last < 0.8 * first


def test_bad_stage_and_negative_weight():
    with pytest.raises(ValueError, match="stage"):
        EOSTokModule(stage="both")
    with pytest.raises(ValueError, match="apr_weight"):
        EOSTokModule(apr_weight=-1.0)


@pytest.mark.parametrize("stage", ["tokenizer", "prior", "joint"])
def test_label_out_of_range_is_an_error_in_every_stage(stage):
    m = EOSTokModule(stage=stage, **TINY)
    with pytest.raises(ValueError, match="class labels"):
        m.losses((torch.rand(2, 1, 16, 16), torch.tensor([0, 10])))


def test_two_d_grid_module_trains_a_raster_prior_over_patch_tokens():
    torch.manual_seed(0)
    m = EOSTokModule(stage="joint", tokenizer_type="2d", apr_weight=1.0, **TINY)
    assert m.prior.num_tokens == 16  # (16 / 4)^2 patches
    out = m.losses((torch.rand(4, 1, 16, 16), torch.arange(4)))
    out["loss"].backward()
    assert m.tokenizer.patch_in.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="tokenizer_type"):
        EOSTokModule(tokenizer_type="3d")
