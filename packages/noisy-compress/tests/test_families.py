"""Decoders: the compression property on clean samples, mixture closure, bad input."""

import itertools

import numpy as np
import pytest
from noisy_compress.densities import BoxDensity, GaussianDensity
from noisy_compress.families import AxisAlignedGaussian, Gaussian, Mixture, UniformBox, make_family
from noisy_compress.metrics import tv_distance


def _best_decoding(fam, x, eps):
    best = 1.0
    sizes = fam.code_sizes(eps)
    for tup in itertools.permutations(range(len(x)), fam.tau):
        for codes in itertools.product(*[range(s) for s in sizes]):
            dens = fam.decode(x[list(tup)], np.array(codes, dtype=int), eps)
            if dens is not None:
                best = min(best, tv_distance(truth_of[fam], dens, n=3000))
    return best


truth_of = {}


@pytest.mark.parametrize(
    ("fam", "truth"),
    [
        (UniformBox(1), BoxDensity([0.0], [1.0])),
        (AxisAlignedGaussian(1), GaussianDensity([0.0], [[1.0]])),
    ],
)
def test_compression_property_on_clean_samples(fam, truth):
    """With m(eps) clean samples some tau points + codes decode within eps, in >= 2/3 of seeds."""
    eps = 0.25
    truth_of[fam] = truth
    m = fam.compression_size(eps).m
    hits = 0
    for seed in range(6):
        x = truth.sample(m, np.random.default_rng(seed))
        if isinstance(fam, UniformBox):  # the decoder only needs the extremes
            hits += tv_distance(truth, fam.decode(x, np.array([], int), eps)) <= eps
        else:
            x = x[np.random.default_rng(seed).choice(m, min(m, 12), replace=False)]
            hits += _best_decoding(fam, x, eps) <= eps
    assert hits >= 4


def test_box_decoder_is_bounding_box_of_2d_points():
    fam = UniformBox(2)
    pts = np.array([[0.1, 0.5], [0.9, 0.2], [0.4, 1.5], [0.3, 0.7]])
    box = fam.decode(pts, np.array([], int), 0.1)
    assert box.lo.tolist() == [0.1, 0.2] and box.hi.tolist() == [0.9, 1.5]


def test_gaussian_full_decoder_spans():
    fam = Gaussian(2)
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    L = fam._coef_levels(0.5)
    mid = (L - 1) // 2
    codes = np.full(4, mid)
    codes[0] = codes[3] = mid + (L - 1) // 4  # C = I
    g = fam.decode(pts, codes, 0.5)
    assert np.allclose(g.cov, np.eye(2))


def test_mixture_closure_sizes():
    base = UniformBox(1)
    mix = Mixture(base, 3)
    assert mix.tau == 3 * base.tau
    assert mix.bits(0.1) == pytest.approx(3 * np.log2(mix.weight_levels(0.1)))
    m = mix.decode(np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]]), np.array([0, 0, 1]), 0.1)
    assert m.weights.tolist() == pytest.approx([0.25, 0.25, 0.5])


@pytest.mark.parametrize(
    "bad",
    [
        lambda: make_family("uniform", k=0),
        lambda: Mixture(UniformBox(1), -1),
        lambda: UniformBox(1).compression_size(1.5),
        lambda: make_family("nope"),
    ],
)
def test_bad_family_input(bad):
    with pytest.raises(ValueError):
        bad()
