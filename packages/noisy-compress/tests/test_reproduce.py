"""``noisy-compress reproduce``: the presets validate, and a miniature run of every section."""

import json
from pathlib import Path

from icml26_shared.reproduce import run_reproduce
from noisy_compress.comparison import MLE, OURS
from noisy_compress.paper import PAPER
from noisy_compress.reproduce import EXPERIMENT

TINY = Path(__file__).parent / "data" / "reproduce-tiny.yaml"


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        settings = EXPERIMENT.validate(preset)
        assert set(settings) == {"comparison", "sample_complexity", "bounds", "real_data"}


def test_miniature_reproduce_writes_every_section(tmp_path):
    report = run_reproduce(PAPER, tmp_path, preset="quick", overrides=[TINY], log=False)
    (comparison,) = report.sections["comparison"].tables
    methods = [r["method"] for r in comparison.rows]
    assert OURS in methods and MLE in methods
    assert all(0 <= r["TV n=600"] <= 1 for r in comparison.rows)
    (curves,) = report.sections["sample_complexity"].tables
    assert [r["sigma"] for r in curves.rows] == [0.1]
    (bounds,) = report.sections["bounds"].tables
    assert len(bounds.rows) == 7
    (real,) = report.sections["real_data"].tables
    assert {r["method"] for r in real.rows} >= {OURS, MLE}
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick" and len(data["sections"]) == 4
    for png in ("sample_complexity.png", "uniform_mixture_fits.png"):
        assert (tmp_path / png).stat().st_size > 1000
