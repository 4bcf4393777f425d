"""SIREN implicit neural representations, in the two variants public INR datasets use.

``f(x) = W_L h_{L-1} + b_L + offset``, ``h_l = sin(w0 (W_l h_{l-1} + b_l))``, ``h_0 = x``
(Sitzmann et al., 2020). The variants differ only in initialisation and output offset:

* ``"sitzmann"``: first layer ``U(-1/d_in, 1/d_in)``, later layers
  ``U(-sqrt(6/d_in)/w0, sqrt(6/d_in)/w0)``, biases PyTorch's default
  ``U(-1/sqrt(d_in), 1/sqrt(d_in))``, offset 0;
* ``"dwsnets"`` (the SIREN of the DWSNets INR release): every layer
  ``U(-sqrt(6/d_in)/w0, sqrt(6/d_in)/w0)`` (no special first layer), biases initialised to 0,
  output offset +0.5.

:func:`siren_init` draws a batch of initial parameters as a :class:`WeightSpace`;
:class:`Siren` is the ``nn.Module`` form (its ``render`` equals :meth:`WeightSpace.render`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from wsnets.weight_space import WeightSpace

VARIANTS = {"sitzmann": 0.0, "dwsnets": 0.5}  # variant -> output offset


def check_variant(variant: str) -> float:
    """Return the output offset of ``variant``; ``ValueError`` for an unknown one."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown SIREN variant {variant!r}; choose from {sorted(VARIANTS)}")
    return VARIANTS[variant]


def siren_init(
    arch: Sequence[int],
    batch: int,
    variant: str = "sitzmann",
    w0: float = 30.0,
    generator: torch.Generator | None = None,
) -> WeightSpace:
    """Initial SIREN parameters of ``batch`` networks (``C = 1``)."""
    check_variant(variant)
    arch = list(arch)
    ws, bs = [], []
    for layer, (d_in, d_out) in enumerate(zip(arch[:-1], arch[1:], strict=True)):
        bound = 1.0 / d_in if layer == 0 and variant == "sitzmann" else math.sqrt(6.0 / d_in) / w0
        w = (torch.rand(batch, d_out, d_in, 1, generator=generator) * 2 - 1) * bound
        if variant == "dwsnets":
            b = torch.zeros(batch, d_out, 1)
        else:
            b = (torch.rand(batch, d_out, 1, generator=generator) * 2 - 1) / math.sqrt(d_in)
        ws.append(w)
        bs.append(b)
    return WeightSpace(ws, bs)


class Siren(nn.Module):
    """A single SIREN MLP.

    Parameters
    ----------
    arch:
        ``(d_0, ..., d_L)``.
    variant:
        ``"sitzmann"`` or ``"dwsnets"`` (see the module docstring).
    w0:
        Frequency factor of the sine activations.

    Examples
    --------
    >>> net = Siren([2, 8, 8, 1], variant="dwsnets")
    >>> x = torch.rand(5, 2)
    >>> v = WeightSpace.from_modules([net])
    >>> bool(torch.allclose(net(x), v.render(x, "sine", 30.0, 0.5)[0, :, :, 0], atol=1e-6))
    True
    """

    def __init__(self, arch: Sequence[int], variant: str = "sitzmann", w0: float = 30.0) -> None:
        super().__init__()
        self.offset = check_variant(variant)
        self.variant, self.w0 = variant, w0
        self.layers = nn.ModuleList(
            nn.Linear(i, o) for i, o in zip(arch[:-1], arch[1:], strict=True)
        )
        init = siren_init(arch, 1, variant, w0)
        with torch.no_grad():
            for lin, w, b in zip(self.layers, init.weights, init.biases, strict=True):
                lin.weight.copy_(w[0, ..., 0])
                lin.bias.copy_(b[0, ..., 0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, lin in enumerate(self.layers):
            x = lin(x)
            if i < len(self.layers) - 1:
                x = torch.sin(self.w0 * x)
        return x + self.offset
