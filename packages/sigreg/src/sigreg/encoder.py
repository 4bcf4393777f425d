"""The trunks whose output SIGReg regularises: an MLP (CPU scale) and the Atari CNN.

The paper's agents use a CNN + MLP trunk mapping ``s`` to ``phi(s)`` (D = 512) and linear
heads. At CPU scale the trunk is an MLP ``[Linear -> (LayerNorm) -> ReLU] x depth``:

* ``feature_point="post-relu"``: ``phi`` is the output after the final ReLU (the CIFAR
  script: the classifier is linear on it);
* ``feature_point="pre-relu"``: ``phi`` is the last Linear (+ LayerNorm) output and the
  head applies ``ReLU -> Linear`` (the PQN script: SIGReg on the LayerNorm'd trunk
  output before the Q-head's ReLU).

:class:`Trunk` returns ``phi``; :meth:`Trunk.head_input` turns it into the head input.
:class:`NatureCNN` is the paper's Atari encoder (the real path: CleanRL's Nature-DQN CNN,
conv 32x8/4 -> 64x4/2 -> 64x3/1 -> Linear 512, LayerNorm after every layer for PQN) with
the same interface; :func:`make_trunk` picks one by name.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn


class Trunk(nn.Module):
    """MLP trunk with optional LayerNorm, exposing the regularised features.

    Args:
        in_dim: Input dimension.
        hidden: Width of every layer (the feature dimension ``D``).
        depth: Number of Linear layers.
        layer_norm: LayerNorm after every Linear (the PQN default, and the LayerNorm
            baseline of the plasticity benchmark).
        feature_point: ``post-relu`` or ``pre-relu`` (see the module docstring).

    Examples:
        >>> t = Trunk(4, 8, depth=2, layer_norm=True, feature_point="pre-relu")
        >>> phi = t(torch.randn(3, 4)); phi.shape, bool((t.head_input(phi) >= 0).all())
        (torch.Size([3, 8]), True)
    """

    def __init__(
        self,
        in_dim: int,
        hidden: int = 256,
        depth: int = 3,
        layer_norm: bool = False,
        feature_point: Literal["post-relu", "pre-relu"] = "post-relu",
    ) -> None:
        super().__init__()
        if depth < 1 or hidden < 1 or in_dim < 1:
            raise ValueError("Trunk needs in_dim, hidden and depth >= 1")
        if feature_point not in ("post-relu", "pre-relu"):
            raise ValueError(
                f"feature_point must be 'post-relu' or 'pre-relu', got {feature_point!r}"
            )
        self.feature_point = feature_point
        layers: list[nn.Module] = []
        dims = [in_dim] + [hidden] * depth
        for i in range(depth):
            layers.append(nn.Linear(dims[i], dims[i + 1]))
            if layer_norm:
                layers.append(nn.LayerNorm(dims[i + 1]))
            last = i == depth - 1
            if not (last and feature_point == "pre-relu"):
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)
        self.out_dim = hidden

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Features ``phi(x)`` of shape (N, hidden)."""
        return self.net(x)

    def head_input(self, phi: torch.Tensor) -> torch.Tensor:
        """What the linear head reads: ``phi`` or ``ReLU(phi)`` for ``pre-relu``."""
        return torch.relu(phi) if self.feature_point == "pre-relu" else phi

    def linear_layers(self) -> list[nn.Linear]:
        """The trunk's Linear layers, in order (for ReDo)."""
        return [m for m in self.net if isinstance(m, nn.Linear)]


class NatureCNN(nn.Module):
    """The Atari encoder (Nature-DQN CNN + Linear to ``hidden``) on flattened frame stacks.

    Input rows are flattened ``obs_shape`` (C, H, W) uint8-range frames (the
    non-stationarity wrapper flattens observations); they are reshaped and scaled by
    1/255. ``feature_point`` and :meth:`head_input` behave as in :class:`Trunk`.

    Examples:
        >>> t = NatureCNN((4, 84, 84), hidden=16, layer_norm=True, feature_point="pre-relu")
        >>> t(torch.zeros(2, 4 * 84 * 84)).shape
        torch.Size([2, 16])
    """

    def __init__(
        self,
        obs_shape: tuple[int, ...],
        hidden: int = 512,
        layer_norm: bool = False,
        feature_point: Literal["post-relu", "pre-relu"] = "post-relu",
    ) -> None:
        super().__init__()
        if len(obs_shape) != 3 or min(obs_shape[1:]) < 36:
            raise ValueError(
                f"nature-cnn needs (C, H, W) image observations with H, W >= 36, got {tuple(obs_shape)}"
            )
        if feature_point not in ("post-relu", "pre-relu"):
            raise ValueError(
                f"feature_point must be 'post-relu' or 'pre-relu', got {feature_point!r}"
            )
        self.obs_shape = tuple(int(d) for d in obs_shape)
        self.feature_point = feature_point
        c = self.obs_shape[0]
        convs: list[nn.Module] = []
        for cin, cout, k, st in ((c, 32, 8, 4), (32, 64, 4, 2), (64, 64, 3, 1)):
            convs.append(nn.Conv2d(cin, cout, k, st))
            convs.append(nn.ReLU())
        self.conv = nn.Sequential(*convs, nn.Flatten())
        with torch.no_grad():
            flat = self.conv(torch.zeros(1, *self.obs_shape)).shape[1]
        tail: list[nn.Module] = [nn.Linear(flat, hidden)]
        if layer_norm:
            tail.append(nn.LayerNorm(hidden))
        if feature_point == "post-relu":
            tail.append(nn.ReLU())
        self.net = nn.Sequential(*tail)
        self.out_dim = hidden

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Features ``phi(x)`` of shape (N, hidden)."""
        return self.net(self.conv(x.reshape(-1, *self.obs_shape) / 255.0))

    def head_input(self, phi: torch.Tensor) -> torch.Tensor:
        """What the linear head reads: ``phi`` or ``ReLU(phi)`` for ``pre-relu``."""
        return torch.relu(phi) if self.feature_point == "pre-relu" else phi

    def linear_layers(self) -> list[nn.Linear]:
        """The dense layers (for ReDo)."""
        return [m for m in self.net if isinstance(m, nn.Linear)]


ENCODERS = ("mlp", "nature-cnn")


def make_trunk(
    encoder: str,
    obs_shape: tuple[int, ...],
    hidden: int,
    depth: int,
    layer_norm: bool,
    feature_point: Literal["post-relu", "pre-relu"],
) -> Trunk | NatureCNN:
    """``mlp`` (:class:`Trunk` on the flattened observation) or ``nature-cnn``."""
    if encoder == "mlp":
        dim = 1
        for d in obs_shape:
            dim *= int(d)
        return Trunk(dim, hidden, depth, layer_norm, feature_point)
    if encoder == "nature-cnn":
        return NatureCNN(obs_shape, hidden, layer_norm, feature_point)
    raise ValueError(f"unknown encoder {encoder!r}; choose one of {list(ENCODERS)}")
