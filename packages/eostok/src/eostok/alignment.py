"""Implicit foundation-model alignment (REPA-style, on decoder patch features).

EOSTok injects vision-foundation-model (DINOv2) semantics into the 1D latent *implicitly*:
aligning the 1D tokens to VFM patches directly makes them degenerate into a raster patch
sequence, so the alignment acts on the decoder's middle-layer patch features instead:

``L_align = -mean_p cos(MLP(h_dec,p), f_teacher,p)``: :class:`ImplicitAlignment`.

Offline the teacher is a package-trained :class:`~eostok.feature_net.FeatureCNN` (or a
frozen random one), *not* DINOv2 / CLIP.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ImplicitAlignment(nn.Module):
    """Cosine alignment of projected decoder patch features to frozen teacher patch features.

    Parameters
    ----------
    width:
        Decoder width (input of the projector).
    teacher_dim:
        Channels of the teacher's feature map.
    grid:
        Side of the tokenizer's patch grid; the teacher map is resized to it.

    Examples
    --------
    >>> align = ImplicitAlignment(width=8, teacher_dim=4, grid=2)
    >>> loss = align(torch.randn(3, 4, 8), torch.randn(3, 4, 5, 5))
    >>> bool(-1.0 <= loss <= 1.0)
    True
    """

    def __init__(self, width: int, teacher_dim: int, grid: int) -> None:
        super().__init__()
        self.grid = grid
        self.proj = nn.Sequential(
            nn.Linear(width, 2 * width), nn.SiLU(), nn.Linear(2 * width, teacher_dim)
        )

    def forward(self, dec_feats: torch.Tensor, teacher_map: torch.Tensor) -> torch.Tensor:
        """``dec_feats`` ``(B, P, width)``, ``teacher_map`` ``(B, D_t, h, w)`` -> scalar loss."""
        t = F.adaptive_avg_pool2d(teacher_map.detach(), self.grid)  # (B, D_t, g, g)
        t = t.flatten(2).transpose(1, 2)  # (B, P, D_t), raster order like the patches
        return -F.cosine_similarity(self.proj(dec_feats), t, dim=-1).mean()
