"""Your own images: a folder of image files, one subfolder per class, loaded into memory.

The offline counterpart of the paper's ImageNet path (EOSTok, arXiv 2605.00503) for a user's
own data at CPU scale. Layout ``<root>/<class>/<image>`` (class labels are the subfolder names
in sorted order); images directly in ``<root>`` form one class. Every image is converted to
RGB (``channels=3``) or greyscale (``channels=1``), its short side resized to ``image_size``
and centre-cropped (:func:`to_tensor`, which :func:`eostok.imagenet.to_tensor_image` uses for
ImageNet too).

* :func:`to_tensor` -- one PIL image as ``(C, S, S)`` in [0, 1] (also the ImageNet path's);
* :func:`load_image_folder` -- ``(images (N, C, S, S) in [0, 1], labels (N,), class names)``;
* :func:`split_images` -- a seeded, class-stratified train/test split;
* :class:`~eostok.lightning.ImageFolderDataModule` serves them to Lightning; the alignment
  teacher (:meth:`~eostok.lightning.EOSTokModule.build_teacher`) is then trained on them.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

#: File suffixes read as images (Pillow decodes them).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")


def to_tensor(image, image_size: int, channels: int = 3) -> torch.Tensor:
    """A PIL image -> ``(C, S, S)`` float in [0, 1]: resize the short side, centre crop."""
    import numpy as np

    arr = np.asarray(image.convert("RGB" if channels == 3 else "L"), dtype=np.float32) / 255.0
    x = torch.from_numpy(arr.reshape(arr.shape[0], arr.shape[1], channels))
    x = x.permute(2, 0, 1)[None]  # (1, C, H, W)
    h, w = x.shape[-2:]
    scale = image_size / min(h, w)
    nh, nw = max(image_size, round(h * scale)), max(image_size, round(w * scale))
    x = F.interpolate(x, size=(nh, nw), mode="bilinear", antialias=True, align_corners=False)
    top, left = (nh - image_size) // 2, (nw - image_size) // 2
    return x[0, :, top : top + image_size, left : left + image_size].clamp(0, 1)


def load_image_folder(
    root: str | Path, image_size: int = 32, channels: int = 3
) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """All images under ``root`` as ``(N, C, S, S)`` in [0, 1], labels ``(N,)`` and class names.

    Raises ``ValueError`` naming the problem (no such folder, no images, an unreadable file,
    ``channels`` not 1 or 3).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from PIL import Image
    >>> root = Path(tempfile.mkdtemp())
    >>> for c in ("a", "b"):
    ...     (root / c).mkdir()
    ...     Image.fromarray(np.zeros((20, 30, 3), np.uint8)).save(root / c / "0.png")
    >>> x, y, names = load_image_folder(root, image_size=16)
    >>> tuple(x.shape), y.tolist(), names
    ((2, 3, 16, 16), [0, 1], ['a', 'b'])
    """
    from PIL import Image, UnidentifiedImageError

    root = Path(root)
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, got {channels}")
    if image_size < 4:
        raise ValueError(f"image_size must be at least 4, got {image_size}")
    if not root.is_dir():
        raise ValueError(f"image folder {str(root)!r} not found")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def files(folder: Path) -> list[Path]:
        return sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)

    groups = [(i, files(root / c)) for i, c in enumerate(classes)] if classes else []
    if not classes:
        groups, classes = [(0, files(root))], [root.name]
    images, labels = [], []
    for label, paths in groups:
        for path in paths:
            try:
                with Image.open(path) as im:
                    images.append(to_tensor(im, image_size, channels))
            except (UnidentifiedImageError, OSError) as exc:
                raise ValueError(f"{path}: not a readable image ({exc})") from None
            labels.append(label)
    if not images:
        raise ValueError(f"no images ({', '.join(IMAGE_SUFFIXES)}) found under {str(root)!r}")
    return torch.stack(images), torch.tensor(labels), classes


def split_images(
    x: torch.Tensor, y: torch.Tensor, test_fraction: float, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded class-stratified split: ``round(test_fraction * n_c)`` of each class (at least one
    when the class has two or more images) go to the test set.

    >>> x, y = torch.zeros(10, 1, 4, 4), torch.tensor([0] * 6 + [1] * 4)
    >>> xtr, ytr, xte, yte = split_images(x, y, 0.25, seed=0)
    >>> len(ytr), len(yte), sorted(yte.tolist())
    (7, 3, [0, 0, 1])
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    g = torch.Generator().manual_seed(seed)
    train, test = [], []
    for c in torch.unique(y):
        idx = torch.nonzero(y == c).flatten()
        idx = idx[torch.randperm(len(idx), generator=g)]
        k = max(1, round(test_fraction * len(idx))) if len(idx) > 1 else 0
        test.append(idx[:k])
        train.append(idx[k:])
    tr, te = torch.cat(train), torch.cat(test)
    return x[tr], y[tr], x[te], y[te]
