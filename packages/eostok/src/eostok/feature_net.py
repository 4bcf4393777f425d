"""Small CNNs trained by the package on real digits: alignment teacher and metric network.

The paper aligns to DINOv2 and measures gFID with Inception; offline neither exists here,
so two :class:`FeatureCNN` trained with *different seeds* stand in: one is the frozen
alignment teacher (:func:`train_feature_net` with ``seed=teacher_seed``), the other the
metric network for the proxy FID and the generated-class accuracy. Never the same network.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class FeatureCNN(nn.Module):
    """Conv net for 16x16 grey images: spatial features, a pooled embedding and logits.

    Examples
    --------
    >>> net = FeatureCNN()
    >>> fmap, emb, logits = net(torch.rand(2, 1, 16, 16))
    >>> fmap.shape, emb.shape, logits.shape
    (torch.Size([2, 32, 4, 4]), torch.Size([2, 16]), torch.Size([2, 10]))
    """

    def __init__(
        self, channels: int = 1, num_classes: int = 10, embed_dim: int = 16, image_size: int = 16
    ) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(channels, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        )  # fmt: skip
        self.embed = nn.Linear(32 * (image_size // 4) ** 2, embed_dim)
        self.cls = nn.Linear(embed_dim, num_classes)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Feature map ``(B, 32, H/4, W/4)``, embedding ``(B, embed_dim)``, logits."""
        fmap = self.conv(x)
        emb = torch.tanh(self.embed(fmap.flatten(1)))
        return fmap, emb, self.cls(emb)


def train_feature_net(
    x: torch.Tensor, y: torch.Tensor, seed: int, steps: int = 300, batch_size: int = 64
) -> FeatureCNN:
    """Train a :class:`FeatureCNN` classifier with Adam; returned frozen in eval mode."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = FeatureCNN(x.shape[1], int(y.max()) + 1, image_size=x.shape[-1])
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(steps):
        idx = torch.randint(0, len(x), (batch_size,), generator=gen)
        loss = F.cross_entropy(net(x[idx])[2], y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    for p in net.parameters():
        p.requires_grad_(False)
    return net


@torch.no_grad()
def accuracy(net: FeatureCNN, x: torch.Tensor, y: torch.Tensor) -> float:
    """Classification accuracy of ``net`` on ``(x, y)``."""
    return float((net(x)[2].argmax(-1) == y).float().mean())
