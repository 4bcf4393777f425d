"""A small periodic U-Net baseline (Ronneberger et al., 2015) for one-step emulation.

Two down/up levels of (conv 3x3, GELU) x 2 with circular padding, average-pool down,
bilinear up, skip concatenation, and the same residual step ``u_{t+1} = u_t + Phi(u_t)``
as ReViT: :class:`UNet2d`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


def _block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, padding_mode="circular"),
        nn.GELU(),
        nn.Conv2d(c_out, c_out, 3, padding=1, padding_mode="circular"),
        nn.GELU(),
    )


class UNet2d(nn.Module):
    """Periodic U-Net predicting the state increment.

    Examples
    --------
    >>> net = UNet2d(4, (0, 1), width=8)
    >>> net(torch.randn(2, 4, 16, 16)).shape
    torch.Size([2, 2, 16, 16])
    """

    def __init__(
        self, in_channels: int, state_channels: Sequence[int], width: int = 16, levels: int = 2
    ) -> None:
        super().__init__()
        self.state = tuple(state_channels)
        widths = [width * 2**i for i in range(levels + 1)]
        self.down = nn.ModuleList()
        c = in_channels
        for w in widths:
            self.down.append(_block(c, w))
            c = w
        self.up = nn.ModuleList(
            _block(widths[i + 1] + widths[i], widths[i]) for i in reversed(range(levels))
        )
        self.out = nn.Conv2d(width, len(self.state), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        h = x
        for i, blk in enumerate(self.down):
            h = blk(h)
            if i < len(self.down) - 1:
                skips.append(h)
                h = F.avg_pool2d(h, 2)
        for blk in self.up:
            h = F.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
            h = blk(torch.cat([h, skips.pop()], 1))
        return x[:, list(self.state)] + self.out(h)
