"""Input validation shared by the quantizers (one clear error per bad input).

Every public entry point of :mod:`watersic` calls these checks before touching the
numbers, so that bad input fails with a message that names the problem instead of
silently producing wrong output (the issue's "Bad input" list).
"""

from __future__ import annotations

import math
import warnings

import torch

#: Rates are bits per weight; more than 16 would exceed the fp16 weights being replaced.
MAX_RATE = 16.0

ACCOUNTING_MODES = ("pooled", "per_column", "coded")


def check_weight(W: torch.Tensor, name: str = "W") -> torch.Tensor:
    """Return ``W`` as float64 after checking it is a finite 2-D tensor ``(a, n)``."""
    if not isinstance(W, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(W).__name__}")
    if W.dim() != 2:
        raise ValueError(
            f"{name} must be 2-D (out_features, in_features), got shape {tuple(W.shape)}"
        )
    if W.numel() == 0:
        raise ValueError(f"{name} is empty (shape {tuple(W.shape)})")
    W = W.detach().to(torch.float64)
    if not torch.isfinite(W).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return W


def check_second_moment(sigma: torch.Tensor, n: int, name: str = "sigma") -> torch.Tensor:
    """Return a symmetric float64 copy of an ``(n, n)`` second-moment matrix, or raise."""
    if not isinstance(sigma, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(sigma).__name__}")
    if sigma.dim() != 2 or sigma.shape[0] != sigma.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {tuple(sigma.shape)}")
    if sigma.shape[0] != n:
        raise ValueError(
            f"{name} is {sigma.shape[0]}x{sigma.shape[1]} but W has {n} input columns "
            f"(expected {n}x{n})"
        )
    if sigma.dtype in (torch.float16, torch.bfloat16):
        warnings.warn(
            f"{name} is {sigma.dtype}; casting to float64 (accumulate it in float64 for accuracy)",
            stacklevel=3,
        )
    sigma = sigma.detach().to(torch.float64)
    if not torch.isfinite(sigma).all():
        raise ValueError(f"{name} contains NaN or Inf")
    scale = sigma.abs().max().item()
    asym = (sigma - sigma.T).abs().max().item()
    if scale > 0 and asym > 1e-6 * scale:
        raise ValueError(
            f"{name} is not symmetric (max |S - S^T| = {asym:.3g}, relative {asym / scale:.3g})"
        )
    return 0.5 * (sigma + sigma.T)


def check_cross_moment(cross: torch.Tensor, shape: tuple[int, int], name: str) -> torch.Tensor:
    """Return a float64 copy of a cross moment of the given shape (no symmetry required)."""
    if not isinstance(cross, torch.Tensor) or tuple(cross.shape) != tuple(shape):
        got = tuple(cross.shape) if isinstance(cross, torch.Tensor) else type(cross).__name__
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {got}")
    cross = cross.detach().to(torch.float64)
    if not torch.isfinite(cross).all():
        raise ValueError(f"{name} contains NaN or Inf")
    return cross


def check_rate(rate: float, name: str = "rate") -> float:
    """Return ``rate`` as float if it lies in (0, 16] bits per weight, else raise."""
    try:
        value = float(rate)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of bits per weight, got {rate!r}") from None
    if math.isnan(value):
        raise ValueError(f"{name} is NaN; expected bits per weight in (0, {MAX_RATE:g}]")
    if value <= 0 or value > MAX_RATE:
        raise ValueError(
            f"{name}={value:g} is out of range; expected bits per weight in (0, {MAX_RATE:g}]"
        )
    return value


def check_accounting(accounting: str) -> str:
    """Return the accounting mode if known, else raise."""
    if accounting not in ACCOUNTING_MODES:
        raise ValueError(
            f"unknown accounting mode {accounting!r}; choose one of {ACCOUNTING_MODES}"
        )
    return accounting
