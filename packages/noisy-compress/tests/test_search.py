"""The 0.2 candidate search and guarantee: encoders, exact atom masses, profiled weights, budgets."""

import numpy as np
import pytest
from noisy_compress.candidates import search_budget, seeded_candidates
from noisy_compress.convolution import convolved_cdf, convolved_pdf
from noisy_compress.densities import BoxDensity, GaussianDensity, MixtureDensity
from noisy_compress.families import AxisAlignedGaussian, Gaussian, Mixture, UniformBox
from noisy_compress.learner import code_precision, learn
from noisy_compress.likelihood import convolved_mle, profile_weights
from noisy_compress.metrics import tv_distance
from noisy_compress.noise import GaussianNoise, LaplaceNoise, UniformNoise
from noisy_compress.noisy_data import make_target, noisy_sample
from noisy_compress.partition import CellPartition
from noisy_compress.tournament import deviation_bound
from scipy import integrate


@pytest.mark.parametrize(
    ("family", "member"),
    [
        (UniformBox(1), BoxDensity([0.2], [1.7])),
        (UniformBox(2), BoxDensity([0.0, -1.0], [1.0, 2.0])),
        (AxisAlignedGaussian(2), GaussianDensity([0.5, -1.0], np.diag([0.3, 2.0]))),
        (Gaussian(2), GaussianDensity([0.5, -1.0], [[1.0, 0.6], [0.6, 2.0]])),
        (
            Mixture(UniformBox(1), 2),
            MixtureDensity([0.3, 0.7], [BoxDensity([0.0], [1.0]), BoxDensity([1.5], [2.5])]),
        ),
    ],
)
def test_decode_of_encode_is_within_the_code_precision(family, member):
    """The sender and the decoder form a compression scheme: J(encode(f)) is eps-close to f."""
    eps = 0.02
    pts, codes = family.encode(member, eps)
    assert pts.shape == (family.tau, family.d) and len(codes) == len(family.code_sizes(eps))
    back = family.decode(pts, codes, eps)
    assert tv_distance(member, back) < 2 * eps if family.d <= 2 else True


@pytest.mark.parametrize(
    ("f", "noise"),
    [
        (BoxDensity([0.0], [1.0]), GaussianNoise(0.2)),
        (BoxDensity([-0.5], [2.0]), LaplaceNoise(0.3)),
        (BoxDensity([0.0], [1.0]), UniformNoise(0.25)),
        (GaussianDensity([1.0], [[0.5]]), GaussianNoise(0.3)),
        (
            MixtureDensity([0.3, 0.7], [BoxDensity([0.0], [1.0]), GaussianDensity([2.0], [[0.1]])]),
            GaussianNoise(0.1),
        ),
    ],
)
def test_convolved_cdf_integrates_the_convolved_density(f, noise):
    """Closed-form F(b) - F(a) equals the quadrature of the convolved density over [a, b]."""
    for a, b in [(-3.0, 0.1), (0.1, 0.9), (0.9, 4.0)]:
        exact = np.diff(convolved_cdf(f, noise, np.array([a, b])))[0]
        quad, _ = integrate.quad(lambda t: convolved_pdf(f, noise, np.array([[t]]))[0], a, b,
                                 limit=200, points=[0.0, 1.0])  # fmt: skip
        assert exact == pytest.approx(quad, abs=1e-6)


def test_exact_atoms_partition_the_line_and_bound_the_binning_gap():
    """The atoms' masses sum to one, and TV - TV_binned <= h ||g'||_1 + outside mass (planted pairs)."""
    rng = np.random.default_rng(0)
    noise = GaussianNoise(0.1)
    y = rng.uniform(0, 2.5, (400, 1))
    part = CellPartition.cover(y, 128)
    dens = [BoxDensity([a], [a + w]) for a, w in rng.uniform([-0.2, 0.3], [0.6, 2.0], (30, 2))]
    P = part.masses(dens, noise)
    assert part.exact and np.allclose(P.sum(axis=1), 1.0)
    assert part.frequencies(y).sum() == pytest.approx(1.0)
    from noisy_compress.convolution import ConvolvedDensity

    for i in range(0, 30, 3):
        j = i + 1
        tv_bin = 0.5 * np.abs(P[i] - P[j]).sum()
        tv = tv_distance(
            ConvolvedDensity(dens[i], noise), ConvolvedDensity(dens[j], noise), n=40000
        )
        gap = part.binning_gap(noise, P[i, 0] + P[i, -1])
        assert tv_bin <= tv + 1e-3
        assert tv - tv_bin <= gap


