"""``watersic reproduce``: the presets validate and the sections run at a tiny size."""

import json

import pytest
from watersic.reproduce import EXPERIMENT

SMALL = """
sections:
  synthetic: {rows: 256, columns: 16, spectra: [identity, diag_1e4], rates: [3]}
  tiny_lm: {hidden_size: 16, intermediate_size: 32, num_layers: 1, num_heads: 2, seq_len: 16,
            train_steps: 5, batch_size: 4, train_bytes: 50000, rates: [4],
            calibration_sequences: 16, evaluation_sequences: 8, finetune_steps: 3,
            finetune_rate: 4.0, finetune_bytes: 520000}
"""


@pytest.mark.parametrize("preset", ["quick", "full", "paper"])
def test_presets_validate(preset):
    settings = EXPERIMENT.validate(preset)
    assert set(settings) == {"synthetic", "minilm", "tiny_lm"}


def test_sections_run_and_write(tmp_path):
    small = tmp_path / "small.yaml"
    small.write_text(SMALL)
    out = tmp_path / "out"
    report = EXPERIMENT.run(out, preset="quick", overrides=[small],
                            sections=["synthetic", "tiny_lm"], log=False)  # fmt: skip
    rows = report.sections["synthetic"].tables[0].rows
    assert {r["method"] for r in rows} >= {"watersic (pooled)", "huffman-gptq", "gptq (per row)"}
    lm = report.sections["tiny_lm"].tables[0].rows
    assert lm[0]["method"] == "full precision"
    assert lm[-1]["method"] == "watersic-ft (3 steps)"
    assert (out / "synthetic_gap.png").is_file() and (out / "tiny_lm.png").is_file()
    data = json.loads((out / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick"
