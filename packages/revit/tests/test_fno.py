"""FNO baselines: neuraloperator's FNO (bench extra) and the re-implementation fallback."""

import pytest
import torch
from icml26_shared.contract import check_contract
from revit_equivariant import backbones, benchmark, fno
from revit_equivariant.benchmark import FitConfig, row_label
from revit_equivariant.fno import FNO2d, NeuralOperatorFNO2d
from revit_equivariant.lightning import EmulatorModule, PDEDataModule

SMALL = {"width": 4, "modes": 4}


def _data():
    return PDEDataModule(
        "kolmogorov", n_train=2, n_val=1, n_test=1, n_frames=3, grid=16, batch_size=2
    )


def test_neuraloperator_fno_backbone_contract_and_row(tmp_path):
    pytest.importorskip("neuralop")
    module = EmulatorModule("fno", **SMALL)
    assert isinstance(module.net, NeuralOperatorFNO2d)
    result = check_contract(
        lambda: EmulatorModule("fno", **SMALL), _data, tmp_path, forward_fn=lambda m, b: m(b["x"])
    )
    assert result.output.shape == (2, 2, 16, 16)
    assert row_label(FitConfig("fno", {"backbone": "fno"}, {}, 1)).startswith(
        "FNO (neuraloperator "
    )
    with pytest.raises(ValueError, match="modes do not fit"):
        NeuralOperatorFNO2d(4, (0, 1), width=4, modes=12)(torch.randn(1, 4, 16, 16))


def test_without_neuraloperator_fno_falls_back_loudly(monkeypatch):
    monkeypatch.setattr(fno, "neuraloperator_version", lambda: None)
    monkeypatch.setattr(backbones, "neuraloperator_version", lambda: None)
    monkeypatch.setattr(benchmark, "neuraloperator_version", lambda: None)
    with pytest.warns(UserWarning, match="neuraloperator is not installed"):
        module = EmulatorModule("fno", **SMALL)
    assert isinstance(module.net, FNO2d)
    assert module(torch.randn(1, 4, 16, 16)).shape == (1, 2, 16, 16)
    with pytest.raises(ImportError, match=r"revit-equivariant\[bench\]"):
        NeuralOperatorFNO2d(4, (0, 1))
    assert "not installed" in row_label(FitConfig("fno", {"backbone": "fno"}, {}, 1))


def test_fno_own_never_uses_neuraloperator():
    assert isinstance(EmulatorModule("fno-own", **SMALL).net, FNO2d)
