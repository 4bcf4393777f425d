"""Image-quality metrics (torchmetrics): PSNR and SSIM on the full image and on missing pixels.

Images are in ``[-1, 1]``; metrics use ``data_range = 2``. ``psnr_masked`` restricts the MSE to
the missing pixels (the ones the prior has to fill in), the paper's most telling quantity for
inpainting. LPIPS needs pretrained network weights that this offline package cannot download:
:func:`require_lpips` raises a one-line error naming them when they are not cached.
:func:`score` gives every metric of one reconstruction; :func:`mean_std` formats a table cell.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torchmetrics.functional.image import (
    peak_signal_noise_ratio,
    structural_similarity_index_measure,
)

DATA_RANGE = 2.0


def psnr(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Per-image PSNR in dB, ``(B,)``.

    Examples
    --------
    >>> ref = torch.zeros(1, 1, 4, 4); x = ref + 0.2
    >>> round(float(psnr(x, ref)[0]), 2)  # 10 log10(4 / 0.04)
    20.0
    """
    return torch.stack(
        [
            peak_signal_noise_ratio(a[None], b[None], data_range=DATA_RANGE)
            for a, b in zip(x, ref, strict=True)
        ]
    )


def psnr_masked(x: torch.Tensor, ref: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-image PSNR over the pixels where ``mask == 1`` (``(B,)``)."""
    if mask.shape != x.shape:
        raise ValueError(f"mask shape {tuple(mask.shape)} does not match images {tuple(x.shape)}")
    n = mask.flatten(1).sum(1).clamp_min(1)
    mse = ((mask * (x - ref)) ** 2).flatten(1).sum(1) / n
    return 10 * torch.log10(DATA_RANGE**2 / mse.clamp_min(1e-12))


def ssim(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Per-image SSIM (Gaussian window 7, small images), ``(B,)``."""
    k = min(7, x.shape[-1] - (1 - x.shape[-1] % 2))
    return structural_similarity_index_measure(
        x, ref, data_range=DATA_RANGE, kernel_size=k, reduction="none"
    )


def ssim_masked(x: torch.Tensor, ref: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-image mean of the local SSIM map over the pixels where ``mask == 1`` (``(B,)``).

    Examples
    --------
    >>> ref = torch.rand(2, 1, 8, 8) * 2 - 1; mask = torch.zeros_like(ref); mask[..., :4] = 1
    >>> ssim_masked(ref, ref, mask).tolist()  # identical images: SSIM 1 wherever you look
    [1.0, 1.0]
    """
    if mask.shape != x.shape:
        raise ValueError(f"mask shape {tuple(mask.shape)} does not match images {tuple(x.shape)}")
    k = min(7, x.shape[-1] - (1 - x.shape[-1] % 2))
    _, smap = structural_similarity_index_measure(
        x, ref, data_range=DATA_RANGE, kernel_size=k, reduction="none", return_full_image=True
    )
    n = mask.flatten(1).sum(1).clamp_min(1)
    return (mask * smap).flatten(1).sum(1) / n


LPIPS_WEIGHTS = (
    "torchvision vgg16 ImageNet weights (vgg16-397923af.pth) and the LPIPS linear layers"
)


def require_lpips() -> None:
    """Raise ``RuntimeError`` unless LPIPS-VGG weights are already in the torch hub cache."""
    hub = (
        Path(os.environ.get("TORCH_HOME", Path.home() / ".cache" / "torch")) / "hub" / "checkpoints"
    )
    if not (hub / "vgg16-397923af.pth").is_file():
        shown = f"~/{hub.relative_to(Path.home())}" if hub.is_relative_to(Path.home()) else hub
        raise RuntimeError(
            f"LPIPS needs {LPIPS_WEIGHTS}; they are not cached under {shown} and this run is offline. "
            "Download them once with torchmetrics' LearnedPerceptualImagePatchSimilarity(net_type='vgg') "
            "on a machine with internet, or drop --lpips."
        )


def lpips_vgg():
    """LPIPS-VGG as ``f(x, ref) -> (B,)`` on ``[-1, 1]`` images (gray is repeated to RGB).

    Raises the :func:`require_lpips` error when the weights are not cached (never downloads).
    """
    require_lpips()
    from torchmetrics.functional.image.lpips import learned_perceptual_image_patch_similarity

    def metric(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:  # pragma: no cover - weights
        if x.shape[1] == 1:
            x, ref = x.repeat(1, 3, 1, 1), ref.repeat(1, 3, 1, 1)
        return torch.stack(
            [
                learned_perceptual_image_patch_similarity(a[None], b[None], net_type="vgg")
                for a, b in zip(x.clamp(-1, 1), ref, strict=True)
            ]
        )

    return metric


def score(
    x_hat: torch.Tensor, x: torch.Tensor, missing: torch.Tensor | None
) -> dict[str, torch.Tensor]:
    """Per-image PSNR and SSIM of ``x_hat`` against ``x``, on the whole image and on ``missing``.

    ``missing`` is the 0/1 mask of pixels the operator hid (``Operator.missing_pixels``);
    ``None`` (blur, super-resolution: no pixel is hidden) makes the missing-pixel metrics the
    whole-image ones. Keys: ``psnr_full``, ``ssim_full``, ``psnr_missing``, ``ssim_missing``.
    """
    full = {"psnr_full": psnr(x_hat, x), "ssim_full": ssim(x_hat, x)}
    if missing is None:
        return {**full, "psnr_missing": full["psnr_full"], "ssim_missing": full["ssim_full"]}
    return {**full, "psnr_missing": psnr_masked(x_hat, x, missing),
            "ssim_missing": ssim_masked(x_hat, x, missing)}  # fmt: skip


def mean_std(values: torch.Tensor) -> str:
    """A table cell ``"mean ± std"`` over images, two decimals.

    >>> mean_std(torch.tensor([20.0, 22.0]))
    '21.00 ± 1.41'
    """
    return f"{float(values.mean()):.2f} ± {float(values.std()):.2f}"


def cell_mean(cell) -> float:
    """The mean of a ``"m ± s"`` table cell (or a number).

    >>> cell_mean("21.00 ± 1.41"), cell_mean(3)
    (21.0, 3.0)
    """
    return float(str(cell).split()[0])
