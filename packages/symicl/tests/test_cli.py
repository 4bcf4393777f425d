"""The symicl package commands and their one-line errors (help and unknown commands: the
workspace contract, ci/test_registry.py)."""

from pathlib import Path

import lightning.pytorch as pl
import pytest
from icml26_shared.contract import assert_one_line_error
from icml26_shared.trainer import quiet_trainer
from symicl.cli import main
from symicl.lightning import ICLClassifierModule

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _one_line_error(capsys, match):
    assert_one_line_error(capsys.readouterr().err, match)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    out = tmp_path_factory.mktemp("ckpt")
    paths = {}
    for mode in ("tied", "none"):
        pl.seed_everything(0, verbose=False)
        module = ICLClassifierModule(4, 2, n_layers=1, n_heads=1, symmetry=mode, init_scale=0.3)
        trainer = quiet_trainer(max_epochs=0)
        trainer.strategy.connect(module)
        paths[mode] = out / f"{mode}.ckpt"
        trainer.save_checkpoint(paths[mode])
    return paths


def test_fit_and_test_from_config(tmp_path, capsys):
    args = ["--config", str(CONFIGS / "smoke.yaml"), "--trainer.default_root_dir", str(tmp_path)]
    assert main(["fit", *args, "--trainer.fast_dev_run", "true"]) == 0
    assert main(["test", *args]) == 0
    assert "test_acc" in capsys.readouterr().out


def test_fit_with_mismatched_model_and_data_is_one_line(tmp_path, capsys):
    args = [
        "fit",
        "--config",
        str(CONFIGS / "smoke.yaml"),
        "--model.d",
        "5",
        "--trainer.fast_dev_run",
        "true",
        "--trainer.default_root_dir",
        str(tmp_path),
    ]
    assert main(args) == 2
    _one_line_error(capsys, "does not match the model's d=5")


def test_bad_symmetry_in_config_is_rejected(tmp_path, capsys):
    args = [
        "fit",
        "--config",
        str(CONFIGS / "smoke.yaml"),
        "--model.symmetry",
        "full",
        "--trainer.fast_dev_run",
        "true",
        "--trainer.default_root_dir",
        str(tmp_path),
    ]
    assert main(args) == 2
    _one_line_error(capsys, "unknown symmetry mode")


