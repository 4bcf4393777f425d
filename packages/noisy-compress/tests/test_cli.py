"""The noisy-compress command line: help, the package commands, one clear line for bad input."""

from pathlib import Path

import numpy as np
import pytest
from icml26_shared.contract import assert_one_line_error
from noisy_compress.cli import main
from noisy_compress.paper import PAPER

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _one_line_error(capsys, match):
    assert_one_line_error(capsys.readouterr().err, match)


def _fresh_process(code: str) -> str:
    """Run ``code`` in a new interpreter; return its standard output."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout


def test_help_imports_neither_torch_nor_lightning():
    """Issue #51: ``--help`` lists the commands from metadata, without heavy imports."""
    out = _fresh_process(
        "import sys; from noisy_compress.cli import main; rc = main(['--help']); "
        "print('HEAVY', [m for m in ('torch', 'lightning') if m in sys.modules]); sys.exit(rc)"
    )
    assert "HEAVY []" in out
    for command in ("learn", "bound", "curve", "benchmark"):
        assert f"  {command}" in out
    assert PAPER.title in out


def test_learn_does_not_import_lightning():
    """Issue #51: ``noisy-compress learn`` never trains, so it must not import lightning."""
    out = _fresh_process(
        "import sys; from noisy_compress.cli import main; "
        "rc = main(['learn', '--n', '300', '--max_candidates', '20']); "
        "print('LIGHTNING', 'lightning' in sys.modules); sys.exit(rc)"
    )
    assert "TV to the planted target" in out
    assert "LIGHTNING False" in out


def test_fit_and_test_from_config(tmp_path, capsys):
    args = ["--config", str(CONFIGS / "smoke.yaml"), "--trainer.default_root_dir", str(tmp_path)]
    assert main(["fit", *args]) == 0
    assert main(["test", *args]) == 0
    assert "test_tv" in capsys.readouterr().out


def test_fit_mle_config(tmp_path):
    args = [
        "--config",
        str(CONFIGS / "smoke-mle.yaml"),
        "--trainer.default_root_dir",
        str(tmp_path),
    ]
    assert main(["fit", *args]) == 0


def test_every_config_parses(capsys):
    for cfg in sorted(CONFIGS.glob("*.yaml")):
        assert main(["fit", "--config", str(cfg), "--print_config"]) == 0, cfg
    capsys.readouterr()


def test_learn_and_bound_commands(tmp_path, capsys):
    y = np.random.default_rng(0).uniform(0, 1, (600, 1)) + np.random.default_rng(1).normal(
        0, 0.1, (600, 1)
    )
    path = tmp_path / "y.npy"
    np.save(path, y)
    assert (
        main(["learn", "--data", str(path), "--noise_scale", "0.1", "--max_candidates", "60"]) == 0
    )
    out = capsys.readouterr().out
    assert "estimate: BoxDensity" in out and "certified" in out
    assert main(["bound", "--family", "gaussian", "--k", "2"]) == 0
    assert "clean: n1" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["learn", "--noise_scale", "-0.5"], "noise sigma must be"),
        (["learn", "--eps", "1.5", "--n", "100"], "eps must be in (0, 1)"),
        (["learn", "--delta", "0", "--n", "100"], "delta must be in (0, 1)"),
        (["learn", "--k", "0"], "k must be >= 1"),
        (["learn", "--n", "3"], "need at least 4 samples"),
        (["learn", "--noise", "fejer", "--noise_scale", "2", "--n", "100"], "vanishes"),
        (["learn", "--data", "missing.npy"], "does not exist"),
        (
            [
                "learn",
                "--target",
                "uniform-mixture",
                "--strategy",
                "all",
                "--max_candidates",
                "100",
                "--n",
                "500",
            ],
            "coarser quantisation",
        ),
        (["bound", "--eps", "2"], "eps must be in (0, 1)"),
        (["bound", "--noise", "fejer"], "vanishes"),
        (["curve", "--seeds", "0"], "seeds must be"),
        (["benchmark", "--target", "uniform-2d"], "1-D targets"),
    ],
)
def test_bad_input_is_one_line(argv, match, capsys):
    assert main(argv) == 2
    _one_line_error(capsys, match)


def test_nan_and_dimension_mismatch_in_data(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("0.1\nnan\n0.3\n")
    assert main(["learn", "--data", str(bad)]) == 2
    _one_line_error(capsys, "NaN")
    two = tmp_path / "two.npy"
    np.save(two, np.zeros((50, 2)))
    assert main(["learn", "--data", str(two), "--noise", "laplace", "--family", "gaussian"]) == 2
    _one_line_error(capsys, "closed")


def test_no_closed_form_without_numerical(tmp_path, capsys):
    two = tmp_path / "two.npy"
    np.save(two, np.random.default_rng(0).normal(size=(50, 2)))
    assert main(["learn", "--data", str(two), "--family", "gaussian", "--noise", "laplace"]) == 2
    _one_line_error(capsys, "numerical")
