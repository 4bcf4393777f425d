"""Monte-Carlo Scheffe sets (PointPartition): the tournaments in any dimension."""

import numpy as np
import pytest
from noisy_compress.convolution import convolved_pdf
from noisy_compress.densities import GaussianDensity
from noisy_compress.families import UniformBox
from noisy_compress.learner import learn
from noisy_compress.noise import GaussianNoise
from noisy_compress.partition import CellPartition, PointPartition
from noisy_compress.tournament import minimum_distance, scheffe_tournament


def _gaussians(d, shifts):
    return [GaussianDensity(np.r_[m, np.zeros(d - 1)], np.eye(d)) for m in shifts]


def test_holdout_atoms_decide_membership_exactly_and_carry_no_mass():
    d, noise = 3, GaussianNoise(0.5, d=3)
    cands = _gaussians(d, (-0.5, 0.0, 0.5))
    rng = np.random.default_rng(0)
    y = cands[1].sample(300, rng) + noise.sample(300, rng)
    part = PointPartition(y, n_mc=5000)
    P = part.masses(cands, noise)
    exact = np.stack([convolved_pdf(f, noise, y) for f in cands])
    np.testing.assert_array_equal(P[0, :300] > P[2, :300], exact[0] > exact[2])
    assert P[:, :300].sum() < 1e-9
    # importance-sampled total mass of every candidate is ~1
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=0.05)


@pytest.mark.parametrize("sel", [scheffe_tournament, minimum_distance])
def test_truth_wins_in_three_dimensions(sel):
    noise = GaussianNoise(0.5, d=3)
    cands = _gaussians(3, (-0.6, -0.3, 0.0, 0.3, 0.6))
    rng = np.random.default_rng(1)
    y = cands[2].sample(5000, rng) + noise.sample(5000, rng)
    part = PointPartition(y, n_mc=20_000, seed=2)
    assert sel(part.masses(cands, noise), part.frequencies(y)).winner == 2


def test_agrees_with_the_grid_in_one_dimension():
    noise = GaussianNoise(0.3)
    cands = [GaussianDensity([m], [[1.0]]) for m in (-0.4, -0.2, 0.0, 0.2, 0.4)]
    rng = np.random.default_rng(3)
    y = cands[3].sample(4000, rng) + noise.sample(4000, rng)
    grid = CellPartition.cover(y, 512)
    points = PointPartition(y, n_mc=20_000)
    w_grid = minimum_distance(grid.masses(cands, noise), grid.frequencies(y)).winner
    w_points = minimum_distance(points.masses(cands, noise), points.frequencies(y)).winner
    assert w_grid == w_points == 3


def test_frequencies_refuse_another_sample():
    part = PointPartition(np.zeros((5, 3)), n_mc=10)
    with pytest.raises(ValueError, match="hold-out sample it was built on"):
        part.frequencies(np.ones((5, 3)))


def test_learner_runs_in_three_dimensions():
    rng = np.random.default_rng(0)
    y = rng.uniform(0, 1, (3000, 3)) + rng.normal(0, 0.1, (3000, 3))
    res = learn(UniformBox(3), y, GaussianNoise(0.1, d=3), eps=0.2, max_candidates=60,
                n_mc=5000)  # fmt: skip
    np.testing.assert_allclose(res.density.lo, 0.0, atol=0.15)
    np.testing.assert_allclose(res.density.hi, 1.0, atol=0.15)
