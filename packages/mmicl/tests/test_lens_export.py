"""The TransformerLens export computes the decoder exactly, exposes the standard hook names,
and zero-ablating a head's ``hook_z`` is the package's head knockout."""

import sys

import pytest
import torch
from mmicl.transformer import ICLDecoder, knockout

pytest.importorskip("transformer_lens")
from mmicl.lens_export import LENS_HINT, to_transformer_lens  # noqa: E402


@pytest.mark.parametrize(
    ("pos", "mlp", "n_heads", "embedding"),
    [
        ("ape", "swiglu", 1, "linear"),
        ("rope", "swiglu", 2, "linear"),
        ("alibi", "paper", 2, "linear"),
        ("hybrid", "paper", 1, "linear"),
        ("ape", "swiglu", 1, "concat"),  # the authors' layout: [one-hot position, token]
    ],
)
def test_export_matches_the_decoder_and_its_attention(pos, mlp, n_heads, embedding):
    torch.manual_seed(0)
    concat = embedding == "concat"
    m = ICLDecoder(
        6, 5, d_model=None if concat else 16, n_layers=2, n_heads=n_heads, pos=pos, mlp=mlp,
        embedding=embedding, max_positions=11 if concat else 65,
    ).eval()  # fmt: skip
    w = m.d_model  # 16, or 6 + 11 one-hot slots for the authors' layout
    for p in m.parameters():  # non-trivial biases and gains, not the zero/one initialisation
        p.data.add_(0.1 * torch.randn_like(p))
    x = torch.randn(4, 11, 6)
    hooked = to_transformer_lens(m)
    logits, cache = hooked.run_with_cache(x)
    ref, attns = m(x, return_attention=True)
    assert logits.shape == (4, 5)
    torch.testing.assert_close(logits, ref, atol=1e-5, rtol=1e-5)
    for layer in range(2):
        assert cache["pattern", layer].shape == (4, n_heads, 11, 11)
        torch.testing.assert_close(cache["pattern", layer], attns[layer], atol=1e-6, rtol=1e-5)
        assert cache["z", layer].shape == (4, 11, n_heads, w // n_heads)
        assert cache["resid_post", layer].shape == (4, 11, w)
    h, _ = m.hidden_states(x)
    torch.testing.assert_close(cache["resid_post", 1], h, atol=1e-5, rtol=1e-5)
    assert ("hook_pos_embed" in cache.cache_dict) == (pos in ("ape", "hybrid"))
    assert ("blocks.0.attn.hook_rot_q" in cache.cache_dict) == (pos in ("rope", "hybrid"))
    # the export is a copy: the original is untouched by hooks on the export
    assert not any(p is q for p in m.parameters() for q in hooked.parameters())


def test_zero_ablating_hook_z_is_head_knockout():
    torch.manual_seed(1)
    m = ICLDecoder(6, 5, d_model=16, n_layers=2, n_heads=2, pos="rope").eval()
    x = torch.randn(3, 9, 6)
    hooked = to_transformer_lens(m)

    def zero_head(z, hook, head=1):
        z[:, :, head] = 0.0
        return z

    ablated = hooked.run_with_hooks(x, fwd_hooks=[("blocks.1.attn.hook_z", zero_head)])
    with knockout(m, [(1, 1)]):
        ref = m(x)
    torch.testing.assert_close(ablated, ref, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(ablated, m(x), atol=1e-4)  # the head mattered
    torch.testing.assert_close(hooked(x), m(x), atol=1e-5, rtol=1e-5)  # hooks were removed


def test_export_rejects_bad_input(monkeypatch):
    m = ICLDecoder(6, 5, d_model=16, max_positions=9).eval()
    hooked = to_transformer_lens(m)
    with pytest.raises(ValueError, match="position capacity"):
        hooked(torch.randn(1, 10, 6))
    with pytest.raises(ValueError, match="expected tokens"):
        hooked(torch.randn(1, 5, 7))
    with pytest.raises(TypeError, match="ICLDecoder"):
        to_transformer_lens(torch.nn.Linear(2, 2))


def test_missing_transformer_lens_names_the_extra(monkeypatch):
    import mmicl.lens_export as lens

    lens._classes.cache_clear()
    monkeypatch.setitem(sys.modules, "transformer_lens.hook_points", None)
    try:
        with pytest.raises(ImportError, match=r"mmicl\[lens\]"):
            to_transformer_lens(ICLDecoder(6, 5, d_model=16))
    finally:
        monkeypatch.undo()
        lens._classes.cache_clear()
    assert "pip install" in LENS_HINT
