"""The real-scale path: the paper's pretrained pixel-space priors from the Hugging Face Hub.

The paper's priors are ``google/ddpm-ema-{celebahq,church,bedroom}-256`` (diffusers
``UNet2DModel``, 3 x 256 x 256, linear 1000-step schedule). :func:`load_pretrained_prior` loads
one through the offline-aware :func:`icml26_shared.hub.from_pretrained` (a clear one-line error
when it is neither cached nor reachable) and returns it as an ``eps_model(x_t, t)`` for
:class:`~weakprior.ddim.FewStepDDIM` and :class:`~weakprior.dps.DPSSolver`.
:func:`load_image` reads a user image (CelebA-HQ, LSUN, ...) into ``[-1, 1]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

PAPER_PRIORS = (
    "google/ddpm-ema-celebahq-256",
    "google/ddpm-ema-church-256",
    "google/ddpm-ema-bedroom-256",
)


def load_pretrained_prior(model_id: str = PAPER_PRIORS[0]):
    """A pretrained diffusers ``UNet2DModel`` as an ``eps_model(x_t, t)`` callable."""
    from diffusers import UNet2DModel
    from icml26_shared.hub import from_pretrained

    unet = from_pretrained(
        UNet2DModel,
        model_id,
        offline_hint="train a small prior with `weakprior fit` or use `weakprior reproduce`",
    ).eval()
    unet.requires_grad_(False)

    def eps_model(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return unet(x, t).sample

    eps_model.unet = unet  # type: ignore[attr-defined]
    return eps_model


def load_image(path: str | Path, size: int | None = None, gray: bool = False) -> torch.Tensor:
    """Read an image file as ``(1, C, H, W)`` in ``[-1, 1]`` (optionally resized, grayscale)."""
    from PIL import Image

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"image {str(path)!r} does not exist")
    img = Image.open(path).convert("L" if gray else "RGB")
    if size is not None:
        img = img.resize((size, size), Image.BICUBIC)
    arr = np.asarray(img, dtype=np.float32) / 127.5 - 1.0
    if arr.ndim == 2:
        arr = arr[..., None]
    return torch.from_numpy(arr).permute(2, 0, 1)[None].contiguous()
