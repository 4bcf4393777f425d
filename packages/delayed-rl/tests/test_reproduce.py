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
  bonus: {env: chain, D: 1, episodes: 6, seeds: 2, scales: [0.03, theory], delta: 0.1}
  scaling: {env: chain, delays: [0, 1, 2], episodes: 6, seeds: 3, bonus_scale: 0.03, delta: 0.1}
  deep:
    tasks: [{task: "FrozenLake-v1:is_slippery=False", steps: 64}]
    variants: [augmented, gymnasium-delay]
    D: 1
    seeds: 2
    eval_episodes: 2
"""


@pytest.mark.parametrize("preset", ["quick", "full", "paper"])
def test_presets_validate(preset):
    assert set(EXPERIMENT.validate(preset)) == {
        "regret", "anchors", "reduction", "bonus", "scaling", "deep"
    }  # fmt: skip


def test_full_preset_runs_d8_with_ten_seeds_and_sweeps_c_to_theory():
    setting = EXPERIMENT.validate("full")
    assert max(setting["scaling"].delays) == 8 and setting["scaling"].seeds >= 10
    assert setting["bonus"].scales[0] == 0.03 and setting["bonus"].scales[-1] == "theory"
    deep = setting["deep"]
    assert len(deep.tasks) == 2 and deep.seeds == 5


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
    (sweep,) = report.sections["bonus"].tables
    # 5 optimistic learners x 2 constants + random once; the theory value is marked
    assert len(sweep.rows) == 5 * 2 + 1
    assert {r["c"] for r in sweep.rows} == {"0.03", "0.707 (theory)", "1 (theory)", "-"}
    per_d, slope = report.sections["scaling"].tables
    assert per_d.column("D") == [0, 1, 2] and slope.rows[0]["seeds"] == 3
    assert (out / "delay_scaling_chain.png").is_file()
    deep = report.sections["deep"]
    if deep.tables:  # stable-baselines3 installed (the bench extra)
        assert [r["variant"] for r in deep.tables[0].rows] == ["augmented", "gymnasium-delay"]
    data = json.loads((out / "results.json").read_text())
    assert data["metadata"]["preset"] == "quick"


@pytest.mark.slow
def test_quick_reproduce_through_the_cli(tmp_path):
    from delayed_rl.cli import main

    assert main(["reproduce", "--preset", "quick", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "results.md").exists() and (tmp_path / "regret_garnet.png").exists()
