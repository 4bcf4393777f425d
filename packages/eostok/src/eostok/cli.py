"""Command line of eostok: ``eostok --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~eostok.lightning.EOSTokModule`
and any data module, named in the config as ``data: {class_path: ...}``:
:class:`~eostok.lightning.DigitsDataModule`, :class:`~eostok.lightning.ShapesDataModule`
or the real path :class:`~eostok.lightning.HFImageDataModule`), ``reproduce``, and the package
commands ``sample`` (a class-conditional sample grid from a checkpoint) and ``evaluate`` (all
metric columns of a checkpoint on the test digits).

Nothing heavy is imported until a command runs: ``eostok --help`` reads the commands' summaries
from this file's source (string targets in :func:`build_cli`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from icml26_shared.cli import PaperCLI, UsageError, load_checkpoint

from .paper import PAPER


def _load(checkpoint: Path):
    from eostok.lightning import EOSTokModule

    return load_checkpoint(EOSTokModule, checkpoint)


def sample(
    checkpoint: Path,
    out: Path,
    classes: str = "0,1,2,3,4,5,6,7,8,9",
    per_class: int = 8,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed: int = 0,
) -> None:
    """Write a PNG grid of class-conditional samples (no classifier-free guidance).

    Args:
        checkpoint: Lightning checkpoint written by ``eostok fit``.
        out: PNG file to write.
        classes: Comma-separated class labels (one grid row each).
        per_class: Samples per class.
        temperature: Sampling temperature (> 0).
        top_k: Keep only the top-k codes at each step (1..codebook size).
        seed: Sampling seed.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import torch

    from eostok.evaluation import generate

    try:
        labels = [int(c) for c in classes.split(",") if c.strip()]
    except ValueError:
        raise UsageError(f"classes must be comma-separated integers, got {classes!r}") from None
    if per_class < 1:
        raise UsageError(f"per_class must be at least 1, got {per_class}")
    module = _load(checkpoint)
    y = torch.tensor(labels).repeat_interleave(per_class)
    imgs = generate(module, y, temperature, top_k, seed)[:, 0]
    h, w = imgs.shape[-2:]
    grid = (
        imgs.reshape(len(labels), per_class, h, w)
        .permute(0, 2, 1, 3)
        .reshape(len(labels) * h, per_class * w)
    )
    fig, ax = plt.subplots(figsize=(per_class * 0.6, len(labels) * 0.6))
    ax.imshow(grid.numpy(), cmap="gray", vmin=0, vmax=1)
    ax.axis("off")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {out}")


def evaluate(checkpoint: Path, n_samples: int = 500, seed: int = 0, data: str = "auto") -> None:
    """Print PSNR, SSIM, codebook usage/perplexity, AR NLL, proxy rFID/gFID, precision/recall, class accuracy.

    Args:
        checkpoint: Lightning checkpoint written by ``eostok fit``.
        n_samples: Number of generated samples for the proxy FID (> 16, the feature dim).
        seed: Seed of the metric CNN (trained here on the training images) and of sampling.
        data: ``digits``, ``shapes`` or ``auto`` (shapes for 3-channel models, else digits).
    """
    from eostok.digits_data import load_digits_images
    from eostok.evaluation import evaluate_model
    from eostok.feature_net import train_feature_net
    from eostok.shapes_data import load_shapes_images

    if n_samples <= 16:
        raise UsageError(f"n_samples must exceed the 16 feature dimensions, got {n_samples}")
    if data not in ("auto", "digits", "shapes"):
        raise UsageError(f"data must be auto, digits or shapes, got {data!r}")
    module = _load(checkpoint)
    hp = module.hparams
    if data == "auto":
        data = "shapes" if hp.get("channels", 1) == 3 else "digits"
    if data == "shapes":
        xtr, ytr, xte, yte = load_shapes_images(image_size=hp.image_size)
    else:
        xtr, ytr, xte, yte = load_digits_images(hp.image_size)
    metric = train_feature_net(xtr, ytr, seed=seed + 2000)
    for key, value in evaluate_model(module, xte, yte, metric, n_samples, seed).items():
        print(f"{key}: {value:.4f}")


def build_cli() -> PaperCLI:
    """The package's CLI (nothing heavy is imported until a command runs)."""
    return PaperCLI(
        PAPER,
        model_class="eostok.lightning:EOSTokModule",
        # any LightningDataModule, named by class_path in the config (eostok.lightning's)
        datamodule_class="lightning.pytorch:LightningDataModule",
        subclass_mode_data=True,
        commands={"sample": "eostok.cli:sample", "evaluate": "eostok.cli:evaluate"},
    )


def main(args: Sequence[str] | None = None) -> int:
    """Entry point of the ``eostok`` console script."""
    return build_cli().main(args)
