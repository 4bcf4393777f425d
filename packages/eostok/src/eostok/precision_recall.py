"""Improved precision and recall of generated samples (Kynkäänniemi et al., NeurIPS 2019).

The research notes' evaluation for EOSTok (arXiv 2605.00503) reports precision/recall next to
the proxy FID. Each set's support is estimated as the union of balls around its feature
vectors, radius = distance to the k-th nearest neighbour within the same set (k = 3 in the
reference implementation):

* ``precision = mean_g 1[exists r: |g - r| <= rad_k(r)]`` (fraction of generated samples inside
  the real manifold);
* ``recall = mean_r 1[exists g: |r - g| <= rad_k(g)]`` (fraction of real samples inside the
  generated manifold): :func:`precision_recall`, on any features (here the metric CNN's).

Written here (a few lines of ``torch.cdist``): torchmetrics has no precision/recall for
generative models and torch-fidelity's is not in this workspace's lock.
"""

from __future__ import annotations

import torch


def knn_radii(feats: torch.Tensor, k: int) -> torch.Tensor:
    """Distance ``(N,)`` of each row of ``feats`` ``(N, D)`` to its k-th nearest other row."""
    if not 1 <= k < len(feats):
        raise ValueError(f"k must lie in [1, {len(feats) - 1}] for {len(feats)} samples, got {k}")
    d = torch.cdist(feats, feats)  # (N, N); the diagonal (0) is the 0-th neighbour
    return d.kthvalue(k + 1, dim=1).values


def manifold_coverage(support: torch.Tensor, queries: torch.Tensor, k: int) -> float:
    """Fraction of ``queries`` ``(M, D)`` inside the k-NN ball union of ``support`` ``(N, D)``."""
    radii = knn_radii(support, k)  # (N,)
    d = torch.cdist(queries, support)  # (M, N)
    return float((d <= radii[None, :]).any(dim=1).double().mean())


def precision_recall(real: torch.Tensor, fake: torch.Tensor, k: int = 3) -> tuple[float, float]:
    """Improved (precision, recall) of ``fake`` ``(M, D)`` against ``real`` ``(N, D)``.

    >>> _ = torch.manual_seed(0)
    >>> real = torch.randn(300, 2)
    >>> p, r = precision_recall(real, real.clone())
    >>> p, r
    (1.0, 1.0)
    >>> p, r = precision_recall(real, 0.05 * torch.randn(300, 2))  # mode collapse
    >>> p > 0.9 and r < 0.3
    True
    """
    if real.ndim != 2 or fake.ndim != 2 or real.shape[1] != fake.shape[1]:
        raise ValueError(
            f"precision/recall need two (N, D) feature sets, got {tuple(real.shape)} and "
            f"{tuple(fake.shape)}"
        )
    real, fake = real.double(), fake.double()
    return manifold_coverage(real, fake, k), manifold_coverage(fake, real, k)
