"""Cosine VQ: nearest code, straight-through identity, commitment, soft lookup, usage."""

import pytest
import torch
import torch.nn.functional as F
from eostok.quantizer import CosineVectorQuantizer, codebook_usage, straight_through


def test_indices_equal_brute_force_nearest_code():
    torch.manual_seed(0)
    vq = CosineVectorQuantizer(32, 6).eval()
    z = torch.randn(5, 7, 6)
    _, idx, _ = vq(z)
    e = F.normalize(vq.embedding, dim=-1)
    zn = F.normalize(z, dim=-1)
    for b in range(5):
        for t in range(7):
            dists = [float(((zn[b, t] - e[c]) ** 2).sum()) for c in range(32)]
            assert idx[b, t] == min(range(32), key=dists.__getitem__)


def test_straight_through_gradient_is_identity():
    z = torch.randn(4, 3, requires_grad=True)
    q = torch.randn(4, 3)
    out = straight_through(z, q)
    assert torch.equal(out, z + (q - z))
    w = torch.randn(4, 3)
    (out * w).sum().backward()
    assert torch.allclose(z.grad, w)


def test_quantized_output_is_the_code_and_gradient_reaches_encoder():
    torch.manual_seed(1)
    vq = CosineVectorQuantizer(16, 4).eval()
    z = torch.randn(3, 2, 4, requires_grad=True)
    z_q, idx, _ = vq(z)
    assert torch.allclose(z_q, vq.codebook[idx], atol=1e-6)
    z_q.sum().backward()
    assert z.grad is not None and z.grad.abs().sum() > 0


def test_commitment_term_matches_closed_form():
    torch.manual_seed(2)
    vq = CosineVectorQuantizer(8, 4, commitment=0.25).eval()
    z = torch.randn(10, 4)
    _, idx, loss = vq(z)
    zn, q = F.normalize(z, dim=-1), vq.codebook[idx]
    expected = 1.25 * ((zn - q) ** 2).mean()
    assert torch.allclose(loss, expected, atol=1e-6)
    # commitment gradient only moves z towards its code; codebook term only moves the codes
    z = z.clone().requires_grad_(True)
    vq.embedding.grad = None
    vq(z)[2].backward()
    assert z.grad.abs().sum() > 0 and vq.embedding.grad.abs().sum() > 0


def test_soft_lookup_one_hot_equals_hard_lookup():
    torch.manual_seed(3)
    vq = CosineVectorQuantizer(12, 5)
    idx = torch.randint(0, 12, (4, 6))
    assert torch.allclose(vq.lookup_soft(F.one_hot(idx, 12).float()), vq.lookup(idx), atol=1e-6)


def test_codebook_usage_on_hand_made_indices():
    usage, ppl = codebook_usage(torch.tensor([0, 1, 2, 3]), 8)
    assert usage == 0.5 and ppl == pytest.approx(4.0)
    usage, ppl = codebook_usage(torch.tensor([5, 5, 5]), 8)
    assert usage == 0.125 and ppl == pytest.approx(1.0)


def test_dead_codes_are_restarted_in_training():
    torch.manual_seed(4)
    vq = CosineVectorQuantizer(16, 4, dead_code_patience=1).train()
    z = torch.randn(64, 4)
    vq(z)
    vq(z)
    assert (vq.unused_steps == 0).all()


@pytest.mark.parametrize("size", [0, 1])
def test_rejects_too_small_codebook(size):
    with pytest.raises(ValueError, match="codebook_size"):
        CosineVectorQuantizer(size, 4)
