"""Bounds (monotonicity, closed forms) and the anchors (closed-form checks, optional packages)."""

import math

import numpy as np
import pytest
from noisy_compress.baselines import (
    DeconvolutionKDE,
    DeconvolvedGMM,
    ExtremeDeconvolution,
    KDEpyFFT,
    MomentDeconvolution,
    NaiveGMM,
    PygmmisXD,
)
from noisy_compress.bounds import (
    clean_sample_complexity,
    noisy_l2_bound,
    noisy_sample_complexity,
    tv_from_l2,
)
from noisy_compress.densities import BoxDensity, GaussianDensity, MixtureDensity
from noisy_compress.families import UniformBox
from noisy_compress.metrics import l2_distance, l2_gaussian_mixtures, tv_boxes, tv_distance
from noisy_compress.noise import GaussianNoise, LaplaceNoise


def test_clean_sample_complexity_scales_like_inverse_eps_squared():
    a = clean_sample_complexity(2, 0.0, 36, 0.1, 0.1)
    b = clean_sample_complexity(2, 0.0, 36, 0.05, 0.1)
    assert 3.5 < b.n2 / a.n2 < 4.5
    with pytest.raises(ValueError, match="eps"):
        clean_sample_complexity(2, 0.0, 36, 0.0, 0.1)
    with pytest.raises(ValueError, match="delta"):
        clean_sample_complexity(2, 0.0, 36, 0.1, 2.0)


def test_noisy_sample_complexity_grows_with_radius():
    size = UniformBox(1).compression_size(0.1)
    small = noisy_sample_complexity(size, 1, 0.1, 0.1, 0.1, 0.01)
    big = noisy_sample_complexity(size, 1, 0.1, 0.1, 2.0, 0.01)
    assert big.total > small.total


def test_l2_bound_gaussian_vs_laplace():
    fam = UniformBox(1)
    g = noisy_l2_bound(GaussianNoise(0.3), fam, 1e-4, 0.5)
    lap = noisy_l2_bound(LaplaceNoise(0.3 / math.sqrt(2)), fam, 1e-4, 0.5)
    assert lap.l2 < g.l2  # polynomial decay of phi_g is mildly ill-posed
    assert noisy_l2_bound(GaussianNoise(0.3), fam, 1e-6, 0.5).l2 < g.l2


def test_tv_from_l2_and_closed_form_metrics():
    assert tv_from_l2(0.0, 1.0) == 0.0
    assert tv_boxes(BoxDensity([0.0], [1.0]), BoxDensity([2.0], [3.0])) == 1.0
    a, b = BoxDensity([0.0], [1.0]), BoxDensity([0.5], [2.0])
    grid = np.linspace(-1, 3, 400001)[:, None]
    num = 0.5 * np.trapezoid(np.abs(a.pdf(grid) - b.pdf(grid)), grid[:, 0])
    assert tv_boxes(a, b) == pytest.approx(num, abs=1e-3)
    f = MixtureDensity(
        [0.3, 0.7], [GaussianDensity([0.0], [[1.0]]), GaussianDensity([2.0], [[0.5]])]
    )
    g = GaussianDensity([1.0], [[1.5]])
    grid = np.linspace(-10, 12, 200001)[:, None]
    num = math.sqrt(np.trapezoid((f.pdf(grid) - g.pdf(grid)) ** 2, grid[:, 0]))
    assert l2_gaussian_mixtures(f, g) == pytest.approx(num, rel=1e-4)
    assert l2_distance(a, a) == 0.0


def test_gmm_anchors_on_gaussian_data():
    rng = np.random.default_rng(0)
    y = rng.normal(0, 1, (2000, 1)) + rng.normal(0, 0.7, (2000, 1))
    noise = GaussianNoise(0.7)
    truth = GaussianDensity([0.0], [[1.0]])
    naive = tv_distance(truth, NaiveGMM(1).fit(y, noise))
    for est in (DeconvolvedGMM(1), ExtremeDeconvolution(1), MomentDeconvolution("gaussian")):
        assert tv_distance(truth, est.fit(y, noise)) < min(0.07, naive)


def test_deconvolution_kde_beats_naive_on_gaussian():
    rng = np.random.default_rng(1)
    y = rng.normal(0, 1, (4000, 1)) + rng.normal(0, 0.5, (4000, 1))
    truth = GaussianDensity([0.0], [[1.0]])
    dk = DeconvolutionKDE().fit(y, GaussianNoise(0.5))
    assert tv_distance(truth, dk) < 0.1


@pytest.mark.skipif(not PygmmisXD.available(), reason="pygmmis (bench extra) not installed")
def test_pygmmis_agrees_with_our_extreme_deconvolution():
    rng = np.random.default_rng(2)
    x = np.where(rng.random(3000) < 0.5, rng.normal(-2, 0.5, 3000), rng.normal(2, 0.7, 3000))
    y = (x + rng.normal(0, 0.5, 3000))[:, None]
    ours = ExtremeDeconvolution(2).fit(y, GaussianNoise(0.5))
    ref = PygmmisXD(2).fit(y, GaussianNoise(0.5))
    assert tv_distance(ours, ref) < 0.05


@pytest.mark.skipif(not KDEpyFFT.available(), reason="KDEpy (bench extra) not installed")
def test_kdepy_anchor_runs():
    y = np.random.default_rng(0).normal(size=(500, 1))
    assert tv_distance(GaussianDensity([0.0], [[1.0]]), KDEpyFFT().fit(y, GaussianNoise(0.0))) < 0.1
