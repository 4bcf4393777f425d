"""Local-correlation analysis (paper Sec. 4): why weak priors suffice for random masks.

``local_correlation(images, max_offset)`` is the Pearson correlation between pixel values at
horizontal/vertical offset ``k`` (``k = 0..max_offset``), pooled over images and positions,
after removing every image's mean. Natural-image priors of very different quality share the
short-range part of this curve; a random keep-mask leaves every missing pixel within a short
distance of an observed one, so this shared local structure is all the solver needs. A large
box puts the missing pixels far from any observation, where the curves (and the priors) differ.

:func:`distance_to_observed` gives that distance per missing pixel (Chebyshev metric).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def local_correlation(images: torch.Tensor, max_offset: int = 6) -> torch.Tensor:
    """Correlation at offsets ``0..max_offset`` of images ``(N, C, H, W)``; ``(max_offset+1,)``.

    Examples
    --------
    >>> x = torch.randn(64, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    >>> c = local_correlation(x, 2)
    >>> round(float(c[0]), 3), bool(c[1:].abs().max() < 0.05)
    (1.0, True)
    """
    if images.ndim != 4:
        raise ValueError(f"images must be (N, C, H, W), got shape {tuple(images.shape)}")
    h, w = images.shape[-2:]
    if not 0 <= max_offset < min(h, w):
        raise ValueError(f"max_offset must lie in [0, {min(h, w) - 1}], got {max_offset}")
    x = images.double()
    x = x - x.mean(dim=(-2, -1), keepdim=True)
    out = []
    for k in range(max_offset + 1):
        pairs = [(x[..., :, : w - k], x[..., :, k:]), (x[..., : h - k, :], x[..., k:, :])]
        num = sum((a * b).sum() for a, b in pairs)
        den = sum(((a**2).sum() * (b**2).sum()).sqrt() for a, b in pairs)
        out.append(num / den.clamp_min(1e-12))
    return torch.stack(out).float()


def distance_to_observed(missing: torch.Tensor) -> torch.Tensor:
    """Chebyshev distance of every pixel to the nearest observed one (0 for observed pixels).

    ``missing`` is a 0/1 tensor ``(B, C, H, W)``; returns the mean distance over missing pixels
    per image, ``(B,)``.
    """
    obs = 1.0 - missing[:, :1].float()
    dist = torch.zeros_like(obs)
    reach = obs.clone()
    h, w = obs.shape[-2:]
    for k in range(1, max(h, w) + 1):
        if bool((reach > 0).all()):
            break
        grown = F.max_pool2d(reach, 3, stride=1, padding=1)
        dist = dist + k * (grown - reach).clamp_min(0)
        reach = grown
    n = missing[:, :1].flatten(1).sum(1).clamp_min(1)
    return (dist * missing[:, :1]).flatten(1).sum(1) / n
