"""Closed-form convolutions against Monte Carlo, and the numerical-fallback refusal."""

import numpy as np
import pytest
from noisy_compress.convolution import ConvolvedDensity, NoClosedFormError, convolved_pdf
from noisy_compress.densities import BoxDensity, GaussianDensity, MixtureDensity
from noisy_compress.noise import GaussianNoise, LaplaceNoise, UniformNoise

CASES = [
    (BoxDensity([0.0], [1.0]), GaussianNoise(0.3)),
    (BoxDensity([0.0], [1.0]), LaplaceNoise(0.2)),
    (BoxDensity([0.0], [1.0]), UniformNoise(0.4)),
    (GaussianDensity([0.5], [[0.4]]), GaussianNoise(0.5)),
    (GaussianDensity([0.5], [[0.4]]), LaplaceNoise(0.3)),
    (GaussianDensity([0.5], [[0.4]]), UniformNoise(0.5)),
    (
        MixtureDensity([0.3, 0.7], [BoxDensity([0.0], [1.0]), GaussianDensity([2.0], [[0.2]])]),
        GaussianNoise(0.2),
    ),
    (BoxDensity([0.0, 0.0], [1.0, 2.0]), GaussianNoise(0.3, d=2)),
]


@pytest.mark.parametrize(("f", "noise"), CASES)
def test_closed_form_matches_monte_carlo(f, noise):
    rng = np.random.default_rng(1)
    y = f.sample(6, rng) + noise.sample(6, rng)
    exact = convolved_pdf(f, noise, y)
    z = noise.sample(40000, rng)
    vals = np.stack([f.pdf(yi[None, :] - z) for yi in y])  # (6, N)
    mc, se = vals.mean(axis=1), vals.std(axis=1) / np.sqrt(z.shape[0])
    assert np.all(np.abs(exact - mc) <= 4 * se + 1e-9), (exact, mc, se)


def test_convolved_density_integrates_to_one():
    c = ConvolvedDensity(BoxDensity([0.0], [1.0]), LaplaceNoise(0.3))
    x = np.linspace(-6, 7, 20001)[:, None]
    assert np.trapezoid(c.pdf(x), x[:, 0]) == pytest.approx(1.0, abs=1e-3)


def test_no_closed_form_needs_numerical_fallback():
    f = GaussianDensity([0.0, 0.0], [[1.0, 0.5], [0.5, 1.0]])  # full covariance * Laplace
    y = np.zeros((2, 2))
    with pytest.raises(NoClosedFormError, match="numerical=True"):
        convolved_pdf(f, LaplaceNoise(0.5, d=2), y)
    val = convolved_pdf(f, LaplaceNoise(0.5, d=2), y, numerical=True, n_mc=20000)
    ref = convolved_pdf(f, GaussianNoise(cov=np.eye(2) * 0.5), y)  # same noise covariance
    assert np.all(val > 0) and np.allclose(val, ref, rtol=0.2)


def test_dimension_mismatch_is_refused():
    with pytest.raises(ValueError, match="dimension"):
        convolved_pdf(BoxDensity([0.0], [1.0]), GaussianNoise(0.1, d=2), np.zeros((1, 1)))
