"""Concrete members of the distribution families (what a decoder outputs and what is learned).

Paper concept -> code:

1. a uniform box ``U(prod_j [lo_j, hi_j])``: :class:`BoxDensity` (characteristic function
   ``prod_j sinc``);
2. a Gaussian ``N(mu, Sigma)``: :class:`GaussianDensity`;
3. a finite mixture ``sum_k w_k f_k`` (closure of compressible classes under mixing):
   :class:`MixtureDensity`;
4. a density tabulated on a 1-D grid (the output of kernel baselines): :class:`GridDensity`.

Each has ``pdf``, ``logpdf``, ``sample``, ``char_fn`` (where used) and ``support_box`` (a box
holding all but a negligible mass, used to build evaluation grids). Convolution with noise lives
in :mod:`noisy_compress.convolution`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def gaussian_logpdf(x: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``log N(x; mean, cov)`` for rows of ``x`` (Cholesky; a fast path for diagonal ``cov``)."""
    z = x - mean
    d = len(mean)
    diag = np.diag(cov)
    if d == 1 or np.count_nonzero(cov - np.diag(diag)) == 0:
        return -0.5 * (
            np.sum(z**2 / diag, axis=1) + np.sum(np.log(diag)) + d * math.log(2 * math.pi)
        )
    L = np.linalg.cholesky(cov)
    sol = np.linalg.solve(L, z.T)
    logdet = 2 * np.sum(np.log(np.diag(L)))
    return -0.5 * (np.sum(sol**2, axis=0) + logdet + d * math.log(2 * math.pi))


