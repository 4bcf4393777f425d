"""Noise models: characteristic functions, identifiability, bad input."""

import numpy as np
import pytest
from noisy_compress.noise import (
    FejerNoise,
    GaussianNoise,
    IdentifiabilityWarning,
    LaplaceNoise,
    NotIdentifiableError,
    UniformNoise,
)


@pytest.mark.parametrize("noise", [GaussianNoise(0.4), LaplaceNoise(0.3), UniformNoise(0.5)])
def test_char_fn_matches_empirical(noise):
    z = noise.sample(200000, np.random.default_rng(0))
    w = np.array([[0.5], [2.0], [5.0]])
    emp = np.cos(w[:, 0][:, None] * z[:, 0][None]).mean(axis=1)
    assert np.allclose(noise.char_fn(w), emp, atol=0.01)


def test_gamma_orders_ill_posedness():
    # Gaussian noise decays much faster than Laplace noise of the same variance
    g, lap = GaussianNoise(np.sqrt(2) * 0.3), LaplaceNoise(0.3)
    assert g.gamma(10.0) < lap.gamma(10.0)


def test_band_limited_refused_uniform_warned():
    with pytest.raises(NotIdentifiableError, match="vanishes"):
        FejerNoise(2.0).check_identifiable()
    with pytest.warns(IdentifiabilityWarning):
        UniformNoise(0.5).check_identifiable()
    GaussianNoise(0.5).check_identifiable()  # silent


def test_fejer_char_fn_is_triangle():
    assert FejerNoise(2.0).char_fn(np.array([[1.0], [3.0]])).tolist() == [0.5, 0.0]


@pytest.mark.parametrize(
    "build",
    [
        lambda: GaussianNoise(-0.1),
        lambda: LaplaceNoise(-1.0),
        lambda: UniformNoise(float("nan")),
        lambda: GaussianNoise(cov=[[1.0, 2.0], [2.0, 1.0]]),
        lambda: GaussianNoise(cov=[[1.0, 0.0], [0.5, 1.0]]),
    ],
)
def test_bad_noise_parameters(build):
    with pytest.raises(ValueError):
        build()
