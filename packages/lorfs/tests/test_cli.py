"""The lorfs command line: fit then evaluate, package commands, package-specific bad input.

The generic checks (help, unknown command, configs, malformed YAML, corrupt checkpoint) are the
registry contract (``ci/test_registry.py``).
"""

from pathlib import Path

import pytest
from lorfs.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_fit_then_evaluate_a_checkpoint(tmp_path, capsys):
    cfg = CONFIGS / "torus-poisson-d10.yaml"
    ckpt_dir = tmp_path / "ck"
    rc = main(
        [
            "fit",
            "--config",
            str(cfg),
            "--trainer.default_root_dir",
            str(tmp_path),
            "--trainer.enable_checkpointing",
            "true",
            "--trainer.callbacks+=ModelCheckpoint",
            f"--trainer.callbacks.dirpath={ckpt_dir}",
            "--data.n_test",
            "500",
        ]
    )
    assert rc == 0
    [ckpt] = list(ckpt_dir.glob("*.ckpt"))
    assert main(["evaluate", "--checkpoint", str(ckpt), "--n_test", "500"]) == 0
    out = capsys.readouterr().out
    err = float(out.split("relative L2 error")[1].split()[0])
    assert err < 1e-8


def test_solve_and_check_loss(capsys):
    assert main(["solve", "--problem", "convection", "--params", "{beta: 50}"]) == 0
    out = capsys.readouterr().out
    assert float(out.split("relative L2 error")[1].split(",")[0]) < 1e-4
    assert main(["check-loss", "--problem", "convection", "--params", "{beta: 10}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    closed = float(lines[0].split()[2])
    quad = float(lines[1].split()[2])
    assert closed == pytest.approx(quad, rel=1e-10)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["solve", "--problem", "torus_poisson", "--params", "{d: 4, source_mean: 1.0}"],
            "non-zero mean",
        ),
        (["solve", "--problem", "convection", "--modes", "0"], "modes must be a positive integer"),
        (["solve", "--problem", "convection", "--rank", "0"], "rank must be a positive integer"),
        (
            ["solve", "--problem", "torus_poisson", "--params", "{d: 3}", "--modes", "[2, 2]"],
            "dimension mismatch",
        ),
        (["solve", "--problem", "convection", "--params", "{gamma: 2}"], "bad parameters"),
        (["evaluate", "--checkpoint", "missing.ckpt"], "does not exist"),
        (["check-loss", "--problem", "reaction"], "nonlinear"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_unreadable_checkpoint(tmp_path, capsys):
    bad = tmp_path / "bad.ckpt"
    bad.write_text("not a checkpoint")
    assert main(["evaluate", "--checkpoint", str(bad)]) == 2
    assert "cannot read checkpoint" in capsys.readouterr().err


def test_fit_with_mismatched_model_and_data(tmp_path, capsys):
    rc = main(
        [
            "fit",
            "--config",
            str(CONFIGS / "torus-poisson-d10.yaml"),
            "--data.params",
            "{d: 11}",
            "--trainer.default_root_dir",
            str(tmp_path),
        ]
    )
    assert rc == 2
    assert "but the data is for" in capsys.readouterr().err
