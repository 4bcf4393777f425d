"""Round-to-nearest fake quantisation with a straight-through estimator.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302.

Map to the paper's set-up (W4A4 QAT, Sec. 3):

1. Per-group symmetric integer weights along the input dimension, group size G:
   ``q = clamp(round(w / s), qmin, qmax)``, ``s = absmax(group) / qmax``, ``w_hat = s q``
   -> :func:`fake_quantize` with ``x = W`` (groups along the last axis, i.e. ``in_features``).
2. Dynamic per-token activations quantised per group of the same G
   -> :func:`fake_quantize` with ``x`` the linear layer's input (last axis = features).
3. Straight-through estimator: the forward pass uses ``w_hat``; the backward pass treats
   the rounding as the identity (``ste="identity"``) or as the identity inside the
   representable range and zero outside it (``ste="clipped"``).

Two scale rules are offered. ``absmax`` (the default): ``s = absmax/(2^(b-1)-1)`` with the
symmetric range ``[-(2^(b-1)-1), 2^(b-1)-1]`` (``2^b - 1`` levels). ``torchao``: torchao's
symmetric convention ``s = absmax / ((2^b - 1)/2)`` with the full range
``[-2^(b-1), 2^(b-1)-1]`` (``2^b`` levels). ``bits=16`` means "not quantised" (identity). With dynamic scales the ``absmax`` rule is
idempotent (``Q(Q(x)) = Q(x)``: the group maximum stays on the grid's end point); the
``torchao`` rule is not (the maximum 7.5 steps is clamped to 7, so the next scale shrinks).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

SUPPORTED_BITS = (2, 3, 4, 5, 6, 7, 8, 16)
ScaleRule = Literal["absmax", "torchao"]
SteRule = Literal["identity", "clipped"]


def check_bits(bits: int) -> int:
    """Validate a bit width: one of 2..8 (integer fake quantisation) or 16 (no quantisation)."""
    if isinstance(bits, bool) or not isinstance(bits, int) or bits not in SUPPORTED_BITS:
        raise ValueError(
            f"bits must be one of {list(SUPPORTED_BITS)} (16 = not quantised), got {bits!r}"
        )
    return bits


def check_group_size(group_size: int, features: int | None = None) -> int:
    """Validate a group size: a positive int that divides ``features`` (when given)."""
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size <= 0:
        raise ValueError(f"group_size must be a positive integer, got {group_size!r}")
    if features is not None and features % group_size:
        raise ValueError(f"group_size {group_size} does not divide the {features} input features")
    return group_size


def int_range(bits: int, scale_rule: ScaleRule = "absmax") -> tuple[int, int, float]:
    """``(qmin, qmax, denominator)`` of the integer grid; the scale is ``absmax / denominator``.

    >>> int_range(4)
    (-7, 7, 7.0)
    >>> int_range(4, "torchao")
    (-8, 7, 7.5)
    """
    check_bits(bits)
    if scale_rule == "absmax":
        qmax = 2 ** (bits - 1) - 1
        return -qmax, qmax, float(qmax)
    if scale_rule == "torchao":
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1, (2**bits - 1) / 2
    raise ValueError(f"scale_rule must be 'absmax' or 'torchao', got {scale_rule!r}")


class _RoundSTE(torch.autograd.Function):
    """Forward: round-and-clamp on the integer grid. Backward: identity (optionally masked)."""

    @staticmethod
    def forward(ctx, z, qmin: float, qmax: float, clipped: bool):
        q = torch.clamp(torch.round(z), qmin, qmax)
        if clipped:
            # the band's edges get a little slack: under the torchao rule a group's extreme
            # lands on qmax + 0.5 up to rounding of x * (1/s) and must keep its gradient
            band = 0.5 + 1e-5
            ctx.save_for_backward((z >= qmin - band) & (z <= qmax + band))
        ctx.clipped = clipped
        return q

    @staticmethod
    def backward(ctx, grad):
        if ctx.clipped:
            (mask,) = ctx.saved_tensors
            grad = grad * mask
        return grad, None, None, None


def fake_quantize(
    x: torch.Tensor,
    bits: int = 4,
    group_size: int = 32,
    scale_rule: ScaleRule = "absmax",
    ste: SteRule = "identity",
    eps: float = 1e-8,
) -> torch.Tensor:
    """Quantise-dequantise ``x`` in groups of ``group_size`` along its last axis.

    The scale of every group is computed from the data (dynamic, detached from the graph:
    the STE passes gradients to ``x`` only). ``bits=16`` returns ``x`` unchanged.

    Args:
        x: Tensor ``(..., F)`` with ``F`` divisible by ``group_size``.
        bits: 2..8, or 16 for no quantisation.
        group_size: G; the number of consecutive entries sharing one scale.
        scale_rule: ``absmax`` or ``torchao`` (see the module docstring).
        ste: ``identity`` or ``clipped`` straight-through gradient.
        eps: Floor of the scale (all-zero groups stay zero).

    >>> x = torch.tensor([[0.1, -0.6, 0.25, 1.0]])
    >>> fake_quantize(x, bits=4, group_size=4)
    tensor([[ 0.1429, -0.5714,  0.2857,  1.0000]])
    """
    check_bits(bits)
    if bits == 16:
        return x
    features = x.shape[-1]
    check_group_size(group_size, features)
    if ste not in ("identity", "clipped"):
        raise ValueError(f"ste must be 'identity' or 'clipped', got {ste!r}")
    qmin, qmax, denom = int_range(bits, scale_rule)
    shape = x.shape
    g = x.reshape(*shape[:-1], features // group_size, group_size)
    scale = (g.detach().abs().amax(dim=-1, keepdim=True) / denom).clamp_min(eps)
    # torchao rounds x * (1/s); matching it bit for bit matters at half-way points such as a
    # group's negative extreme, -(2^b - 1)/2 steps under the torchao rule
    z = g * (1.0 / scale) if scale_rule == "torchao" else g / scale
    q = _RoundSTE.apply(z, float(qmin), float(qmax), ste == "clipped")
    return (q * scale).reshape(shape)


class FakeQuantizer(nn.Module):
    """A module wrapper of :func:`fake_quantize` with fixed settings.

    Args:
        bits: 2..8, or 16 for the identity.
        group_size: G (entries per scale along the last axis).
        scale_rule: ``absmax`` or ``torchao``.
        ste: ``identity`` or ``clipped``.

    Examples:
        >>> q = FakeQuantizer(bits=4, group_size=2)
        >>> y = q(torch.tensor([[3.0, -1.0, 0.2, 0.4]]))
        >>> y.tolist() == q(y).tolist()  # idempotent
        True
        >>> q
        FakeQuantizer(bits=4, group_size=2, scale_rule=absmax, ste=identity)
    """

    def __init__(
        self,
        bits: int = 4,
        group_size: int = 32,
        scale_rule: ScaleRule = "absmax",
        ste: SteRule = "identity",
    ) -> None:
        super().__init__()
        self.bits = check_bits(bits)
        self.group_size = check_group_size(group_size)
        int_range(bits, scale_rule)
        if ste not in ("identity", "clipped"):
            raise ValueError(f"ste must be 'identity' or 'clipped', got {ste!r}")
        self.scale_rule = scale_rule
        self.ste = ste

    @property
    def enabled(self) -> bool:
        """Whether this quantiser changes its input (``bits < 16``)."""
        return self.bits < 16

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Fake-quantise ``x`` along its last axis."""
        return fake_quantize(x, self.bits, self.group_size, self.scale_rule, self.ste)

    def extra_repr(self) -> str:
        return (
            f"bits={self.bits}, group_size={self.group_size}, "
            f"scale_rule={self.scale_rule}, ste={self.ste}"
        )
