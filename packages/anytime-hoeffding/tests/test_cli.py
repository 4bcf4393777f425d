"""The anytime-hoeffding command line: help, commands, and one clear line for bad input."""

import json
from pathlib import Path

import pytest
from anytime_hoeffding.cli import main


@pytest.mark.parametrize(
    "args,msg",
    [
        (["null-check", "--stream", "sea"], "null stream"),
        (["evaluate", "--stream", "nope", "--n", "10"], "unknown stream"),
        (["inspect", "--alpha", "1.5", "--n", "100"], "alpha must lie in (0, 1)"),
        (["benchmark", "--repeats", "0"], "repeats must be >= 1"),
        # the bad-input list, through the command line
        (["null-check", "--alpha", "0", "--runs", "1", "--n", "10"], "alpha must lie in (0, 1)"),
        (["null-check", "--bet_cap", "1.0", "--runs", "1", "--n", "10"], "bet cap must lie in"),
        (["inspect", "--bet_cap", "-0.2", "--n", "100"], "bet cap must lie in (0, 1)"),
        (["inspect", "--n_bins", "1", "--n", "100"], "n_bins must be an integer >= 2"),
        (["inspect", "--loss", "hinge", "--n", "100"], "unknown loss 'hinge'"),
        (["inspect", "--betting", "kelly", "--n", "100"], "unknown betting strategy 'kelly'"),
        (["null-check", "--method", "svm", "--runs", "1"], "unknown method 'svm'"),
        (["evaluate", "--n", "0"], "n must be >= 1"),
    ],
)
def test_bad_input_one_line(capsys, args, msg):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and len(err.splitlines()) == 1


def test_null_check_runs(capsys):
    assert main(["null-check", "--runs", "3", "--n", "2000"]) == 0
    assert "0/3 runs split" in capsys.readouterr().out


