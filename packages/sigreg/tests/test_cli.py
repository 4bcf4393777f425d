"""The sigreg package commands and their one-line errors (help and unknown commands: the
workspace contract, ci/test_registry.py)."""

from pathlib import Path

import numpy as np
from sigreg.cli import main

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_stat_on_gaussian_and_collapsed_embeddings(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "g.npy", rng.standard_normal((2000, 8)))
    np.save(tmp_path / "c.npy", np.ones((2000, 8)))
    assert main(["stat", "--embeddings", str(tmp_path / "g.npy")]) == 0
    g = float(capsys.readouterr().out.split("SIGReg = ")[1].split()[0])
    assert main(["stat", "--embeddings", str(tmp_path / "c.npy"), "--preset", "lejepa"]) == 0
    c = float(capsys.readouterr().out.split("SIGReg = ")[1].split()[0])
    assert g < 0.01 < c


def _one_line_error(capsys, args, match):
    assert main(args) != 0
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1
    assert match in err


def test_bad_inputs_give_one_line(tmp_path, capsys):
    np.save(tmp_path / "one.npy", np.ones((1, 4)))
    np.save(tmp_path / "nan.npy", np.array([[np.nan, 1.0], [0.0, 1.0]]))
    (tmp_path / "junk.npy").write_text("not numpy")
    _one_line_error(
        capsys, ["stat", "--embeddings", str(tmp_path / "missing.npy")], "does not exist"
    )
    _one_line_error(capsys, ["stat", "--embeddings", str(tmp_path / "one.npy")], "at least 2")
    _one_line_error(capsys, ["stat", "--embeddings", str(tmp_path / "nan.npy")], "NaN")
    _one_line_error(capsys, ["stat", "--embeddings", str(tmp_path / "junk.npy")], "cannot read")
    np.save(tmp_path / "ok.npy", np.ones((4, 4)))
    _one_line_error(
        capsys,
        ["stat", "--embeddings", str(tmp_path / "ok.npy"), "--num_slices", "0"],
        "num_slices",
    )
    _one_line_error(
        capsys, ["stat", "--embeddings", str(tmp_path / "ok.npy"), "--preset", "nope"], "preset"
    )
    _one_line_error(capsys, ["benchmark", "--sigreg_lambda", "-1"], ">= 0")
    _one_line_error(
        capsys, ["benchmark", "--suite", "digits-shuffle", "--method", "magic"], "unknown method"
    )
    _one_line_error(
        capsys, ["diagnose", "--checkpoint", str(tmp_path / "none.ckpt")], "does not exist"
    )
    _one_line_error(capsys, ["diagnose", "--checkpoint", str(tmp_path / "junk.npy")], "cannot read")


def test_fit_smoke_config_and_diagnose(tmp_path, capsys):
    args = [
        "fit",
        "--config",
        str(CONFIGS / "smoke.yaml"),
        "--trainer.enable_checkpointing",
        "true",
    ]
    assert main([*args, "--trainer.default_root_dir", str(tmp_path)]) == 0
    ckpt = next(tmp_path.rglob("*.ckpt"))
    assert main(["diagnose", "--checkpoint", str(ckpt), "--n", "200"]) == 0
    out = capsys.readouterr().out
    assert "srank" in out and "accuracy" in out


def test_benchmark_drift_runs(capsys):
    assert main(["benchmark", "--suite", "drift"]) == 0
    assert "kappa=" in capsys.readouterr().out


def test_stat_refuses_non_float_arrays(tmp_path, capsys):
    """Integer ids, masks and complex arrays are not embeddings: one line, exit 2."""
    for name, arr in {
        "int64": np.arange(40, dtype=np.int64).reshape(10, 4),
        "int8": np.ones((10, 4), dtype=np.int8),
        "bool": np.ones((10, 4), dtype=bool),
        "complex": np.ones((10, 4), dtype=complex),
    }.items():
        np.save(tmp_path / f"{name}.npy", arr)
        _one_line_error(
            capsys, ["stat", "--embeddings", str(tmp_path / f"{name}.npy")], "floating-point"
        )
    assert main(["stat", "--embeddings", str(tmp_path / "int64.npy")]) == 2
    np.save(tmp_path / "f16.npy", np.random.default_rng(0).standard_normal((64, 4)).astype("f2"))
    assert main(["stat", "--embeddings", str(tmp_path / "f16.npy")]) == 0


def test_fit_bad_agent_settings_give_one_line(tmp_path, capsys):
    """lambda < 0 and a continuous-action environment stop before training, in one line."""
    root = ["--trainer.default_root_dir", str(tmp_path)]
    for cfg in ("pqn-cartpole-ns-lambda1.0", "ppo-cartpole-ns-lambda1.0", "digits-shuffle-sigreg"):
        args = ["fit", "--config", f"sigreg:{cfg}.yaml", "--model.init_args.sigreg_lambda", "-1"]
        _one_line_error(capsys, [*args, *root], "sigreg_lambda must be >= 0")
    for cfg in ("pqn-cartpole-ns-lambda1.0", "ppo-cartpole-ns-lambda1.0"):
        args = ["fit", "--config", f"sigreg:{cfg}.yaml", "--model.init_args.env_id", "Pendulum-v1"]
        _one_line_error(capsys, [*args, *root], "discrete action space")
    args = ["fit", "--config", "sigreg:pqn-cartpole-ns-lambda1.0.yaml",
            "--model.init_args.optimizer", "sgdx"]  # fmt: skip
    _one_line_error(capsys, [*args, *root], "unknown optimizer 'sgdx'")
    assert main(["fit", "--config", "sigreg:pqn-cartpole-ns-lambda1.0.yaml",
                 "--model.init_args.sigreg_lambda", "-1", *root]) == 2  # fmt: skip


DATA = Path(__file__).resolve().parent / "data"


def test_own_data_readme_commands(tmp_path, capsys, monkeypatch):
    """The README's 'On your own data' commands, run as written on the shipped example."""
    import json

    monkeypatch.chdir(DATA.parent.parent)  # the package folder: paths as in the README
    args = ["stat", "--embeddings", "tests/data/embeddings.npy"]
    assert main([*args, "--out", str(tmp_path / "stat-out")]) == 0
    printed = capsys.readouterr().out
    result = json.loads((tmp_path / "stat-out" / "result.json").read_text())
    assert result["n"] == 300 and result["d"] == 16
    # 8 isotropic coordinates + 8 collapsed onto 2 directions: srank at most 8 + 2
    assert 8 <= result["srank"] <= 10
    assert result["sigreg"] > result["sigreg_expected_gaussian"]  # not an isotropic Gaussian
    assert f"srank(0.01) = {result['srank']}" in printed
    assert main([*args, "--preset", "lejepa", "--num_slices", "256"]) == 0
    (tmp_path / "file").write_text("x")
    _one_line_error(capsys, [*args, "--out", str(tmp_path / "file")], "cannot write")
