"""External anchors (bench extra): skipped cleanly when the libraries are absent."""

import pytest
import torch
from watersic import anchors
from watersic.synthetic import gaussian_weights, spectrum_covariance


@pytest.mark.skipif(not anchors.available("hqq"), reason="hqq not installed (bench extra)")
def test_hqq_rate_counts_scales_and_reconstructs(gen):
    W = gaussian_weights(32, 128, gen)
    S = spectrum_covariance("identity", 128)
    q4 = anchors.hqq_quantize(W, S, bits=4, group_size=64)
    q2 = anchors.hqq_quantize(W, S, bits=2, group_size=64)
    assert q4.rate == 4 + 32 / 64
    assert q4.weight.shape == W.shape
    assert 0 < q4.relative_distortion < q2.relative_distortion < 1
    assert q4.codes.min() >= 0 and q4.codes.max() <= 15


def test_unknown_anchor_is_rejected():
    with pytest.raises(ValueError, match="unknown anchor"):
        anchors.available("awq")


@pytest.mark.slow
@pytest.mark.skipif(not anchors.available("quanto"), reason="optimum-quanto not installed")
def test_quanto_int4(gen):
    W = gaussian_weights(32, 128, gen)
    q = anchors.quanto_quantize(W, torch.eye(128, dtype=torch.float64), bits=4)
    assert q.group_size == 128 and q.rate == 4 + 32 / 128
    assert 0 < q.relative_distortion < 0.05
