"""The README's "On your own data" commands, run exactly as written on tests/data/ring_mdp.npz."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from delayed_rl.agents import load_mdp
from delayed_rl.augmented import AugmentedMDP
from delayed_rl.cli import main
from delayed_rl.delay import DelayDistribution

DATA = Path(__file__).parent / "data" / "ring_mdp.npz"


def test_solve_on_own_mdp(capsys):
    assert main(["solve", "--env", str(DATA), "--delay", "uniform:2"]) == 0
    out = capsys.readouterr().out
    assert "augmented states: 28" in out  # 4 * (1 + 2 + 4)
    mdp = load_mdp(DATA)
    vstar = AugmentedMDP(mdp, DelayDistribution.uniform(2)).solve().value
    assert f"{vstar:.6f}" in out


def test_regret_on_own_mdp_writes_csv_figure_and_json(tmp_path, capsys):
    out = tmp_path / "ring"
    args = ["regret", "--env", str(DATA), "--delay", "uniform:2", "--episodes", "30",
            "--seeds", "3", "--bonus_scale", "0.03", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    rows = list(csv.DictReader((out / "regret.csv").open()))
    assert len(rows) == 6 * 3 * 30  # agents x seeds x episodes
    summary = json.loads((out / "result.json").read_text())
    assert summary["env"] == "ring_mdp" and summary["bonus_scale"] == pytest.approx(0.03)
    cum = np.array([float(r["cumulative_regret"]) for r in rows if r["agent"] == "random"])
    assert np.all(np.diff(cum.reshape(3, 30), axis=1) >= -1e-9)  # cumulative: never decreases
    assert (out / "regret.png").stat().st_size > 1000


def test_a_broken_mdp_file_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    np.savez(bad, P=np.full((2, 1, 2), 0.7), R=np.zeros((2, 1)), H=3)
    assert main(["solve", "--env", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sums to 1.4, not 1" in err[0]
