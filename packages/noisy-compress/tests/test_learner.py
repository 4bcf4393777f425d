"""The noisy learner: planted recovery, consistency in n, noise monotonicity, zero noise, bad input."""

import warnings

import numpy as np
import pytest
from noisy_compress.candidates import CandidateCapError
from noisy_compress.convolution import NoClosedFormError
from noisy_compress.densities import BoxDensity, GaussianDensity
from noisy_compress.families import Gaussian, Mixture, UniformBox
from noisy_compress.learner import learn
from noisy_compress.metrics import tv_distance
from noisy_compress.noise import (
    FejerNoise,
    GaussianNoise,
    IdentifiabilityWarning,
    LaplaceNoise,
    NotIdentifiableError,
    UniformNoise,
)
from noisy_compress.noisy_data import make_target, noisy_sample

FAST = dict(max_candidates=100, search_rounds=12)


def _tv(target, sigma, n, seed, **kw):
    t = make_target(target)
    noise = GaussianNoise(sigma, d=t.density.d)
    _, y = noisy_sample(t.density, noise, n, np.random.default_rng([seed, n]))
    res = learn(t.make_family(), y, noise, eps=0.05, seed=seed, **{**FAST, **kw})
    return tv_distance(t.density, res.density), res


def test_planted_uniform_recovered():
    tv, res = _tv("uniform", 0.2, 4000, 0)
    assert tv < 0.06
    assert "OPT" in res.tv_convolved_bound


def test_planted_gmm_recovered():
    tv_g, _ = _tv("gmm", 0.1, 4000, 0, max_candidates=150, search_rounds=30)
    assert tv_g < 0.1


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_planted_uniform_mixture_recovered(seed):
    tv_u, _ = _tv("uniform-mixture", 0.1, 4000, seed, max_candidates=150, search_rounds=80)
    assert tv_u < 0.06


def test_tv_shrinks_with_n_and_naive_does_not():
    small = np.mean([_tv("uniform", 0.3, 300, s)[0] for s in range(3)])
    large = np.mean([_tv("uniform", 0.3, 6000, s)[0] for s in range(3)])
    assert large < small
    t = make_target("uniform")
    naive = []
    for n in (300, 6000):
        _, y = noisy_sample(t.density, GaussianNoise(0.3), n, np.random.default_rng(n))
        res = learn(UniformBox(1), y, GaussianNoise(0.0), eps=0.05, **FAST)
        naive.append(tv_distance(t.density, res.density))
    assert naive[1] > 0.2 and naive[1] > large * 3  # ignoring the noise is inconsistent


def test_error_grows_with_noise():
    lo = np.mean([_tv("uniform", 0.05, 1000, s)[0] for s in range(3)])
    hi = np.mean([_tv("uniform", 0.5, 1000, s)[0] for s in range(3)])
    assert hi > lo


def test_zero_noise_is_the_clean_learner():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (800, 1))
    a = learn(UniformBox(1), x, GaussianNoise(0.0), eps=0.05, **FAST)
    assert a.radius == 0.0
    # candidates are decodings of quantised sample points (no perturbation)
    q = np.round(x / a.delta_q) * a.delta_q
    pts = a.candidates.points.reshape(-1)
    assert np.all(np.min(np.abs(pts[:, None] - q[None, :, 0]), axis=1) < 1e-9)
    b = learn(
        UniformBox(1), x, GaussianNoise(1e-9), eps=0.05, radius=0.0, delta_q=a.delta_q, **FAST
    )
    assert np.allclose(a.density.lo, b.density.lo) and np.allclose(a.density.hi, b.density.hi)


def test_gaussian_plus_gaussian_close_to_closed_form():
    rng = np.random.default_rng(1)
    sigma, n = 0.5, 6000
    y = rng.normal(1.0, 1.0, (n, 1)) + rng.normal(0, sigma, (n, 1))
    res = learn(Gaussian(1), y, GaussianNoise(sigma), eps=0.05, **FAST)
    closed = GaussianDensity([y.mean()], [[y.var() - sigma**2]])
    assert tv_distance(res.density, closed) < 0.06


def test_laplace_noise_learning_works():
    rng = np.random.default_rng(2)
    y = rng.uniform(0, 1, (3000, 1)) + rng.laplace(0, 0.1, (3000, 1))
    res = learn(UniformBox(1), y, LaplaceNoise(0.1), eps=0.05, **FAST)
    assert tv_distance(BoxDensity([0.0], [1.0]), res.density) < 0.08


def test_band_limited_refused_uniform_warned():
    y = np.random.default_rng(0).uniform(0, 1, (200, 1))
    with pytest.raises(NotIdentifiableError):
        learn(UniformBox(1), y, FejerNoise(3.0))
    with pytest.warns(IdentifiabilityWarning):
        learn(UniformBox(1), y, UniformNoise(0.1), max_candidates=20, search_rounds=2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(y=np.full((50, 1), np.nan)), "NaN"),
        (dict(y=np.ones((50, 2))), "dimension mismatch"),
        (dict(y=np.array([[0.1], [0.2], [0.3]])), "need at least 4 samples"),
        (dict(eps=0.0), "eps"),
        (dict(eps=1.5), "eps"),
        (dict(delta=1.0), "delta"),
        (dict(noise=GaussianNoise(0.1, d=2)), "dimension"),
    ],
)
def test_bad_input(kwargs, match):
    base = dict(
        family=UniformBox(1),
        y=np.random.default_rng(0).uniform(0, 1, (50, 1)),
        noise=GaussianNoise(0.1),
    )
    base.update(kwargs)
    with pytest.raises(ValueError, match=match):
        learn(**base, max_candidates=20, search_rounds=2)


def test_candidate_cap_refusal_prints_count():
    y = np.random.default_rng(0).uniform(0, 1, (500, 1))
    with pytest.raises(CandidateCapError, match=r"about .* candidates.*coarser quantisation"):
        learn(Mixture(UniformBox(1), 2), y, GaussianNoise(0.1), strategy="all", max_candidates=1000)


def test_all_enumeration_when_small():
    y = np.random.default_rng(0).uniform(0, 1, (60, 1))
    res = learn(
        UniformBox(1), y, GaussianNoise(0.0), strategy="all", delta_q=0.05, max_candidates=2000
    )
    assert res.candidates.strategy == "all"
    assert res.density.lo[0] < 0.1 and res.density.hi[0] > 0.9


def test_no_closed_form_refused_without_fallback():
    y = np.random.default_rng(0).normal(size=(100, 2))
    with pytest.raises(NoClosedFormError, match="numerical"):
        learn(Gaussian(2), y, LaplaceNoise(0.2, d=2))


def test_deterministic_given_seed():
    with warnings.catch_warnings():
        a = _tv("uniform", 0.2, 1000, 4)[1].density
        b = _tv("uniform", 0.2, 1000, 4)[1].density
    assert np.array_equal(a.lo, b.lo) and np.array_equal(a.hi, b.hi)
