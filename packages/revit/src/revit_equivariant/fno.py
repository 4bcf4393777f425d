"""A small Fourier neural operator baseline (Li et al., ICLR 2021, arXiv 2010.08895).

``v_0 = P(x)``; ``v_{l+1} = GELU(W v_l + F^{-1}(R_l . F(v_l)))`` with the spectral weights
``R_l`` on the lowest ``modes`` frequencies (both signs of ``k_y``); ``y = Q(v_L)``; the same
residual step as the other emulators. The PyPI package ``neuraloperator`` is not installed in
this workspace, so this is a faithful re-implementation of its 2D FNO: :class:`FNO2d`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


class SpectralConv2d(nn.Module):
    """Multiply the lowest Fourier modes by learned complex matrices.

    Examples
    --------
    >>> SpectralConv2d(3, 5, modes=4)(torch.randn(2, 3, 16, 16)).shape
    torch.Size([2, 5, 16, 16])
    """

    def __init__(self, c_in: int, c_out: int, modes: int) -> None:
        super().__init__()
        self.modes = modes
        scale = 1.0 / (c_in * c_out)
        self.w_pos = nn.Parameter(
            scale * torch.randn(c_in, c_out, modes, modes, dtype=torch.cfloat)
        )
        self.w_neg = nn.Parameter(
            scale * torch.randn(c_in, c_out, modes, modes, dtype=torch.cfloat)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        m = self.modes
        if 2 * m > h or m > w // 2 + 1:
            raise ValueError(f"{m} Fourier modes do not fit a {h}x{w} grid")
        xh = torch.fft.rfft2(x)
        out = torch.zeros(b, self.w_pos.shape[1], h, w // 2 + 1, dtype=xh.dtype, device=x.device)
        out[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", xh[:, :, :m, :m], self.w_pos)
        out[:, :, -m:, :m] = torch.einsum("bixy,ioxy->boxy", xh[:, :, -m:, :m], self.w_neg)
        return torch.fft.irfft2(out, s=(h, w))


class FNO2d(nn.Module):
    """2D FNO emulator with a residual step.

    Examples
    --------
    >>> net = FNO2d(4, (0, 1), width=8, modes=4, layers=2)
    >>> net(torch.randn(2, 4, 16, 16)).shape
    torch.Size([2, 2, 16, 16])
    """

    def __init__(
        self,
        in_channels: int,
        state_channels: Sequence[int],
        width: int = 24,
        modes: int = 8,
        layers: int = 4,
    ) -> None:
        super().__init__()
        self.state = tuple(state_channels)
        self.lift = nn.Conv2d(in_channels, width, 1)
        self.spectral = nn.ModuleList(SpectralConv2d(width, width, modes) for _ in range(layers))
        self.pointwise = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(layers))
        self.proj = nn.Sequential(
            nn.Conv2d(width, 2 * width, 1), nn.GELU(), nn.Conv2d(2 * width, len(self.state), 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.lift(x)
        for i, (s, p) in enumerate(zip(self.spectral, self.pointwise, strict=True)):
            v = s(v) + p(v)
            if i < len(self.spectral) - 1:
                v = F.gelu(v)
        return x[:, list(self.state)] + self.proj(v)
