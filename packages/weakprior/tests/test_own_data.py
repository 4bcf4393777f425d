"""`weakprior reconstruct --out` on the example image of the README ("On your own data"), and
one prior cache shared by the Python API and the CLI."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from weakprior.cli import main

DATA = Path(__file__).parent / "data"


def _readme_commands(section: str) -> list[list[str]]:
    """The `weakprior ...` lines of the README's bash blocks in `section`."""
    text = (Path(__file__).parents[1] / "README.md").read_text()
    body = text.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    lines = [ln.split("#")[0].strip() for ln in body.splitlines()]
    return [ln.split()[1:] for ln in lines if ln.startswith("weakprior reconstruct")]


def test_readme_own_data_tv_command_writes_images(tmp_path, monkeypatch, capsys):
    """The README's TV command on the shipped colour image: PNGs, array and metrics JSON."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(DATA / "astronaut-face.png", tmp_path / "astronaut-face.png")
    commands = [c for c in _readme_commands("On your own data") if "tv" in c]
    assert commands, "the README shows a --solver tv command"
    assert main(commands[0]) == 0
    out = tmp_path / commands[0][commands[0].index("--out") + 1]
    for name in ("reconstruction.png", "measurement.png", "comparison.png"):
        img = np.asarray(Image.open(out / name))
        assert img.ndim == 3 and img.shape[-1] == 3, f"{name} is colour"  # not greyscaled
    rec = np.load(out / "reconstruction.npy")
    assert rec.shape == (1, 3, 24, 24) and rec.min() >= -1 and rec.max() <= 1
    result = json.loads((out / "result.json").read_text())
    assert result["colour_per_channel"] is True
    # half the pixels are black in the measurement; TV fills them in (measured: 22.8 dB whole
    # image, 19.6 dB on the missing pixels), far above the zero-filled measurement (~8 dB)
    assert result["psnr_full"][0] > 18 and result["psnr_missing"][0] > 15
    view = np.asarray(Image.open(out / "measurement.png"), float)
    assert (view.max(-1) == 0).mean() > 0.3  # the missing pixels are shown black
    assert "PSNR missing" in capsys.readouterr().out


def test_grey_domain_images_and_blur_write_one_file_per_image(tmp_path):
    assert main(["reconstruct", "--solver", "tv", "--operator", "sr", "--n_images", "2",
                 "--image_size", "8", "--iterations", "5", "--out", str(tmp_path)]) == 0  # fmt: skip
    assert {p.name for p in tmp_path.glob("*.png")} == {
        "reconstruction-0.png", "measurement-0.png", "reconstruction-1.png",
        "measurement-1.png", "comparison.png"}  # fmt: skip
    assert np.asarray(Image.open(tmp_path / "comparison.png")).ndim == 2  # grey stays grey


def test_unwritable_out_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert main(["reconstruct", "--solver", "tv", "--out", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err.strip()
    assert "not a folder" in err and len(err.splitlines()) == 1


def test_prior_trained_through_the_api_is_reused_by_the_cli(tmp_path, monkeypatch):
    """One cache: the CLI finds the API's prior and never starts a Trainer."""
    import weakprior.lightning as lightning

    monkeypatch.setenv("WEAKPRIOR_CACHE", str(tmp_path / "cache"))
    prior = lightning.train_prior("digits", 3, image_size=8, width=16, batch_size=32)
    assert prior.cache_file.parent == lightning.prior_cache()

    def no_training(*args, **kwargs):
        raise AssertionError("the CLI retrained a cached prior")

    monkeypatch.setattr(lightning, "quiet_trainer", no_training)
    out = tmp_path / "out"
    assert main(["reconstruct", "--target", "digits", "--prior", "digits", "--image_size", "8",
                 "--prior_steps", "3", "--n_images", "1", "--iterations", "2",
                 "--out", str(out)]) == 0  # fmt: skip
    assert (
        json.loads((out / "result.json").read_text())["prior_cache_file"] == prior.cache_file.name
    )
    # a different configuration is not silently served from the cache
    with pytest.raises(AssertionError, match="retrained"):
        lightning.train_prior("digits", 4, image_size=8, width=16, batch_size=32)
