"""The authors' paper-reproduction extras: attention-weighted q/k/v moments, the adaptive blend
of the standard and drift-corrected targets, outlier-row zeroing with dead features."""

import pytest
import torch
from watersic.attention_importance import (
    attention_importance,
    block_attention_importance,
    mix,
    supports,
)
from watersic.layer_quantizer import quantize_matrix
from watersic.model_quantization import _block_inputs, find_blocks, quantize_model
from watersic.second_moment import SecondMoment
from watersic.target_blend import blend_moments, golden_section, relative_mse


def _tiny_llama(attn="eager"):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                      attn_implementation=attn)  # fmt: skip
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).eval()


def test_importance_planted_patterns():
    T, H = 6, 3
    # every query attends only to the first token: p_0 = 1, the rest 0
    P = torch.zeros(2, H, T, T)
    P[..., 0] = 1.0
    p = attention_importance(P)
    assert torch.allclose(p[:, 0], torch.ones(2)) and torch.all(p[:, 1:] == 0)
    # uniform causal attention: p_j = (1/(T-j)) sum_{i>=j} 1/(i+1)
    U = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]
    p = attention_importance(U.expand(1, H, T, T))
    want = torch.tensor([sum(1 / (i + 1) for i in range(j, T)) / (T - j) for j in range(T)])
    assert torch.allclose(p[0], want.to(p.dtype))


def test_block_importance_matches_the_models_own_attention():
    """Recomputed probabilities (rotary, GQA, causal softmax) equal HF's eager attention."""
    model = _tiny_llama()
    ids = torch.randint(0, 64, (3, 16), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        att = model(input_ids=ids, output_attentions=True).attentions
    _, blocks = find_blocks(model)
    assert supports(blocks[0])
    x, kw = _block_inputs(model, blocks, [ids])
    got = block_attention_importance(blocks[0], x[0], kw[0])
    assert torch.allclose(got, attention_importance(att[0].double()), atol=1e-6)


def test_weighted_second_moment():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 4, generator=g, dtype=torch.float64)
    plain, const, pick = SecondMoment(4), SecondMoment(4), SecondMoment(4)
    plain.update(x)
    const.update(x, weights=torch.full((50,), 0.3))
    w = (torch.arange(50) < 20).double()
    pick.update(x, weights=w)
    assert torch.allclose(const.sigma, 0.3 * plain.sigma)
    assert torch.allclose(pick.sigma, x[:20].T @ x[:20] / 50)
    with pytest.raises(ValueError, match="non-negative"):
        SecondMoment(4).update(x, weights=-torch.ones(50))
    assert torch.allclose(mix(const.sigma, plain.sigma, 1.0), plain.sigma)


def test_golden_section_and_blend_moments():
    r = golden_section(lambda e: abs(e - 0.7), steps=25)
    assert abs(r.eps - 0.7) < 1e-3 and len(r.evaluations) == 2 + 2 + (25 - 1) + 1
    assert golden_section(lambda e: e, steps=10).eps == 0.0  # monotone: an end wins
    assert golden_section(lambda e: -e, steps=0).eps == 1.0
    S, Sh, Sc = (torch.eye(3) * k for k in (1.0, 2.0, 3.0))
    for m in blend_moments(S, Sh, Sc, 1.0):
        assert torch.equal(m, S)
    assert relative_mse([torch.ones(3)], [torch.ones(3)]) == 0.0


def test_blend_end_one_is_the_standard_target(gen):
    """eps = 1: drift moments (Sigma_x, Sigma_x) give exactly the standard WaterSIC codes."""
    W = torch.randn(64, 16, generator=gen, dtype=torch.float64)
    X = torch.randn(512, 16, generator=gen, dtype=torch.float64)
    S = X.T @ X / 512
    Sh, Sc = blend_moments(S, 2 * S, 0.5 * S, 1.0)
    a = quantize_matrix(W, S, rate=3.0, rescalers=False)
    b = quantize_matrix(W, S, rate=3.0, sigma_hat=Sh, sigma_cross=Sc, rescalers=False)
    assert torch.equal(a.codes, b.codes)


def test_recipe_switches_and_zeroed_rows():
    model = _tiny_llama("sdpa")
    cal = torch.randint(0, 64, (16, 16), generator=torch.Generator().manual_seed(2))
    rows = {"0.mlp.gate_proj": [3, 5], "0.mlp.up_proj": [3, 5]}
    art = quantize_model(
        model,
        cal,
        3.0,
        zero_rows=rows,
        attention_weighted=True,
        adaptive_blend=True,
        blend_mlp=True,
        blend_steps=2,
    )
    pre = "model.layers.0."
    for name in ("mlp.gate_proj", "mlp.up_proj"):
        W = art.layers[pre + name].dequantize()
        assert torch.all(W[[3, 5]] == 0) and W[0].abs().sum() > 0
    # the zeroed features never reach down_proj: its columns 3 and 5 are dead
    assert {3, 5} <= set(art.layers[pre + "mlp.down_proj"].dead.tolist())
    for name in ("self_attn.q_proj", "mlp.gate_proj"):
        assert 0.0 <= art.layers[pre + name].info["blend_eps"] <= 1.0
    assert "blend_eps" not in art.layers[pre + "self_attn.o_proj"].info
    assert art.rate == pytest.approx(3.0, abs=0.05)
