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
    assert len(rep.sections["filters"].tables) == 2


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
    assert all(0.0 <= v <= 1.0 for v in methods.column("overall"))