def as_points(x: np.ndarray, d: int, what: str = "points") -> np.ndarray:
    """Return ``x`` as a finite float array of shape ``(n, d)`` (1-D input allowed when ``d == 1``)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1 and d == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] != d:
        raise ValueError(f"{what} must have shape (n, {d}); got {x.shape} (dimension mismatch)")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what} contain NaN or inf")
    return x


class Density:
    """Base class: a probability density on ``R^d``."""

    d: int = 1

    def pdf(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    def logpdf(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.pdf(x))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    def support_box(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover - abstract

    def params(self) -> dict:
        raise NotImplementedError  # pragma: no cover - abstract


@dataclass(eq=False)
class BoxDensity(Density):
    """Uniform density on the box ``prod_j [lo_j, hi_j]``.

    Examples
    --------
    >>> b = BoxDensity([0.0], [2.0])
    >>> b.pdf(np.array([[1.0], [3.0]])).tolist()
    [0.5, 0.0]
    """

    lo: Sequence[float]
    hi: Sequence[float]

    def __post_init__(self):
        self.lo = np.atleast_1d(np.asarray(self.lo, dtype=float))
        self.hi = np.atleast_1d(np.asarray(self.hi, dtype=float))
        if self.lo.shape != self.hi.shape:
            raise ValueError("box lo and hi must have the same length")
        if not np.all(self.hi > self.lo):
            raise ValueError(
                f"box needs hi > lo in every coordinate; got lo={self.lo}, hi={self.hi}"
            )
        self.d = len(self.lo)

    @property
    def volume(self) -> float:
        return float(np.prod(self.hi - self.lo))

    def pdf(self, x):
        x = as_points(x, self.d)
        inside = np.all((x >= self.lo) & (x <= self.hi), axis=1)
        return np.where(inside, 1.0 / self.volume, 0.0)

    def sample(self, n, rng):
        return rng.uniform(self.lo, self.hi, size=(n, self.d))

    def char_fn(self, omega):
        omega = as_points(omega, self.d, "frequencies")
        c, h = (self.lo + self.hi) / 2, (self.hi - self.lo) / 2
        return np.exp(1j * omega @ c) * np.prod(np.sinc(omega * h / math.pi), axis=1)

    def support_box(self):
        return self.lo.copy(), self.hi.copy()

    def params(self):
        return {"type": "box", "lo": self.lo.tolist(), "hi": self.hi.tolist()}

    def __repr__(self):
        return f"BoxDensity(lo={np.round(self.lo, 4).tolist()}, hi={np.round(self.hi, 4).tolist()})"


@dataclass(eq=False)
class GaussianDensity(Density):
    """Gaussian density ``N(mean, cov)`` (``cov`` a PSD matrix, or a scalar variance in 1-D).

    Examples
    --------
    >>> g = GaussianDensity([0.0], [[1.0]])
    >>> round(float(g.pdf(np.zeros((1, 1)))[0]), 4)
    0.3989
    """

    mean: Sequence[float]
    cov: np.ndarray

    def __post_init__(self):
        self.mean = np.atleast_1d(np.asarray(self.mean, dtype=float))
        self.cov = np.atleast_2d(np.asarray(self.cov, dtype=float))
        self.d = len(self.mean)
        if self.cov.shape != (self.d, self.d):
            raise ValueError(f"covariance must be {self.d}x{self.d}; got {self.cov.shape}")
        if np.linalg.eigvalsh(self.cov).min() <= 0:
            raise ValueError("Gaussian covariance must be positive definite")

    @property
    def diagonal(self) -> bool:
        return bool(np.allclose(self.cov, np.diag(np.diag(self.cov))))

    def pdf(self, x):
        return np.exp(self.logpdf(x))

    def logpdf(self, x):
        return gaussian_logpdf(as_points(x, self.d), self.mean, self.cov)

    def sample(self, n, rng):
        return rng.multivariate_normal(self.mean, self.cov, size=n, method="cholesky")

    def char_fn(self, omega):
        omega = as_points(omega, self.d, "frequencies")
        return np.exp(
            1j * omega @ self.mean - 0.5 * np.einsum("ij,jk,ik->i", omega, self.cov, omega)
        )

    def support_box(self):
        s = np.sqrt(np.diag(self.cov))
        return self.mean - 6 * s, self.mean + 6 * s

    def params(self):
        return {"type": "gaussian", "mean": self.mean.tolist(), "cov": self.cov.tolist()}

    def __repr__(self):
        return f"GaussianDensity(mean={np.round(self.mean, 4).tolist()}, cov={np.round(self.cov, 4).tolist()})"


@dataclass(eq=False)
class MixtureDensity(Density):
    """Finite mixture ``sum_k weights[k] * components[k]``.

    Examples
    --------
    >>> m = MixtureDensity([0.5, 0.5], [BoxDensity([0.0], [1.0]), BoxDensity([2.0], [3.0])])
    >>> m.pdf(np.array([[0.5], [1.5], [2.5]])).tolist()
    [0.5, 0.0, 0.5]
    """

    weights: Sequence[float]
    components: Sequence[Density]

    def __post_init__(self):
        w = np.asarray(self.weights, dtype=float)
        if len(w) == 0 or len(w) != len(self.components):
            raise ValueError("a mixture needs k >= 1 components and one weight per component")
        if np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError("mixture weights must be finite, >= 0 and not all 0")
        self.weights = w / w.sum()
        self.components = list(self.components)
        dims = {c.d for c in self.components}
        if len(dims) != 1:
            raise ValueError(f"mixture components have different dimensions {sorted(dims)}")
        self.d = dims.pop()

    def pdf(self, x):
        x = as_points(x, self.d)
        return sum(w * c.pdf(x) for w, c in zip(self.weights, self.components, strict=True))

    def sample(self, n, rng):
        counts = rng.multinomial(n, self.weights)
        parts = [c.sample(m, rng) for c, m in zip(self.components, counts, strict=True) if m > 0]
        x = np.concatenate(parts, axis=0) if parts else np.zeros((0, self.d))
        return x[rng.permutation(n)]

    def char_fn(self, omega):
        return sum(w * c.char_fn(omega) for w, c in zip(self.weights, self.components, strict=True))

    def support_box(self):
        boxes = [c.support_box() for c in self.components]
        return np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)

    def params(self):
        return {
            "type": "mixture",
            "weights": self.weights.tolist(),
            "components": [c.params() for c in self.components],
        }

    def __repr__(self):
        return f"MixtureDensity(weights={np.round(self.weights, 4).tolist()}, components={self.components})"


class GridDensity(Density):
    """A 1-D density tabulated on an increasing grid (linear interpolation, 0 outside).

    Negative values are clipped and the result is renormalised, so it is a proper density.

    Examples
    --------
    >>> g = GridDensity(np.linspace(0, 1, 11), np.ones(11))
    >>> round(float(g.pdf(np.array([[0.5]]))[0]), 6)
    1.0
    """

    def __init__(self, grid: np.ndarray, values: np.ndarray):
        grid = np.asarray(grid, dtype=float)
        values = np.clip(np.nan_to_num(np.asarray(values, dtype=float)), 0.0, None)
        if grid.ndim != 1 or grid.shape != values.shape or len(grid) < 2:
            raise ValueError("grid and values must be 1-D arrays of the same length >= 2")
        if not np.all(np.diff(grid) > 0):
            raise ValueError("grid must be strictly increasing")
        mass = np.trapezoid(values, grid)
        if mass <= 0:
            raise ValueError("tabulated density has zero mass")
        self.grid, self.values, self.d = grid, values / mass, 1

    def pdf(self, x):
        x = as_points(x, 1)[:, 0]
        return np.interp(x, self.grid, self.values, left=0.0, right=0.0)

    def sample(self, n, rng):
        cdf = np.concatenate(
            [[0.0], np.cumsum(np.diff(self.grid) * (self.values[1:] + self.values[:-1]) / 2)]
        )
        return np.interp(rng.uniform(size=n) * cdf[-1], cdf, self.grid)[:, None]

    def support_box(self):
        return self.grid[:1].copy(), self.grid[-1:].copy()

    def params(self):
        return {"type": "grid", "n_grid": len(self.grid)}

    def __repr__(self):
        return (
            f"GridDensity(n_grid={len(self.grid)}, range=[{self.grid[0]:.3g}, {self.grid[-1]:.3g}])"
        )


def density_from_params(p: dict) -> Density:
    """Rebuild a density from :meth:`Density.params` (used for checkpoints).

    Examples
    --------
    >>> density_from_params(BoxDensity([0.0], [1.0]).params())
    BoxDensity(lo=[0.0], hi=[1.0])
    """
    kind = p["type"]
    if kind == "box":
        return BoxDensity(p["lo"], p["hi"])
    if kind == "gaussian":
        return GaussianDensity(p["mean"], p["cov"])
    if kind == "mixture":
        return MixtureDensity(p["weights"], [density_from_params(c) for c in p["components"]])
    raise ValueError(f"cannot rebuild a density of type {kind!r}")
