"""Anti-collapse knobs: CE-gradient warm-up / scaling to the tokenizer, codebook entropy."""

import math

import pytest
import torch
import torch.nn.functional as F
from eostok.lightning import EOSTokModule
from eostok.quantizer import CosineVectorQuantizer

TINY = dict(width=16, depth=1, heads=2, prior_depth=1, codebook_size=8, num_latent_tokens=4)


def _ce_grad(scale: float, warmup: int, step: int) -> torch.Tensor:
    """Gradient of the CE term alone w.r.t. the encoder's first layer."""
    torch.manual_seed(0)
    m = EOSTokModule(
        stage="joint", nested_dropout=False, ar_grad_scale=scale, ar_grad_warmup_steps=warmup,
        **TINY,
    )  # fmt: skip
    x, y = torch.rand(6, 1, 16, 16), torch.tensor([0, 1, 2, 3, 4, 5])
    m.losses((x, y))  # codebook init from data happens on the first training call
    m.zero_grad()
    m.losses((x, y), step=step)["ar"].backward()
    g = m.tokenizer.patch_in.weight.grad
    return torch.zeros_like(m.tokenizer.patch_in.weight) if g is None else g


def test_ce_gradient_to_tokenizer_scales_linearly():
    full, tenth = _ce_grad(1.0, 0, 0), _ce_grad(0.1, 0, 0)
    assert full.abs().sum() > 0
    assert torch.allclose(tenth, 0.1 * full, atol=1e-7, rtol=1e-4)


def test_ce_gradient_is_zero_during_warmup_and_on_after_it():
    assert _ce_grad(1.0, 10, 9).abs().sum() == 0
    assert _ce_grad(1.0, 10, 10).abs().sum() > 0


def test_schedule_with_ramp():
    m = EOSTokModule(ar_grad_scale=0.5, ar_grad_warmup_steps=10, ar_grad_ramp_steps=4, **TINY)
    got = [m.ar_tokenizer_grad_scale(s) for s in (0, 9, 10, 11, 13, 100)]
    assert got == pytest.approx([0, 0, 0.125, 0.25, 0.5, 0.5])
    assert m.ar_tokenizer_grad_scale(None) == 0.5
    off = EOSTokModule(ar_grad_to_tokenizer=False, **TINY)
    assert off.ar_tokenizer_grad_scale(100) == 0.0
    with pytest.raises(ValueError, match="ar_grad_scale"):
        EOSTokModule(ar_grad_scale=-0.1)


def test_prior_still_learns_from_ce_when_its_gradient_to_the_tokenizer_is_off():
    torch.manual_seed(0)
    m = EOSTokModule(stage="joint", ar_grad_warmup_steps=100, **TINY)
    m.losses((torch.rand(4, 1, 16, 16), torch.arange(4)), step=0)["ar"].backward()
    assert m.prior.head.weight.grad.abs().sum() > 0


def test_entropy_penalty_bounds():
    c = 8
    vq = CosineVectorQuantizer(c, 16, entropy_temperature=1e-3)
    # every code used equally, each vector certain of its code: the minimum -log C
    z = vq.codebook.detach().repeat(4, 1)  # (4C, d)
    assert float(vq.entropy_penalty(z).detach()) == pytest.approx(-math.log(c), abs=1e-4)
    # all vectors on one code (collapse): per-token and batch entropies both 0
    z = vq.codebook.detach()[:1].repeat(32, 1)
    assert float(vq.entropy_penalty(z).detach()) == pytest.approx(0.0, abs=1e-4)


def test_entropy_penalty_pushes_collapsed_vectors_apart():
    torch.manual_seed(0)
    vq = CosineVectorQuantizer(8, 4, entropy_weight=1.0, entropy_temperature=0.1).train()
    vq.init_from_data(torch.randn(64, 4))
    z = (torch.randn(1, 4) + 0.05 * torch.randn(64, 4)).requires_grad_(True)
    opt = torch.optim.SGD([z], lr=0.5)
    before = len(vq.nearest(z).unique())
    for _ in range(200):
        opt.zero_grad()
        vq.entropy_penalty(z).backward()
        opt.step()
    assert len(vq.nearest(z).unique()) > before


