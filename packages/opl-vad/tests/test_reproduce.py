"""A miniature ``reproduce``: every section (planted + weight sweep, image variant, ablation)."""

import json

import numpy as np
import pytest
from opl_vad import comparison
from opl_vad.privacy_audit import privacy_utility
from opl_vad.reproduce import EXPERIMENT

TINY = """
sections:
  planted: {heads: [mil, mgfn], dim: 24, n_train: 8, n_test: 6, epochs: 1, seeds: 1,
            batch_pairs: 2, weights: [1.0], contrast_weights: [1.0]}
  image: {n_train: 6, n_test: 6, dim: 16, n_snippets: 4, encoder_epochs: 1, epochs: 1}
  ablation: {head: mil, dim: 24, n_train: 8, n_test: 6, epochs: 1, seeds: 2, batch_pairs: 2,
             readouts: [linear, per_direction], anchors: [video], ranks: [2],
             references: [G-OPL+C]}
"""


def test_privacy_utility_scores_are_relative_to_the_unprotected_model():
    r = privacy_utility(auc=0.9, probe=0.5, chance=0.5, auc_ref=0.92, probe_ref=0.8)
    assert r["leak_removed"] == pytest.approx(1.0) and r["delta_auc"] == pytest.approx(-0.02)
    assert privacy_utility(0.9, 0.8, 0.5, 0.9, 0.8)["leak_removed"] == 0.0
    assert np.isnan(privacy_utility(0.9, 0.5, 0.5, 0.9, 0.5)["leak_removed"])  # no leak to remove


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        assert set(EXPERIMENT.validate(preset)) == {"planted", "image", "ablation"}


def test_miniature_reproduce_writes_every_table_with_joint_scores(tmp_path, monkeypatch):
    pytest.importorskip("skimage")
    monkeypatch.setattr(comparison, "METHODS", ["none", "G-OPL+C", "LEACE"])
    small = tmp_path / "tiny.yaml"
    small.write_text(TINY)
    out = tmp_path / "out"
    EXPERIMENT.run(out, preset="quick", overrides=[small], log=False)
    md = (out / "results.md").read_text()
    assert "Image variant: LFW faces" in md and "G-OPL trade-off" in md
    assert "| leak removed |" in md and "| face MI |" in md and "| MGFN | G-OPL+C |" in md
    data = json.loads((out / "results.json").read_text())
    assert [len(s["tables"]) for s in data["sections"]] == [2, 2, 1]
    ablation = data["sections"][2]["tables"][0]
    variants = [(r["variant"], r["readout"], r["cosine"]) for r in ablation["rows"]]
    assert variants == [
        ("none", "", ""),
        ("G-OPL+C", "mlp", "ema"),
        ("G-OPL", "linear", "video"),
        ("G-OPL", "per_direction", "video"),
    ]
    assert all(r["meets target"].endswith("/2") for r in ablation["rows"][1:])
    assert "Verdict: the paper's two terms alone" in md
    assert "what carries the face signal" in md
    assert (out / "tradeoff.png").exists()
