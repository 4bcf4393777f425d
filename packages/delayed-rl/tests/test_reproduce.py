"""``reproduce``: a tiny configuration end to end (fast) and the real quick run (slow)."""

import json

import pytest
from delayed_rl import reproduce as rep
from delayed_rl.cli import main


def test_tiny_reproduce_writes_tables_figures_and_anchors(tmp_path, monkeypatch):
    monkeypatch.setattr(rep, "QUICK", {"chain": ([0, 1, 2], 12, 2)})
    report = rep.reproduce(tmp_path, quick=True)
    paths = report.write()
    assert {p.name for p in paths} >= {"results.json", "results.md"}
    assert {p.name for p in report.figures} == {"regret_chain.png"}
    regret, expo, anchors, reduction = report.tables
    assert len(regret.rows) == 3 * 6  # (env, D) cells x learners
    assert all(r["regret"] >= 0 for r in regret.rows)
    assert len(anchors.rows) == 3 and max(anchors.column("max_abs_diff")) < 1e-9
    assert reduction.column("max_abs_diff_per_episode") == [0.0]  # D = 0 is UCBVI
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data["tables"]) == 4


@pytest.mark.slow
def test_quick_reproduce_through_the_cli(tmp_path):
    assert main(["reproduce", "--quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "results.md").exists() and (tmp_path / "regret_garnet.png").exists()