def test_extract_and_verify(checkpoints, tmp_path, capsys):
    rec = tmp_path / "rec.json"
    assert main(["extract", "--checkpoint", str(checkpoints["tied"]), "--out", str(rec)]) == 0
    assert "layer 0 head 0" in capsys.readouterr().out
    assert (
        main(
            [
                "verify",
                "--checkpoint",
                str(checkpoints["tied"]),
                "--recursion",
                str(rec),
                "--episodes",
                "32",
                "--n_context",
                "8",
            ]
        )
        == 0
    )
    assert "max |logit difference|" in capsys.readouterr().out
    # a recursion of another model fails verification with one line
    other = tmp_path / "other.json"
    assert (
        main(
            [
                "extract",
                "--checkpoint",
                str(checkpoints["none"]),
                "--project",
                "true",
                "--out",
                str(other),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert (
        main(
            [
                "verify",
                "--checkpoint",
                str(checkpoints["tied"]),
                "--recursion",
                str(other),
                "--episodes",
                "32",
                "--n_context",
                "8",
            ]
        )
        == 2
    )
    _one_line_error(capsys, "does not reproduce")


def test_extract_unconstrained_without_projection_is_one_line(checkpoints, capsys):
    assert main(["extract", "--checkpoint", str(checkpoints["none"])]) == 2
    _one_line_error(capsys, "not projected onto the commutant")


def test_missing_checkpoint_is_one_line(tmp_path, capsys):
    assert main(["extract", "--checkpoint", str(tmp_path / "nope.ckpt")]) == 2
    _one_line_error(capsys, "does not exist")


def test_evaluate_runs_a_shift(checkpoints, capsys):
    assert (
        main(
            [
                "evaluate",
                "--checkpoint",
                str(checkpoints["tied"]),
                "--shift",
                "semi",
                "--n_context",
                "8",
                "--episodes",
                "20",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "prototype" in out and "model (tied, L=1)" in out


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--n_classes", "1"], "C must be"),
        (["--d", "0"], "d must be"),
        (["--n_context", "0"], "N must be"),
        (["--noise", "1.5"], "noise"),
    ],
)
def test_benchmark_bad_input_is_one_line(args, match, capsys):
    assert main(["benchmark", *args, "--episodes", "4"]) == 2
    _one_line_error(capsys, match)


def test_benchmark_runs(capsys):
    assert main(["benchmark", "--d", "4", "--n_context", "8", "--episodes", "20"]) == 0
    out = capsys.readouterr().out
    assert "logistic" in out and "GD k=4" in out


def _episodes(path, **override):
    import numpy as np

    rng = np.random.default_rng(0)
    arrays = {
        "x": rng.standard_normal((3, 8, 4)),
        "y": rng.integers(0, 2, (3, 8)),
        "xq": rng.standard_normal((3, 4)),
    }
    arrays.update(override)
    np.savez(path, **arrays)
    return str(path)


def test_classify_own_episodes_matches_the_model(checkpoints, tmp_path, capsys):
    import numpy as np
    import torch
    from symicl.episodes import one_hot_labels

    path = _episodes(tmp_path / "ep.npz")
    assert main(["classify", "--checkpoint", str(checkpoints["tied"]), "--episodes", path]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("episode")]
    model = ICLClassifierModule.load_from_checkpoint(checkpoints["tied"], weights_only=False)
    data = np.load(path)
    x, xq = torch.tensor(data["x"]).float(), torch.tensor(data["xq"]).float()
    logits = model.model(x, one_hot_labels(torch.tensor(data["y"]), 2), xq)
    assert [int(ln.split()[3]) for ln in lines] == logits.argmax(-1).tolist()
    # one-hot labels and a single (N, d) episode are accepted too
    onehot = np.eye(2)[data["y"][0]]
    single = _episodes(tmp_path / "one.npz", x=data["x"][0], y=onehot, xq=data["xq"][0])
    assert main(["classify", "--checkpoint", str(checkpoints["tied"]), "--episodes", single]) == 0
    assert capsys.readouterr().out.count("episode ") == 1


@pytest.mark.parametrize(
    ("override", "match"),
    [
        ({"x": [[[float("nan")] * 4] * 8] * 3}, "x contains NaN or inf"),
        ({"xq": [[float("inf")] * 4] * 3}, "xq contains NaN or inf"),
        ({"y": [[0, 1, 2, 0, 1, 0, 1, 0]] * 3}, "labels must lie in [0, 1]"),
        ({"y": [[[1, 1]] * 8] * 3}, "must be one-hot rows"),
        ({"y": [[[0.5, 0.5]] * 8] * 3}, "must be one-hot rows"),
        ({"x": [[[0.0] * 5] * 8] * 3, "xq": [[0.0] * 5] * 3}, "does not match the model's d=4"),
        ({"y": [[0, 1]] * 3}, "shapes disagree"),
    ],
)
def test_classify_bad_episodes_is_one_line(checkpoints, tmp_path, capsys, override, match):
    path = _episodes(tmp_path / "bad.npz", **override)
    assert main(["classify", "--checkpoint", str(checkpoints["tied"]), "--episodes", path]) == 2
    _one_line_error(capsys, match)


def test_classify_missing_array_is_one_line(checkpoints, tmp_path, capsys):
    import numpy as np

    path = tmp_path / "partial.npz"
    np.savez(path, x=np.zeros((1, 4, 4)))
    args = ["classify", "--checkpoint", str(checkpoints["tied"]), "--episodes", str(path)]
    assert main(args) == 2
    _one_line_error(capsys, "lacks the arrays")
