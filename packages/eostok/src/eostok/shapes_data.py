"""Offline data: procedurally generated class-conditional RGB shapes (default 32x32).

The research notes' offline benchmark for EOSTok (arXiv 2605.00503 works on ImageNet, which
needs a gated download): a class is a (shape, colour, size) triple; the position of the shape,
the background texture (random oriented stripes of random frequency and contrast, or smooth
noise) and a small brightness jitter of the fill are nuisances drawn per image.

* :func:`shape_classes` lists the classes ``(shape, colour, size)`` in label order;
* :func:`render_shapes` draws ``(N, 3, S, S)`` images in [0, 1] for given labels (seeded);
* :func:`load_shapes_images` gives a seeded train/test split;
* :class:`~eostok.lightning.ShapesDataModule` serves it to Lightning (batches ``(images (B,3,S,S), labels (B,))``).
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

SHAPES = ("circle", "square", "triangle")
COLOURS = {
    "red": (0.9, 0.15, 0.1),
    "green": (0.1, 0.8, 0.2),
    "blue": (0.15, 0.3, 0.95),
}
SIZES = {"small": 0.22, "large": 0.38}  # half-extent as a fraction of the image side


def shape_classes() -> list[tuple[str, str, str]]:
    """All ``(shape, colour, size)`` classes in label order (3 x 3 x 2 = 18).

    >>> len(shape_classes()), shape_classes()[0]
    (18, ('circle', 'red', 'small'))
    """
    return list(itertools.product(SHAPES, COLOURS, SIZES))


def _texture(rng: np.random.Generator, s: int) -> np.ndarray:
    """A grey background texture ``(S, S)`` in [0.2, 0.6]: oriented stripes or smooth noise."""
    yy, xx = np.mgrid[0:s, 0:s] / s
    if rng.random() < 0.5:
        angle, freq = rng.uniform(0, np.pi), rng.uniform(2, 6)
        phase = rng.uniform(0, 2 * np.pi)
        t = np.sin(2 * np.pi * freq * (np.cos(angle) * xx + np.sin(angle) * yy) + phase)
    else:
        coarse = rng.standard_normal((4, 4))
        t = np.kron(coarse, np.ones((s // 4 + 1, s // 4 + 1)))[:s, :s]
        t = t / (np.abs(t).max() + 1e-8)
    contrast = rng.uniform(0.03, 0.12)
    return 0.4 + contrast * t


def _mask(shape: str, cx: float, cy: float, r: float, s: int) -> np.ndarray:
    """Boolean ``(S, S)`` mask of a shape of half-extent ``r`` (pixels) centred at ``(cx, cy)``."""
    yy, xx = np.mgrid[0:s, 0:s] + 0.5
    dx, dy = xx - cx, yy - cy
    if shape == "circle":
        return dx**2 + dy**2 <= r**2
    if shape == "square":
        return (np.abs(dx) <= r) & (np.abs(dy) <= r)
    # upward triangle inscribed in the box [-r, r]^2: apex at the top, base at the bottom
    return (dy <= r) & (dy >= -r) & (np.abs(dx) <= (dy + r) / 2)


def render_shapes(labels: torch.Tensor | np.ndarray, image_size: int = 32, seed: int = 0):
    """Images ``(N, 3, S, S)`` (float32 in [0, 1]) of the classes ``labels`` ``(N,)``.

    >>> x = render_shapes(torch.tensor([0, 17]), 32, seed=0)
    >>> tuple(x.shape), float(x.min()) >= 0.0, float(x.max()) <= 1.0
    ((2, 3, 32, 32), True, True)
    """
    classes = shape_classes()
    labels = torch.as_tensor(labels, dtype=torch.long)
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= len(classes)):
        raise ValueError(f"shape class labels must lie in [0, {len(classes)})")
    if image_size < 8:
        raise ValueError(f"image_size must be at least 8, got {image_size}")
    rng = np.random.default_rng(seed)
    s = image_size
    out = np.empty((len(labels), 3, s, s), dtype=np.float32)
    for n, lab in enumerate(labels.tolist()):
        shape, colour, size = classes[lab]
        r = SIZES[size] * s * rng.uniform(0.9, 1.1)
        cx, cy = rng.uniform(r + 1, s - r - 1, size=2)
        m = _mask(shape, cx, cy, r, s)
        bg = _texture(rng, s)
        rgb = np.clip(np.array(COLOURS[colour]) * rng.uniform(0.85, 1.0), 0, 1)
        img = np.repeat(bg[None], 3, 0)
        img[:, m] = rgb[:, None]
        out[n] = np.clip(img, 0, 1)
    return torch.from_numpy(out)


def load_shapes_images(
    n_train: int = 3600, n_test: int = 900, image_size: int = 32, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x_train, y_train, x_test, y_test)``, balanced classes, independent renders (seeded).

    >>> xtr, ytr, xte, yte = load_shapes_images(36, 18, 16)
    >>> tuple(xtr.shape), sorted(set(yte.tolist())) == list(range(18))
    ((36, 3, 16, 16), True)
    """
    k = len(shape_classes())
    if n_train < k or n_test < k:
        raise ValueError(f"need at least {k} train and test images (one per class)")
    g = torch.Generator().manual_seed(seed)
    ytr = torch.arange(n_train) % k
    yte = torch.arange(n_test) % k
    ytr, yte = ytr[torch.randperm(n_train, generator=g)], yte[torch.randperm(n_test, generator=g)]
    xtr = render_shapes(ytr, image_size, seed=2 * seed)
    xte = render_shapes(yte, image_size, seed=2 * seed + 1)
    return xtr, ytr, xte, yte
