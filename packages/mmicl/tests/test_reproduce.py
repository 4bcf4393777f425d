"""reproduce: the sections, presets and files, on a tiny override (the real quick run is slow)."""

import json

import pytest
from icml26_shared.reproduce import run_reproduce
from mmicl import position_sweep as ps
from mmicl.paper import PAPER
from mmicl.reproduce import EXPERIMENT

TINY_YAML = """
positions: [ape, rope]
Ks: [64]
seeds: 1
steps: 4
eval_every: 2
eval_sequences: 16
batch_size: 8
controls: true
linear_seeds: 1
workers: 1
sections:
  stage2: {K2s: [4], stage2_steps: 2, digits: false, feature_K2s: [4], feature_dim: 8}
  knockout: {knockout_steps: 2, knockout_heads: 2, knockout_ks: [1]}
"""

TINY = ps.SweepSetting(
    positions=["ape", "rope"], Ks=[64], seeds=1, steps=4, eval_every=2, eval_sequences=16,
    batch_size=8,
)  # fmt: skip


@pytest.fixture
def tiny_yaml(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_YAML)
    return path


def test_tiny_reproduce_writes_report(tmp_path, tiny_yaml):
    out = tmp_path / "out"
    report = run_reproduce(PAPER, out, preset="quick", overrides=[tiny_yaml], log=False)
    assert list(report.sections) == ["stage1", "onset", "stage2", "circuits", "knockout"]
    t1, kstar = report.sections["stage1"].tables
    assert t1.title.startswith("Stage 1")
    assert {"IW0 (query-free)", "regime"} <= set(t1.columns)
    assert kstar.column("model") == ["ape", "rope"] and "interval (K_lo, K_hi]" in kstar.columns
    models = t1.column("model")
    assert {"ape", "rope"} <= set(models) and any(m.startswith("anchor") for m in models)
    # the ideal-induction anchor solves the IC split
    anchor = next(r for r in t1.rows if "nearest" in r["model"])
    assert anchor["IC"] > 0.9
    # onset table: the paper-layout encodings and the three controls, widths of the layouts
    onset = {r["model"]: r for r in report.sections["onset"].tables[0].rows}
    assert set(onset) == {"ape", "rope", "rope (width 98)", "ape (linear embedding)",
                          "rope (linear embedding)"}  # fmt: skip
    assert onset["ape"]["width"] == 32 + 65 and onset["rope"]["width"] == 32
    assert onset["ape (linear embedding)"]["width"] == 64
    assert all(r["reached"].endswith("/1") for r in onset.values())
    # a stage-2 row per GMM variant and per feature-bank variant (real images)
    s2 = report.sections["stage2"].tables[0]
    assert len(s2.rows) == 5 and s2.column("M2").count("digits (PCA-8 features)") == 2
    # the TransformerLens measures agree with ours on every final checkpoint
    lens = report.sections["circuits"].tables[1]
    assert lens.rows and max(lens.column("max abs diff")) < 1e-4
    # knockout table starts with no knockout
    ko = report.sections["knockout"].tables[0]
    assert ko.column("knockout")[0] == "none" and "random heads (across layers)" in ko.column(
        "knockout"
    )
    data = json.loads((out / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick"
    assert (out / "results.md").is_file() and (out / "training_curves.png").is_file()


def test_one_section_alone(tmp_path, tiny_yaml):
    report = EXPERIMENT.run(tmp_path, "quick", [tiny_yaml], sections=["circuits"], log=False)
    assert list(report.sections) == ["circuits"]
    assert report.sections["circuits"].tables[0].column("measure")[0] == "ih"


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        settings = EXPERIMENT.validate(preset)
        assert settings["stage2"].K2s and settings["knockout"].knockout_steps >= 1


def test_stage1_runs_are_self_seeded(tmp_path):
    """Each stage-1 run seeds its data, initialisation and position offsets, so worker
    processes give the same numbers as one process."""
    v = ps.DecoderVariant("ape", "ape")
    a = ps.train_stage1(TINY, v, 64, 3, tmp_path / "a.ckpt")
    b = ps.train_stage1(TINY, v, 64, 3, tmp_path / "b.ckpt")
    assert a == b and len(a["curve"]) == 3 and (tmp_path / "a.ckpt").is_file()


def test_variants_per_class_count():
    """Paper-layout encodings at every K; controls only at the largest K; the linear
    controls only when they get seeds."""
    s = ps.SweepSetting(**{**TINY.__dict__, "Ks": (32, 64)})
    assert [v.name for v in ps.variants(s, 32)] == ["ape", "rope"]
    assert len(ps.variants(s, 64)) == 5
    lean = ps.SweepSetting(**{**s.__dict__, "linear_seeds": 0})
    assert [v.name for v in ps.variants(lean, 64)] == ["ape", "rope", "rope (width 98)"]
    linear = ps.DecoderVariant("x", "ape", "linear")
    three = ps.SweepSetting(**{**s.__dict__, "seeds": 3})
    assert ps.seed_count(three, 32) == 3 and ps.seed_count(three, 64, linear) == 1


def test_transition_k_and_interval_from_planted_curves():
    Ks = (64, 256, 1024, 4096, 8192)
    # planted: seed 0 switches at 1024, seed 1 at 4096, seed 2 never
    ics = [[0.1, 0.2, 0.7, 0.9, 0.95], [0.1, 0.1, 0.3, 0.6, 0.9], [0.1, 0.1, 0.1, 0.2, 0.3]]
    per_seed = [ps.transition_k(Ks, ic) for ic in ics]
    assert per_seed == [1024, 4096, None]
    assert ps.threshold_interval(Ks, per_seed) == ("256", "inf")
    assert ps.threshold_interval(Ks, per_seed[:2]) == ("256", "4096")
    assert ps.threshold_interval(Ks, [64, 64]) == ("<64", "64")


def test_onset_text_marks_runs_that_never_reach_the_threshold():
    assert ps._onset_text([200, None, 350], 1000) == "200, >1000, 350"


def test_bad_sweep_setting_is_rejected():
    with pytest.raises(ValueError, match="ascending"):
        ps.SweepSetting(**{**TINY.__dict__, "Ks": (64, 32)})


@pytest.mark.slow
def test_quick_reproduce(tmp_path):
    report = run_reproduce(PAPER, tmp_path, preset="quick", log=False)
    assert len(report.sections) == 5
