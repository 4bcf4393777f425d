"""The RTFM head of Tian et al. (ICCV 2021): robust temporal feature magnitude learning.

- :class:`RTFMHead`: a temporal (dilated 1-D convolution) block with a residual connection,
  in place of RTFM's multi-scale temporal network, then the snippet classifier
  ``D -> 512 -> 128 -> 1``; snippet scores and the feature magnitudes ``||h_t||``
- :func:`rtfm_loss`: with ``k = 3`` top-magnitude snippets per video,
  ``(|m - mean_topk ||h_a|| | + mean_topk ||h_n||)^2`` (margin ``m = 100``), plus the BCE of
  the mean score of those snippets against the video label, plus the smoothness and sparsity
  terms on abnormal scores (``8e-4`` each); the magnitude term is weighted ``1e-4``, as in
  RTFM's training code

The multi-scale temporal network is simplified to one dilated convolution block: the
property RTFM relies on (feature magnitude separates abnormal snippets) does not depend on it.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .mil import split_bags

__all__ = ["RTFMHead", "rtfm_loss"]

TOP_K = 3  # Tian et al. 2021, Sec. 4.1
MARGIN = 100.0  # Tian et al. 2021, Sec. 4.1 (m)
SMOOTHNESS = 8e-4  # RTFM training code
SPARSITY = 8e-4
FEATURE_WEIGHT = 1e-4  # RTFM training code (alpha on the magnitude term)


class RTFMHead(nn.Module):
    """``(B, T, D) -> (scores (B, T), magnitudes (B, T))``.

    Examples
    --------
    >>> import torch
    >>> head = RTFMHead(16).eval()
    >>> s, m = head.forward_with_magnitudes(torch.randn(2, 9, 16))
    >>> s.shape, m.shape
    (torch.Size([2, 9]), torch.Size([2, 9]))
    """

    def __init__(self, dim: int, hidden: int = 512, dropout: float = 0.7, top_k: int = TOP_K):
        super().__init__()
        self.temporal = nn.Conv1d(dim, dim, kernel_size=3, padding=2, dilation=2)
        self.classifier = nn.Sequential(
            nn.Linear(dim, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, 128), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(128, 1), nn.Sigmoid(),
        )  # fmt: skip
        self.top_k = int(top_k)

    def features(self, z: torch.Tensor) -> torch.Tensor:
        return z + F.relu(self.temporal(z.transpose(1, 2))).transpose(1, 2)

    def forward_with_magnitudes(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.features(z)
        return self.classifier(h).squeeze(-1), h.norm(dim=-1)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.forward_with_magnitudes(z)[0]

    def loss(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores, mags = self.forward_with_magnitudes(z)
        return rtfm_loss(scores, mags, labels, k=min(self.top_k, z.shape[1])), scores


def rtfm_loss(
    scores: torch.Tensor,
    magnitudes: torch.Tensor,
    labels: torch.Tensor,
    k: int = TOP_K,
    margin: float = MARGIN,
    smoothness: float = SMOOTHNESS,
    sparsity: float = SPARSITY,
) -> torch.Tensor:
    """RTFM's loss for scores and magnitudes ``(B, T)`` and video labels ``(B,)``."""
    abn, nor = split_bags(labels)
    idx = magnitudes.topk(k, dim=1).indices  # (B, k): top-magnitude snippets
    top_mag = magnitudes.gather(1, idx).mean(dim=1)  # (B,)
    top_score = scores.gather(1, idx).mean(dim=1).clamp(1e-6, 1 - 1e-6)
    feat = ((margin - top_mag[abn]).abs().mean() + top_mag[nor].mean()) ** 2
    bce = F.binary_cross_entropy(top_score, labels.to(scores.dtype))
    sa = scores[abn]
    smooth = ((sa[:, 1:] - sa[:, :-1]) ** 2).sum(dim=1).mean()
    return bce + FEATURE_WEIGHT * feat + smoothness * smooth + sparsity * sa.sum(dim=1).mean()
