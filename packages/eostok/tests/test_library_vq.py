"""The third-party anchor: vector-quantize-pytorch's quantizer behind the package's interface."""

import pytest
import torch

pytest.importorskip("vector_quantize_pytorch")

from eostok.library_vq import LibraryVectorQuantizer  # noqa: E402
from eostok.lightning import EOSTokModule  # noqa: E402


def test_codes_are_the_nearest_codebook_entries():
    torch.manual_seed(0)
    vq = LibraryVectorQuantizer(16, 4)
    vq(torch.randn(8, 8, 4))  # k-means init and one EMA update in training mode
    vq.eval()
    z = torch.randn(3, 5, 4)
    z_q, idx, _ = vq(z)
    assert torch.equal(idx, vq.nearest(z))
    assert torch.allclose(z_q, vq.codebook[idx], atol=1e-5)


def test_planted_clusters_get_one_code_each():
    """Four well-separated clusters: k-means init gives every cluster its own code."""
    torch.manual_seed(0)
    centres = 10 * torch.eye(4)
    labels = torch.arange(4).repeat(64)
    z = (centres[labels] + 0.01 * torch.randn(len(labels), 4))[None]
    vq = LibraryVectorQuantizer(4, 4)
    vq(z)
    vq.eval()
    _, idx, _ = vq(z)
    codes = idx[0]
    assert len(codes.unique()) == 4
    for c in range(4):
        assert len(codes[labels == c].unique()) == 1


def test_gradient_reaches_the_encoder_output():
    torch.manual_seed(0)
    vq = LibraryVectorQuantizer(16, 4)
    z = torch.randn(2, 8, 4, requires_grad=True)
    z_q, _, loss = vq(z)
    (z_q.sum() + loss).backward()
    assert z.grad is not None and z.grad.abs().sum() > 0


def test_module_builds_the_library_quantizer_and_decodes_its_codes():
    torch.manual_seed(0)
    m = EOSTokModule(quantizer="library", width=16, codebook_size=8, num_latent_tokens=4)
    assert isinstance(m.tokenizer.quantizer, LibraryVectorQuantizer)
    out = m.losses((torch.rand(6, 1, 16, 16), torch.arange(6)))
    assert torch.isfinite(out["loss"])
    m.eval()
    _, codes, _ = m.tokenizer.encode(torch.rand(2, 1, 16, 16))
    assert m.tokenizer.decode(codes=codes)[0].shape == (2, 1, 16, 16)
    with pytest.raises(ValueError, match="quantizer"):
        EOSTokModule(quantizer="ema")
