"""The reproduce sections on a tiny setting (slow: a few minutes on a loaded CPU)."""

import pytest
from hista.reproduce import EXPERIMENT

TINY = """
sections:
  sveb: {sft_steps: 5, problems: 3, group_size: 4, n_mc: 4, cases_per_problem: 2,
         critic_problems: 2, critic_epochs: 1, variance_problems: 2, seeds: 2}
  rl: {sft_steps: 5, rl_steps: 1, rl_seeds: 2, rl_problems: 8}
  informativeness: {sft_steps: [0, 2], problems: 3, scales: [10.0]}
"""


def test_presets_validate():
    for preset in ("quick", "full", "paper"):
        assert set(EXPERIMENT.validate(preset)) == {"sveb", "rl", "informativeness"}


@pytest.mark.slow
def test_sections_write_tables_and_order_estimators(tmp_path):
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text(TINY)
    report = EXPERIMENT.run(tmp_path / "out", preset="quick", overrides=[tiny], log=False)
    assert (tmp_path / "out" / "sveb_mae.png").is_file()
    sveb = report.sections["sveb"].tables
    assert [t.title for t in sveb][:2] == [
        "SVEB-mini, policy rollouts (2 seeds)",
        "SVEB-mini, teacher rollouts (exact values) (2 seeds)",
    ]
    teacher = {r["estimator"]: r for r in sveb[1].rows}
    assert teacher["oracle (exact value)"]["MAE vs exact"] == 0.0
    assert teacher["group mean (GRPO)"]["within-problem std"] == 0.0
    assert len(teacher["group mean (GRPO)"]["per seed (V_MC)"].split(" / ")) == 2
    assert teacher["group mean (GRPO)"]["± 95% (V_MC)"] is not None
    assert {"Numca (default: validated)", "Hista (default: validated)"} <= set(teacher)
    delta = teacher["group mean (GRPO)"]["Δ vs group (exact)"]
    assert delta == 0.0  # the group mean against itself, paired per seed
    assert teacher["group mean (GRPO)"]["Δ/problem (exact)"] == 0.0  # and per problem
    oracle = teacher["oracle (exact value)"]
    assert oracle["Δ/problem (exact)"] <= 0.0 and oracle["± 95% (Δ/problem exact)"] is not None
    info = {r["case set"]: r for r in sveb[2].rows}
    assert info["teacher rollouts (exact values)"]["within-problem sd of the exact values"] >= 0
    assert sveb[3].rows[-1]["value estimate"].startswith("oracle")
    rl = report.sections["rl"].tables[0].rows
    assert [r["advantage"] for r in rl if r["trainer"] == "hista"] == [
        "group", "numca (before)", "numca (loo)", "numca (after)", "hista", "critic",
    ]  # fmt: skip
    assert all(r["acc ± 95%"] is not None for r in rl)
    assert report.sections["informativeness"].tables[0].rows[0]["estimator"] == "group mean (GRPO)"
