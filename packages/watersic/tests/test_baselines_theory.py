"""GPTQ / RTN baselines against references, and the rate-distortion theory."""

import math

import pytest
import torch
from watersic import theory
from watersic.gptq import gptq_quantize, gptq_reference
from watersic.rtn import fixed_rate, rtn_quantize
from watersic.synthetic import SPECTRA, eigenvalues, gaussian_weights, spectrum_covariance


def test_gptq_agrees_with_straightforward_reference(gen):
    W = gaussian_weights(24, 40, gen)
    S = spectrum_covariance("wishart", 40, gen)
    q = gptq_quantize(W, S, bits=3, block_size=16)
    ref = gptq_reference(W, S, bits=3)
    assert torch.allclose(q.weight, ref, atol=1e-9)


def test_gptq_beats_rtn_on_correlated_inputs(gen):
    W = gaussian_weights(64, 32, gen)
    S = spectrum_covariance("rotated_power2", 32, gen)
    assert gptq_quantize(W, S, bits=3).distortion < rtn_quantize(W, S, bits=3).distortion


def test_gptq_groups_and_act_order(gen):
    W = gaussian_weights(16, 32, gen)
    S = spectrum_covariance("power1", 32, gen)
    q = gptq_quantize(W, S, bits=4, group_size=8, act_order=True)
    assert q.scales.shape == (16, 4)  # (a, n / group)
    assert q.rate == fixed_rate(4, 8) == 4 + 20 / 8
    assert q.codes.min() >= 0 and q.codes.max() <= 15
    with pytest.raises(ValueError, match="must divide"):
        gptq_quantize(W, S, bits=4, group_size=5)


def test_rtn_is_exact_on_grid_values():
    W = torch.tensor([[0.0, 1.0, 2.0, 3.0], [-2.0, -1.0, 0.0, 1.0]])
    assert torch.equal(rtn_quantize(W, bits=2).weight.float(), W)


def test_gaussian_rd_closed_forms():
    # Identity spectrum: D(R) = 2^(-2R) and R(D) = 1/2 log2(1/D).
    lam = torch.ones(8)
    assert theory.gaussian_rd_distortion(lam, 3.0) == pytest.approx(2.0**-6)
    assert theory.gaussian_rd_rate(lam, 2.0**-6) == pytest.approx(3.0)
    # Two components, water level below both: R = 1/2 log2(GM / D).
    lam = torch.tensor([1.0, 4.0])
    assert theory.gaussian_rd_rate(lam, 0.25) == pytest.approx(0.5 * math.log2(2 / 0.25))
    # Water level above the small component: it gets no bits.
    # theta = 2: D = (1 + 2) / 2, R = 1/2 * 1/2 log2(4 / 2).
    assert theory.gaussian_rd_rate(lam, 1.5) == pytest.approx(0.25)


@pytest.mark.parametrize("spectrum", SPECTRA)
def test_rd_inverse_pair(spectrum):
    lam = eigenvalues(spectrum_covariance(spectrum, 16))
    D = theory.gaussian_rd_distortion(lam, 2.0)
    assert theory.gaussian_rd_rate(lam, D) == pytest.approx(2.0, abs=1e-6)


def test_gptq_extra_gap_unbounded():
    gaps = [theory.gptq_extra_gap(spectrum_covariance(s, 32)) for s in ("diag_1e2", "diag_1e4")]
    assert 0 < gaps[0] < gaps[1]
    assert theory.gptq_extra_gap(torch.eye(32)) == 0.0
    assert pytest.approx(0.2546, abs=1e-4) == theory.WATERSIC_HIGH_RATE_GAP
