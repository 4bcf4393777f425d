"""The atoms on which Scheffe sets are evaluated: grid cells (``d <= 2``) or sample points (any d).

The tournaments (:mod:`noisy_compress.tournament`) see every candidate as a vector ``P[i, c]`` of
masses of atoms ``c`` and the hold-out sample as frequencies ``h[c]``; a Scheffe set
``A_ij = {p_i > p_j}`` is the union of the atoms where ``P[i, c] > P[j, c]``.

- :class:`CellPartition` (``d <= 2``): cells of a regular grid covering the hold-out sample
  (padded). In 1-D the atoms are the cells plus the two half-lines outside the grid, so they
  partition the line, and a candidate's mass of an atom is exact (differences of the convolved
  distribution function, :func:`~noisy_compress.convolution.convolved_cdf`); the tournaments then
  compare the laws binned on these atoms, and :meth:`CellPartition.binning_gap` bounds what binning
  can hide: ``TV(p, q) - TV_binned(p, q) <= h ||g'||_1 + p(outside)`` for ``p = f * g``,
  ``q = f' * g`` and cell width ``h`` (on a cell ``c``, ``int_c |u - mean_c u| <= h int_c |u'|`` for
  ``u = p - q``, and ``||(f * g)'||_1 <= ||g'||_1 = 2 sup g`` for unimodal noise). In 2-D (and in
  1-D without a closed-form distribution function) a cell's mass is the density at its centre
  times its volume (midpoint rule) and mass outside the grid is dropped for every candidate
  alike: the comparison is then between binned approximations.
- :class:`PointPartition` (any ``d``): the atoms are the hold-out points themselves plus ``N``
  Monte-Carlo points drawn from the equal mixture ``q`` of the convolved candidates. A
  Monte-Carlo point ``s`` carries ``P[i, s] = p_i(s) / (N q(s))`` (importance sampling, unbiased
  for ``p_i(A)``); a hold-out point ``y`` carries ``p_i(y)`` times a negligible weight, so that
  ``y in A_ij`` is decided by the exact densities while adding no mass, and ``h[y] = 1 / n``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .convolution import convolved_cdf, convolved_pdf
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
    >>> part.frequencies(np.array([[0.1], [0.9]])).tolist()  # left, four cells, right
    [0.0, 0.5, 0.0, 0.0, 0.5, 0.0]
    """

    edges: list[np.ndarray]
    centers: np.ndarray
    volume: float
    exact: bool = False  # set by masses(): exact atom masses (1-D, closed-form CDF)

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

    @property
    def d(self) -> int:
        return len(self.edges)

    @property
    def width(self) -> float:
        """Largest cell side ``h``."""
        return float(max(e[1] - e[0] for e in self.edges))

    def frequencies(self, y: np.ndarray) -> np.ndarray:
        """Empirical mass of each atom (in 1-D: left half-line, cells, right half-line)."""
        counts, _ = np.histogramdd(y, bins=self.edges)
        h = counts.reshape(-1) / len(y)
        if self.d == 1:
            e = self.edges[0]
            left, right = np.mean(y[:, 0] < e[0]), np.mean(y[:, 0] > e[-1])
            h = np.concatenate([[left], h, [right]])
        return h

    def masses(
        self, densities: list[Density], noise: NoiseModel, numerical: bool = False
    ) -> np.ndarray:
        """``(M, atoms)`` convolved masses of the candidates (exact in 1-D where a CDF exists)."""
        if self.d == 1:
            e = self.edges[0]
            cdfs = [convolved_cdf(f, noise, e) for f in densities]
            if all(c is not None for c in cdfs):
                F = np.stack(cdfs)
                self.exact = True
                return np.concatenate([F[:, :1], np.diff(F, axis=1), 1.0 - F[:, -1:]], axis=1)
        self.exact = False
        P = np.stack(
            [convolved_pdf(f, noise, self.centers, numerical=numerical) for f in densities]
        ) * self.volume  # fmt: skip
        if self.d == 1:
            out = np.clip(1.0 - P.sum(axis=1, keepdims=True), 0.0, None) / 2
            P = np.concatenate([out, P, out], axis=1)
        return P

    def binning_gap(self, noise: NoiseModel, outside_mass: float) -> float:
        """Upper bound on ``TV - TV_binned`` for the selected candidate (``nan``: no bound).

        ``h ||g'||_1 + outside_mass`` with ``||g'||_1 = 2 sup g`` (unimodal 1-D noise); only when
        the masses were exact (1-D, closed-form CDF) and the noise has a bounded density.
        """
        if not self.exact or self.d != 1 or noise.is_zero or not np.isfinite(noise.sup_density):
            return float("nan")
        return float(self.width * 2.0 * noise.sup_density + outside_mass)


@dataclass
class PointPartition:
    """Hold-out points plus Monte-Carlo points as the atoms of the Scheffe sets (any ``d``).

    Parameters
    ----------
    y:
        The hold-out sample ``(n, d)``: the first ``n`` atoms.
    n_mc:
        Monte-Carlo points drawn from the candidates' equal mixture in :meth:`masses`.
    seed:
        Seed of the Monte-Carlo draw.

    Examples
    --------
    >>> from noisy_compress.densities import GaussianDensity
    >>> from noisy_compress.noise import GaussianNoise
    >>> f = [GaussianDensity([0.0, 0.0, 0.0], np.eye(3)), GaussianDensity([1.0, 0.0, 0.0], np.eye(3))]
    >>> part = PointPartition(np.zeros((10, 3)), n_mc=4000)
    >>> P = part.masses(f, GaussianNoise(0.5, d=3))
    >>> P.shape, bool(np.allclose(P.sum(axis=1), 1.0, atol=0.05))
    ((2, 4010), True)
    >>> float(part.frequencies(np.zeros((10, 3))).sum())
    1.0
    """

    y: np.ndarray
    n_mc: int = 20_000
    seed: int = 0
    holdout_weight: float = 1e-12

    def frequencies(self, y: np.ndarray) -> np.ndarray:
        """``1/n`` on each hold-out atom, 0 on the Monte-Carlo atoms (``y`` must be that sample)."""
        if y.shape != self.y.shape or not np.array_equal(y, self.y):
            raise ValueError("PointPartition.frequencies needs the hold-out sample it was built on")
        return np.concatenate([np.full(len(y), 1.0 / len(y)), np.zeros(self.n_mc)])

    def masses(
        self, densities: list[Density], noise: NoiseModel, numerical: bool = False
    ) -> np.ndarray:
        """``(M, n + n_mc)`` atom masses of the convolved candidates."""
        if self.n_mc < 1:
            raise ValueError(f"n_mc must be >= 1; got {self.n_mc}")
        rng = np.random.default_rng(self.seed)
        M = len(densities)
        which = rng.integers(M, size=self.n_mc)
        s = np.empty((self.n_mc, self.y.shape[1]))
        for i in np.unique(which):
            rows = np.flatnonzero(which == i)
            s[rows] = densities[i].sample(len(rows), rng)
        s += noise.sample(self.n_mc, rng)
        atoms = np.concatenate([self.y, s])
        dens = np.stack([convolved_pdf(f, noise, atoms, numerical=numerical) for f in densities])
        q = dens[:, len(self.y) :].mean(axis=0)  # mixture density at the Monte-Carlo points
        w = np.concatenate([np.full(len(self.y), self.holdout_weight), 1.0 / (self.n_mc * q)])
        return dens * w[None, :]
