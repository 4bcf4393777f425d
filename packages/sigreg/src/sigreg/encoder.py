"""The MLP trunk whose output SIGReg regularises (the paper's encoder, at CPU scale).

The paper's agents use a CNN + MLP trunk mapping ``s`` to ``phi(s)`` (D = 512) and linear
heads. At CPU scale the trunk is an MLP ``[Linear -> (LayerNorm) -> ReLU] x depth``:

* ``feature_point="post-relu"``: ``phi`` is the output after the final ReLU (the CIFAR
  script: the classifier is linear on it);
* ``feature_point="pre-relu"``: ``phi`` is the last Linear (+ LayerNorm) output and the
  head applies ``ReLU -> Linear`` (the PQN script: SIGReg on the LayerNorm'd trunk
  output before the Q-head's ReLU).

:class:`Trunk` returns ``phi``; :meth:`Trunk.head_input` turns it into the head input.
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
