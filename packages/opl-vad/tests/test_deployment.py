"""The deployment path from the CLI, on the example input of the README's "On your own data".

fit -> predict --checkpoint -> audit -> export-projector, exactly the README's commands, run in a
temporary folder on ``tests/data/own`` (planted features in the RTFM list layout, written by
``opl-vad synth --out tests/data/own --n_train 16 --n_test 8 --dim 24 --n_snippets 8``). The
exported projector applied to the raw features must equal the model's own projection.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from icml26_shared.contract import assert_one_line_error
from opl_vad.cli import main

OWN = Path(__file__).resolve().parent / "data" / "own"

FIT = ["fit", "--config", "opl-vad:real-data/rtfm-gopl-contrast-features.yaml",
       "--model.dim", "24", "--model.rank_task", "2", "--model.rank_face", "2",
       "--data.init_args.train_list", "own/train.list",
       "--data.init_args.test_list", "own/test.list",
       "--data.init_args.test_gt", "own/test_gt.npy",
       "--data.init_args.face_dir", "own/faces",
       "--data.init_args.n_snippets", "8", "--data.init_args.batch_pairs", "4",
       "--trainer.max_epochs", "3"]  # fmt: skip


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """The README's fit command in a fresh folder; returns (folder, checkpoint)."""
    work = tmp_path_factory.mktemp("own")
    shutil.copytree(OWN, work / "own")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(FIT) == 0
    ckpts = sorted((work / "lightning_logs").glob("version_*/checkpoints/*.ckpt"))
    assert len(ckpts) == 1
    return work, ckpts[0]


def test_fit_predict_audit_export(fitted, monkeypatch, capsys):
    from opl_vad.lightning import FeatureListDataModule, VADModule
    from opl_vad.projection import FixedProjection

    work, ckpt = fitted
    monkeypatch.chdir(work)
    assert main(["predict", "--checkpoint", str(ckpt), "--list", "own/test.list",
                 "--face_dir", "own/test_faces", "--gt", "own/test_gt.npy",
                 "--out", "pred"]) == 0  # fmt: skip
    result = json.loads((work / "pred" / "result.json").read_text())
    assert result["videos"] == 8 and result["snippets"] == 64
    assert 0.0 <= result["metrics"]["frame_auc"] <= 1.0
    assert result["audit_kept"]["face_chance"] >= 0.5
    assert 0.0 <= result["audit_raw"]["face_probe_acc"] <= 1.0
    kept = np.load(work / "pred" / "kept_features.npy")
    groups = np.load(work / "pred" / "snippet_video.npy")
    frames = np.load(work / "pred" / "frame_scores.npy")
    assert kept.shape == (64, 24) and groups.shape == (64,) and frames.shape == (64 * 16,)
    assert len(np.load(work / "own" / "test_gt.npy")) == len(frames)
    csv = (work / "pred" / "snippet_scores.csv").read_text().splitlines()
    assert csv[0] == "video,snippet,score,face" and len(csv) == 65

    # the scores are the model's own scores of the listed features
    module = VADModule.load_from_checkpoint(ckpt, map_location="cpu").eval()
    paths, _ = FeatureListDataModule.read_list(str(work / "own" / "test.list"))
    raw = np.concatenate([FeatureListDataModule.load_features(p) for p in paths])
    with torch.no_grad():
        scores = module(torch.as_tensor(raw[:8])[None])[0].numpy()
        own_kept = module.kept(torch.as_tensor(raw)).numpy()
    first = [float(line.split(",")[2]) for line in csv[1:9]]
    np.testing.assert_allclose(first, scores, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(kept, own_kept, atol=1e-5)

    assert main(["audit", "--features", "pred/kept_features.npy", "--face", "pred/face.npy",
                 "--groups", "pred/snippet_video.npy", "--folds", "4", "--out", "pred"]) == 0  # fmt: skip
    audit = json.loads((work / "pred" / "audit.json").read_text())
    assert 0.0 <= audit["face_probe_acc"] <= 1.0

    assert main(["export-projector", "--checkpoint", str(ckpt), "--out", "projector.pt"]) == 0
    fixed = FixedProjection.from_file(work / "projector.pt")
    with torch.no_grad():
        exported = fixed(torch.as_tensor(raw)).numpy()
    np.testing.assert_allclose(exported, own_kept, atol=1e-5)
    np.testing.assert_allclose(exported, kept, atol=1e-5)
    state = torch.load(work / "projector.pt", weights_only=True)
    P = state["projector"].double()
    assert torch.allclose(P @ P, P, atol=1e-5) and int(state["rank_face"]) == 2
    assert state["basis"].shape == (24, 4)
    capsys.readouterr()


def test_deployment_bad_input(fitted, monkeypatch, capsys):
    work, ckpt = fitted
    monkeypatch.chdir(work)
    code = main(["predict", "--checkpoint", str(ckpt), "--list", "nope.list", "--out", "p"])
    assert_one_line_error(capsys.readouterr().err, "does not exist", code)
    code = main(["predict", "--checkpoint", "missing.ckpt", "--list", "own/test.list",
                 "--out", "p"])  # fmt: skip
    assert_one_line_error(capsys.readouterr().err, "missing.ckpt", code)
    code = main(
        [
            "predict",
            "--checkpoint",
            str(ckpt),
            "--list",
            "own/test.list",
            "--face_dir",
            "own",
            "--out",
            "p",
        ]
    )  # no <video>_face.npy there
    assert_one_line_error(capsys.readouterr().err, "face signal", code)
    code = main(["export-projector", "--checkpoint", "missing.ckpt", "--out", "p.pt"])
    assert_one_line_error(capsys.readouterr().err, "missing.ckpt", code)
