"""The real-data path: RTFM / UR-DMU list files, labels, face signals, and their bad input."""

from pathlib import Path

import numpy as np
import pytest
import torch
from icml26_shared.contract import assert_one_line_error
from opl_vad.cli import main
from opl_vad.lightning import FeatureListDataModule, VADModule

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.fixture
def synth(tmp_path):
    assert main(["synth", "--out", str(tmp_path), "--n_train", "6", "--n_test", "4",
                 "--dim", "32", "--n_snippets", "8"]) == 0  # fmt: skip
    return tmp_path


def test_synth_round_trip_labels_face_and_frames(synth):
    """`opl-vad synth` files load with the right labels, face signal and frame ground truth."""
    dm = FeatureListDataModule(str(synth / "train.list"), str(synth / "test.list"),
                               str(synth / "test_gt.npy"), n_snippets=4,
                               face_dir=str(synth / "faces"), batch_pairs=2)  # fmt: skip
    dm.setup()
    names = (synth / "train.list").read_text().split()
    expected = [0 if Path(n).name.startswith("Normal") else 1 for n in names]
    assert dm.train_set.y.tolist() == expected and 0 < sum(expected) < len(expected)
    assert dm.train_set.x.shape == (6, 4, 32) and dm.train_set.face.shape == (6, 4)
    assert bool(((dm.train_set.face >= 0) & (dm.train_set.face <= 1)).all())
    batches = list(dm.test_dataloader())
    assert len(batches) == 4 and batches[0]["frame_y"].shape == (1, 8 * 16)
    gt = np.load(synth / "test_gt.npy")
    assert int(sum(b["frame_y"].sum() for b in batches)) == int(gt.sum())
    # G-OPL trains on it (the face signal reaches the guidance losses)
    module = VADModule(32, head="rtfm", projection="gopl", rank_task=2, rank_face=2)
    loss = module.training_step(next(iter(dm.train_dataloader())), 0)
    assert torch.isfinite(loss)


def test_gopl_without_a_face_signal_says_so(synth):
    dm = FeatureListDataModule(str(synth / "train.list"), str(synth / "test.list"),
                               n_snippets=4, batch_pairs=2)  # fmt: skip
    dm.setup()
    module = VADModule(32, projection="gopl", rank_task=2, rank_face=2)
    with pytest.raises(ValueError, match="face_dir"):
        module.training_step(next(iter(dm.train_dataloader())), 0)


def test_label_rules(tmp_path):
    x = np.zeros((5, 3), np.float32)
    for n in ("a.npy", "b.npy", "c.npy", "Normal_Videos_001_x264.npy", "v_label_A.npy"):
        np.save(tmp_path / n, x)
    lst = tmp_path / "l.list"
    lst.write_text("a.npy\nb.npy 0\nc.npy\nNormal_Videos_001_x264.npy\nv_label_A.npy\n")
    _, y = FeatureListDataModule.read_list(str(lst))
    assert y.tolist() == [1, 0, 1, 0, 0]  # names, except the explicit column of b
    _, y = FeatureListDataModule.read_list(str(lst), n_abnormal=1)  # RTFM: abnormal first
    assert y.tolist() == [1, 0, 0, 0, 0]
    lst.write_text("a.npy 2\n")
    with pytest.raises(ValueError, match="line 1: video label '2'"):
        FeatureListDataModule.read_list(str(lst))
    lst.write_text("a.npy\n")
    with pytest.raises(ValueError, match="n_abnormal=3"):
        FeatureListDataModule.read_list(str(lst), n_abnormal=3)


def test_urdmu_crop_files_are_grouped_and_ten_crops_averaged(tmp_path):
    rng = np.random.default_rng(0)
    crops = rng.standard_normal((3, 7, 4)).astype(np.float32)  # 3 crops of (T=7, D=4)
    for k in range(3):
        np.save(tmp_path / f"Abuse028_x264__{k}.npy", crops[k])
    np.save(tmp_path / "Normal_Videos_003_x264.npy", crops.transpose(1, 0, 2))  # (T, 3, D)
    lst = tmp_path / "u.list"
    lst.write_text("".join(f"Abuse028_x264__{k}.npy\n" for k in range(3))
                   + "Normal_Videos_003_x264.npy\n")  # fmt: skip
    videos, y = FeatureListDataModule.read_list(str(lst))
    assert [len(v) for v in videos] == [3, 1] and y.tolist() == [1, 0]
    a, b = (FeatureListDataModule.load_features(v) for v in videos)
    np.testing.assert_allclose(a, crops.mean(0), rtol=1e-6)
    np.testing.assert_allclose(b, crops.mean(0), rtol=1e-6)


def test_bad_face_files_are_named(synth):
    f = synth / "faces" / "Normal_0000_face.npy"
    if not f.exists():
        f = next((synth / "faces").iterdir())
    for bad, match in ((np.zeros(3), "has 3 values"), (np.full(8, 1.5), r"outside \[0, 1\]")):
        np.save(f, bad)
        dm = FeatureListDataModule(str(synth / "train.list"), str(synth / "test.list"),
                                   face_dir=str(synth / "faces"), n_snippets=4)  # fmt: skip
        with pytest.raises(ValueError, match=match):
            dm.setup()
    f.unlink()
    with pytest.raises(FileNotFoundError, match=f.name):
        dm.setup()


def test_missing_feature_file_is_named(tmp_path, capsys):
    (tmp_path / "train.list").write_text("missing_Normal.npy\n")
    with pytest.raises(FileNotFoundError, match="missing_Normal.npy"):
        FeatureListDataModule.read_list(str(tmp_path / "train.list"))
    # through `opl-vad fit`: one line naming the file, non-zero exit
    code = main(["fit", "--config", str(CONFIGS / "real-data" / "rtfm-gopl-contrast-features.yaml"),
                 "--data.init_args.train_list", str(tmp_path / "train.list"),
                 "--data.init_args.test_list", str(tmp_path / "train.list"),
                 "--trainer.default_root_dir", str(tmp_path)])  # fmt: skip
    assert_one_line_error(capsys.readouterr().err, "missing_Normal.npy", code)
