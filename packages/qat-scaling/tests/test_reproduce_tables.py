"""The reproduce sections' tables on planted run records (no training), and the experiment on a
seconds-sized grid."""

import pytest
from qat_scaling.grid_tables import decomposition_table, delta_table, summary_lines
from qat_scaling.scaling_law import qat_error

PLANTED = {"W4A4": 0.004, "W4A16": 0.003, "W16A4": 0.002, "W16A4-FC2A8": 0.001}


def _records():
    out = []
    for size, n in (("s32", 20640), ("s64", 82240)):
        for d in (1000, 2000):
            out.append({"run": f"{size}-FP", "size": size, "N": n, "D": d, "scheme": "FP",
                        "G": 0, "seed": 0, "val_loss": 4.0})  # fmt: skip
            for scheme, delta in PLANTED.items():
                out.append({"run": f"{size}-{scheme}", "size": size, "N": n, "D": d,
                            "scheme": scheme, "G": 32, "seed": 0, "val_loss": 4.0 + delta})  # fmt: skip
    return out


def test_decomposition_table_pairs_parts_and_ratios():
    errors = qat_error(_records())
    table = decomposition_table(errors, 32)
    assert len(table.rows) == 4
    assert "d_A FC2-Hadamard" not in table.columns  # not run: no empty column
    for row in table.rows:
        assert row["d W4A4"] == pytest.approx(0.004)
        assert row["d_W + d_A"] == pytest.approx(0.005)
        assert row["d_W / d_A"] == pytest.approx(1.5)
        assert row["d_W / d_A FC2-A8"] == pytest.approx(3.0)
    assert decomposition_table(errors, 8) is None  # nothing ran at G = 8


def test_delta_table_and_summary_report_the_fc2_cut():
    records = _records()
    errors = qat_error(records)
    table = delta_table(records, errors, 0)
    assert [r["L_FP"] for r in table.rows] == [4.0] * 4
    assert table.rows[0]["W16A4-FC2A8 G=32"] == pytest.approx(0.001)
    lines = summary_lines(records, errors, {}, 0)
    assert "mean delta W16A4-FC2A8 G=32 0.0010 vs W16A4 0.0020 (-50%)" in lines


SMOKE = """
sizes: [s32]
budgets: [6, 12]
runs: [[FP, 0], [W4A4, 8], [W4A4, 32], [W16A4, 32]]
batch_size: 4
seq_len: 32
warmup_steps: 2
val_batches: 2
corpus: markov
corpus_kwargs: {vocab: 32, train_tokens: 20000, val_tokens: 4000}
sections:
  law: {bootstrap: 20}
"""


def test_experiment_runs_every_section_on_a_smoke_grid(tmp_path):
    from icml26_shared.experiment import Experiment
    from icml26_shared.results import Report
    from qat_scaling.reproduce import EXPERIMENT

    # a preset of its own (an override would deep-merge corpus_kwargs with the stdlib ones)
    (tmp_path / "quick.yaml").write_text(SMOKE)
    smoke = Experiment("qat-scaling", EXPERIMENT.sections, config_dir=tmp_path)
    smoke.run(tmp_path / "out", preset="quick", log=False)
    report = Report.read(tmp_path / "out")
    assert list(report.sections) == [s.name for s in EXPERIMENT.sections]
    delta = report.sections["delta"].tables[0]
    assert [r["D"] for r in delta.rows] == [6 * 4 * 32, 12 * 4 * 32]
    assert "W4A4 G=8" in delta.columns
    outliers = report.sections["outliers"].tables[0]
    assert {r["stat"] for r in outliers.rows} == {"kurtosis", "max/RMS", "A4 rel. MSE"}
    assert (tmp_path / "out" / "results.md").is_file()


def test_presets_load_the_grids_of_the_sweep_command():
    from qat_scaling.grid import PRESETS, grid_spec
    from qat_scaling.reproduce import EXPERIMENT

    assert grid_spec(EXPERIMENT.validate("quick")["delta"], 0) == PRESETS["small"]
    assert grid_spec(EXPERIMENT.validate("full")["delta"], 0) == PRESETS["medium"]
    assert EXPERIMENT.validate("paper")["delta"].sizes[-1] == "p595m"
