"""Distances between densities: total variation and ell_2, closed form where possible.

1. TV of two boxes, ``(1/2) int |1_A/|A| - 1_B/|B||`` in closed form: :func:`tv_boxes`;
2. ell_2 between Gaussian mixtures with
   ``int N(x; m1, S1) N(x; m2, S2) dx = N(m1; m2, S1 + S2)``: :func:`l2_gaussian_mixtures`;
3. any pair in ``d <= 2``: a fine grid over both supports: :func:`tv_distance`, :func:`l2_distance`;
4. torchmetrics versions accumulating tabulated densities: :class:`TotalVariation`,
   :class:`L2Distance` (used by the Lightning modules' ``test_step``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torchmetrics import Metric

from .densities import BoxDensity, Density, GaussianDensity, MixtureDensity, gaussian_logpdf


def tv_boxes(a: BoxDensity, b: BoxDensity) -> float:
    """Closed-form TV between two uniform boxes.

    Examples
    --------
    >>> tv_boxes(BoxDensity([0.0], [1.0]), BoxDensity([0.0], [2.0]))
    0.5
    """
    inter = float(np.prod(np.clip(np.minimum(a.hi, b.hi) - np.maximum(a.lo, b.lo), 0, None)))
    va, vb = a.volume, b.volume
    # |1/va - 1/vb| on the intersection, 1/va and 1/vb on the rest
    return 0.5 * (inter * abs(1 / va - 1 / vb) + (va - inter) / va + (vb - inter) / vb)


def _components(f: Density) -> tuple[np.ndarray, list[GaussianDensity]]:
    if isinstance(f, GaussianDensity):
        return np.ones(1), [f]
    if isinstance(f, MixtureDensity) and all(isinstance(c, GaussianDensity) for c in f.components):
        return np.asarray(f.weights), list(f.components)
    raise TypeError("closed-form ell_2 needs Gaussians or Gaussian mixtures")


def l2_gaussian_mixtures(f: Density, g: Density) -> float:
    """Closed-form ``||f - g||_2`` for Gaussian mixtures.

    Examples
    --------
    >>> f = GaussianDensity([0.0], [[1.0]])
    >>> l2_gaussian_mixtures(f, f)
    0.0
    """
    wf, cf = _components(f)
    wg, cg = _components(g)

    def cross(wa, ca, wb, cb):
        return sum(
            a * b * math.exp(gaussian_logpdf(x.mean[None], y.mean, x.cov + y.cov)[0])
            for a, x in zip(wa, ca, strict=True)
            for b, y in zip(wb, cb, strict=True)
        )

    sq = cross(wf, cf, wf, cf) + cross(wg, cg, wg, cg) - 2 * cross(wf, cf, wg, cg)
    return math.sqrt(max(sq, 0.0))


def evaluation_grid(*densities: Density, n: int = 8000) -> tuple[np.ndarray, float]:
    """A regular grid (``(cells, d)``, cell volume) covering the support boxes of ``densities``."""
    d = densities[0].d
    if d > 2:
        raise ValueError("grid distances support d <= 2")
    boxes = [f.support_box() for f in densities]
    lo = np.min([b[0] for b in boxes], axis=0)
    hi = np.max([b[1] for b in boxes], axis=0)
    span = hi - lo
    lo, hi = lo - 0.02 * span, hi + 0.02 * span
    per = n if d == 1 else int(round(math.sqrt(n)))
    axes = [np.linspace(lo[j], hi[j], per) for j in range(d)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
    vol = float(np.prod([(a[1] - a[0]) for a in axes]))
    return grid, vol


def tv_distance(f: Density, g: Density, n: int = 8000) -> float:
    """TV between ``f`` and ``g`` (closed form for two boxes, else a fine grid in ``d <= 2``).

    Examples
    --------
    >>> round(tv_distance(GaussianDensity([0.0], [[1.0]]), GaussianDensity([1.0], [[1.0]])), 3)
    0.383
    """
    if isinstance(f, BoxDensity) and isinstance(g, BoxDensity):
        return tv_boxes(f, g)
    grid, vol = evaluation_grid(f, g, n=n)
    return float(min(1.0, 0.5 * np.sum(np.abs(f.pdf(grid) - g.pdf(grid))) * vol))


def l2_distance(f: Density, g: Density, n: int = 8000) -> float:
    """``||f - g||_2`` (closed form for Gaussian mixtures, else a grid in ``d <= 2``)."""
    try:
        return l2_gaussian_mixtures(f, g)
    except TypeError:
        pass
    grid, vol = evaluation_grid(f, g, n=n)
    return float(math.sqrt(np.sum((f.pdf(grid) - g.pdf(grid)) ** 2) * vol))


class TotalVariation(Metric):
    """Mean TV between tabulated densities ``p`` and ``q`` (rows) with cell volume ``volume``.

    Examples
    --------
    >>> m = TotalVariation()
    >>> m.update(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]]), 1.0)
    >>> float(m.compute())
    1.0
    """

    full_state_update = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.add_state(
            "total", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum"
        )
        self.add_state("count", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, p: torch.Tensor, q: torch.Tensor, volume: float) -> None:
        p, q = torch.atleast_2d(p).double(), torch.atleast_2d(q).double()
        self.total += (0.5 * (p - q).abs().sum(dim=1) * volume).clamp(max=1.0).sum()
        self.count += p.shape[0]

    def compute(self) -> torch.Tensor:
        return self.total / self.count.clamp(min=1)


class L2Distance(TotalVariation):
    """Mean ``||p - q||_2`` between tabulated densities (same states as :class:`TotalVariation`).

    Examples
    --------
    >>> m = L2Distance()
    >>> m.update(torch.tensor([[2.0, 0.0]]), torch.tensor([[0.0, 0.0]]), 0.25)
    >>> float(m.compute())
    1.0
    """

    def update(self, p: torch.Tensor, q: torch.Tensor, volume: float) -> None:
        p, q = torch.atleast_2d(p).double(), torch.atleast_2d(q).double()
        self.total += (((p - q) ** 2).sum(dim=1) * volume).sqrt().sum()
        self.count += p.shape[0]
