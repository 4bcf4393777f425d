"""WaterSIC's layer quantizer: identities, theory, invariances, rate targeting, rescalers."""

import math

import pytest
import torch
from watersic import theory
from watersic.entropy import per_column_entropy
from watersic.gptq import huffman_gptq
from watersic.layer_quantizer import output_error, quantize_matrix, whitened_target
from watersic.rescalers import fit_rescalers, rescaler_objective
from watersic.second_moment import damped_cholesky
from watersic.sic import sic, sic_reference
from watersic.synthetic import SPECTRA, eigenvalues, gaussian_weights, spectrum_covariance


def entropy_gap(q, lam):
    """Gap of the code entropy alone (side information excluded) to R_IT(D)."""
    a, n = q.shape
    return theory.rate_gap(q.rate - q.side_bits / (a * n), q.distortion, lam)


def test_distortion_identity(gen):
    # tr(E Sigma E^T) = ||E L||_F^2 with Sigma = L L^T
    n = 24
    S = spectrum_covariance("wishart", n, gen)
    E = torch.randn(10, n, generator=gen, dtype=torch.float64)
    L = torch.linalg.cholesky(S)
    lhs = torch.trace(E @ S @ E.T)
    assert torch.allclose(lhs, (E @ L).pow(2).sum(), rtol=1e-10)
    W = torch.randn(10, n, generator=gen, dtype=torch.float64)
    assert math.isclose(output_error(W, W - E, S), float(lhs), rel_tol=1e-10)


def test_reported_distortion_matches_direct(gen):
    W = gaussian_weights(128, 16, gen)
    S = spectrum_covariance("rotated_power2", 16, gen)
    q = quantize_matrix(W, S, rate=2.0)
    E = W - q.dequantize(torch.float64)
    assert q.distortion == pytest.approx(float(torch.trace(E @ S @ E.T)) / W.numel(), rel=1e-9)
    assert q.dequantize().shape == (128, 16)  # (a, n)
    assert q.codes.shape == (128, 16)  # (a, n_live)


@pytest.mark.parametrize("rate", [3.0, 4.0])
def test_identity_gap_is_0255(rate, gen):
    # Sigma = I: WaterSIC's gap to the IT limit is 1/2 log2(pi e / 6) = 0.2546 bits.
    W = gaussian_weights(2048, 32, gen)
    S = torch.eye(32, dtype=torch.float64)
    q = quantize_matrix(W, S, rate=rate, rescalers=False)
    assert entropy_gap(q, torch.ones(32)) == pytest.approx(theory.WATERSIC_HIGH_RATE_GAP, abs=0.02)


def test_high_rate_distortion_is_c2_over_12(gen):
    # Without the MMSE shrink every whitened column has distortion c^2/12.
    W = gaussian_weights(2048, 16, gen)
    S = spectrum_covariance("rotated_power2", 16, gen)
    q = quantize_matrix(W, S, rate=5.0, mmse=False, rescalers=False)
    c = q.info["step"]
    assert q.distortion * 12 / c**2 == pytest.approx(1.0, abs=0.03)


def test_huffman_gptq_gap_matches_prediction(gen):
    W = gaussian_weights(2048, 32, gen)
    S = spectrum_covariance("diag_1e2", 32, gen)
    lam = eigenvalues(S)
    h = huffman_gptq(W, S, rate=4.0)
    predicted = theory.predicted_huffman_gptq_gap(S, damping=0.01)
    assert entropy_gap(h, lam) == pytest.approx(predicted, abs=0.07)
    q = quantize_matrix(W, S, rate=4.0, accounting="per_column", rescalers=False)
    assert entropy_gap(q, lam) < 0.3  # WaterSIC stays near 0.255 where GPTQ does not


def test_watersic_beats_huffman_gptq_by_a_bit_on_wide_spread(gen):
    W = gaussian_weights(1024, 32, gen)
    S = spectrum_covariance("diag_1e4", 32, gen)
    lam = eigenvalues(S)
    q = quantize_matrix(W, S, rate=4.0, accounting="per_column")
    h = huffman_gptq(W, S, rate=4.0)
    assert entropy_gap(h, lam) - entropy_gap(q, lam) > 1.0


def test_waterfilling_rates_follow_variance_ratios(gen):
    # Diagonal Sigma: column rate differences = 1/2 log2(Sigma_ii / Sigma_jj).
    n = 32
    var = torch.logspace(0, -2, n, dtype=torch.float64)
    W = gaussian_weights(4096, n, gen)
    q = quantize_matrix(W, torch.diag(var), rate=5.0, rescalers=False, accounting="per_column")
    # side information (fp16 scales) is 0.5 bit/weight here, so columns code about 3-6 bits (high rate)
    rates = torch.tensor(
        [per_column_entropy(q.codes[:, [j]]) for j in range(n)], dtype=torch.float64
    )
    weighted = W.pow(2).mean(dim=0) * var  # sample variance of each whitened column
    expected = 0.5 * torch.log2(weighted / weighted[0])
    assert torch.allclose(rates - rates[0], expected, atol=0.05)


def test_scaling_invariances(gen):
    W = gaussian_weights(256, 16, gen)
    S = spectrum_covariance("wishart", 16, gen)
    q = quantize_matrix(W, S, rate=3.0)
    q_sigma = quantize_matrix(W, 4.0 * S, rate=3.0)  # Sigma -> k Sigma: same codes
    assert torch.equal(q.codes, q_sigma.codes)
    q_w = quantize_matrix(2.0 * W, S, rate=3.0)  # W -> k W: What -> k What
    assert torch.equal(q.codes, q_w.codes)
    assert torch.allclose(q_w.dequantize(torch.float64), 2 * q.dequantize(torch.float64), rtol=1e-3)


