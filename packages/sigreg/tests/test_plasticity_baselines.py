"""ReDo, Shrink & Perturb and L2-init do what their papers say."""

import pytest
import torch
from sigreg.plasticity_baselines import L2Init, redo_reset, shrink_perturb
from torch import nn


def test_redo_recycles_only_dead_units():
    torch.manual_seed(0)
    a, b = nn.Linear(3, 6), nn.Linear(6, 2)
    h = torch.rand(10, 6) + 0.5
    h[:, [1, 4]] = 0.0
    wa, wb = a.weight.clone(), b.weight.clone()
    assert redo_reset([a], [h], b, tau=0.0) == 2
    assert torch.equal(a.weight[[0, 2, 3, 5]], wa[[0, 2, 3, 5]])
    assert not torch.equal(a.weight[[1, 4]], wa[[1, 4]])
    assert torch.all(b.weight[:, [1, 4]] == 0)
    assert torch.equal(b.weight[:, [0, 2, 3, 5]], wb[:, [0, 2, 3, 5]])
    with pytest.raises(ValueError, match="tau"):
        redo_reset([a], [h], b, tau=-1)


def test_shrink_perturb_interpolates():
    torch.manual_seed(1)
    m = nn.Linear(4, 4)
    w = m.weight.clone()
    shrink_perturb(m, 0.4, 0.1)
    resid = m.weight - 0.4 * w  # = 0.1 * fresh init, bounded by 0.1 / sqrt(fan_in)
    assert resid.abs().max() <= 0.1 * 0.5 + 1e-6 and resid.abs().max() > 0
    with pytest.raises(ValueError):
        shrink_perturb(m, 1.5, 0.1)


def test_l2_init_penalty():
    m = nn.Linear(2, 2)
    pen = L2Init(m, coef=0.5)
    assert float(pen(m)) == 0.0
    with torch.no_grad():
        m.bias += 1.0
    assert float(pen(m)) == pytest.approx(0.5 * 2)
    assert "init_0" in pen.state_dict()
    with pytest.raises(ValueError, match=">= 0"):
        L2Init(m, coef=-1)
