"""``noisy-compress reproduce``: the presets validate, and a miniature run of every section."""

import json
from pathlib import Path

from icml26_shared.reproduce import run_reproduce
from noisy_compress.comparison import MLE, OURS, SEED_MLE
from noisy_compress.paper import PAPER
from noisy_compress.reproduce import EXPERIMENT

TINY = Path(__file__).parent / "data" / "reproduce-tiny.yaml"


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        settings = EXPERIMENT.validate(preset)
        assert set(settings) == {
            "comparison",
            "sample_complexity",
            "bounds",
            "guarantee",
            "real_data",
        }


def test_miniature_reproduce_writes_every_section(tmp_path):
    report = run_reproduce(PAPER, tmp_path, preset="quick", overrides=[TINY], log=False)
    (comparison,) = report.sections["comparison"].tables
    methods = [r["method"] for r in comparison.rows]
    assert OURS in methods and SEED_MLE in methods and MLE not in methods  # quick: cheap anchors
    assert all(0 <= r["TV n=600"] <= 1 and r["±95% n=600"] >= 0 for r in comparison.rows)
    (guarantee,) = report.sections["guarantee"].tables
    assert guarantee.rows[0]["x (max)"] >= guarantee.rows[0]["x (mean)"] > 0
    (curves,) = report.sections["sample_complexity"].tables
    assert [r["sigma"] for r in curves.rows] == [0.1]
    (bounds,) = report.sections["bounds"].tables
    assert len(bounds.rows) == 7
    (real,) = report.sections["real_data"].tables
    assert {r["method"] for r in real.rows} >= {OURS, MLE}
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick" and len(data["sections"]) == 5
    for png in ("sample_complexity.png", "uniform_mixture_unequal_fits.png"):
        assert (tmp_path / png).stat().st_size > 1000
