"""Your own images (README "On your own data"): fit with alignment on, sample an RGB grid and
evaluate on the held-out split of a user's image folder, from the CLI, as the README's commands.

``tests/data/own-images`` (two classes of 24 x 32 RGB PNGs) is made by
``tests/data/make_own_images.py``.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from eostok.cli import main
from PIL import Image

IMAGES = Path(__file__).parent / "data" / "own-images"
# the README's fit command, made small (16 px, 4 steps, a lighter teacher) for the test
FIT = [
    "fit", "--config", "eostok:shapes-e2e-apr-align-warmup.yaml",
    "--data", "eostok.lightning.ImageFolderDataModule", "--data.path", str(IMAGES),
    "--data.batch_size", "8", "--data.test_fraction", "0.6", "--model.num_classes", "2",
]  # fmt: skip
SMALL = ["--data.image_size", "16", "--model.image_size", "16", "--model.patch_size", "4",
         "--trainer.max_steps", "4"]  # fmt: skip


def test_fit_sample_evaluate_on_an_rgb_folder_with_alignment(tmp_path, capsys):
    root = tmp_path / "run"
    assert main([*FIT, *SMALL, "--trainer.default_root_dir", str(root)]) == 0
    (ckpt,) = root.rglob("*.ckpt")
    from eostok.cli import _load

    module = _load(ckpt)
    assert module.hparams.align_weight > 0 and module.hparams.channels == 3
    assert module.teacher is None  # the teacher is rebuilt, not stored in the checkpoint

    grid = tmp_path / "samples.png"
    assert main(["sample", "--checkpoint", str(ckpt), "--classes", "0,1", "--per_class", "4",
                 "--out", str(grid)]) == 0  # fmt: skip
    img = np.asarray(Image.open(grid).convert("RGB"))
    assert img.ndim == 3 and img.shape[-1] == 3
    assert np.abs(img[..., 0].astype(int) - img[..., 2]).max() > 0  # colour, not grey

    out = tmp_path / "eval"
    argv = ["evaluate", "--checkpoint", str(ckpt), "--imagefolder", str(IMAGES)]
    argv += ["--test_fraction", "0.6"]
    assert main([*argv, "--n_samples", "32", "--out", str(out)]) == 0
    result = json.loads((out / "result.json").read_text())
    assert result["test_images"] == 20  # round(0.6 * 16) = 10 held out per class
    assert np.isfinite(result["PSNR"]) and 0 <= result["class acc"] <= 1
    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", str(ckpt), "--imagefolder", str(empty)]) == 2
    assert "no images" in capsys.readouterr().err
    assert main([*argv[:-2], "--test_fraction", "0.2"]) == 2  # 6 held out: too few for FID
    assert "held-out images" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--data.path", "no/such/folder"], "not found"),
        (["--model.channels", "1"], "the data has channels=3 but the model channels=1"),
        (["--model.num_classes", "1"], "the data has 2 classes but the model num_classes=1"),
    ],
)
def test_own_images_bad_input_is_one_line(argv, message, tmp_path, capsys):
    args = [*FIT, *SMALL, "--trainer.default_root_dir", str(tmp_path), *argv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    # the error is the last line, after the Trainer's GPU/TPU info lines (under pytest's capsys
    # a Lightning log handler bound to an earlier test's stream may also print noise here)
    assert err.splitlines()[-1].startswith("eostok: error: ") and message in err.splitlines()[-1]
