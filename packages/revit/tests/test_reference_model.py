"""The authors' revit-pde as an optional reference backbone (skips cleanly when absent)."""

import pytest
import torch
from revit_equivariant.group import equivariance_error
from revit_equivariant.lightning import EmulatorModule
from revit_equivariant.pde_data import problem_spec


def test_reference_backbone_is_c4_equivariant_and_trains():
    pytest.importorskip("revit")
    from revit_equivariant.reference_model import reference_available

    assert reference_available()
    torch.manual_seed(0)
    m = EmulatorModule("reference", "kolmogorov", img_size=16, embed_dim=8, depths=(1, 1, 1))
    x = torch.randn(2, 4, 16, 16)
    ps = problem_spec("kolmogorov")
    m.eval()
    assert equivariance_error(m, x, ps.spec, "c4", m.out_spec) < 1e-5
    m.train()
    loss = (m(x) - x[:, :2]).pow(2).mean()
    loss.backward()
    assert torch.isfinite(loss)


def test_reference_backbone_rejects_scalar_state():
    pytest.importorskip("revit")
    with pytest.raises(ValueError, match="reference"):
        EmulatorModule("reference", "advection", img_size=16, embed_dim=8, depths=(1, 1, 1))
