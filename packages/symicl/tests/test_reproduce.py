"""``symicl reproduce``: a miniature run of every code path (default) and the quick run (slow)."""

import json

import pytest
import symicl.reproduce as rep
from icml26_shared.reproduce import run_reproduce
from symicl.paper import PAPER

TINY = rep.Setting(
    tasks=((4, 2, 8), (4, 3, 8)), depths=(1, 2), other_depth=1, steps=3, episodes=24,
    gd_steps=(2,), batch_size=8,
)  # fmt: skip


def _check(report, setting):
    acc_table, depth_table = report.tables
    rows = {r["method"]: r for r in acc_table.rows}
    for mode in rep.MODES:
        for depth in setting.depths:
            row = rows[f"{mode} L={depth}"]
            assert row["recursion err"] < 1e-5  # the extracted rule reproduces the model
            assert 0.0 <= row["acc projected"] <= 1.0
            for col in rep.SHIFT_COLUMNS.values():
                assert 0.0 <= row[col] <= 1.0
        # every task trained at other_depth got an accuracy
        row = rows[f"{mode} L={setting.other_depth}"]
        assert all(rep._task_name(t) in row for t in setting.tasks)
    for depth in setting.depths:
        assert rows[f"tied L={depth}"]["defect"] < 1e-6
        assert rows[f"none L={depth}"]["defect"] > 0.1
        assert rows[f"augment L={depth}"]["defect"] > 0.1  # measured before the projection
    for name in ("prototype", "ridge", "logistic", "1-nn", f"GD k={setting.gd_steps[0]}"):
        assert len(rows[name]) == 1 + len(setting.tasks) + len(rep.SHIFT_COLUMNS)
    assert [r["model"] for r in depth_table.rows][0] == f"none L={setting.depths[0]}"
    assert depth_table.rows[-1][f"sep l={max(setting.depths)}"] > 0


def test_miniature_reproduce_writes_json_markdown_and_png(tmp_path, monkeypatch):
    monkeypatch.setattr(rep, "QUICK", TINY)
    report = run_reproduce(PAPER, tmp_path, quick=True, seed=0)
    _check(report, TINY)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["metadata"]["quick"] is True and len(data["tables"]) == 2
    assert (tmp_path / "separation_vs_depth.png").stat().st_size > 1000
    assert "tied L=2" in (tmp_path / "results.md").read_text()


@pytest.mark.slow
def test_quick_reproduce_claims(tmp_path):
    report = run_reproduce(PAPER, tmp_path, quick=True, seed=0)
    _check(report, rep.QUICK)
    rows = {r["method"]: r for r in report.tables[0].rows}
    col = rep._task_name(rep.QUICK.tasks[0])
    assert rows["tied L=2"][col] > 0.75  # chance is 0.5; prototype is about 0.83
    assert abs(rows["tied L=2"][col] - rows["tied L=2"]["acc projected"]) < 1e-9
