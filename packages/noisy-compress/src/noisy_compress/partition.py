"""The cell partition on which Scheffe sets are evaluated (``d <= 2``).

Scheffe sets ``{p_i > p_j}`` are approximated by unions of cells of a regular grid covering the
hold-out sample (padded); a candidate's mass of a cell is its density at the cell centre times the
cell volume (midpoint rule) and the empirical mass is the fraction of hold-out points in the cell.
Mass outside the grid is dropped for every candidate alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .convolution import convolved_pdf
from .densities import Density
from .noise import NoiseModel


@dataclass
class CellPartition:
    """Regular grid cells over a box; ``centers`` (cells, d), ``volume`` per cell.

    Examples
    --------
    >>> part = CellPartition.cover(np.array([[0.0], [1.0]]), n_cells=4, pad=0.0)
    >>> part.centers[:, 0].tolist(), part.volume
    ([0.125, 0.375, 0.625, 0.875], 0.25)
    """

    edges: list[np.ndarray]
    centers: np.ndarray
    volume: float

    @classmethod
    def cover(cls, y: np.ndarray, n_cells: int = 512, pad: float = 0.15) -> CellPartition:
        d = y.shape[1]
        if d > 2:
            raise ValueError(
                f"Scheffe sets are evaluated on a grid, which supports d <= 2; got d={d}"
            )
        per_axis = n_cells if d == 1 else max(8, int(round(n_cells**0.5)))
        lo, hi = y.min(axis=0), y.max(axis=0)
        span = np.maximum(hi - lo, 1e-6)
        lo, hi = lo - pad * span, hi + pad * span
        edges = [np.linspace(lo[j], hi[j], per_axis + 1) for j in range(d)]
        mids = [(e[1:] + e[:-1]) / 2 for e in edges]
        grid = np.stack(np.meshgrid(*mids, indexing="ij"), axis=-1).reshape(-1, d)
        vol = float(np.prod([e[1] - e[0] for e in edges]))
        return cls(edges, grid, vol)

    def frequencies(self, y: np.ndarray) -> np.ndarray:
        """Empirical mass of each cell (points outside the grid count for no cell)."""
        counts, _ = np.histogramdd(y, bins=self.edges)
        return counts.reshape(-1) / len(y)

    def masses(
        self, densities: list[Density], noise: NoiseModel, numerical: bool = False
    ) -> np.ndarray:
        """``(M, cells)`` convolved masses of the candidates."""
        return (
            np.stack(
                [convolved_pdf(f, noise, self.centers, numerical=numerical) for f in densities]
            )
            * self.volume
        )
