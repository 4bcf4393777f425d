"""Images in and out of ``weakprior reconstruct``: reading a user's image, showing a measurement,
writing PNGs atomically.

The solvers and priors of this package work on single-channel images in ``[-1, 1]``; a colour
image is reconstructed **channel by channel** (:func:`channels_as_batch` turns ``(1, 3, H, W)``
into a batch of three grey images under the same mask, :func:`batch_as_channels` turns the
reconstruction back into one colour image). Nothing is silently converted to grey.

* :func:`measurement_view` -- what the measurement looks like as an image of the original size
  (missing pixels black for inpainting, nearest-neighbour upsampling for super-resolution, the
  blurred image for blur);
* :func:`write_png` -- one image ``(C, H, W)`` in ``[-1, 1]`` as an 8-bit PNG, atomically;
* :func:`comparison_grid` -- truth | measurement | reconstruction side by side, one row per
  image, as one ``(C, H', W')`` tensor.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .operators import BoxInpainting, Downsample, MaskInpainting, Operator, RandomInpainting


def channels_as_batch(x: torch.Tensor) -> torch.Tensor:
    """``(1, C, H, W)`` -> ``(C, 1, H, W)``: each colour channel becomes one grey image.

    >>> channels_as_batch(torch.zeros(1, 3, 4, 4)).shape
    torch.Size([3, 1, 4, 4])
    """
    if x.dim() != 4 or x.shape[0] != 1:
        raise ValueError(f"expected one image (1, C, H, W), got {tuple(x.shape)}")
    return x.transpose(0, 1).contiguous()


def batch_as_channels(x: torch.Tensor) -> torch.Tensor:
    """The inverse of :func:`channels_as_batch`: ``(C, 1, H, W)`` -> ``(1, C, H, W)``."""
    return x.transpose(0, 1).contiguous()


def measurement_view(operator: Operator, y: torch.Tensor, x_shape: tuple[int, ...]) -> torch.Tensor:
    """The measurement ``y`` shown at the image's size, in ``[-1, 1]``.

    Inpainting: observed pixels as measured, missing pixels black (-1). Super-resolution: the
    low-resolution image upsampled by pixel replication. Anything else (blur): ``y`` itself.
    """
    if isinstance(operator, (RandomInpainting, BoxInpainting, MaskInpainting)):
        keep = operator.observed(tuple(x_shape))
        return (keep * y + (1 - keep) * -1.0).clamp(-1, 1)
    if isinstance(operator, Downsample):
        return F.interpolate(y, scale_factor=operator.factor, mode="nearest").clamp(-1, 1)
    return y.clamp(-1, 1)


def _to_uint8(img: torch.Tensor) -> np.ndarray:
    arr = ((img.detach().float().clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8).numpy()
    return arr[0] if arr.shape[0] == 1 else np.moveaxis(arr, 0, -1)


def write_png(path: str | Path, img: torch.Tensor, scale: int = 1) -> Path:
    """Write one image ``(C, H, W)`` in ``[-1, 1]`` (C = 1 or 3) as a PNG, atomically.

    ``scale`` enlarges it by pixel replication (small images are easier to look at).
    """
    from icml26_shared.results import atomic_write_bytes
    from PIL import Image

    if img.dim() != 3 or img.shape[0] not in (1, 3):
        raise ValueError(f"write_png expects (1 or 3, H, W), got {tuple(img.shape)}")
    if scale > 1:
        img = img.repeat_interleave(scale, -1).repeat_interleave(scale, -2)
    buf = io.BytesIO()
    Image.fromarray(_to_uint8(img)).save(buf, format="PNG")
    return atomic_write_bytes(path, buf.getvalue())


def comparison_grid(*columns: torch.Tensor, gap: int = 1) -> torch.Tensor:
    """Images ``(N, C, H, W)`` side by side (one column per argument, one row per image), on a
    white background with ``gap`` pixels between them; returns ``(C, H', W')``.

    >>> comparison_grid(torch.zeros(2, 1, 4, 4), torch.ones(2, 1, 4, 4)).shape
    torch.Size([1, 9, 9])
    """
    n, c, h, w = columns[0].shape
    grid = torch.ones(c, n * h + (n - 1) * gap, len(columns) * w + (len(columns) - 1) * gap)
    for j, col in enumerate(columns):
        for i in range(n):
            grid[:, i * (h + gap) : i * (h + gap) + h, j * (w + gap) : j * (w + gap) + w] = col[i]
    return grid
