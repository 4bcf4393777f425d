"""The informativeness diagnostic: table shape, planted states help, bad input."""

import pytest
from hista.cli import main
from hista.informativeness import informativeness_sweep


def test_sweep_writes_one_row_per_variant_and_planted_states_help(tmp_path):
    rep = informativeness_sweep(tmp_path, sft_steps=(0, 5), problems=6, scales=(10.0,))
    rows = rep.tables[0].rows
    assert [r["estimator"] for r in rows[:2]] == ["group mean (GRPO)", "Numca"]
    assert len(rows) == 2 + 2 * 4  # per SFT length: Hista, k schedule, include_self, planted
    for r in rows:
        assert 0.0 <= r["MAE vs exact"] <= 1.0
    by = {(r["SFT steps"], r["estimator"]): r["MAE vs exact"] for r in rows}
    # the planted coordinate separates wrong prefixes (exact value 0): lower error
    assert by[(5, "Hista, planted 10")] < by[(5, "Hista")]
    rep.write()
    assert (tmp_path / "results.md").read_text().count("| 5 |") == 4


def test_bad_input_is_one_line(capsys):
    with pytest.raises(ValueError, match="increasing"):
        informativeness_sweep("x", sft_steps=(10, 5))
    assert main(["informativeness", "--sft_steps", "[10, 5]"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "increasing" in err[0]
