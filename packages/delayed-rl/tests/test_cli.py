"""The delayed-rl command line: subcommands and one clear line for bad input.

``--help``, an unknown command, a missing or malformed ``--config`` and an unwritable
``reproduce --out`` are checked for every package by the registry contract
(``ci/test_registry.py``).
"""

import csv
import json
import subprocess
import sys

import numpy as np
import pytest
from delayed_rl.cli import main


def test_solve_and_regret_do_not_import_lightning():
    """Issue #51: commands that do not train answer without importing Lightning."""
    code = (
        "import sys; from delayed_rl.cli import main; "
        "assert main(['solve', '--env', 'chain', '--delay', 'uniform:1']) == 0; "
        "assert main(['regret', '--env', 'chain', '--delay', 'uniform:1', '--episodes', '3', "
        "'--seeds', '1', '--agents', '[delay-ucbvi-h]']) == 0; "
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] == 'lightning'); "
        "assert not heavy, heavy"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "V*_1 with delay" in proc.stdout


def test_solve_prints_values(capsys):
    assert main(["solve", "--env", "corridor", "--delay", "constant:2"]) == 0
    out = capsys.readouterr().out
    assert "augmented states: 42" in out  # 6 * (1 + 2 + 4)
    assert "V*_1 with delay" in out


def test_regret_writes_csv_figure_and_summary(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["regret", "--env", "chain", "--delay", "uniform:1", "--episodes", "5", "--seeds", "2"]
    assert main([*args, "--agents", "[delay-ucbvi-h, random]", "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "regret.csv").open()))
    assert len(rows) == 2 * 2 * 5
    assert {r["agent"] for r in rows} == {"delay-ucbvi-h", "random"}
    summary = json.loads((out / "result.json").read_text())
    final = [
        float(r["cumulative_regret"])
        for r in rows
        if r["agent"] == "random" and r["episode"] == "5"
    ]
    assert summary["regret"]["random"]["regret"] == pytest.approx(sum(final) / 2)
    assert summary["bonus_scale"] == "theory"  # the default
    assert summary["c_hoeffding"] == pytest.approx(0.5**0.5)
    assert (out / "regret.png").read_bytes()[:4] == b"\x89PNG"
    assert "delay-ucbvi-h" in capsys.readouterr().out


def test_regret_bonus_scale_must_be_a_number_or_theory(capsys):
    assert main(["regret", "--episodes", "2", "--seeds", "1", "--bonus_scale", "big"]) == 2
    assert "--bonus_scale must be a number >= 0 or 'theory'" in capsys.readouterr().err


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


def _npz(tmp_path, name="m.npz", **arrays):
    base = {"P": np.full((2, 2, 2), 0.5), "R": np.zeros((2, 2)), "H": 3}
    base.update(arrays)
    path = tmp_path / name
    np.savez(path, **base)
    return str(path)


def test_solve_on_user_npz_and_gym_toy_text(tmp_path, capsys):
    assert main(["solve", "--env", _npz(tmp_path), "--delay", "constant:1"]) == 0
    assert "augmented states: 6" in capsys.readouterr().out  # 2 * (1 + 2)
    args = ["solve", "--env", "gym:FrozenLake-v1", "--delay", "uniform:1", "--horizon", "6"]
    assert main(args) == 0
    assert "S=16 A=4 H=6" in capsys.readouterr().out


def test_declared_d_max_is_used_by_the_learners(tmp_path, capsys):
    args = ["regret", "--env", "chain", "--delay", "uniform:1", "--d_max", "3"]
    assert main([*args, "--episodes", "3", "--seeds", "1", "--agents", "[delay-ucbvi-h]"]) == 0
    assert "delay-ucbvi-h" in capsys.readouterr().out


BAD_P = np.full((2, 2, 2), 0.5)
BAD_P[1, 0] = [0.7, 0.7]
NEG_P = np.full((2, 2, 2), 0.5)
NEG_P[0, 1] = [1.5, -0.5]


@pytest.mark.parametrize(
    "arrays,message",
    [
        ({"P": BAD_P}, "P[1, 0] sums to 1.4, not 1"),
        ({"P": NEG_P}, "negative or non-finite entry"),
        ({"R": np.full((2, 2), 2.0)}, "rewards must lie in the declared range [0.0, 1.0]"),
        ({"H": 0}, "horizon H must be an integer >= 1"),
        ({"mu": np.array([0.5, 0.6])}, "mu must be a probability vector"),
        ({"P": np.full((2, 2), 0.5)}, "must have shape (S, A, S)"),
    ],
)
def test_bad_user_mdp_is_one_line_and_exit_2(tmp_path, capsys, arrays, message):
    assert main(["solve", "--env", _npz(tmp_path, **arrays)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "args,message",
    [
        (["solve", "--delay", "pmf:0.5,0.25,0.25", "--d_max", "1"], "beyond D_max=1"),
        (["solve", "--delay", "pmf:1.5,-0.5"], "negative or non-finite"),
        (["solve", "--env", "gym:CartPole-v1"], "has no tabular model"),
        (["solve", "--env", "gym:NoSuchEnv-v0"], "cannot make gymnasium environment"),
        (["solve", "--env", "no/such/file.npz"], "No such file"),
        (["regret", "--episodes", "-3"], "--episodes must be >= 1"),
        (["regret", "--seeds", "0"], "--seeds must be >= 1"),
        (
            ["regret", "--bonus_scale", "-1", "--episodes", "2"],
            "--bonus_scale must be a number >= 0",
        ),
        (["solve", "--env_seed", "-1"], "environment seed must be an integer >= 0"),
    ],
)
def test_more_bad_input_is_one_line_and_exit_2(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_lightning_command_with_bad_model_input_exits_2(capsys):
    assert main(["fit", "--model.env", "atari", "--trainer.logger", "false"]) == 2
    err = capsys.readouterr().err
    assert "delayed-rl: error: unknown environment 'atari'" in err
    assert "Traceback" not in err
