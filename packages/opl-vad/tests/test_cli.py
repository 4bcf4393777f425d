"""The opl-vad command line: fit, audit, and one clear line for package-specific bad input.

The generic checks (help, unknown command, every config, malformed YAML) are the registry
contract (``ci/test_registry.py``).
"""

from pathlib import Path

import numpy as np
import pytest
from icml26_shared.contract import assert_one_line_error, check_contract
from opl_vad.cli import main

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def _one_line_error(capsys, code, match):
    assert_one_line_error(capsys.readouterr().err, match, code)


@pytest.mark.parametrize("projection", ["none", "opl", "gopl"])
def test_shared_contract(tmp_path, projection):
    from opl_vad.lightning import SyntheticVADDataModule, VADModule

    result = check_contract(
        lambda: VADModule(32, projection=projection, rank_task=2, rank_face=2),
        lambda: SyntheticVADDataModule(n_train=8, n_test=4, dim=32, n_snippets=8, batch_pairs=2),
        tmp_path,
        forward_fn=lambda m, batch: m(batch["x"]),
    )
    assert result.output.shape[-1] == 8


def test_fit_two_epochs_from_config(tmp_path):
    code = main(["fit", "--config", str(CONFIGS / "mil-gopl-planted.yaml"),
                 "--trainer.max_epochs", "1", "--trainer.default_root_dir", str(tmp_path),
                 "--data.init_args.n_train", "20", "--data.init_args.n_test", "10",
                 "--data.init_args.dim", "32", "--model.dim", "32",
                 "--model.rank_task", "4", "--model.rank_face", "2"])  # fmt: skip
    assert code == 0


def test_audit_command(tmp_path, capsys):
    rng = np.random.default_rng(0)
    face = rng.integers(0, 2, 300)
    X = rng.standard_normal((300, 5))
    X[:, 0] += 4 * face
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "f.npy", face)
    assert main(["audit", "--features", str(tmp_path / "x.npy"), "--face",
                 str(tmp_path / "f.npy"), "--folds", "3"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    acc = float(next(line for line in out.splitlines() if line.startswith("face_probe_acc"))
                .split(":")[1])  # fmt: skip
    assert acc > 0.9
    np.save(tmp_path / "bad.npy", face[:10])
    _one_line_error(capsys, main(["audit", "--features", str(tmp_path / "x.npy"), "--face",
                                  str(tmp_path / "bad.npy")]), "face has 10 values")  # fmt: skip
    _one_line_error(capsys, main(["audit", "--features", str(tmp_path / "nope.npy"), "--face",
                                  str(tmp_path / "f.npy")]), "does not exist")  # fmt: skip


def test_bad_model_options_are_one_line(capsys):
    code = main(["fit", "--config", str(CONFIGS / "mil-opl-planted.yaml"),
                 "--model.rank_task", "500", "--trainer.max_epochs", "1"])  # fmt: skip
    assert code != 0
    assert "Traceback" not in capsys.readouterr().err


def test_unknown_command_exits_2(capsys):
    _one_line_error(capsys, main(["no-such-command"]), "unknown command")


def test_nan_or_inf_features_are_refused_everywhere(tmp_path, capsys):
    import torch
    from opl_vad.lightning import VADModule
    from opl_vad.privacy_audit import PrivacyAudit
    from opl_vad.vad_data import VideoSet

    X = np.random.default_rng(0).standard_normal((4, 8, 6)).astype(np.float32)
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[1, 2, 3] = bad
        with pytest.raises(ValueError, match="NaN or inf"):
            VideoSet(Xb, [0, 1, 0, 1])
        with pytest.raises(ValueError, match="NaN or inf"):
            PrivacyAudit(folds=2).run(Xb.reshape(-1, 6), np.arange(32) % 2)
        module = VADModule(6, projection="none")
        batch = {"x": torch.as_tensor(Xb), "y": torch.tensor([0, 1, 0, 1])}
        with pytest.raises(ValueError, match="NaN or inf"):
            module.training_step(batch, 0)
    Xb = X.copy()
    Xb[0, 0, 0] = np.nan
    np.save(tmp_path / "x.npy", Xb)
    np.save(tmp_path / "f.npy", np.arange(32) % 2)
    _one_line_error(capsys, main(["audit", "--features", str(tmp_path / "x.npy"), "--face",
                                  str(tmp_path / "f.npy")]), "NaN or inf")  # fmt: skip
