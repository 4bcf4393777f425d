"""Our fake quantisers against torchao's QAT fake quantisers (the ``bench`` extra)."""

import pytest
import torch
from qat_scaling.quant_linear import QuantLinear
from qat_scaling.torchao_parity import compare, torchao_available

pytestmark = pytest.mark.skipif(not torchao_available(), reason="torchao not installed")


@pytest.mark.parametrize(
    ("w_bits", "a_bits", "group_size"), [(4, 4, 8), (4, 4, 32), (3, 3, 16), (8, 8, 32), (4, 16, 8)]
)
def test_bit_exact_with_torchao(w_bits, a_bits, group_size):
    torch.manual_seed(w_bits * 100 + group_size)
    layer = QuantLinear(64, 16, w_bits=w_bits, a_bits=a_bits, group_size=group_size,
                        scale_rule="torchao")  # fmt: skip
    x = torch.distributions.StudentT(3.0).sample((128, 64))
    r = compare(layer, x)
    assert r["weight"] == f"0/{64 * 16}" and r["input"] == f"0/{128 * 64}", r
    assert r["output_max_abs_diff"] == 0.0


def test_half_way_points_round_like_torchao():
    # a group whose negative extreme sits at exactly -7.5 steps under the torchao rule
    layer = QuantLinear(8, 1, bias=False, w_bits=4, a_bits=4, group_size=8, scale_rule="torchao")
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[-0.3, 0.1, 0.2, -0.1, 0.05, 0.0, 0.15, 0.25]]))
    x = torch.tensor([[-3.0, 1.0, 0.5, 2.0, -1.0, 0.25, 1.5, 0.7]])
    r = compare(layer, x)
    assert r["weight"] == "0/8" and r["input"] == "0/8"


def test_only_the_torchao_rule_has_a_counterpart():
    with pytest.raises(ValueError, match="scale_rule='torchao'"):
        compare(QuantLinear(16, 4, group_size=8), torch.randn(2, 16))
    layer = QuantLinear(16, 4, group_size=8, scale_rule="torchao")
    with pytest.raises(ValueError, match=r"x must be \(N, 16\)"):
        compare(layer, torch.randn(2, 8))