def test_inspect_writes_json_and_png(tmp_path, capsys):
    assert main(["inspect", "--stream", "planted_tree", "--n", "6000", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    data = json.loads((tmp_path / "tree.json").read_text())
    first = data["split_log"][0]
    assert f"x[{first['feature']}] <=" in out
    assert data["tree"]["feature"] in (0, 1, 2)  # the planted tree's features
    assert (tmp_path / "tree.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


DATA = Path(__file__).parent / "data"


def test_own_data_workflow(tmp_path, capsys, monkeypatch):
    """The README's "On your own data" commands, as written, on tests/data/."""
    import shutil

    for name in ("machines.csv", "machines_new.csv"):
        shutil.copy(DATA / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    cmds = [
        "evaluate --csv machines.csv --target status --save model.pkl --out evaluation",
        "predict --model model.pkl --csv machines_new.csv --out predictions.csv",
        "inspect --model model.pkl --out inspection",
    ]
    for cmd in cmds:
        assert main(cmd.split()) == 0, cmd
    out = capsys.readouterr()
    assert "acc " in out.out and "accuracy against the file's 'status' column" in out.err
    result = json.loads((tmp_path / "evaluation" / "result.json").read_text())
    ours = [r for r in result["rows"] if r["method"] == "ours"][0]
    assert ours["instances"] == 2500 and 0.5 < ours["accuracy"] <= 1.0
    lines = (tmp_path / "predictions.csv").read_text().splitlines()
    assert lines[0] == "prediction,p(fault),p(ok)" and len(lines) == 201
    for line in lines[1:]:
        label, p_fault, p_ok = line.split(",")
        assert label in ("fault", "ok") and abs(float(p_fault) + float(p_ok) - 1) < 1e-5
        assert label == ("fault" if float(p_fault) > float(p_ok) else "ok")
    assert (tmp_path / "inspection" / "tree.png").stat().st_size > 1000
    assert "leaf -> " in out.out
    # the saved model predicts exactly what the fitted one does
    from anytime_hoeffding.tabular import load_model, read_features

    saved = load_model(tmp_path / "model.pkl")
    t = read_features(tmp_path / "machines_new.csv", saved.features, saved.target)
    proba = saved.model.predict_proba_many(t.X)
    assert [f"{v:.6g}" for v in proba[:, 0]] == [line.split(",")[1] for line in lines[1:]]


@pytest.mark.parametrize(
    "args,msg",
    [
        (["predict", "--model", "absent.pkl", "--csv", "x.csv"], "absent.pkl: no such model file"),
        (["inspect", "--model", "machines.csv"], "not a model saved by"),
        (["evaluate", "--csv", "machines.csv", "--target", "colour"], "no column named 'colour'"),
        (["predict", "--model", "machines.csv"], "give exactly one of --csv or --arff"),
    ],
)
def test_own_data_bad_input_one_line(tmp_path, capsys, monkeypatch, args, msg):
    import shutil

    shutil.copy(DATA / "machines.csv", tmp_path / "machines.csv")
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and msg in err, err


def test_lightning_commands_name_the_extra_when_missing(capsys, monkeypatch):
    from anytime_hoeffding import cli

    monkeypatch.setattr(cli, "_lightning_installed", lambda: False)
    for cmd in ("fit", "validate", "test", "predict"):
        assert main([cmd, "--config", "x.yaml"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.splitlines() == [
            f"anytime-hoeffding: error: '{cmd}' needs Lightning and torch: "
            "pip install 'anytime-hoeffding[lightning]'"
        ]


def test_evaluate_csv(tmp_path, capsys):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(1_500, 2))
    y = np.where(X[:, 1] > 0.5, "yes", "no")
    path = tmp_path / "data.csv"
    lines = ["a,b,label"] + [f"{a},{b},{c}" for (a, b), c in zip(X, y, strict=True)]
    path.write_text("\n".join(lines))
    assert main(["evaluate", "--csv", str(path), "--methods", "[ours]"]) == 0
    assert "acc" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("a,label\nx,1\n")
    assert main(["evaluate", "--csv", str(bad)]) == 2
    assert "non-numeric" in capsys.readouterr().err


def _csv(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "text,msg",
    [
        (
            "a,b,label\n1,2,x\n3,nan,y\n",
            "missing (empty, NaN) or infinite",
        ),  # missing values, no policy
        ("a,b,label\n1,2,x\n3,inf,y\n", "missing (empty, NaN) or infinite"),
        ("a,b,label\n1,2,x\n3,y\n", "line 3 has 2 fields but the header has 3"),
        ("a,b,label\n1,two,x\n", "non-numeric feature value"),
        ("a,b,label\n", "at least one data row"),
    ],
)
def test_bad_csv_one_line(tmp_path, capsys, text, msg):
    assert main(["evaluate", "--csv", _csv(tmp_path, "d.csv", text)]) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_missing_route_policy_through_cli(tmp_path, capsys):
    rows = ["a,b,label"] + [
        f"{i % 7 / 7},{'nan' if i % 5 == 0 else i % 3},{i % 2}" for i in range(400)
    ]
    path = _csv(tmp_path, "m.csv", "\n".join(rows))
    assert main(["evaluate", "--csv", path, "--missing", "route", "--methods", "[ours]"]) == 0
    assert "acc" in capsys.readouterr().out
    assert main(["evaluate", "--csv", path, "--missing", "route"]) == 2  # river's anchors
    assert "do not accept" in capsys.readouterr().err
    assert main(["evaluate", "--csv", path, "--missing", "drop", "--methods", "[ours]"]) == 2
    assert "missing must be 'error' or 'route'" in capsys.readouterr().err


def test_missing_csv_file_one_line(tmp_path, capsys):
    assert main(["evaluate", "--csv", str(tmp_path / "absent.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "absent.csv" in err


@pytest.mark.parametrize(
    "opt,msg",
    [
        ("--model.alpha=1.5", "alpha must lie in (0, 1)"),
        ("--model.loss=hinge", "unknown loss"),
    ],
)
def test_fit_rejects_bad_model_options(tmp_path, capsys, opt, msg):
    pytest.importorskip("lightning", reason="needs the 'lightning' extra")
    args = ["fit", opt, "--data.n=200", f"--trainer.default_root_dir={tmp_path}"]
    assert main(args) == 2
    # the last stderr line is the CLI's; earlier lines can be Lightning's logging complaining
    # that pytest closed a previous test's captured stream
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("anytime-hoeffding: error:") and msg in last


def test_fit_runs_from_a_paper_config(tmp_path, capsys, monkeypatch):
    pytest.importorskip("lightning", reason="needs the 'lightning' extra")
    monkeypatch.chdir(tmp_path)  # the config's CSV logger writes lightning_logs/ here
    from pathlib import Path

    cfg = Path(__file__).parents[1] / "configs" / "sea_tree.yaml"
    args = ["fit", "--config", str(cfg), "--data.n=3000", "--data.n_holdout=500",
            f"--trainer.default_root_dir={tmp_path}"]  # fmt: skip
    assert main(args) == 0
    assert "prequential accuracy" in capsys.readouterr().out


def test_evaluate_does_not_import_lightning_or_torch():
    """Issue #51: a command that does not train imports neither Lightning nor torch."""
    import subprocess
    import sys

    code = (
        "import sys; from anytime_hoeffding.cli import main; "
        "assert main(['evaluate', '--n', '500', '--methods', '[ours]']) == 0; "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('lightning', 'torch')); "
        "assert not heavy, heavy"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
