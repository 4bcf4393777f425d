"""The asymp-gda command line: help, subcommands, and one clear line for bad input."""

from pathlib import Path

import numpy as np
import pytest
from asymp_gda.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_solve_does_not_import_lightning(tmp_path):
    """Issue #51: ``asymp-gda solve`` runs on torch alone (only fit/validate/test/predict need
    lightning); checked in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys; from asymp_gda.cli import main; "
        "code = main(['solve', '--game', 'brps', '--eta', '0.1', '--iterations', '200']); "
        "assert code == 0, code; "
        "heavy = sorted(m for m in sys.modules if m == 'lightning' or m.startswith('lightning.')); "
        "assert not heavy, heavy; print('no lightning')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "no lightning" in proc.stdout


def test_solve_brps(capsys):
    assert main(["solve", "--game", "brps", "--eta", "0.1", "--iterations", "1500"]) == 0
    out = capsys.readouterr().out
    assert "nash_conv" in out and "[0.2, 0.6, 0.2]" in out


def test_threshold_and_sweep(capsys):
    assert main(["threshold", "--game", "m_ne"]) == 0
    assert "[0.333333, 0.333333, 0.333333, 0.0, 0.0]" in capsys.readouterr().out
    assert (
        main(
            ["sweep-mu", "--game", "brps", "--mus", "[1.0]", "--eta", "0.1", "--iterations", "500"]
        )
        == 0
    )
    assert "threshold" in capsys.readouterr().out


def _write(tmp_path, name, arr):
    path = tmp_path / name
    np.savetxt(path, np.atleast_2d(arr), delimiter=",")
    return str(path)


def _bad(capsys, args, needle):
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if "Warning" not in ln]
    assert "Traceback" not in err
    assert needle in err, err
    assert len(lines) <= 2, err


def test_bad_payloads(capsys, tmp_path):
    _bad(capsys, ["solve", "--payoff", str(tmp_path / "missing.csv")], "does not exist")
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
    _bad(capsys, ["solve", "--payoff", str(tmp_path / "cube.npy")], "2-D")
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    _bad(capsys, ["solve", "--payoff", str(tmp_path / "nan.npy")], "non-finite")
    np.save(tmp_path / "empty.npy", np.zeros((0, 3)))
    _bad(capsys, ["threshold", "--payoff", str(tmp_path / "empty.npy")], "empty action set")
    p = _write(tmp_path, "p.csv", [[1.0, -1.0], [-1.0, 1.0]])
    q = _write(tmp_path, "q.csv", [[1.0, -1.0], [-1.0, 1.0]])
    _bad(capsys, ["solve", "--payoff", p, "--payoff_col", q], "zero-sum")


def test_bad_parameters(capsys):
    _bad(capsys, ["solve", "--mu", "0"], "mu must be > 0")
    _bad(capsys, ["solve", "--mu", "-1"], "mu must be > 0")
    _bad(capsys, ["solve", "--eta", "0"], "step size")
    _bad(capsys, ["solve", "--x0", "[0.5, 0.6, 0.1]"], "not on the probability simplex")
    _bad(capsys, ["solve", "--x0", "[0.5, 0.5]"], "shape")
    _bad(capsys, ["solve", "--game", "no_such_game"], "unknown game")
    _bad(capsys, ["solve", "--method", "sgd"], "unknown method")


def test_large_step_warns(capsys):
    with pytest.warns(RuntimeWarning, match="stability bound"):
        assert main(["solve", "--eta", "0.9", "--iterations", "10"]) == 0


def test_fit_with_config(tmp_path):
    cfg = CONFIGS / "fit-brps.yaml"
    assert (
        main(
            [
                "fit",
                "--config",
                str(cfg),
                "--trainer.max_epochs",
                "1",
                "--trainer.default_root_dir",
                str(tmp_path),
                "--trainer.logger",
                "false",
                "--trainer.enable_checkpointing",
                "false",
            ]
        )
        == 0
    )


def test_every_config_parses():
    for cfg in sorted(CONFIGS.glob("*.yaml")):
        text = cfg.read_text()
        assert text.strip(), cfg
