"""``revit reproduce --quick`` end to end (slow: about 3 minutes on 2 loaded cores)."""

import pytest
from icml26_shared.paper import Paper  # noqa: F401  (the umbrella discovers PAPER through it)
from icml26_shared.reproduce import run_reproduce
from revit_equivariant.paper import PAPER


@pytest.mark.slow
def test_quick_reproduce_shows_exact_equivariance(tmp_path):
    report = run_reproduce(PAPER, tmp_path, quick=True)
    rows = {r["model"]: r for r in report.tables[0].rows}
    assert abs(rows["ReViT"]["rot90/id"] - 1) < 1e-5
    assert rows["ReViT"]["equiv err"] < 1e-5
    assert rows["Swin (same backbone)"]["equiv err"] > 1e-3
    exact = {r["model"]: r for r in report.tables[1].rows}
    assert exact["ReViT3d"]["equiv err fp32"] < 1e-5 and exact["ReViT3d"]["elements"] == 24
    assert (tmp_path / "results.json").is_file() and (
        tmp_path / "kolmogorov_comparison.png"
    ).is_file()


def test_activation_memory_counts_saved_tensors_once():
    import torch
    from revit_equivariant.reproduce import activation_memory_mb

    lin = torch.nn.Linear(256, 256)
    x = torch.randn(1024, 256, requires_grad=False)
    # Linear saves its input (1 MiB in float32); tanh saves its output (1 MiB); weights excluded
    mb = activation_memory_mb(lin, lambda: torch.tanh(lin(x)).sum())
    assert mb == 2.0
    assert lin.weight.grad is not None
