"""QuantLinear, QAT schemes on a transformers Llama, parameter counts."""

import pytest
import torch
from qat_scaling.quant_linear import (
    QATScheme,
    QuantLinear,
    apply_qat,
    hadamard_matrix,
    quant_layers,
)
from qat_scaling.tiny_llama import SIZES, analytic_params, count_params, tiny_llama
from torch import nn


def test_sixteen_bits_equals_nn_linear_exactly():
    torch.manual_seed(0)
    lin = nn.Linear(32, 8)
    q = QuantLinear.from_linear(lin, w_bits=16, a_bits=16, group_size=8)
    x = torch.randn(5, 32)
    assert torch.equal(q(x), lin(x))


def test_hadamard_rotation_preserves_the_product():
    torch.manual_seed(0)
    lin = nn.Linear(16, 4, bias=False)
    q = QuantLinear.from_linear(lin, w_bits=16, a_bits=16, group_size=16, rotate=True)
    x = torch.randn(3, 16)
    assert torch.allclose(q(x), lin(x), atol=1e-5)
    h = hadamard_matrix(16)
    assert torch.allclose(h @ h.T, torch.eye(16), atol=1e-6)


def test_scheme_overrides_touch_only_down_proj():
    model = tiny_llama(32, 2, 64, 2, vocab_size=32, seed=0)
    apply_qat(model, QATScheme.preset("W4A4-FC2A8", group_size=16))
    layers = quant_layers(model)
    assert len(layers) == 2 * 7
    for name, layer in layers.items():
        expect = 8 if name.endswith("mlp.down_proj") else 4
        assert layer.input_quantizer.bits == expect, name
        assert layer.weight_quantizer.bits == 4
    assert not isinstance(model.lm_head, QuantLinear)


def test_apply_fp_scheme_leaves_outputs_unchanged():
    model = tiny_llama(32, 1, 64, 2, vocab_size=32, seed=0)
    ids = torch.randint(0, 32, (2, 8))
    before = model(input_ids=ids).logits
    apply_qat(model, QATScheme.preset("FP"))
    assert torch.equal(model(input_ids=ids).logits, before)
    apply_qat(model, QATScheme.preset("W4A4", group_size=8))
    assert not torch.equal(model(input_ids=ids).logits, before)


def test_unknown_override_rejected_with_valid_list():
    with pytest.raises(ValueError, match=r"unknown override layer 'mlp\.fc2'.*mlp\.down_proj"):
        QATScheme(overrides={"mlp.fc2": {"a_bits": 8}})
    with pytest.raises(ValueError, match="unknown scheme"):
        QATScheme.preset("W3A3")
    with pytest.raises(ValueError, match="does not divide"):
        apply_qat(tiny_llama(32, 1, 64, 2, vocab_size=32), QATScheme.preset("W4A4", group_size=24))


@pytest.mark.parametrize("name", ["s16", "s32", "s32x3", "s64"])
def test_count_params_matches_formula(name):
    s = SIZES[name]
    model = tiny_llama(s.hidden, s.layers, s.ffn, s.heads, vocab_size=16)
    assert count_params(model) == analytic_params(s.hidden, s.layers, s.ffn)
    assert count_params(model, non_embedding=False) == count_params(model) + 2 * 16 * s.hidden