def test_blocked_sic_equals_unblocked(gen):
    n = 40
    S = spectrum_covariance("wishart", n, gen)
    L, _ = damped_cholesky(S, 1e-4)
    Y = gaussian_weights(64, n, gen) @ L
    Z1, a1 = sic(Y, L, 0.3, block_size=7)
    Z2, a2 = sic_reference(Y, L, 0.3)
    assert torch.equal(Z1, Z2)
    assert torch.allclose(a1, a2, rtol=1e-10)


@pytest.mark.parametrize("accounting", ["pooled", "per_column", "coded"])
@pytest.mark.parametrize("rate", [1.0, 2.5, 3.7])
def test_rate_targeting(rate, accounting, gen):
    W = gaussian_weights(1024, 32, gen)
    S = spectrum_covariance("power1", 32, gen)
    q = quantize_matrix(W, S, rate=rate, accounting=accounting)
    assert abs(q.rate - rate) < 0.01
    assert q.rate == {"pooled": q.rate_pooled, "per_column": q.rate_per_column}.get(
        accounting, q.rate_coded
    )


def test_rescaler_objective_never_increases(gen):
    W = gaussian_weights(128, 24, gen)
    S = spectrum_covariance("rotated_power2", 24, gen)
    q0 = quantize_matrix(W, S, rate=1.5, rescalers=False)
    M = q0.dequantize(torch.float64)[:, q0.live]
    fit = fit_rescalers(M, W @ S, S, const=float(torch.trace(W @ S @ W.T)), tol=0.0)
    diffs = torch.diff(torch.tensor(fit.history))
    assert (diffs <= 1e-12 * abs(fit.history[0])).all()
    q1 = quantize_matrix(W, S, rate=1.5)
    assert q1.distortion <= q0.distortion
    # The objective tracked from the quadratic forms equals the exact one at the end.
    exact = rescaler_objective(M, fit.t, fit.g, W @ S, S, float(torch.trace(W @ S @ W.T)))
    assert fit.history[-1] == pytest.approx(exact, rel=1e-9)


def test_drift_target_equals_plain_when_inputs_coincide(gen):
    W = gaussian_weights(32, 16, gen)
    S = spectrum_covariance("wishart", 16, gen)
    L, delta = damped_cholesky(S, 1e-4)
    assert torch.allclose(whitened_target(W @ S + delta * W, L), W @ L, atol=1e-10)
    q = quantize_matrix(W, S, rate=3.0)
    qd = quantize_matrix(W, S, rate=3.0, sigma_hat=S, sigma_cross=S)
    assert qd.distortion == pytest.approx(q.distortion, rel=1e-6)


def test_drift_correction_reduces_error_on_drifted_input(gen):
    n, T = 16, 4096
    X = torch.randn(T, n, generator=gen, dtype=torch.float64) @ spectrum_covariance("power1", n)
    Xh = X + 0.3 * torch.randn(T, n, generator=gen, dtype=torch.float64)  # quantized prefix
    S, Sh, Sx = X.T @ X / T, Xh.T @ Xh / T, X.T @ Xh / T
    W = gaussian_weights(256, n, gen)
    plain = quantize_matrix(W, Sh, rate=3.0)
    drift = quantize_matrix(W, S, rate=3.0, sigma_hat=Sh, sigma_cross=Sx)
    err_plain = output_error(W, plain.dequantize(torch.float64), S, Sh, Sx)
    err_drift = output_error(W, drift.dequantize(torch.float64), S, Sh, Sx)
    assert err_drift < err_plain


def test_dead_columns_give_zeros_and_no_nan(gen):
    W = gaussian_weights(256, 32, gen)
    S = torch.eye(32, dtype=torch.float64)
    S[3, 3] = 0.0
    S[5, 5] = 1e-9  # far below 1e-3 x median
    q = quantize_matrix(W, S, rate=2.0)
    What = q.dequantize()
    assert q.dead.tolist() == [3, 5]
    assert torch.isfinite(What).all()
    assert (What[:, [3, 5]] == 0).all()


@pytest.mark.parametrize("spectrum", SPECTRA)
def test_watersic_not_worse_than_baselines_at_equal_rate(spectrum, gen):
    """WaterSIC's distortion is at or below every baseline's: at equal total rate against the
    fixed grids (GPTQ, RTN, HQQ when installed), at equal code entropy against Huffman-GPTQ."""
    from watersic import anchors
    from watersic.gptq import gptq_quantize
    from watersic.rtn import rtn_quantize

    W = gaussian_weights(512, 32, gen)
    a, n = W.shape
    S = spectrum_covariance(spectrum, n, gen)
    fixed = [gptq_quantize(W, S, bits=3), rtn_quantize(W, S, bits=3)]
    if anchors.available("hqq"):
        fixed.append(anchors.hqq_quantize(W, S, bits=3, group_size=32))
    for b in fixed:
        q = quantize_matrix(W, S, rate=b.rate)
        assert q.rate <= b.rate + 0.01
        assert q.distortion <= b.distortion, (b.method, q.distortion, b.distortion)
    h = huffman_gptq(W, S, rate=3.0)
    code_entropy = h.rate - h.side_bits / (a * n)
    q = quantize_matrix(W, S, rate=code_entropy + q.side_bits / (a * n))
    assert abs(q.rate - q.side_bits / (a * n) - code_entropy) < 0.01
    assert q.distortion <= h.distortion, (q.distortion, h.distortion)
