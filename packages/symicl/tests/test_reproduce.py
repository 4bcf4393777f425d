"""``symicl reproduce``: a miniature run of every code path (default) and the quick run (slow)."""

import json

import pytest
from icml26_shared.reproduce import run_reproduce
from symicl.paper import PAPER
from symicl.reproduce import EXPERIMENT
from symicl.symmetry_comparison import MODES, SHIFT_COLUMNS, task_name

TINY = """
sections:
  comparison:
    tasks: [[4, 2, 8], [4, 3, 8]]
    depths: [1, 2]
    other_depth: 1
    steps: 3
    episodes: 24
    gd_steps: [2]
    batch_size: 8
    seeds: 2
    real_tables: [wine]
  mechanism:
    tasks: [[4, 2, 8], [4, 3, 8]]
    depth: 2
    n_heads: 1
    steps: 3
    episodes: 16
    gd_steps: [1, 2]
    fit_steps: 3
    batch_size: 8
    seeds: 2
"""


def _mean(cell) -> float:
    """The mean of a ``"mean ± sd"`` cell."""
    return float(str(cell).split(" ± ")[0])


def _check(report, setting):
    acc_table, depth_table = report.sections["comparison"].tables
    rows = {r["method"]: r for r in acc_table.rows}
    for mode in MODES:
        for depth in setting.depths:
            row = rows[f"{mode} L={depth}"]
            assert row["recursion err"] < 1e-5  # the extracted rule reproduces the model
            assert 0.0 <= _mean(row["acc projected"]) <= 1.0
            assert " ± " in row["acc projected"]  # spread over seeds
            for col in [*SHIFT_COLUMNS.values(), *(f"{t} (real)" for t in setting.real_tables)]:
                assert 0.0 <= _mean(row[col]) <= 1.0
        # every task trained at other_depth got an accuracy
        row = rows[f"{mode} L={setting.other_depth}"]
        assert all(task_name(t) in row for t in setting.tasks)
    for depth in setting.depths:
        assert _mean(rows[f"tied L={depth}"]["defect"]) < 1e-6
        assert _mean(rows[f"none L={depth}"]["defect"]) > 0.1
        assert _mean(rows[f"augment L={depth}"]["defect"]) > 0.1  # before the projection
    # one layer: the value's feature rows never reach the logits (d/(d+C) of W_OV is inert),
    # nor do the score's rows of the probe's all-zero label block (C/(d+C) of W_QK)
    d, c = setting.tasks[0][:2]
    assert rows["none L=1"]["inert QK/OV"] == f"{c / (d + c):.0%} / {d / (d + c):.0%}"
    n_cols = 1 + len(setting.tasks) + len(SHIFT_COLUMNS) + len(setting.real_tables)
    for name in ("prototype", "ridge", "logistic", "1-nn", f"GD k={setting.gd_steps[0]}"):
        assert len(rows[name]) == n_cols
    assert [r["model"] for r in depth_table.rows][0] == f"none L={setting.depths[0]}"
    assert _mean(depth_table.rows[-1][f"sep l={max(setting.depths)}"]) > 0


def _check_mechanism(report, setting):
    rules, decomp, inert = report.sections["mechanism"].tables
    for task in setting.tasks:
        name = f"d={task[0]} C={task[1]} N={task[2]}"
        labels = [r["rule"] for r in rules.rows if r["task"] == name]
        assert labels == ["the model itself", "GD k=1", "GD k=2", "mean shift L=2"]
        layers = [r for r in inert.rows if r["task"] == name]
        # the last layer's feature update never reaches the probe's logits
        assert layers[-1]["inert in value (W_OV)"].startswith("a', b', c'")
        assert all(r["recursion err (pruned)"] < 1e-10 for r in layers)
        assert len([r for r in decomp.rows if r["task"] == name]) == 2 * setting.depth


def test_miniature_reproduce_writes_json_markdown_and_png(tmp_path):
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(TINY)
    report = run_reproduce(PAPER, tmp_path / "out", preset="quick", overrides=[tiny], log=False)
    settings = EXPERIMENT.validate("quick", [tiny])
    _check(report, settings["comparison"])
    _check_mechanism(report, settings["mechanism"])
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick"
    assert (tmp_path / "out" / "separation_vs_depth.png").stat().st_size > 1000
    assert "tied L=2" in (tmp_path / "out" / "results.md").read_text()


def test_presets_grow_from_quick_to_paper():
    q, f, p = (EXPERIMENT.validate(preset)["comparison"] for preset in ("quick", "full", "paper"))
    assert q.steps <= f.steps <= p.steps and len(q.tasks) <= len(f.tasks) <= len(p.tasks)
    assert q.seeds >= 3 and q.real_tables  # claims rest on >= 3 seeds, with a real-data column
    m = [EXPERIMENT.validate(preset)["mechanism"] for preset in ("quick", "full", "paper")]
    assert all(s.seeds >= 3 for s in m)
    assert [8, 2, 32] in m[0].tasks and [8, 4, 64] in m[0].tasks  # the two tasks


@pytest.mark.slow
def test_quick_reproduce_claims(tmp_path):
    report = run_reproduce(PAPER, tmp_path, preset="quick", seed=0, log=False)
    setting = EXPERIMENT.validate("quick")["comparison"]
    _check(report, setting)
    _check_mechanism(report, EXPERIMENT.validate("quick")["mechanism"])
    rows = {r["method"]: r for r in report.sections["comparison"].tables[0].rows}
    col = task_name(setting.tasks[0])
    assert _mean(rows["tied L=2"][col]) > 0.75  # chance is 0.5; prototype is about 0.83
    assert rows["tied L=2"][col] == rows["tied L=2"]["acc projected"]
