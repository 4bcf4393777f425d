"""Regenerate ``own-images/``: a small RGB image folder standing in for a user's own data.

Two classes (``red-circle``, ``blue-square``), 16 PNG files each, 24 x 32 pixels (not square,
so the loader's resize and centre crop are exercised), drawn by the package's shapes renderer
(large shapes, seed 7) and cropped. Run from the package folder:
``python tests/data/make_own_images.py``.
"""

from pathlib import Path

import numpy as np
import torch
from eostok.shapes_data import render_shapes
from PIL import Image

CLASSES = {"red-circle": 1, "blue-square": 11}  # eostok.shapes_data.shape_classes() labels

if __name__ == "__main__":
    root = Path(__file__).parent / "own-images"
    for name, label in CLASSES.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        x = render_shapes(torch.full((16,), label), image_size=32, seed=7)  # (16, 3, 32, 32)
        arr = (x.permute(0, 2, 3, 1).numpy() * 255).round().astype(np.uint8)[:, 4:28]
        for i, img in enumerate(arr):
            Image.fromarray(img).save(root / name / f"{i:02d}.png")
    print(f"wrote {root}")
