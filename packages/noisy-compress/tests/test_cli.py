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


def test_fit_and_test_from_config(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the configs' CSVLogger writes lightning_logs/ in the cwd
    args = ["--config", str(CONFIGS / "smoke.yaml"), "--trainer.default_root_dir", str(tmp_path)]
    assert main(["fit", *args]) == 0
    assert main(["test", *args]) == 0
    assert "test_tv" in capsys.readouterr().out


def test_fit_mle_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = [
        "--config",
        str(CONFIGS / "smoke-mle.yaml"),
        "--trainer.default_root_dir",
        str(tmp_path),
    ]
    assert main(["fit", *args]) == 0
    assert list((tmp_path / "lightning_logs").rglob("metrics.csv"))


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
    assert "estimate: BoxDensity" in out and "guarantee" in out and "certified" not in out
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


DATA = Path(__file__).parent / "data"


def test_own_data_commands_of_the_readme(tmp_path, capsys, monkeypatch):
    """The README's "On your own data" commands, as written, on the shipped example."""
    import json

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "data").mkdir(parents=True)
    for name in ("noisy-1d.npy", "noisy-1d.csv"):
        (tmp_path / "tests" / "data" / name).write_bytes((DATA / name).read_bytes())
    argv = ["learn", "--data", "tests/data/noisy-1d.npy", "--family", "uniform", "--k", "2",
            "--noise", "gaussian", "--noise_scale", "0.1", "--out", "fit-out"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "estimate: MixtureDensity" in out and "held-out log-likelihood" in out
    result = json.loads((tmp_path / "fit-out" / "result.json").read_text())
    dens = result["fit"]["density"]
    assert dens["type"] == "mixture" and result["n_holdout"] == 160
    # the planted law of the example: 0.3 U[0, 1] + 0.7 U[1.5, 2.5], noise N(0, 0.1^2)
    w, comps = dens["weights"], dens["components"]
    order = np.argsort([c["lo"][0] for c in comps])
    assert abs(w[order[0]] - 0.3) < 0.08
    assert abs(comps[order[0]]["hi"][0] - 1.0) < 0.1 and abs(comps[order[1]]["lo"][0] - 1.5) < 0.1
    assert np.isfinite(result["heldout_loglik"]) and result["fit"]["bound"] > 0
    assert (tmp_path / "fit-out" / "fit.png").stat().st_size > 5000
    argv = ["evaluate", "--model", "fit-out/model.json", "--data", "tests/data/noisy-1d.csv"]
    assert main(argv) == 0
    line = capsys.readouterr().out
    assert "noisy samples under f_hat*g" in line
    assert abs(float(line.split(":")[1].split()[0]) - result["heldout_loglik"]) < 0.2


def test_one_dimensional_npy_and_bad_shapes(tmp_path, capsys):
    """A 1-D ``.npy`` works (0.1.0: IndexError traceback); a 3-D array is one line."""
    one = tmp_path / "one.npy"
    np.save(one, np.random.default_rng(0).uniform(0, 1, 300))
    assert main(["learn", "--data", str(one), "--max_candidates", "30"]) == 0
    assert "estimate: BoxDensity" in capsys.readouterr().out
    cube = tmp_path / "cube.npy"
    np.save(cube, np.zeros((4, 4, 4)))
    assert main(["learn", "--data", str(cube)]) == 2
    _one_line_error(capsys, "1-D array")
    assert main(["evaluate", "--model", str(one), "--data", str(one)]) == 2
    _one_line_error(capsys, "model.json")


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
