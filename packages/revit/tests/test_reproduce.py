"""``revit reproduce``: the sections on tiny sizes, the rows read from the fit configs, presets."""

from pathlib import Path

import pytest
import torch
import yaml
from icml26_shared.reproduce import run_reproduce
from revit_equivariant.benchmark import read_fit_config
from revit_equivariant.metrics import activation_memory_mb
from revit_equivariant.paper import PAPER
from revit_equivariant.reproduce import EXPERIMENT

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
TINY = {
    "sections": {
        "kolmogorov": {
            "rows": ["kolmogorov-revit.yaml", "kolmogorov-swin.yaml", "kolmogorov-swin-c4aug.yaml"],
            "data": {"n_train": 2, "n_val": 1, "n_test": 1, "n_frames": 3, "grid": 16,
                     "sim_grid": 16, "batch_size": 2},
            "model": {"window": 2, "embed_dim": 8, "depths": [1, 1, 1]},
            "epochs": 1,
            "rollout": 2,
        },
        "exactness": {"grid2": 16, "grid3": 8},
        "flow3d": {"data": {"n_train": 2, "n_test": 1, "n_frames": 3}, "epochs": 1},
    }
}  # fmt: skip


def test_sections_on_tiny_sizes_show_exact_equivariance(tmp_path):
    small = tmp_path / "tiny.yaml"
    small.write_text(yaml.safe_dump(TINY))
    report = EXPERIMENT.run(tmp_path / "out", preset="quick", overrides=[small], log=False)
    rows = {r["model"]: r for r in report.sections["kolmogorov"].tables[0].rows}
    assert abs(rows["ReViT"]["rot90/id"] - 1) < 1e-5 and rows["ReViT"]["equiv err"] < 1e-5
    assert rows["Swin (same backbone)"]["equiv err"] > 1e-3
    assert "persistence u(t+1)=u(t) (anchor)" in rows
    exact = {r["model"]: r for r in report.sections["exactness"].tables[0].rows}
    assert exact["ReViT3d"]["equiv err fp32"] < 1e-5 and exact["ReViT3d"]["elements"] == 24
    flow = {r["model"]: r for r in report.sections["flow3d"].tables[0].rows}
    assert flow["ReViT3d"]["equiv err (24)"] < 1e-5
    assert (tmp_path / "out" / "kolmogorov_comparison.png").is_file()


def test_full_preset_trains_the_fit_configs_as_written():
    full = yaml.safe_load((CONFIGS / "reproduce" / "full.yaml").read_text())["sections"]
    for section in ("kolmogorov", "flow3d"):
        assert set(full[section]) <= {"rows", "rollout"}, "full must not override the configs"
        for row in full[section]["rows"]:
            cfg = yaml.safe_load((CONFIGS / row).read_text())
            read = read_fit_config(CONFIGS / row)
            assert read.model == cfg["model"] and read.data == cfg["data"]
            assert read.epochs == cfg["trainer"]["max_epochs"]


def test_rows_of_a_table_must_share_their_data(tmp_path):
    from revit_equivariant.benchmark import same_data

    a = read_fit_config(CONFIGS / "kolmogorov-revit.yaml")
    b = read_fit_config(CONFIGS / "kolmogorov-swin-c4aug.yaml")
    assert same_data([a, b])["n_train"] == 24  # augment may differ
    c = read_fit_config(CONFIGS / "kolmogorov-swin.yaml", data={"n_train": 3})
    with pytest.raises(ValueError, match="share their data"):
        same_data([a, c])


def test_paper_preset_builds_its_models():
    from revit_equivariant.lightning import EmulatorModule

    setting = EXPERIMENT.validate("paper")
    k = setting["kolmogorov"]
    for row in k.rows[:2]:
        cfg = read_fit_config(CONFIGS / row, k.model, k.data, k.epochs)
        module = EmulatorModule(**cfg.model)
        assert module.hparams.embed_dim == 96 and cfg.data["grid"] == 256


def test_activation_memory_counts_saved_tensors_once():
    lin = torch.nn.Linear(256, 256)
    x = torch.randn(1024, 256, requires_grad=False)
    # Linear saves its input (1 MiB in float32); tanh saves its output (1 MiB); weights excluded
    mb = activation_memory_mb(lin, lambda: torch.tanh(lin(x)).sum())
    assert mb == 2.0
    assert lin.weight.grad is not None


@pytest.mark.slow
def test_quick_reproduce_shows_exact_equivariance(tmp_path):
    report = run_reproduce(PAPER, tmp_path, preset="quick", log=False)
    rows = {r["model"]: r for r in report.sections["kolmogorov"].tables[0].rows}
    assert abs(rows["ReViT"]["rot90/id"] - 1) < 1e-5
    assert rows["ReViT"]["equiv err"] < 1e-5
    assert (tmp_path / "results.json").is_file()
