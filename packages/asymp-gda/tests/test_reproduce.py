"""reproduce: presets, one small section run, and the quick run end to end (slow)."""

import json

import pytest
from asymp_gda.paper import PAPER
from asymp_gda.reproduce import EXPERIMENT
from icml26_shared.reproduce import run_reproduce


def test_quick_is_smaller_than_full():
    q, f = EXPERIMENT.validate("quick"), EXPERIMENT.validate("full")
    assert q["normal_form"].iterations < f["normal_form"].iterations
    assert max(q["random_games"].sizes) < max(f["random_games"].sizes)
    EXPERIMENT.validate("paper")


def test_small_sections_run(tmp_path):
    small = tmp_path / "small.yaml"
    small.write_text(
        "sections:\n"
        "  strength_sweep: {iterations: 200, strengths: {BRPS: [1.0, 4.0], M-Ne: [1.0], BMP: [1.0]}}\n"
        "  random_games: {sizes: [3], seeds: 2, max_gradients: 8000, eta_scales: [0.5]}\n"
    )
    report = EXPERIMENT.run(tmp_path / "out", "quick", [small],
                            sections=["strength_sweep", "random_games"], log=False)  # fmt: skip
    sweep = report.sections["strength_sweep"].tables[0]
    brps = [r["mu"] for r in sweep.rows if r["game"] == "BRPS"]
    assert brps == [1.0, 4.0]  # override lists replace the preset's; other games are kept
    assert (tmp_path / "out" / "random_games_gradients.png").is_file()


@pytest.mark.slow
def test_reproduce_quick_writes_report(tmp_path):
    run_reproduce(PAPER, tmp_path, preset="quick", log=False)
    data = json.loads((tmp_path / "results.json").read_text())
    section = next(s for s in data["sections"] if s["name"] == "normal_form")
    rows = section["tables"][0]["rows"]
    asymp = [r for r in rows if r["method"].startswith("AsymP")]
    symp = [r for r in rows if r["method"] == "SymP-GDA, mu=1"]
    assert all(r["NashConv @ T"] < 1e-10 for r in asymp)
    assert all(r["NashConv @ T"] > 0.05 for r in symp)