def test_profiled_weights_recover_planted_weights_from_a_histogram():
    rng = np.random.default_rng(1)
    noise = GaussianNoise(0.2)
    comps = [BoxDensity([0.0], [1.0]), BoxDensity([1.5], [2.5])]
    truth = MixtureDensity([0.25, 0.75], comps)
    _, y = noisy_sample(truth, noise, 20000, rng)
    part = CellPartition.cover(y, 200)
    w = profile_weights(part.masses(comps, noise), part.frequencies(y))
    assert w == pytest.approx([0.25, 0.75], abs=0.02)


def test_budget_and_code_precision_follow_n():
    assert search_budget(8000) > search_budget(1000) > 0
    assert search_budget(8000) / search_budget(1000) == pytest.approx(
        np.log(8000) / np.log(1000), rel=0.02
    )
    assert code_precision(8000) < code_precision(1000)


def test_empirical_bernstein_is_never_looser_than_hoeffding():
    for v in (0.0, 0.01, 0.1, 0.25):
        assert deviation_bound(5000, 10**4, 0.1, variance=v) <= deviation_bound(5000, 10**4, 0.05)
    assert deviation_bound(5000, 10**4, 0.1, variance=0.001) < 0.5 * deviation_bound(
        5000, 10**4, 0.1
    )


def test_seeded_candidates_are_decodings_of_reachable_points():
    """Every seeded candidate decodes perturbation-quantised points within r of a sample point."""
    rng = np.random.default_rng(2)
    fam = Mixture(UniformBox(1), 2)
    truth = make_target("uniform-mixture-unequal").density
    noise = GaussianNoise(0.1)
    _, y = noisy_sample(truth, noise, 1000, rng)
    dq, r = 0.01, 0.3
    out = seeded_candidates(fam, y, noise, 0.05, dq, r, truth, 40, rng)
    assert len(out) == 40
    q1 = np.round(y / dq).astype(int)
    for dens, q, codes in out:
        dist = np.abs(q[:, None, :] - q1[None]).max(axis=2).min(axis=1)
        assert np.all(dist <= int(r / dq))
        assert tv_distance(dens, fam.decode(q * dq, codes, 0.05)) == 0.0


def test_mle_seed_is_consistent_on_the_unequal_mixture():
    noise = GaussianNoise(0.1)
    truth = make_target("uniform-mixture-unequal").density
    fam = Mixture(UniformBox(1), 2)
    tvs = []
    for n in (500, 8000):
        runs = [noisy_sample(truth, noise, n, np.random.default_rng([s, n]))[1] for s in range(3)]
        tvs.append(np.mean([tv_distance(truth, convolved_mle(fam, y, noise)) for y in runs]))
    assert tvs[1] < 0.6 * tvs[0] and tvs[1] < 0.03


def test_learner_on_the_unequal_mixture_and_its_guarantee():
    """0.1.0 stayed at TV ~0.09 here (best candidate 0.15); the seeded search reaches < 0.05."""
    noise = GaussianNoise(0.1)
    truth = make_target("uniform-mixture-unequal").density
    _, y = noisy_sample(truth, noise, 4000, np.random.default_rng(4))
    res = learn(Mixture(UniformBox(1), 2), y, noise, seed=4)
    assert tv_distance(truth, res.density) < 0.05
    assert res.candidates.strategy == "seeded" and np.isfinite(res.binning_gap)
    assert res.bound == pytest.approx(res.selection.constants[1] * res.deviation + res.binning_gap)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["uniform", "uniform-mixture", "uniform-mixture-unequal", "gmm"])
@pytest.mark.parametrize("sigma", [0.1, 0.3])
def test_mean_tv_falls_by_30_percent_from_1000_to_8000(target, sigma):
    """The issue's criterion at real scale (8 seeds): mean TV(n=8000) <= 0.7 mean TV(n=1000)."""
    tgt = make_target(target)
    noise = GaussianNoise(sigma)
    means = []
    for n in (1000, 8000):
        tvs = []
        for s in range(8):
            _, y = noisy_sample(tgt.density, noise, n, np.random.default_rng([s, n, 5]))
            tvs.append(tv_distance(tgt.density, learn(tgt.make_family(), y, noise, seed=s).density))
        means.append(np.mean(tvs))
    assert means[1] <= 0.7 * means[0]
