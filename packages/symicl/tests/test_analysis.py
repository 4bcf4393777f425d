"""Separation ratio and probe alignment: invariances and planted ground truth."""

import torch
from symicl.analysis import class_alignment, model_defects, separation_ratio, trajectory_separation
from symicl.episodes import LinearTaskSampler
from symicl.transformer import EquivariantICLTransformer


def _planted(spread: float, b=4, n=40, d=3, seed=0):
    gen = torch.Generator().manual_seed(seed)
    labels = torch.arange(n).remainder(2).expand(b, n)
    centers = torch.tensor([[3.0, 0, 0], [-3.0, 0, 0]])
    x = centers[labels] + spread * torch.randn(b, n, d, generator=gen)
    return x, labels


def test_separation_ratio_is_shift_and_scale_invariant():
    x, y = _planted(1.0)
    r = separation_ratio(x, y, 2)
    assert torch.allclose(separation_ratio(3.0 * x + 5.0, y, 2), r, rtol=1e-4)
    assert r.shape == (4,)


def test_separation_ratio_recovers_planted_scale():
    tight, y = _planted(0.3)
    loose, _ = _planted(3.0)
    assert (separation_ratio(tight, y, 2) > 10 * separation_ratio(loose, y, 2)).all()
    # planted: between scatter 9 per point, within 0.09 * d per point
    assert torch.allclose(separation_ratio(tight, y, 2).mean(), torch.tensor(9 / 0.27), rtol=0.25)


def test_alignment_sign():
    x, y = _planted(0.5)
    probe = torch.tensor([[3.0, 0, 0]]).expand(4, 3)
    assert (class_alignment(x, y, probe, torch.zeros(4, dtype=torch.long), 2) > 0.9).all()
    assert (class_alignment(x, y, probe, torch.ones(4, dtype=torch.long), 2) < -0.9).all()
    missing = class_alignment(x, torch.zeros_like(y), probe, torch.ones(4, dtype=torch.long), 2)
    assert torch.isnan(missing).all()


def test_hand_set_label_aware_mean_shift_increases_separation():
    # f > 0 in W_QK: context points attend to their own class; a' = 1 moves them to its mean
    model = EquivariantICLTransformer(8, 2, 3, 1, "tied")
    with torch.no_grad():
        model.qk_coef.zero_()
        model.ov_coef.zero_()
        model.qk_coef[:, 0, 4] = 8.0  # f: <y_j, y_i>
        model.ov_coef[:, 0, 0] = 1.0  # a': move towards the attended points
    ep = LinearTaskSampler(8, 2, 32, seed=0).sample(64)
    sep = trajectory_separation(model, ep)
    assert sep.shape == (4,)
    assert (sep[1:] > sep[:-1]).all()


def test_model_defects_tied_zero_none_positive():
    assert model_defects(EquivariantICLTransformer(4, 2, 2, 2, "tied"))["max"] < 1e-6
    assert model_defects(EquivariantICLTransformer(4, 2, 2, 2, "none"))["qk_mean"] > 0.3
