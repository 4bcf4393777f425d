"""The delayed-rl command line: help, subcommands, and one clear line for bad input."""

import csv

import pytest
from delayed_rl.cli import main
from delayed_rl.paper import PAPER


def test_help_lists_commands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for cmd in ("fit", "validate", "test", "predict", "reproduce", "solve", "regret"):
        assert cmd in out
    assert PAPER.title in out


def test_unknown_command_exits_2(capsys):
    assert main(["no-such-command"]) == 2
    err = capsys.readouterr().err
    assert "unknown command" in err
    assert "Traceback" not in err


def test_solve_prints_values(capsys):
    assert main(["solve", "--env", "corridor", "--delay", "constant:2"]) == 0
    out = capsys.readouterr().out
    assert "augmented states: 42" in out  # 6 * (1 + 2 + 4)
    assert "V*_1 with delay" in out


def test_regret_writes_csv(tmp_path, capsys):
    out = tmp_path / "r.csv"
    args = ["regret", "--env", "chain", "--delay", "uniform:1", "--episodes", "5", "--seeds", "2"]
    assert main([*args, "--agents", "[delay-ucbvi-h, random]", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * 2 * 5
    assert {r["agent"] for r in rows} == {"delay-ucbvi-h", "random"}
    assert "delay-ucbvi-h" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args,message",
    [
        (["solve", "--delay", "uniform:x"], "bad delay"),
        (["solve", "--delay", "pmf:0.5,0.6"], "sum to 1"),
        (["solve", "--env", "atari"], "unknown environment"),
        (["solve", "--horizon", "0"], "horizon H must be an integer >= 1"),
        (
            ["solve", "--env", "cliffwalking", "--delay", "constant:9"],
            "augmented state space too large",
        ),
        (["regret", "--episodes", "0"], "--episodes must be >= 1"),
        (["regret", "--agents", "[nope]"], "unknown agent"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err
