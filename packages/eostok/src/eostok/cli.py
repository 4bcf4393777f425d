"""Command line of eostok: ``eostok --help``.

``fit/validate/test/predict`` (LightningCLI over :class:`~eostok.lightning.EOSTokModule`
and any data module, named in the config as ``data: {class_path: ...}``:
:class:`~eostok.lightning.DigitsDataModule`, :class:`~eostok.lightning.ShapesDataModule`
your own images :class:`~eostok.lightning.ImageFolderDataModule`, or the real path
:class:`~eostok.lightning.HFImageDataModule`), ``reproduce``, and the package commands
``sample`` (a class-conditional sample grid from a checkpoint, RGB or greyscale) and
``evaluate`` (all metric columns of a checkpoint on the test digits, shapes or your image
folder).

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
    from icml26_shared.results import atomic_write_figure

    from eostok.evaluation import generate

    try:
        labels = [int(c) for c in classes.split(",") if c.strip()]
    except ValueError:
        raise UsageError(f"classes must be comma-separated integers, got {classes!r}") from None
    if per_class < 1:
        raise UsageError(f"per_class must be at least 1, got {per_class}")
    module = _load(checkpoint)
    n_classes = int(module.hparams.num_classes)
    if any(not 0 <= c < n_classes for c in labels):
        raise UsageError(f"classes must lie in [0, {n_classes}) for this checkpoint")
    y = torch.tensor(labels).repeat_interleave(per_class)
    imgs = generate(module, y, temperature, top_k, seed)  # (N, C, H, W) in [0, 1]
    c, h, w = imgs.shape[1:]
    grid = (
        imgs.reshape(len(labels), per_class, c, h, w)
        .permute(0, 3, 1, 4, 2)  # (rows, H, per_class, W, C)
        .reshape(len(labels) * h, per_class * w, c)
    )
    fig, ax = plt.subplots(figsize=(per_class * 0.6, len(labels) * 0.6))
    if c == 1:
        ax.imshow(grid[..., 0].numpy(), cmap="gray", vmin=0, vmax=1)
    else:
        ax.imshow(grid.numpy())
    ax.axis("off")
    atomic_write_figure(out, fig)
    print(f"wrote {out}")


def evaluate(
    checkpoint: Path,
    n_samples: int = 500,
    seed: int = 0,
    data: str = "auto",
    imagefolder: Path | None = None,
    test_fraction: float = 0.2,
    out: Path | None = None,
) -> None:
    """Print PSNR, SSIM, codebook usage/perplexity, AR NLL, proxy rFID/gFID, precision/recall, class accuracy.

    Args:
        checkpoint: Lightning checkpoint written by ``eostok fit``.
        n_samples: Number of generated samples for the proxy FID (> 16, the feature dim).
        seed: Seed of the metric CNN (trained here on the training images) and of sampling.
        data: ``digits``, ``shapes`` or ``auto`` (shapes for 3-channel models, else digits).
        imagefolder: Your own image folder (``<class>/<image>``), as given to ``fit`` with
            ``eostok.lightning.ImageFolderDataModule``: the metric CNN is trained on its
            training split and the model is scored on its held-out split (same seeded split
            as ``fit`` with ``--data.seed 0`` and this ``test_fraction``).
        test_fraction: Held-out fraction of each class of ``imagefolder``.
        out: Folder for ``result.json`` (default: print only).
    """
    import json

    from icml26_shared.results import atomic_write_text

    from eostok.digits_data import load_digits_images
    from eostok.evaluation import evaluate_model
    from eostok.feature_net import train_feature_net
    from eostok.image_folder import load_image_folder, split_images
    from eostok.shapes_data import load_shapes_images

    if n_samples <= 16:
        raise UsageError(f"n_samples must exceed the 16 feature dimensions, got {n_samples}")
    if data not in ("auto", "digits", "shapes"):
        raise UsageError(f"data must be auto, digits or shapes, got {data!r}")
    module = _load(checkpoint)
    hp = module.hparams
    if imagefolder is not None:
        x, y, names = load_image_folder(imagefolder, hp.image_size, hp.get("channels", 1))
        if len(names) > hp.num_classes:
            raise UsageError(
                f"{imagefolder} has {len(names)} classes, the checkpoint {hp.num_classes}"
            )
        xtr, ytr, xte, yte = split_images(x, y, test_fraction, seed=0)
        if len(xte) <= 16:
            raise UsageError(
                f"{imagefolder}: {len(xte)} held-out images; the Frechet distances need more "
                "than 16 (the feature dimension): add images or raise --test_fraction (and the "
                "same --data.test_fraction in fit)"
            )
        data = str(imagefolder)
    elif (data == "auto" and hp.get("channels", 1) == 3) or data == "shapes":
        xtr, ytr, xte, yte = load_shapes_images(image_size=hp.image_size)
        data = "shapes"
    else:
        xtr, ytr, xte, yte = load_digits_images(hp.image_size)
        data = "digits"
    metric = train_feature_net(xtr, ytr, seed=seed + 2000)
    result = {
        k: float(v) for k, v in evaluate_model(module, xte, yte, metric, n_samples, seed).items()
    }
    for key, value in result.items():
        print(f"{key}: {value:.4f}")
    if out is not None:
        record = {"checkpoint": str(checkpoint), "data": data, "test_images": len(xte), **result}
        path = atomic_write_text(Path(out) / "result.json", json.dumps(record, indent=2) + "\n")
        print(f"wrote {path}")


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
