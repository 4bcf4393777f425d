"""reproduce: the report's tables, figure and files, on a tiny setting (the real quick run is slow)."""

import dataclasses
import json

import pytest
from icml26_shared.reproduce import run_reproduce
from mmicl import reproduce as rep
from mmicl.paper import PAPER

TINY = dataclasses.replace(
    rep.QUICK,
    positions=("ape", "rope"),
    Ks=(64,),
    steps=4,
    eval_every=2,
    stage2_steps=2,
    knockout_steps=2,
    eval_sequences=16,
    batch_size=8,
    workers=1,
)


def test_tiny_reproduce_writes_report(tmp_path, monkeypatch):
    monkeypatch.setattr(rep, "QUICK", TINY)
    report = run_reproduce(PAPER, tmp_path, quick=True)
    titles = [t.title for t in report.tables]
    assert len(titles) == 5 and titles[0].startswith("Stage 1") and "onset" in titles[1]
    models = report.tables[0].column("model")
    assert {"ape", "rope"} <= set(models) and any(m.startswith("anchor") for m in models)
    # the ideal-induction anchor solves the IC split
    anchor = next(r for r in report.tables[0].rows if "nearest" in r["model"])
    assert anchor["IC"] > 0.9
    # onset table: the paper-layout encodings and the three controls, widths of the layouts
    onset = {r["model"]: r for r in report.tables[1].rows}
    assert set(onset) == {"ape", "rope", "rope (width 98)", "ape (linear embedding)",
                          "rope (linear embedding)"}  # fmt: skip
    assert onset["ape"]["width"] == 32 + 65 and onset["rope"]["width"] == 32
    assert onset["ape (linear embedding)"]["width"] == 64
    assert all(r["reached"].endswith("/1") for r in onset.values())
    # a stage-2 row per variant; knockout table starts with no knockout
    assert len(report.tables[2].rows) == 3
    assert report.tables[4].column("knockout")[0] == "none"
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["metadata"]["quick"] is True
    assert (tmp_path / "results.md").is_file() and (tmp_path / "training_curves.png").is_file()


def test_stage1_runs_are_self_seeded(tmp_path):
    """Each stage-1 run seeds its data, initialisation and position offsets, so worker
    processes give the same numbers as one process."""
    m = rep.Model("ape", "ape")
    a = rep._stage1_run(TINY, m, 64, 3, tmp_path / "a.ckpt")
    b = rep._stage1_run(TINY, m, 64, 3, tmp_path / "b.ckpt")
    assert a == b and len(a["curve"]) == 3 and (tmp_path / "a.ckpt").is_file()


def test_models_per_class_count():
    """Paper-layout encodings at every K; controls only at the largest K; the linear
    controls only when they get seeds."""
    s = dataclasses.replace(TINY, Ks=(32, 64))
    assert [m.name for m in rep._models(s, 32)] == ["ape", "rope"]
    assert len(rep._models(s, 64)) == 5
    lean = dataclasses.replace(s, linear_seeds=0)
    assert [m.name for m in rep._models(lean, 64)] == ["ape", "rope", "rope (width 98)"]
    assert rep._seeds(s, 32) == 1 and rep._seeds(s, 64, rep.Model("x", "ape", "linear")) == 1


def test_onset_text_marks_runs_that_never_reach_the_threshold():
    assert rep._onset_text([200, None, 350], 1000) == "200, >1000, 350"


@pytest.mark.slow
def test_quick_reproduce(tmp_path):
    report = run_reproduce(PAPER, tmp_path, quick=True)
    assert len(report.tables) == 5
