"""Local-correlation analysis (paper Sec. 4): why weak priors suffice for random masks.

``local_correlation(images, max_offset)`` is the Pearson correlation between pixel values at
horizontal/vertical offset ``k`` (``k = 0..max_offset``), pooled over images and positions,
after removing every image's mean. Natural-image priors of very different quality share the
short-range part of this curve; a random keep-mask leaves every missing pixel within a short
distance of an observed one, so this shared local structure is all the solver needs. A large
box puts the missing pixels far from any observation, where the curves (and the priors) differ.

:func:`distance_to_observed` gives that distance per missing pixel (Chebyshev metric);
:func:`correlation_table` puts the curves of data and prior samples, and those distances, in one
table.
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


def correlation_table(
    targets, priors: dict, op_names, image_size: int, n_problems: int, seed: int = 0,
    lags: int = 6, n_images: int = 64,
):  # fmt: skip
    """Local-correlation curves of the target data and of prior samples, and mask distances.

    Rows: ``data: <target>`` (``n_images`` held-out images), ``prior samples: <name>``
    (``n_images`` draws of a 20-step DDIM of each prior of ``{name: module with .eps}``), then
    the mean distance from a missing pixel to the nearest observed one for each inpainting
    operator of ``op_names``, over the masks of the reconstruction experiment (``n_problems``
    images, masks drawn from ``seed + 11``).
    """
    from icml26_shared.results import Table

    from .ddim import FewStepDDIM, spaced_timesteps
    from .image_domains import load_domain
    from .operators import make_operator

    table = Table(
        "Local correlation at pixel offset k: data vs prior samples",
        ["images", *[f"k={k}" for k in range(lags + 1)]],
        notes=(
            "Pearson correlation of pixel pairs at horizontal/vertical offset k (image means "
            f"removed). Prior samples: {n_images} draws of a 20-step DDIM. Last rows: mean Chebyshev "
            "distance (px) from a missing pixel to the nearest observed one, per operator."
        ),
    )
    for t in targets:
        c = local_correlation(load_domain(t, "test", image_size, n=n_images, seed=seed), lags)
        table.add_row(images=f"data: {t}", **{f"k={k}": float(v) for k, v in enumerate(c)})
    with torch.no_grad():
        for name, m in priors.items():
            z = torch.randn(n_images, 1, image_size, image_size,
                            generator=torch.Generator().manual_seed(seed))  # fmt: skip
            c = local_correlation(FewStepDDIM(m.eps, spaced_timesteps(20))(z), lags)
            table.add_row(images=f"prior samples: {name}",
                          **{f"k={k}": float(v) for k, v in enumerate(c)})  # fmt: skip
    shape = (n_problems, 1, image_size, image_size)
    for op_name in op_names:
        miss = make_operator(op_name, shape, seed + 11).missing_pixels(shape)
        if miss is not None:
            d = float(distance_to_observed(miss).mean())
            table.add_row(images=f"distance to observed, {op_name}", **{"k=0": d})
    return table
