"""The MGFN head of Chen et al. (AAAI 2023): magnitude-contrastive glance-and-focus network.

"MGFN: Magnitude-Contrastive Glance-and-Focus Network for Weakly-Supervised Video Anomaly
Detection" (Chen, Ni, Wang, Fang, Zhang, Li), one of the heads the OPL paper plugs its
projection into. Reimplemented at small scale from the paper's description:

- feature amplification (FAM): the per-snippet feature norm ``||x_t||_2`` is lifted by a
  1-D convolution and added to the snippet tokens, ``h = Conv(x) + alpha * Conv(||x||)``
  (``alpha = mag_ratio``, 0.1 in the paper);
- a *glance* block (multi-head self-attention over the whole video, video-level context)
  followed by a *focus* block (local aggregation by a depth-wise 1-D convolution over a
  ``kernel``-snippet window, snippet-level context), each with a convolutional short-cut and a
  feed-forward layer, residual throughout;
- a layer norm and a linear scorer with a sigmoid: one score per snippet;
- :func:`mgfn_loss`: the ``k = 3`` snippets of largest feature magnitude per video (after a
  dropout mask in training) give the video score (mean of their scores, BCE against the video
  label) and the *magnitude contrastive* loss (MC): a contrastive loss on the vectors of the
  top-k magnitudes that pushes abnormal and normal videos ``margin`` apart and pulls the two
  halves of each class together, weighted ``1e-3 * (1e-3 * L_sep + L_abn + L_nor)``, plus
  the smoothness and sparsity terms on the scores (``8e-4``, ``8e-3``).

Differences: one glance and one focus block at one width (the paper stacks three stages of
widths 64 / 128 / 1024) and no ten-crop averaging; the loss weights and the margin are the
authors' defaults.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .mil import split_bags

__all__ = ["MGFNHead", "mgfn_loss"]

TOP_K = 3  # Chen et al. 2023, Sec. 4 (k)
MAG_RATIO = 0.1  # feature amplification alpha
MARGIN = 200.0  # magnitude contrastive margin
MC_WEIGHT = 1e-3  # weight of the magnitude contrastive terms
SEP_WEIGHT = 1e-3  # weight of the abnormal / normal separation inside them
SMOOTHNESS = 8e-4
SPARSITY = 8e-3


class _Block(nn.Module):
    """Conv short-cut + token mixer (global attention or local aggregation) + feed-forward."""

    def __init__(self, dim: int, mixer: str, heads: int, kernel: int, dropout: float):
        super().__init__()
        self.shortcut = nn.Conv1d(dim, dim, 3, padding=1)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mixer = mixer
        if mixer == "glance":
            self.attn = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        else:
            self.value = nn.Linear(dim, dim)
            self.local = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(dropout),
                                nn.Linear(4 * dim, dim))  # fmt: skip

    def forward(self, h: torch.Tensor) -> torch.Tensor:  # (B, T, C) -> (B, T, C)
        h = h + self.shortcut(h.transpose(1, 2)).transpose(1, 2)
        u = self.norm1(h)
        if self.mixer == "glance":
            h = h + self.attn(u, u, u, need_weights=False)[0]
        else:
            h = h + self.local(self.value(u).transpose(1, 2)).transpose(1, 2)
        return h + self.ff(self.norm2(h))


class MGFNHead(nn.Module):
    """``(B, T, D) -> scores (B, T)``; :meth:`forward_with_features` also gives ``(B, T, C)``.

    Parameters
    ----------
    dim:
        Feature size ``D``.
    hidden:
        Width ``C`` of the glance / focus blocks.
    heads:
        Attention heads of the glance block.
    kernel:
        Window of the focus block's local aggregation.
    mag_ratio:
        Feature-amplification weight ``alpha``.
    dropout:
        Dropout in the blocks, and the rate of the mask on the magnitudes before top-k.
    top_k:
        Snippets per video selected by feature magnitude.

    Reference: Chen et al., "MGFN", AAAI 2023.

    Examples
    --------
    >>> import torch
    >>> head = MGFNHead(16, hidden=8, heads=2).eval()
    >>> s, f = head.forward_with_features(torch.randn(2, 9, 16))
    >>> s.shape, f.shape
    (torch.Size([2, 9]), torch.Size([2, 9, 8]))
    """

    def __init__(self, dim: int, hidden: int = 64, heads: int = 4, kernel: int = 5,
                 mag_ratio: float = MAG_RATIO, dropout: float = 0.1,
                 top_k: int = TOP_K):  # fmt: skip
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
        self.to_tokens = nn.Conv1d(dim, hidden, 3, padding=1)
        self.to_mag = nn.Conv1d(1, hidden, 3, padding=1)
        self.mag_ratio = float(mag_ratio)
        self.blocks = nn.Sequential(
            _Block(hidden, "glance", heads, kernel, dropout),
            _Block(hidden, "focus", heads, kernel, dropout),
        )
        self.norm = nn.LayerNorm(hidden)
        self.scorer = nn.Linear(hidden, 1)
        self.mask = nn.Dropout(dropout)
        self.top_k = int(top_k)

    def forward_with_features(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mag = z.norm(dim=-1, keepdim=True)  # (B, T, 1): FAM's magnitude channel
        h = self.to_tokens(z.transpose(1, 2)) + self.mag_ratio * self.to_mag(mag.transpose(1, 2))
        h = self.norm(self.blocks(h.transpose(1, 2)))  # (B, T, C)
        return torch.sigmoid(self.scorer(h)).squeeze(-1), h

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.forward_with_features(z)[0]

    def loss(self, z: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores, feats = self.forward_with_features(z)
        mags = feats.norm(dim=-1)  # (B, T)
        keep = self.mask(torch.ones_like(mags)) if self.training else torch.ones_like(mags)
        return mgfn_loss(scores, mags, labels, keep, k=min(self.top_k, z.shape[1])), scores


def _contrastive(a: torch.Tensor, b: torch.Tensor, separate: bool, margin: float):
    """Contrastive loss between rows of ``a`` and ``b``: pull (d^2) or push ((m - d)_+^2)."""
    n = min(len(a), len(b))
    if n == 0:
        return a.new_zeros(())
    d = (a[:n] - b[:n]).norm(dim=-1)
    return (F.relu(margin - d) ** 2).mean() if separate else (d**2).mean()


def mgfn_loss(
    scores: torch.Tensor,
    magnitudes: torch.Tensor,
    labels: torch.Tensor,
    keep: torch.Tensor | None = None,
    k: int = TOP_K,
    margin: float = MARGIN,
) -> torch.Tensor:
    """MGFN's loss for scores and feature magnitudes ``(B, T)`` and video labels ``(B,)``.

    ``keep`` ``(B, T)``: the training-time dropout mask on the magnitudes before the top-k
    selection (all ones at evaluation).
    """
    abn, nor = split_bags(labels)
    sel = magnitudes if keep is None else magnitudes * keep
    idx = sel.topk(k, dim=1).indices  # (B, k): largest-magnitude snippets
    top_mag = magnitudes.gather(1, idx)  # (B, k)
    video = scores.gather(1, idx).mean(dim=1).clamp(1e-6, 1 - 1e-6)
    bce = F.binary_cross_entropy(video, labels.to(scores.dtype))
    ma, mn = top_mag[abn], top_mag[nor]
    half_a, half_n = len(ma) // 2, len(mn) // 2
    mc = (
        SEP_WEIGHT * _contrastive(ma, mn, True, margin)
        + _contrastive(ma[half_a:], ma[:half_a], False, margin)
        + _contrastive(mn[half_n:], mn[:half_n], False, margin)
    )
    smooth = ((scores[:, 1:] - scores[:, :-1]) ** 2).sum()
    sparse = scores[nor].reshape(-1).norm()  # the normal videos' scores
    return bce + MC_WEIGHT * mc + SMOOTHNESS * smooth + SPARSITY * sparse
