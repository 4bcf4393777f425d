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
        "seeds2d": {
            "rows": ["kolmogorov-revit.yaml", "kolmogorov-swin.yaml"],
            "seeds": 2,
            "data": {"n_train": 2, "n_val": 1, "n_test": 1, "n_frames": 3, "grid": 16,
                     "sim_grid": 16, "batch_size": 2},
            "model": {"window": 2, "embed_dim": 8, "depths": [1, 1, 1]},
            "epochs": 2,
        },
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
    seeds = report.sections["seeds2d"]
    summary, per_seed, curves = seeds.tables
    by = {r["model"]: r for r in summary.rows}
    mean_ratio = float(by["ReViT"]["rot90/id"].split(" ± ")[0])
    assert abs(mean_ratio - 1) < 1e-5 and " ± " in by["ReViT"]["MSE id"]
    assert [r["epoch"] for r in curves.rows] == [1, 2]  # one validation MSE per epoch
    assert set(per_seed.columns) == {"model", "seed 0", "seed 1"}
    assert "of 2 seeds" in seeds.notes[-1]
    assert (tmp_path / "out" / "seeds2d_learning_curves.png").is_file()


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


def test_claim_verdict_counts_the_seeds_of_planted_records():
    from revit_equivariant.benchmark import claim_verdict

    def rec(model, seed, mid, rot):
        return {"model": model, "seed": seed, "MSE id": mid, "MSE rot90": rot}

    records = [
        rec("ReViT", 0, 1.0, 1.0), rec("Swin (same backbone)", 0, 2.0, 5.0), rec("U-Net", 0, 0.5, 3.0),
        rec("ReViT", 1, 3.0, 3.0), rec("Swin (same backbone)", 1, 2.0, 5.0), rec("U-Net", 1, 0.5, 2.0),
    ]  # fmt: skip
    text = claim_verdict(records, [0, 1])
    assert "same Swin's on 1 of 2 seeds (0)" in text
    assert "Lowest mean rotated-data MSE: ReViT (2)" in text  # means 2, 5, 2.5
    assert "all rows on 1 of 2 seeds" in text  # seed 1: U-Net's 2.0 < ReViT's 3.0


def test_learning_curve_keeps_the_best_epoch_weights():
    from revit_equivariant.benchmark import LearningCurve

    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(()))

        def forward(self, x):
            return self.w * x

    net = Scale()
    traj = torch.ones(1, 2, 1, 1, 1)  # target u_{t+1} = 1 from u_t = 1: w = 1 is exact
    curve = LearningCurve(traj, (0,))
    batch = {"x": torch.zeros(2, 1)}
    for w in (0.0, 1.0, 3.0):  # MSE 1, 0, 4: the best epoch is the second
        net.w.data.fill_(w)
        curve._batch({"loss": torch.tensor(w)}, batch)  # planted batch losses w, w + 1
        curve._batch({"loss": torch.tensor(w + 1)}, batch)
        curve._epoch(net)
    assert curve.curve == [1.0, 0.0, 4.0] and curve.best_epoch == 2
    assert curve.train_curve == [0.5, 1.5, 3.5]  # the mean batch loss of each epoch
    curve.restore_best(net)
    assert float(net.w) == 1.0
