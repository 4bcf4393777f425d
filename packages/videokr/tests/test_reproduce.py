"""The reproduce run end to end at a tiny size (the real sizes are QUICK / FULL)."""

import pytest
from videokr.reproduce import run_synthkr


@pytest.mark.slow  # about 20 s alone on 2 cores: three tiny trainings and the filters
def test_reproduce_tiny(tmp_path):
    rep = run_synthkr(tmp_path, 0, n_videos=40, sft_steps=2, grpo_steps=1, group=2, grpo_batch=2)
    paths = rep.write()
    assert {p.name for p in paths} == {"results.json", "results.md"}
    assert (tmp_path / "synthkr_accuracy.png").is_file()
    methods = rep.tables[0].column("method")
    assert methods[-3:] == [
        "SFT, perception-only data (VidR)",
        "SFT, full skill mix",
        "SFT -> GRPO",
    ]
    dep = rep.tables[1]
    assert dep.column("eval split") == ["unfiltered", "filtered"]
    assert all(0.0 <= v <= 1.0 for v in rep.tables[0].column("overall"))
