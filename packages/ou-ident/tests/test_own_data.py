"""The README's "On your own data" commands, run exactly as written on tests/data."""

import json
from pathlib import Path

import numpy as np
from icml26_shared.contract import assert_one_line_error
from ou_ident.cli import main
from ou_ident.synthetic import make_problem

DATA = Path(__file__).resolve().parent / "data"


def test_readme_own_data_commands(tmp_path, capsys):
    out = tmp_path / "fit"
    cells, held = str(DATA / "cells.csv"), str(DATA / "heldout.csv")
    assert main(["solve", "--data", cells, "--family", "degradation", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "modelling 5 of 5 genes (all)" in text
    assert {p.name for p in out.iterdir()} == {"fit.json", "result.json", "fit.png"}
    fit = json.loads((out / "fit.json").read_text())
    assert fit["genes"] == ["G0", "G1", "G2", "G3", "G4"] and fit["scale"] == "tr D = p"
    code = main(["predict", "--model", str(out / "fit.json"), "--intervention", "degradation:G4",
                 "--heldout", held, "--out", str(out)])  # fmt: skip
    assert code == 0
    pred = json.loads((out / "prediction.json").read_text())
    # planted truth: the prediction of the unseen knock-out beats "no change" clearly
    assert pred["w2"] < 0.5 * pred["w2_no_change"]
    # and the predicted mean is close to the planted population mean under that intervention
    prob = make_problem(5, "degradation", per_component=5, seed=3)
    env = next(e for e in prob.environments if e.targets == (4,))
    truth = env.apply(prob.params).stationary_mean()
    assert np.max(np.abs(np.array(pred["mean"]) - truth)) < 0.1


def test_predict_with_a_given_strength_and_bad_input(tmp_path, capsys):
    out = tmp_path / "fit"
    assert main(["solve", "--data", str(DATA / "cells.csv"), "--family", "degradation",
                 "--out", str(out)]) == 0  # fmt: skip
    model = str(out / "fit.json")
    assert main(["predict", "--model", model, "--intervention", "degradation:G4=0.5"]) == 0
    assert "strength 0.5 (given)" in capsys.readouterr().out
    for spec, match in [
        ("degradation:G9=1", "unknown target"),
        ("degradation:G4=-1", "must be > 0"),
        ("nonsense", "FAMILY:TARGET"),
        ("degradation:G4", "give a strength"),
    ]:
        assert_one_line_error(
            capsys.readouterr().err if main(["predict", "--model", model, "--intervention", spec])
            == 2 else "", match, 2)  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["predict", "--model", str(bad), "--intervention", "degradation:G4=1"]) == 2
    assert "not an ou-ident fit file" in capsys.readouterr().err
