"""The anytime-hoeffding command line: help, commands, and one clear line for bad input."""

import json

import pytest
from anytime_hoeffding.cli import main
from anytime_hoeffding.paper import PAPER


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in ("fit", "validate", "test", "predict", "reproduce", "benchmark", "null-check",
                "evaluate", "inspect"):  # fmt: skip
        assert cmd in out
    assert PAPER.title in out


def test_unknown_command_exits_2(capsys):
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert "unknown command" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "args,msg",
    [
        (["null-check", "--stream", "sea"], "null stream"),
        (["evaluate", "--stream", "nope", "--n", "10"], "unknown stream"),
        (["inspect", "--alpha", "1.5", "--n", "100"], "alpha must lie in (0, 1)"),
        (["benchmark", "--repeats", "0"], "repeats must be >= 1"),
    ],
)
def test_bad_input_one_line(capsys, args, msg):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and len(err.splitlines()) == 1


def test_null_check_runs(capsys):
    assert main(["null-check", "--runs", "3", "--n", "2000"]) == 0
    assert "0/3 runs split" in capsys.readouterr().out


def test_inspect_exports_json(tmp_path, capsys):
    path = tmp_path / "tree.json"
    assert (
        main(["inspect", "--stream", "planted_threshold", "--n", "3000", "--export", str(path)])
        == 0
    )
    assert "x[3] <=" in capsys.readouterr().out
    data = json.loads(path.read_text())
    assert data["tree"]["feature"] == 3 and data["split_log"][0]["feature"] == 3


def test_evaluate_csv(tmp_path, capsys):
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.uniform(size=(1_500, 2))
    y = np.where(X[:, 1] > 0.5, "yes", "no")
    path = tmp_path / "data.csv"
    lines = ["a,b,label"] + [f"{a},{b},{c}" for (a, b), c in zip(X, y, strict=True)]
    path.write_text("\n".join(lines))
    assert main(["evaluate", "--csv_path", str(path), "--methods", "[ours]"]) == 0
    assert "acc" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    bad.write_text("a,label\nx,1\n")
    assert main(["evaluate", "--csv_path", str(bad)]) == 2
    assert "non-numeric" in capsys.readouterr().err
