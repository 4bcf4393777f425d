"""Tournaments: truth wins when present, oracle inequalities, order independence, ties."""

import numpy as np
import pytest
from noisy_compress.densities import GaussianDensity
from noisy_compress.noise import GaussianNoise
from noisy_compress.partition import CellPartition
from noisy_compress.tournament import (
    deviation_bound,
    knockout_tournament,
    minimum_distance,
    scheffe_tournament,
    select,
)

SELECTORS = [scheffe_tournament, minimum_distance, lambda P, h: knockout_tournament(P, h, 4)]


def _candidates(rng, q, tvs):
    """Distributions on len(q) cells at exactly the given TV distances from q."""
    out = []
    for tv in tvs:
        r = rng.dirichlet(np.ones(len(q)))
        mix = q + 0.0
        # move towards r until TV == tv (TV is linear along the segment)
        full = 0.5 * np.abs(r - q).sum()
        lam = min(1.0, tv / full)
        mix = (1 - lam) * q + lam * r
        out.append(mix)
    return np.array(out)


@pytest.mark.parametrize("sel", SELECTORS)
def test_truth_wins_closed_form_gaussians(sel):
    """Candidates N(mu_j, 1) * N(0, 0.5^2) in closed form; the truth mu = 0 wins at n = 1e4."""
    noise = GaussianNoise(0.5)
    cands = [GaussianDensity([mu], [[1.0]]) for mu in (-0.6, -0.3, 0.0, 0.3, 0.6)]
    rng = np.random.default_rng(0)
    y = cands[2].sample(10000, rng) + noise.sample(10000, rng)
    part = CellPartition.cover(y, 256)
    res = sel(part.masses(cands, noise), part.frequencies(y))
    assert res.winner == 2


@pytest.mark.parametrize(
    ("sel", "c_opt", "c_dev"), [(scheffe_tournament, 9, 8), (minimum_distance, 3, 2)]
)
def test_oracle_inequality_on_synthetic_candidates(sel, c_opt, c_dev):
    rng = np.random.default_rng(3)
    q = rng.dirichlet(np.ones(40))
    n, delta = 4000, 0.1
    for _rep in range(5):
        tvs = np.concatenate([[0.03], rng.uniform(0.1, 0.6, 24)])
        P = _candidates(rng, q, tvs)
        h = np.bincount(rng.choice(40, n, p=q), minlength=40) / n
        res = sel(P, h)
        bound = c_opt * tvs.min() + c_dev * deviation_bound(n, res.n_sets, delta)
        assert tvs[res.winner] <= bound
        assert bound < tvs.max()  # the inequality is not vacuous here
        assert res.constants == (c_opt, c_dev)


@pytest.mark.parametrize("sel", SELECTORS)
def test_order_independence(sel):
    rng = np.random.default_rng(5)
    q = rng.dirichlet(np.ones(30))
    P = _candidates(rng, q, rng.uniform(0.02, 0.5, 30))
    h = np.bincount(rng.choice(30, 500, p=q), minlength=30) / 500
    ref = P[sel(P, h).winner]
    for _ in range(4):
        perm = rng.permutation(30)
        assert np.array_equal(P[perm][sel(P[perm], h).winner], ref)


@pytest.mark.parametrize("sel", SELECTORS)
def test_ties_are_deterministic(sel):
    P = np.array([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])  # identical candidates: pure tie
    h = np.array([0.5, 0.5])
    winners = {sel(P, h).winner for _ in range(3)}
    assert winners == {0}


def test_select_rejects_unknown_method_and_shapes():
    with pytest.raises(ValueError, match="unknown selection"):
        select(np.ones((2, 3)) / 3, np.ones(3) / 3, "best")
    with pytest.raises(ValueError, match="must be"):
        scheffe_tournament(np.ones((2, 3)), np.ones(4))
