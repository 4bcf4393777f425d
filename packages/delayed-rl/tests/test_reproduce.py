"""``reproduce``: the presets validate, a tiny setting runs end to end (fast), the quick run (slow)."""

import json

import pytest
from delayed_rl.reproduce import EXPERIMENT
from icml26_shared.experiment import SettingError

TINY = """
sections:
  regret:
    runs: [{env: chain, delays: [0, 1, 2], episodes: 12, seeds: 2}]
  anchors:
    cells: [{env: chain, delays: [0, 1, 2]}]
  reduction:
    runs: [{env: chain, delays: [0], episodes: 12, seeds: 2}]
"""


@pytest.mark.parametrize("preset", ["quick", "full", "paper"])
def test_presets_validate(preset):
    assert set(EXPERIMENT.validate(preset)) == {"regret", "anchors", "reduction"}


def test_a_bad_run_is_a_setting_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "sections:\n  regret:\n    runs: [{env: chain, delays: [], episodes: 5, seeds: 1}]\n"
    )
    with pytest.raises(SettingError, match="delays"):
        EXPERIMENT.validate("quick", [bad])


def test_tiny_reproduce_writes_tables_figures_and_anchors(tmp_path):
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(TINY)
    out = tmp_path / "out"
    report = EXPERIMENT.run(out, preset="quick", overrides=[tiny], log=False)
    regret, expo = report.sections["regret"].tables
    assert len(regret.rows) == 3 * 6  # (env, D) cells x learners
    assert all(r["regret"] >= 0 for r in regret.rows)
    assert len(expo.rows) == 1
    (anchors,) = report.sections["anchors"].tables
    assert len(anchors.rows) == 3 and max(anchors.column("max_abs_diff")) < 1e-9
    (reduction,) = report.sections["reduction"].tables
    assert reduction.column("max_abs_diff_per_episode") == [0.0]  # D = 0 is UCBVI
    # the reduction section re-runs the D = 0 cell of the regret section: same numbers
    d0 = next(r for r in regret.rows if r["D"] == 0 and r["agent"] == "delay-ucbvi-h")
    assert reduction.rows[0]["regret_delay_ucbvi_h"] == pytest.approx(d0["regret"], abs=1e-9)
    assert (out / "regret_chain.png").is_file()
    data = json.loads((out / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick"


@pytest.mark.slow
def test_quick_reproduce_through_the_cli(tmp_path):
    from delayed_rl.cli import main

    assert main(["reproduce", "--preset", "quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "results.md").exists() and (tmp_path / "regret_garnet.png").exists()
