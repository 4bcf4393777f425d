"""Rate accounting and the real ANS bitstream."""

import math

import pytest
import torch
from watersic.entropy import (
    miller_madow_correction,
    per_column_entropy,
    pooled_entropy,
    side_information_bits,
)
from watersic.layer_quantizer import quantize_matrix
from watersic.quantized_matrix import QuantizedMatrix
from watersic.second_moment import dead_columns
from watersic.synthetic import gaussian_weights, spectrum_covariance


def test_uniform_sources_have_exact_entropy():
    assert pooled_entropy(torch.tensor([[0, 1], [1, 0]])) == 1.0
    assert pooled_entropy(torch.arange(4).repeat(8).reshape(4, 8)) == 2.0
    assert per_column_entropy(torch.tensor([[0, 7], [1, 7], [2, 7], [3, 7]])) == 1.0


def test_per_column_entropy_never_exceeds_pooled(gen):
    Z = torch.cat([torch.randint(-8, 8, (500, 3), generator=gen), torch.zeros(500, 2)], 1)
    assert per_column_entropy(Z) <= pooled_entropy(Z) + 1e-12
    assert miller_madow_correction(Z) > 0


def test_dead_detection_uses_the_median():
    # One huge outlier feature would make the mean 1e6 and kill every ordinary column.
    d = torch.tensor([1.0, 1.0, 1.0, 1.0, 1e-6, 4e6], dtype=torch.float64)
    assert dead_columns(torch.diag(d)).tolist() == [False, False, False, False, True, False]


@pytest.mark.parametrize("mode", ["pooled", "per_column"])
def test_bitstream_round_trip_is_exact(mode, gen):
    W = gaussian_weights(512, 32, gen)
    S = spectrum_covariance("power2", 32, gen)
    S[4, 4] = 0.0  # one dead column travels as an index
    q = quantize_matrix(W, S, rate=2.5, accounting=mode)
    data = q.to_bytes()
    back = QuantizedMatrix.from_bytes(data)
    assert torch.equal(back.codes, q.codes)
    assert torch.equal(back.dead, q.dead)
    assert torch.equal(back.dequantize(), q.dequantize())


def test_pooled_coded_size_is_entropy_plus_side_information(gen):
    W = gaussian_weights(1024, 64, gen)
    q = quantize_matrix(W, spectrum_covariance("identity", 64), rate=3.0)
    a, n = q.shape
    entropy_bits = (q.rate_pooled - q.side_bits / (a * n)) * a * n
    K = int(q.codes.max() - q.codes.min()) + 1
    overhead = q.side_bits + 32 * K + 8 * 30  # scales/indices, count table, header
    coded_bits = 8 * len(q.to_bytes("pooled"))
    assert coded_bits <= 1.01 * entropy_bits + overhead
    assert coded_bits >= entropy_bits  # no code beats the empirical entropy of its own model


def test_per_column_bitstream_is_close_to_per_column_entropy(gen):
    # Gaussian columns: the parametric per-column models lose little against the ideal.
    W = gaussian_weights(2048, 32, gen)
    q = quantize_matrix(W, spectrum_covariance("diag_1e4", 32), rate=3.0, accounting="per_column")
    assert q.coded_rate("per_column") <= q.rate_per_column + 0.08
    assert q.coded_rate("per_column") < q.coded_rate("pooled")


def test_bad_bitstream_is_rejected():
    with pytest.raises(ValueError, match="not a WaterSIC bitstream"):
        QuantizedMatrix.from_bytes(b"garbage-garbage-garbage-garbage")


def test_side_information_counts_scales_and_indices():
    assert side_information_bits(4, 8, 2) == 16 * (4 + 6) + 64 + 2 * 16
    assert math.isclose(side_information_bits(4096, 4096, 0) / 4096**2, 32 / 4096 + 64 / 4096**2)
