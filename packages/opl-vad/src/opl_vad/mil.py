"""The MIL ranking head of Sultani, Chen & Shah (CVPR 2018), the first head OPL plugs into.

Each video is a bag of ``T`` snippet features; only video labels are known (weak supervision).

- :class:`MILHead`: the ``D -> 512 -> 32 -> 1`` MLP with dropout 0.6 and a sigmoid, one
  anomaly score per snippet
- :func:`mil_ranking_loss`: for paired abnormal / normal bags,
  ``max(0, 1 - max_t s_a(t) + max_t s_n(t)) + l1 sum_t (s_a(t) - s_a(t+1))^2 + l2 sum_t s_a(t)``
  with ``l1 = l2 = 8e-5`` (Sultani et al., Eq. 7)
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["MILHead", "mil_ranking_loss", "split_bags"]

SMOOTHNESS = 8e-5  # Sultani et al. 2018, Eq. 7 (lambda_1)
SPARSITY = 8e-5  # Sultani et al. 2018, Eq. 7 (lambda_2)


class MILHead(nn.Module):
    """Snippet scorer: ``(B, T, D) -> (B, T)`` anomaly scores in ``(0, 1)``.

    Parameters
    ----------
    dim:
        Feature size ``D``.
    hidden:
        The two hidden widths (512 and 32 in the paper).
    dropout:
        Dropout after each hidden layer (0.6 in the paper).

    Examples
    --------
    >>> import torch
    >>> head = MILHead(16).eval()
    >>> head(torch.randn(2, 7, 16)).shape
    torch.Size([2, 7])
    """

    def __init__(self, dim: int, hidden: tuple[int, int] = (512, 32), dropout: float = 0.6):
        super().__init__()
        h1, h2 = hidden
        self.net = nn.Sequential(
            nn.Linear(dim, h1), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(h1, h2), nn.Dropout(dropout),
            nn.Linear(h2, 1), nn.Sigmoid(),
        )  # fmt: skip

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z).squeeze(-1)

    def loss(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loss, scores)`` of a batch of bags ``z`` ``(B, T, D)`` with video labels ``(B,)``."""
        scores = self(z)
        return mil_ranking_loss(scores, labels), scores


def split_bags(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices of the abnormal and normal bags; a clear error unless both are present."""
    labels = labels.reshape(-1)
    if not bool(((labels == 0) | (labels == 1)).all()):
        raise ValueError("video labels must be 0 (normal) or 1 (abnormal)")
    abn, nor = torch.nonzero(labels == 1).flatten(), torch.nonzero(labels == 0).flatten()
    if len(abn) == 0 or len(nor) == 0:
        raise ValueError(
            "a MIL batch needs both normal and abnormal bags; got "
            f"{len(abn)} abnormal and {len(nor)} normal"
        )
    return abn, nor


def mil_ranking_loss(
    scores: torch.Tensor,
    labels: torch.Tensor,
    smoothness: float = SMOOTHNESS,
    sparsity: float = SPARSITY,
) -> torch.Tensor:
    """Sultani et al.'s ranking loss over all (abnormal, normal) pairs of the batch.

    ``scores`` ``(B, T)`` in ``[0, 1]``, ``labels`` ``(B,)`` in ``{0, 1}``.

    Examples
    --------
    >>> import torch
    >>> s = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    >>> float(mil_ranking_loss(s, torch.tensor([1, 0]), 0.0, 0.0))
    0.0
    """
    abn, nor = split_bags(labels)
    top_a = scores[abn].max(dim=1).values  # (A,)
    top_n = scores[nor].max(dim=1).values  # (N,)
    hinge = torch.relu(1.0 - top_a[:, None] + top_n[None, :]).mean()
    sa = scores[abn]
    smooth = ((sa[:, 1:] - sa[:, :-1]) ** 2).sum(dim=1).mean()
    sparse = sa.sum(dim=1).mean()
    return hinge + smoothness * smooth + sparsity * sparse
