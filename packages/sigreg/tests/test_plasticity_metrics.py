"""Dormant ratio, srank, entropy rank, isotropy gap: hand-made activations and closed forms."""

import pytest
import torch
from sigreg.plasticity_metrics import (
    ActivationRecorder,
    DormantNeuronRatio,
    EffectiveRankEntropy,
    EPStatistic,
    FeatureNorm,
    IsotropyGap,
    SRank,
    dormant_ratio,
    entropy_rank,
    isotropy_gap,
    srank,
)
from torch import nn


def test_units_killed_by_negative_bias_give_exactly_k_over_h():
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(5, 20), nn.ReLU())
    with torch.no_grad():
        layer[0].weight[:7] = 0.0
        layer[0].bias[:7] = -1.0  # 7 units can never fire
        layer[0].bias[7:] = 10.0  # the rest always fire
    with ActivationRecorder(layer, [nn.ReLU]) as rec:
        layer(torch.rand(64, 5))
    h = next(iter(rec.outputs.values()))
    assert dormant_ratio(h, 0.0) == pytest.approx(7 / 20)
    m = DormantNeuronRatio(0.0)
    m.update(h[:32])
    m.update(h[32:])
    assert float(m.compute()) == pytest.approx(7 / 20)


def test_sokar_threshold_counts_nearly_dead_units():
    h = torch.ones(10, 4)
    h[:, 0] = 0.01  # score 0.01 / mean(0.01, 1, 1, 1) ~ 0.013 < 0.025
    assert dormant_ratio(h, 0.0) == 0.0
    assert dormant_ratio(h, 0.025) == 0.25
    assert dormant_ratio(torch.zeros(3, 4)) == 1.0


def test_srank_with_prescribed_singular_values():
    q1, _ = torch.linalg.qr(
        torch.randn(50, 50, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    )
    q2, _ = torch.linalg.qr(
        torch.randn(5, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    )
    sv = torch.tensor([10.0, 5.0, 3.0, 1.0, 0.1], dtype=torch.float64)  # cumsum/19.1
    x = q1[:, :5] @ torch.diag(sv) @ q2.T
    # cumulative shares 0.524, 0.785, 0.942, 0.995, 1.0
    assert srank(x, 0.01) == 4
    assert srank(x, 0.06) == 3
    assert srank(x, 0.3) == 2
    m = SRank(0.01)
    m.update(x[:25])
    m.update(x[25:])
    assert int(m.compute()) == 4
    p = sv / sv.sum()
    assert entropy_rank(x) == pytest.approx(float(torch.exp(-(p * p.log()).sum())))
    e = EffectiveRankEntropy()
    e.update(x)
    assert float(e.compute()) == pytest.approx(entropy_rank(x))


def test_isotropy_gap_zero_for_isotropic_and_large_for_collapsed():
    g = torch.Generator().manual_seed(2)
    iso = torch.randn(20000, 8, generator=g)
    aniso = iso * torch.tensor([5.0, 1, 1, 1, 1, 1, 1, 0.1])
    assert isotropy_gap(iso) < 0.15
    assert isotropy_gap(aniso) > 1.0
    m = IsotropyGap()
    m.update(aniso)
    assert float(m.compute()) == pytest.approx(isotropy_gap(aniso))


def test_feature_norm_and_ep_statistic_metrics():
    f = FeatureNorm()
    f.update(torch.tensor([[3.0, 4.0], [0.0, 1.0]]))
    assert float(f.compute()) == pytest.approx(3.0)
    ep = EPStatistic(seed=0)
    ep.update(torch.randn(2048, 8, generator=torch.Generator().manual_seed(3)))
    ep_c = EPStatistic(seed=0)
    ep_c.update(torch.ones(2048, 8))
    assert float(ep.compute()) < 0.01 < float(ep_c.compute())


@pytest.mark.parametrize(
    "fn,match",
    [
        (lambda: dormant_ratio(torch.ones(3, 3), -0.1), "tau"),
        (lambda: DormantNeuronRatio(-1.0), "tau"),
        (lambda: srank(torch.ones(3, 3), 0.0), "delta"),
        (lambda: SRank(1.0), "delta"),
        (lambda: srank(torch.ones(3), 0.01), r"\(N, H\)"),
        (lambda: isotropy_gap(torch.tensor([[float("nan"), 1.0]])), "NaN"),
        (lambda: SRank().compute(), "before update"),
    ],
)
def test_bad_metric_inputs(fn, match):
    with pytest.raises(ValueError, match=match):
        fn()


def test_gap_top_share_matches_the_closed_form_of_a_spiked_covariance():
    """Cov = diag(s, 1, ..., 1): gap^2 = (s/m - 1)^2 + (D - 1)(1/m - 1)^2 with m = (s + D - 1)/D."""
    from sigreg.plasticity_metrics import isotropy_gap, isotropy_gap_top_share

    d, s = 16, 25.0
    m = (s + d - 1) / d
    top, rest = (s / m - 1) ** 2, (d - 1) * (1 / m - 1) ** 2
    x = torch.randn(200_000, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x[:, 0] *= s**0.5
    assert isotropy_gap(x) == pytest.approx((top + rest) ** 0.5, rel=0.02)
    assert isotropy_gap_top_share(x) == pytest.approx(top / (top + rest), rel=0.02)
    assert isotropy_gap_top_share(torch.zeros(10, 4)) == 0.0
