"""The weakprior command line: help, package commands, and one clear line for bad input."""

import pytest
from weakprior.cli import main
from weakprior.paper import PAPER


def test_help_lists_the_package_commands_without_torch():
    """``--help`` reads the command summaries from source (issue #51): no torch, no lightning."""
    import subprocess
    import sys

    code = (
        "import sys; from weakprior.cli import main; rc = main(['--help']); "
        "heavy = [m for m in ('torch', 'lightning') if m in sys.modules]; "
        "print('HEAVY', heavy); sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "HEAVY []" in out.stdout
    for cmd in ("reconstruct", "correlation", "posterior"):
        assert f"  {cmd}" in out.stdout
    assert PAPER.title in out.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--keep_ratio", "0"], "keep_ratio must lie in (0, 1]"),
        (["--keep_ratio", "1.5"], "keep_ratio must lie in (0, 1]"),
        (["--sigma", "-0.1"], "sigma must be >= 0"),
        (["--lpips", "--solver", "tv"], "vgg16-397923af.pth"),
        (["--solver", "nope"], "solver"),
        (["--checkpoint", "missing.ckpt"], "does not exist"),
        (["--checkpoint", "corrupt.ckpt"], "cannot read prior checkpoint"),
        (["--image", "missing.png", "--solver", "tv"], "does not exist"),
    ],
)
def test_reconstruct_bad_input_one_line(capsys, monkeypatch, tmp_path, args, message):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corrupt.ckpt").write_bytes(b"not a checkpoint")
    assert main(["reconstruct", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_reconstruct_own_image(capsys, tmp_path):
    from PIL import Image

    path = tmp_path / "x.png"
    Image.new("L", (8, 8), color=128).save(path)
    assert (
        main(
            [
                "reconstruct",
                "--image",
                str(path),
                "--solver",
                "tv",
                "--image_size",
                "8",
                "--iterations",
                "20",
            ]
        )
        == 0
    )
    assert "PSNR" in capsys.readouterr().out


def test_reconstruct_tv_and_correlation_and_posterior(capsys):
    assert (
        main(
            [
                "reconstruct",
                "--solver",
                "tv",
                "--n_images",
                "2",
                "--image_size",
                "8",
                "--iterations",
                "20",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "PSNR missing" in out
    assert (
        main(
            [
                "correlation",
                "--domain",
                "digits",
                "--n",
                "16",
                "--image_size",
                "8",
                "--max_offset",
                "2",
            ]
        )
        == 0
    )
    assert "k=2" in capsys.readouterr().out
    assert (
        main(
            [
                "posterior",
                "--n_images",
                "2",
                "--image_size",
                "8",
                "--keep_ratios",
                "[0.5]",
                "--prior",
                "digits",
            ]
        )
        == 0
    )
    assert "keep 0.5" in capsys.readouterr().out


def test_fit_smoke_config(tmp_path):
    from pathlib import Path

    config = Path(__file__).parents[1] / "configs" / "smoke.yaml"
    assert main(["fit", "--config", str(config), "--trainer.default_root_dir", str(tmp_path)]) == 0


def test_reconstruct_pretrained_offline_names_the_model(capsys, monkeypatch, tmp_path):
    """The real path goes through the offline-aware loader: one line naming the model id."""
    import sys
    import types

    from icml26_shared.contract import assert_one_line_error
    from PIL import Image

    class _NotCached:  # stands in for diffusers.UNet2DModel (importing diffusers takes ~25 s)
        @staticmethod
        def from_pretrained(model_id, *args, local_files_only=False, **kwargs):
            raise OSError(f"{model_id} is not in the cache")

    monkeypatch.setitem(sys.modules, "diffusers", types.SimpleNamespace(UNet2DModel=_NotCached))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = tmp_path / "face.png"
    Image.new("RGB", (8, 8), color=(120, 90, 60)).save(path)
    args = ["reconstruct", "--pretrained", "google/ddpm-ema-church-256", "--image", str(path)]
    code = main(args)
    assert_one_line_error(capsys.readouterr().err, "google/ddpm-ema-church-256", code)
    code = main(["reconstruct", "--pretrained", "google/ddpm-ema-church-256"])
    assert_one_line_error(capsys.readouterr().err, "--pretrained needs --image", code)
