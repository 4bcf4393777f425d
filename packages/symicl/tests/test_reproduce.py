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
"""


def _check(report, setting):
    acc_table, depth_table = report.sections["comparison"].tables
    rows = {r["method"]: r for r in acc_table.rows}
    for mode in MODES:
        for depth in setting.depths:
            row = rows[f"{mode} L={depth}"]
            assert row["recursion err"] < 1e-5  # the extracted rule reproduces the model
            assert 0.0 <= row["acc projected"] <= 1.0
            for col in SHIFT_COLUMNS.values():
                assert 0.0 <= row[col] <= 1.0
        # every task trained at other_depth got an accuracy
        row = rows[f"{mode} L={setting.other_depth}"]
        assert all(task_name(t) in row for t in setting.tasks)
    for depth in setting.depths:
        assert rows[f"tied L={depth}"]["defect"] < 1e-6
        assert rows[f"none L={depth}"]["defect"] > 0.1
        assert rows[f"augment L={depth}"]["defect"] > 0.1  # measured before the projection
    for name in ("prototype", "ridge", "logistic", "1-nn", f"GD k={setting.gd_steps[0]}"):
        assert len(rows[name]) == 1 + len(setting.tasks) + len(SHIFT_COLUMNS)
    assert [r["model"] for r in depth_table.rows][0] == f"none L={setting.depths[0]}"
    assert depth_table.rows[-1][f"sep l={max(setting.depths)}"] > 0


def test_miniature_reproduce_writes_json_markdown_and_png(tmp_path):
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(TINY)
    report = run_reproduce(PAPER, tmp_path / "out", preset="quick", overrides=[tiny], log=False)
    _check(report, EXPERIMENT.validate("quick", [tiny])["comparison"])
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick"
    assert (tmp_path / "out" / "separation_vs_depth.png").stat().st_size > 1000
    assert "tied L=2" in (tmp_path / "out" / "results.md").read_text()


def test_presets_grow_from_quick_to_paper():
    q, f, p = (EXPERIMENT.validate(preset)["comparison"] for preset in ("quick", "full", "paper"))
    assert q.steps <= f.steps <= p.steps and len(q.tasks) <= len(f.tasks) <= len(p.tasks)


@pytest.mark.slow
def test_quick_reproduce_claims(tmp_path):
    report = run_reproduce(PAPER, tmp_path, preset="quick", seed=0, log=False)
    setting = EXPERIMENT.validate("quick")["comparison"]
    _check(report, setting)
    rows = {r["method"]: r for r in report.sections["comparison"].tables[0].rows}
    col = task_name(setting.tasks[0])
    assert rows["tied L=2"][col] > 0.75  # chance is 0.5; prototype is about 0.83
    assert abs(rows["tied L=2"][col] - rows["tied L=2"]["acc projected"]) < 1e-9
