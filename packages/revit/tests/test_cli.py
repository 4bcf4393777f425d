"""The revit package commands, and one clear line for their bad input.

``--help``, unknown commands, missing / malformed configs and a corrupt checkpoint for every
command are the generated package contract (``ci/test_registry.py``)."""

import pytest
import torch
from revit_equivariant.cli import main


def test_simulate_writes_trajectories(tmp_path, capsys):
    out = tmp_path / "kf.pt"
    assert (
        main(["simulate", "--out", str(out), "--n_traj", "1", "--n_frames", "2", "--grid", "16"])
        == 0
    )
    data = torch.load(out)
    assert data["fields"].shape == (1, 2, 4, 16, 16)


def test_equivariance_command_fresh_models(capsys):
    assert main(["equivariance", "--grid", "16", "--batch", "1"]) == 0
    line = capsys.readouterr().out
    assert "C4" in line and float(line.split(":")[-1]) < 1e-5
    assert main(["equivariance", "--grid", "16", "--batch", "1", "--angle", "-90"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "SO(2)" in lines[-1] and float(lines[-1].split(":")[-1]) < 1e-5  # a C4 angle


def test_fit_then_rollout_and_equivariance_of_the_checkpoint(tmp_path, capsys):
    args = [
        "fit",
        "--data.n_train",
        "2",
        "--data.n_val",
        "1",
        "--data.n_frames",
        "3",
        "--data.grid",
        "16",
        "--data.batch_size",
        "2",
        "--model.window",
        "2",
        "--model.embed_dim",
        "8",
        "--model.depths",
        "[1, 1, 1]",
        "--trainer.max_steps",
        "2",
        "--trainer.logger",
        "false",
        "--trainer.default_root_dir",
        str(tmp_path),
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.callbacks+=ModelCheckpoint",
        f"--trainer.callbacks.dirpath={tmp_path / 'ckpt'}",
    ]
    assert main(args) == 0
    ckpt = next((tmp_path / "ckpt").glob("*.ckpt"))
    capsys.readouterr()
    assert main(["equivariance", "--checkpoint", str(ckpt), "--grid", "16", "--batch", "1"]) == 0
    assert float(capsys.readouterr().out.split(":")[-1]) < 1e-5
    assert main(["rollout", "--checkpoint", str(ckpt), "--steps", "2", "--n_traj", "1"]) == 0


@pytest.mark.parametrize(
    "args",
    [
        ["equivariance", "--checkpoint", "missing.ckpt"],
        ["equivariance", "--checkpoint", "bad.ckpt"],
        ["rollout", "--checkpoint", "missing.ckpt"],
        ["simulate", "--out", "x.pt", "--grid", "12", "--sim_grid", "32"],
        ["simulate", "--out", "x.pt", "--variant", "rot45"],
        ["equivariance", "--grid", "20"],
        ["equivariance", "--grid", "16", "--group", "o", "--angle", "30"],
        [
            "equivariance",
            "--grid",
            "16",
            "--batch",
            "1",
            "--group",
            "o",
            "--checkpoint",
            "missing.ckpt",
        ],
    ],
    ids=[
        "missing-ckpt",
        "corrupt-ckpt",
        "rollout-missing",
        "sim-grid",
        "variant",
        "indivisible",
        "o-angle",
        "o-ckpt",
    ],  # fmt: skip
)
def test_bad_input_gives_one_line_and_exit_2(args, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.ckpt").write_bytes(b"not a checkpoint")
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("revit") and "Traceback" not in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "args, text",
    [
        (["equivariance", "--checkpoint", "not-a-checkpoint"], "cannot read checkpoint"),
        (["rollout", "--checkpoint", "not-a-checkpoint"], "cannot read checkpoint"),
        (["equivariance", "--checkpoint", "other.ckpt"], "cannot read checkpoint"),
        (["fit", "--config", "bad.yaml"], "Problems parsing config"),
        (["test", "--config", "bad.yaml"], "Problems parsing config"),
        (["equivariance", "--config", "bad.yaml"], "Problems parsing config"),
    ],
    ids=["garbage-ckpt", "rollout-garbage", "foreign-ckpt", "fit-yaml", "test-yaml", "cmd-yaml"],
)
def test_issue_39_checkpoint_and_yaml_errors_are_one_line_exit_2(
    args, text, tmp_path, monkeypatch, capsys
):
    """Issue #39: a non-checkpoint, another module's checkpoint, a malformed YAML."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "not-a-checkpoint").write_text("garbage\n")
    torch.save({"state_dict": {"w": torch.zeros(1)}, "hyper_parameters": {"nope": 1}}, "other.ckpt")
    (tmp_path / "bad.yaml").write_text("model: {backbone: revit\n  bad: [\n")
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and text in err and "Traceback" not in err
