"""Offline image domains for the priors and the targets (all data ship inside the wheels).

Every domain yields grayscale images ``(N, 1, S, S)`` in ``[-1, 1]``:

* ``faces`` -- scikit-image's ``lfw_subset`` (the first 100 of its 200 images are faces,
  25 x 25); faces 0..83 train the matched prior (with flips and one-pixel shifts), faces
  84..99 are the held-out targets;
* ``digits`` -- scikit-learn's 8 x 8 digits, upsampled; 0..1499 train, the rest are targets;
* ``natural`` -- random crops of scikit-image's camera, astronaut, coffee, chelsea and
  scikit-learn's china and flower photographs (a generic natural-image prior);
* ``textures`` -- random crops of scikit-image's brick, grass and gravel textures.

``under-trained`` is not a domain but a prior (the faces prior stopped early); see
:mod:`weakprior.lightning`.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

DOMAINS = ("faces", "digits", "natural", "textures")


def _resize(x: torch.Tensor, size: int) -> torch.Tensor:
    if x.shape[-1] == size and x.shape[-2] == size:
        return x
    return F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)


def _to_unit(x: torch.Tensor) -> torch.Tensor:
    return (2.0 * x - 1.0).clamp(-1.0, 1.0)


def _gray(img: np.ndarray) -> np.ndarray:
    img = img.astype(np.float64)
    if img.max() > 1.0:
        img = img / 255.0
    if img.ndim == 3:
        img = img[..., :3] @ np.array([0.299, 0.587, 0.114])
    return img


def _crops(images: list[np.ndarray], n: int, crop: int, size: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    out = np.empty((n, 1, crop, crop))
    for i in range(n):
        img = images[rng.integers(len(images))]
        top = rng.integers(img.shape[0] - crop + 1)
        left = rng.integers(img.shape[1] - crop + 1)
        patch = img[top : top + crop, left : left + crop]
        out[i, 0] = patch[:, ::-1] if rng.random() < 0.5 else patch
    return _to_unit(_resize(torch.from_numpy(out).float(), size))


def _faces(split: str, size: int, n: int | None, seed: int) -> torch.Tensor:
    from skimage.data import lfw_subset

    faces = torch.from_numpy(lfw_subset()[:100]).float()[:, None]  # (100, 1, 25, 25) in [0, 1]
    if split == "test":
        return _to_unit(_resize(faces[84:], size))[:n]
    base = faces[:84]
    aug = [base, base.flip(-1)]
    for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
        aug += [base.roll((dy, dx), dims=(-2, -1)), base.flip(-1).roll((dy, dx), dims=(-2, -1))]
    x = _to_unit(_resize(torch.cat(aug), size))
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    return x[perm][:n]


def _digits(split: str, size: int, n: int | None, seed: int) -> torch.Tensor:
    from sklearn.datasets import load_digits

    img = torch.from_numpy(load_digits().images / 16.0).float()[:, None]
    img = img[1500:] if split == "test" else img[:1500]
    x = F.interpolate(img, size=(size, size), mode="bilinear", align_corners=False)
    return _to_unit(x)[:n]


def _natural(split: str, size: int, n: int | None, seed: int) -> torch.Tensor:
    from skimage import data
    from sklearn.datasets import load_sample_images

    imgs = [_gray(getattr(data, k)()) for k in ("camera", "astronaut", "coffee", "chelsea")]
    imgs += [_gray(i) for i in load_sample_images().images]
    return _crops(imgs, n or 2000, 3 * size, size, seed + (7 if split == "test" else 0))


def _textures(split: str, size: int, n: int | None, seed: int) -> torch.Tensor:
    from skimage import data

    imgs = [_gray(getattr(data, k)()) for k in ("brick", "grass", "gravel")]
    return _crops(imgs, n or 2000, 3 * size, size, seed + (7 if split == "test" else 0))


def load_domain(
    name: str, split: str = "train", size: int = 16, n: int | None = None, seed: int = 0
) -> torch.Tensor:
    """Images of one domain, ``(N, 1, size, size)`` in ``[-1, 1]``.

    Examples
    --------
    >>> x = load_domain("digits", "test", size=16, n=4)
    >>> tuple(x.shape), bool(x.min() >= -1 and x.max() <= 1)
    ((4, 1, 16, 16), True)
    """
    if name not in DOMAINS:
        raise ValueError(f"unknown image domain {name!r}; choose from {', '.join(DOMAINS)}")
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    if size < 4:
        raise ValueError(f"image size must be >= 4, got {size}")
    loader = {"faces": _faces, "digits": _digits, "natural": _natural, "textures": _textures}
    return loader[name](split, size, n, seed).contiguous()