def test_entropy_term_enters_the_vq_loss_only_in_training():
    torch.manual_seed(1)
    z = torch.randn(10, 4)
    vq = CosineVectorQuantizer(8, 4, entropy_weight=0.5, dead_code_patience=0)
    vq.init_from_data(z)
    _, idx, train_loss = vq.train()(z)
    _, _, eval_loss = vq.eval()(z)
    zn = F.normalize(z, dim=-1)
    assert torch.allclose(train_loss - eval_loss, 0.5 * vq.entropy_penalty(zn), atol=1e-6)
    with pytest.raises(ValueError, match="entropy"):
        CosineVectorQuantizer(8, 4, entropy_temperature=0.0)


def test_tokenizer_lr_sets_the_tokenizer_param_group():
    m = EOSTokModule(lr=1e-3, tokenizer_lr=1e-4, **TINY)
    groups = m.configure_optimizers().param_groups
    tok = {id(p) for p in m.tokenizer.parameters()}
    assert [g["lr"] for g in groups] == [1e-3, 1e-4]
    assert all(id(p) not in tok for p in groups[0]["params"])
    assert {id(p) for p in groups[1]["params"]} == tok
    n_params = sum(1 for p in m.parameters() if p.requires_grad)
    assert sum(len(g["params"]) for g in groups) == n_params
    m.set_stage("prior")  # frozen tokenizer: no tokenizer group
    assert [g["lr"] for g in m.configure_optimizers().param_groups] == [1e-3]
    assert [g["lr"] for g in EOSTokModule(**TINY).configure_optimizers().param_groups] == [
        1e-3,
        1e-3,
    ]
    with pytest.raises(ValueError, match="tokenizer_lr must be positive"):
        EOSTokModule(tokenizer_lr=0.0, **TINY)


def test_apr_reaches_the_decoders_codebook_and_the_prior():
    """APR's soft code embedding is the decoder's codebook (with gradient), not a copy."""
    torch.manual_seed(0)
    m = EOSTokModule(stage="joint", apr_weight=1.0, ar_grad_to_tokenizer=False, **TINY)
    x, y = torch.rand(4, 1, 16, 16), torch.arange(4)
    m.losses((x, y))  # data init of the codebook
    m.zero_grad()
    m.losses((x, y), step=0)["apr"].backward()
    assert m.tokenizer.quantizer.embedding.grad.abs().sum() > 0
    assert m.prior.head.weight.grad.abs().sum() > 0
    assert m.tokenizer.patch_out.weight.grad.abs().sum() > 0  # the decoder
    # with the CE switch off, APR does not reach the encoder through the prior's inputs
    assert (
        m.tokenizer.patch_in.weight.grad is None
        or m.tokenizer.patch_in.weight.grad.abs().sum() == 0
    )


def _ce_grads(through_ste: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Gradients of the CE term alone w.r.t. the encoder's output layer and the codebook."""
    torch.manual_seed(0)
    m = EOSTokModule(stage="joint", nested_dropout=False, ar_grad_through_ste=through_ste, **TINY)
    x, y = torch.rand(6, 1, 16, 16), torch.arange(6)
    m.losses((x, y))  # codebook init from data
    m.zero_grad()
    m.losses((x, y), step=0)["ar"].backward()
    enc, book = m.tokenizer.to_code.weight, m.tokenizer.quantizer.embedding
    return tuple(torch.zeros_like(p) if p.grad is None else p.grad for p in (enc, book))


def test_ce_through_the_straight_through_estimator_reaches_the_encoder_not_the_codebook():
    enc, book = _ce_grads(through_ste=True)
    assert enc.abs().sum() > 0
    assert book.abs().sum() == 0  # z + sg(q - z): the codebook gets no gradient from CE


def test_ce_without_the_straight_through_estimator_reaches_the_codebook_not_the_encoder():
    enc, book = _ce_grads(through_ste=False)
    assert enc.abs().sum() == 0
    assert book.abs().sum() > 0


def test_the_prior_reads_the_same_inputs_with_and_without_the_estimator():
    """Only the backward pass differs: the AR loss value is the same."""
    vals = []
    for ste in (True, False):
        torch.manual_seed(0)
        m = EOSTokModule(stage="joint", nested_dropout=False, ar_grad_through_ste=ste, **TINY)
        x, y = torch.rand(6, 1, 16, 16), torch.arange(6)
        m.losses((x, y))
        vals.append(float(m.losses((x, y), step=0)["ar"].detach()))
    assert vals[0] == pytest.approx(vals[1], rel=1e-5)
