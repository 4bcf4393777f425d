"""The reproduce run end to end at a tiny size (the real sizes are configs/reproduce/*.yaml)."""

import pytest
from videokr.reproduce import EXPERIMENT


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        settings = EXPERIMENT.validate(preset)
        assert settings["methods"].sft_steps >= 1 and settings["filters"].n_videos >= 1


def test_world_sections_run(tmp_path):
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text("n_videos: 40\n")
    rep = EXPERIMENT.run(tmp_path / "out", "quick", [tiny],
                         sections=["video_dependency", "filters"], log=False)  # fmt: skip
    dep = rep.sections["video_dependency"].tables[0]
    assert dep.column("eval split") == ["unfiltered", "filtered"]
    assert "3 seeds" in dep.notes
    filt, removed = rep.sections["filters"].tables
    genuine = next(
        r for r in filt.rows if r["split"] == "train" and r["defect"] == "genuine (kept)"
    )
    assert genuine["planted"] > 0 and 0 < genuine["caught"] <= genuine["planted"]


@pytest.mark.slow  # about 20 s alone on 2 cores: three tiny trainings and the filters
def test_reproduce_tiny(tmp_path):
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(
        "n_videos: 40\nsections:\n  methods: {sft_steps: 2, grpo_steps: 1, group: 2, grpo_batch: 2}\n"
    )
    rep = EXPERIMENT.run(tmp_path / "out", "quick", [tiny], log=False)
    assert (tmp_path / "out" / "synthkr_accuracy.png").is_file()
    methods = rep.sections["methods"].tables[0]
    assert methods.column("method")[-3:] == [
        "SFT, perception-only data (VidR)",
        "SFT, full skill mix",
        "SFT -> GRPO",
    ]
    per_seed = rep.sections["methods"].tables[1]
    assert per_seed.columns == ["method", "seed 0", "seed 1", "seed 2"]
    assert all(0.0 <= r[c] <= 1.0 for r in per_seed.rows for c in per_seed.columns[1:])


@pytest.mark.slow  # two tiny runs of every section, 3 seeds each
def test_two_runs_give_identical_tables(tmp_path):
    import json

    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(
        "n_videos: 40\nsections:\n  methods: {sft_steps: 3, grpo_steps: 2, group: 2, grpo_batch: 2}\n"
        "  shortcuts: {n_videos: 60, learner_epochs: 2}\n"
    )
    tables = []
    for run in ("a", "b"):
        EXPERIMENT.run(tmp_path / run, "quick", [tiny], log=False)
        data = json.loads((tmp_path / run / "results.json").read_text())
        tables.append([s["tables"] for s in data["sections"]])
    assert tables[0] == tables[1]
