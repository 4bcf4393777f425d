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
)


def test_tiny_reproduce_writes_report(tmp_path, monkeypatch):
    monkeypatch.setattr(rep, "QUICK", TINY)
    report = run_reproduce(PAPER, tmp_path, quick=True)
    titles = [t.title for t in report.tables]
    assert len(titles) == 4 and titles[0].startswith("Stage 1")
    models = report.tables[0].column("model")
    assert {"ape", "rope"} <= set(models) and any(m.startswith("anchor") for m in models)
    # the ideal-induction anchor solves the IC split; a stage-2 row per variant
    anchor = next(r for r in report.tables[0].rows if "nearest" in r["model"])
    assert anchor["IC"] > 0.9
    assert len(report.tables[1].rows) == 3
    assert report.tables[3].column("knockout")[0] == "none"
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["metadata"]["quick"] is True
    assert (tmp_path / "results.md").is_file() and (tmp_path / "training_curves.png").is_file()


@pytest.mark.slow
def test_quick_reproduce(tmp_path):
    report = run_reproduce(PAPER, tmp_path, quick=True)
    assert len(report.tables) == 4
