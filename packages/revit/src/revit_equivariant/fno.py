"""The Fourier neural operator baseline (Li et al., ICLR 2021, arXiv 2010.08895).

``v_0 = P(x)``; ``v_{l+1} = GELU(W v_l + F^{-1}(R_l . F(v_l)))`` with the spectral weights
``R_l`` on the lowest ``modes`` frequencies (both signs of ``k_y``); ``y = Q(v_L)``; the same
residual step ``u_{t+1} = u_t + y`` as the other emulators.

- :class:`NeuralOperatorFNO2d`: the anchor, ``neuralop.models.FNO`` from the PyPI package
  ``neuraloperator`` (in the ``bench`` extra) with its default settings (grid positional
  embedding, channel MLPs, linear skips), wrapped in the residual step;
- :class:`FNO2d`: a small re-implementation of the same operator (no positional embedding),
  the fallback when ``neuraloperator`` is not installed (backbone ``fno-own``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
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


def neuraloperator_version() -> str | None:
    """Installed ``neuraloperator`` version, or ``None`` when it is absent."""
    if importlib.util.find_spec("neuralop") is None:
        return None
    try:
        return importlib.metadata.version("neuraloperator")
    except importlib.metadata.PackageNotFoundError:
        return None


def _drop_neuralop_metadata(module, state_dict, prefix, local_metadata) -> None:
    state_dict.pop("_metadata", None)


class NeuralOperatorFNO2d(nn.Module):
    """``neuraloperator``'s 2D FNO (``neuralop.models.FNO``) with the residual step.

    ``modes`` is the number of kept frequencies per sign, as in :class:`FNO2d`, so
    ``n_modes = (2 modes, 2 modes)`` in neuraloperator's convention. Needs the ``bench`` extra.

    Examples
    --------
    >>> net = NeuralOperatorFNO2d(4, (0, 1), width=8, modes=4, layers=2)  # doctest: +SKIP
    >>> net(torch.randn(2, 4, 16, 16)).shape  # doctest: +SKIP
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
        if neuraloperator_version() is None:
            raise ImportError(
                "the neuraloperator FNO needs the bench extra: "
                "pip install 'revit-equivariant[bench]' (or use backbone fno-own)"
            )
        from neuralop.models import FNO

        self.state = tuple(state_channels)
        self.modes = modes
        self.fno = FNO(
            n_modes=(2 * modes, 2 * modes),
            in_channels=in_channels,
            out_channels=len(self.state),
            hidden_channels=width,
            n_layers=layers,
        )
        # neuraloperator's BaseModel.state_dict adds a top-level "_metadata" entry (its init
        # kwargs) to the *shared* state dict, which breaks strict loading of any module that
        # contains it (Lightning checkpoints); the architecture is fixed by our hyperparameters.
        self._register_state_dict_hook(_drop_neuralop_metadata)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        if 2 * self.modes > min(h, w):
            raise ValueError(f"{self.modes} Fourier modes do not fit a {h}x{w} grid")
        return x[:, list(self.state)] + self.fno(x)
