"""The real path of EOSTok (arXiv 2605.00503): ImageNet images and a DINOv2 alignment teacher.

The paper trains on ImageNet-1k at 256x256 and aligns the decoder to DINOv2 features. Both
need downloads (ImageNet is gated on the Hugging Face Hub), so they go through the workspace's
offline-aware loaders (:mod:`icml26_shared.hub`): without network and without a local copy
they fail within seconds with one message naming the dataset / model and the offline
alternative (``ShapesDataModule`` / ``DigitsDataModule`` and the package-trained teacher).

* :class:`~eostok.lightning.HFImageDataModule`: any image-classification dataset ``datasets`` can load (a Hub
  id such as ``ILSVRC/imagenet-1k``, or a local ``imagefolder`` directory), resized and
  centre-cropped to ``image_size``, in [0, 1];
* :class:`DINOv2Teacher`: a ``transformers`` DINOv2 backbone wrapped with the interface of
  :class:`~eostok.feature_net.FeatureCNN` (feature map ``(B, D, h, w)`` of patch tokens,
  pooled embedding, no logits), for the implicit alignment
  (:class:`~eostok.alignment.ImplicitAlignment`);
* the Inception gFID is :func:`eostok.frechet.inception_fid`.

Needs the ``real`` extra (``pip install 'eostok[real]'``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from icml26_shared.hub import HubUnavailableError, from_pretrained
from torch import nn
from torch.utils.data import Dataset

OFFLINE_DATA_HINT = (
    "use the offline data (ShapesDataModule: procedural 32x32 shapes, or DigitsDataModule), "
    "or pass a local imagefolder directory as path"
)
OFFLINE_TEACHER_HINT = "use the package-trained teacher CNN (teacher='trained')"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def to_tensor_image(image, image_size: int) -> torch.Tensor:
    """A PIL image -> ``(3, S, S)`` float in [0, 1]: resize the short side, centre crop."""
    from .image_folder import to_tensor

    return to_tensor(image, image_size, channels=3)


class HFImageSplit(Dataset):
    """One split of a ``datasets`` image dataset as ``(image (3,S,S), label)`` pairs."""

    def __init__(self, split, image_size: int, image_key: str, label_key: str) -> None:
        self.split, self.image_size = split, image_size
        self.image_key, self.label_key = image_key, label_key

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, i: int):
        row = self.split[int(i)]
        return to_tensor_image(row[self.image_key], self.image_size), int(row[self.label_key])


class DINOv2Teacher(nn.Module):
    """A frozen DINOv2 backbone as the implicit-alignment teacher (the paper's VFM).

    ``forward(x)`` for images ``(B, 3, H, W)`` in [0, 1] returns the patch-token feature map
    ``(B, D, h, w)``, the CLS embedding ``(B, D)`` and ``None`` (no classifier), like
    :class:`~eostok.feature_net.FeatureCNN`. Images are resized to ``input_size`` and
    normalised with the ImageNet statistics DINOv2 was trained with.

    Parameters
    ----------
    model:
        A ``transformers`` ``Dinov2Model`` (or compatible), or ``None`` to load ``model_id``.
    model_id:
        Hub id, ``facebook/dinov2-base`` by default (offline: only the local cache is tried).
    input_size:
        Input side (a multiple of the model's patch size; 224 = 16x16 patches of 14).
    """

    def __init__(
        self, model: nn.Module | None = None, model_id: str = "facebook/dinov2-base",
        input_size: int = 224,
    ) -> None:  # fmt: skip
        super().__init__()
        if model is None:
            from transformers import AutoModel

            try:
                model = from_pretrained(AutoModel, model_id, offline_hint=OFFLINE_TEACHER_HINT)
            except HubUnavailableError as exc:  # an OSError: the CLI prints it as one line
                raise ConnectionError(str(exc)) from exc
        self.model = model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.patch = int(model.config.patch_size)
        if input_size % self.patch:
            raise ValueError(f"input_size {input_size} is not a multiple of patch {self.patch}")
        self.input_size = input_size
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), False)

    @property
    def feature_dim(self) -> int:
        """Channels D of the feature map."""
        return int(self.model.config.hidden_size)

    @torch.no_grad()
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None]:
        if x.shape[1] == 1:
            x = x.expand(-1, 3, -1, -1)
        x = F.interpolate(x, size=self.input_size, mode="bilinear", align_corners=False)
        h = self.model(pixel_values=(x - self.mean) / self.std).last_hidden_state  # (B, 1+hw, D)
        g = self.input_size // self.patch
        fmap = h[:, 1:].transpose(1, 2).reshape(len(x), -1, g, g)  # (B, D, g, g)
        return fmap, h[:, 0], None
