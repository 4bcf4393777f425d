"""quantisation_errors: the relative error 4-bit per-group quantisation injects per layer."""

import copy

import torch
from qat_scaling.activation_outliers import quantisation_errors
from qat_scaling.quant_linear import LLAMA_LINEARS, QATScheme, apply_qat, quant_layers
from qat_scaling.tiny_llama import tiny_llama

_TOKENS = torch.randint(0, 256, (4, 32), generator=torch.Generator().manual_seed(0))


def _gaussian_model(hidden: int, seed: int = 0):
    """A tiny Llama whose block linear weights are redrawn iid N(0, 1)."""
    model = tiny_llama(hidden, 1, 2 * hidden, 2, vocab_size=256, max_seq_len=32, seed=0)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name in LLAMA_LINEARS:
            parent, attr = name.split(".")
            w = getattr(getattr(model.model.layers[0], parent), attr).weight
            w.copy_(torch.randn(w.shape, generator=gen))
    return model


def _mean_weight_error(errs):
    return sum(errs[n]["weight"] for n in LLAMA_LINEARS) / len(LLAMA_LINEARS)


def test_weight_error_depends_on_group_size_not_on_width():
    """iid Gaussian weights: at a fixed G the error is the same at width 16 and 64; with one
    group per row (G = width) it grows with the width (the group's absmax grows)."""
    narrow, wide = _gaussian_model(16), _gaussian_model(64)
    fixed_n = _mean_weight_error(quantisation_errors(narrow, _TOKENS, 4, 8))
    fixed_w = _mean_weight_error(quantisation_errors(wide, _TOKENS, 4, 8))
    assert abs(fixed_w / fixed_n - 1) < 0.08
    row_n = quantisation_errors(narrow, _TOKENS, 4, 16)["self_attn.q_proj"]["weight"]
    row_w = quantisation_errors(wide, _TOKENS, 4, 64)["self_attn.q_proj"]["weight"]
    assert row_w > 1.3 * row_n


def test_weights_on_the_grid_have_zero_weight_error():
    """Planted: integer weights in [-7, 7] with a +-7 in every group are exact at 4 bits."""
    model = tiny_llama(16, 1, 32, 2, vocab_size=256, max_seq_len=32, seed=0)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name in LLAMA_LINEARS:
            parent, attr = name.split(".")
            w = getattr(getattr(model.model.layers[0], parent), attr).weight
            q = torch.randint(-7, 8, w.shape, generator=gen).float()
            q[:, ::8] = 7.0  # every group of 8 holds its absmax
            w.copy_(q * 0.01)
    errs = quantisation_errors(model, _TOKENS, 4, 8, "absmax")
    for name in LLAMA_LINEARS:
        assert errs[name]["weight"] < 1e-12
        assert errs[name]["input"] > 0  # the activations are not on the grid
        assert errs[name]["output"] > 0


def test_qat_model_is_measured_in_full_precision_and_left_unchanged():
    """A W4A4 model gives the errors of its FP twin (inputs captured with the quantisers off),
    and its quantisers are switched back on afterwards."""
    fp = tiny_llama(16, 1, 32, 2, vocab_size=256, max_seq_len=32, seed=0)
    qat = apply_qat(copy.deepcopy(fp), QATScheme.preset("W4A4", group_size=8))
    before = qat(input_ids=_TOKENS).logits
    assert quantisation_errors(qat, _TOKENS, 4, 8) == quantisation_errors(fp, _TOKENS, 4, 8)
    assert all(q.weight_quantizer.bits == 4 for q in quant_layers(qat).values())
    assert torch.equal(qat(input_ids=_TOKENS).logits, before)
