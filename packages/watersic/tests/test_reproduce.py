"""``watersic reproduce``: the presets validate and the sections run at a tiny size."""

import json

import pytest
from watersic.reproduce import EXPERIMENT

SMALL = """
sections:
  synthetic: {rows: 256, columns: 16, spectra: [identity, diag_1e4], rates: [3]}
  tiny_lm: &tiny {hidden_size: 16, intermediate_size: 32, num_layers: 1, num_heads: 2,
            seq_len: 16, train_steps: 5, batch_size: 4, train_bytes: 50000, rates: [4], seeds: 2,
            baseline_seeds: 1,
            calibration_sequences: 16, evaluation_sequences: 8, finetune_steps: 3,
            finetune_rate: 4.0, finetune_bytes: 520000}
  ablation: {<<: *tiny, rates: [3]}
"""


@pytest.mark.parametrize("preset", ["quick", "full", "paper"])
def test_presets_validate(preset):
    settings = EXPERIMENT.validate(preset)
    assert set(settings) == {"synthetic", "minilm", "tiny_lm", "ablation"}
    if preset != "quick":  # the claim rests on 3 seeds and all four rates
        assert settings["tiny_lm"].seeds >= 3 and settings["tiny_lm"].rates == [1, 2, 3, 4]


def test_sections_run_and_write(tmp_path):
    small = tmp_path / "small.yaml"
    small.write_text(SMALL)
    out = tmp_path / "out"
    report = EXPERIMENT.run(out, preset="quick", overrides=[small],
                            sections=["synthetic", "tiny_lm", "ablation"], log=False)  # fmt: skip
    rows = report.sections["synthetic"].tables[0].rows
    assert {r["method"] for r in rows} >= {"watersic (pooled)", "huffman-gptq", "gptq (per row)"}
    summary, runs = report.sections["tiny_lm"].tables
    assert summary.rows[0]["method"] == "full precision" and summary.rows[0]["seeds"] == 2
    assert summary.rows[-1]["method"] == "watersic-ft (3 steps)"
    assert sorted({r["seed"] for r in runs.rows}) == [0, 1]
    ws = next(r for r in summary.rows if r["method"] == "watersic")
    assert "±" in ws["kl_bits"] and ws["wins"].endswith("/2")
    abl = report.sections["ablation"].tables[0].rows
    assert abl[0]["variant"] == "huffman-gptq" and abl[1]["variant"] == "defaults"
    assert len({r["variant"] for r in abl}) == len(abl) > 8
    assert (out / "synthetic_gap.png").is_file() and (out / "tiny_lm.png").is_file()
    data = json.loads((out / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick"
