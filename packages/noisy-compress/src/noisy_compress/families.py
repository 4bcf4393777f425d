"""Sample-compressible distribution families (Ashtiani et al., 2018) and their decoders.

A class ``F`` admits ``(tau, t, m)`` compression if for every ``f in F``, given ``m(eps)`` i.i.d.
samples, with probability >= 2/3 some ``tau(eps)`` of them plus ``t(eps)`` bits decode through a
fixed decoder ``J`` to a density within TV ``eps`` of ``f``.

Paper concept -> code:

1. the decoder ``J(points, bits)``: :meth:`Family.decode` (bits are a vector of small integers,
   ``codes``, with ``t = sum_j log2(code_sizes[j])``);
2. the compression size ``(tau(eps), t(eps), m(eps))``: :meth:`Family.compression_size`;
3. the class's Fourier tail ``T_F(W) >= sup_{f, f' in F} int_{||w||_inf > W} |phi_f - phi_f'|^2``
   used by the noisy ell_2 bound: :meth:`Family.fourier_tail`;
4. closure under k-mixtures (``tau' = k tau``, ``t' = k t + k log2 L``): :class:`Mixture`;
5. the sender of the scheme (points and codes that decode to a given member, used to seed the
   candidate search from a fitted density): :meth:`Family.encode`.

Families: :class:`UniformBox` (``tau = 2d`` extreme points, ``t = 0``), :func:`Uniform1D`,
:class:`Gaussian` (``tau = d + 1`` points, bits quantise a square-root factor),
:class:`AxisAlignedGaussian` (``tau = 2d``, one quantised scale per coordinate) and
:class:`Mixture` of any of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .densities import BoxDensity, Density, GaussianDensity, MixtureDensity


@dataclass(frozen=True)
class CompressionSize:
    """``(tau, t, m)``: points kept, bits kept, samples needed (all at accuracy ``eps``)."""

    tau: int
    t: float
    m: int


def _check_eps(eps: float) -> float:
    eps = float(eps)
    if not 0 < eps < 1:
        raise ValueError(f"eps must be in (0, 1); got {eps}")
    return eps


class Family:
    """Base class of a compressible family on ``R^d``."""

    d: int = 1
    k: int = 1  # number of mixture components (1 for a base family)

    @property
    def tau(self) -> int:
        raise NotImplementedError  # pragma: no cover - abstract

    def code_sizes(self, eps: float) -> list[int]:
        """Cardinality of each code digit (``[]`` when the decoder uses no bits)."""
        return []

    def bits(self, eps: float) -> float:
        """``t(eps) = sum log2(code_sizes)``."""
        return float(sum(math.log2(s) for s in self.code_sizes(eps)))

    def decode(self, points: np.ndarray, codes: np.ndarray, eps: float) -> Density | None:
        """``J(points, codes)``; ``None`` when the points are degenerate (e.g. coincide)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def encode(self, f: Density, eps: float) -> tuple[np.ndarray, np.ndarray]:
        """The sender of the compression scheme: points and codes that :meth:`decode` maps to ``f``.

        The points are returned exactly (not yet perturbation-quantised to sample points); the
        learner moves them onto the reachable grid before decoding.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def m(self, eps: float) -> int:
        raise NotImplementedError  # pragma: no cover - abstract

    def compression_size(self, eps: float) -> CompressionSize:
        eps = _check_eps(eps)
        return CompressionSize(self.tau, self.bits(eps), self.m(eps))

    def fourier_tail(self, W: float, min_scale: float) -> float:
        raise NotImplementedError  # pragma: no cover - abstract

    def sample_member(self, rng: np.random.Generator) -> Density:
        raise NotImplementedError  # pragma: no cover - abstract


class UniformBox(Family):
    """Uniform distributions on axis-aligned boxes in ``R^d``; decoder = bounding box of ``2d`` points.

    With ``m = ceil(2 d ln(6d) / eps)`` samples the sample's bounding box misses mass at most ``eps``
    with probability >= 2/3 (each coordinate's two extremes miss at most ``eps/d``).

    Examples
    --------
    >>> fam = UniformBox(1)
    >>> fam.compression_size(0.1)
    CompressionSize(tau=2, t=0.0, m=36)
    >>> fam.decode(np.array([[0.3], [0.1]]), np.array([], int), 0.1)
    BoxDensity(lo=[0.1], hi=[0.3])
    """

    def __init__(self, d: int = 1):
        if int(d) < 1:
            raise ValueError(f"dimension d must be >= 1; got {d}")
        self.d = int(d)

    def __repr__(self):
        return f"UniformBox(d={self.d})"

    @property
    def tau(self):
        return 2 * self.d

    def decode(self, points, codes, eps):
        lo, hi = points.min(axis=0), points.max(axis=0)
        if np.any(hi - lo <= 1e-12):
            return None
        return BoxDensity(lo, hi)

    def encode(self, f, eps):
        if not isinstance(f, BoxDensity) or f.d != self.d:
            raise TypeError(f"{self!r} encodes a {self.d}-D BoxDensity; got {f!r}")
        centre = (f.lo + f.hi) / 2
        pts = np.tile(centre, (2 * self.d, 1))
        j = np.arange(self.d)
        pts[2 * j, j], pts[2 * j + 1, j] = f.lo, f.hi
        return pts, np.zeros(0, dtype=np.int64)

    def m(self, eps):
        return math.ceil(2 * self.d * math.log(6 * self.d) / eps)

    def fourier_tail(self, W, min_scale):
        # |phi|^2 <= min(1, 4 / (w L)^2) per coordinate, int_R |phi|^2 = 2 pi / L
        L = float(min_scale)
        one = 8.0 / (W * L**2)
        return 4.0 * self.d * one * (2 * math.pi / L) ** (self.d - 1)

    def sample_member(self, rng):
        lo = rng.uniform(-1, 0, size=self.d)
        return BoxDensity(lo, lo + rng.uniform(0.5, 2.0, size=self.d))


def Uniform1D() -> UniformBox:
    """The uniform-interval family ``{U[a, b]}`` (``UniformBox(1)``).

    Examples
    --------
    >>> Uniform1D().tau
    2
    """
    return UniformBox(1)


def _scale_levels(eps: float) -> int:
    """Number of geometric scale levels covering ``[1/2, 2]`` with ratio ``1 + eps``."""
    return math.ceil(2 * math.log(2) / math.log1p(eps)) + 1


def _scale(code: np.ndarray, levels: int) -> np.ndarray:
    frac = code / (levels - 1) if levels > 1 else np.zeros_like(code, dtype=float)
    return 2.0 ** (2 * frac - 1)  # in [1/2, 2]


class AxisAlignedGaussian(Family):
    """Gaussians with diagonal covariance; per coordinate ``j``: ``mu_j = x_{2j, j}``,
    ``sigma_j = rho(code_j) |x_{2j+1, j} - x_{2j, j}|`` with ``rho`` on a geometric grid in ``[1/2, 2]``.

    Examples
    --------
    >>> fam = AxisAlignedGaussian(1)
    >>> g = fam.decode(np.array([[0.0], [1.0]]), np.array([(fam.code_sizes(0.1)[0] - 1) // 2]), 0.1)
    >>> round(float(g.cov[0, 0]), 3)  # the middle level of an even grid: rho = 2**(-1/13)
    0.912
    """

    def __init__(self, d: int = 1):
        if int(d) < 1:
            raise ValueError(f"dimension d must be >= 1; got {d}")
        self.d = int(d)

    def __repr__(self):
        return f"AxisAlignedGaussian(d={self.d})"

    @property
    def tau(self):
        return 2 * self.d

    def code_sizes(self, eps):
        return [_scale_levels(eps / self.d)] * self.d

    def decode(self, points, codes, eps):
        levels = self.code_sizes(eps)[0]
        j = np.arange(self.d)
        mu = points[2 * j, j]
        spread = np.abs(points[2 * j + 1, j] - mu)
        if np.any(spread <= 1e-12):
            return None
        sigma = _scale(np.asarray(codes, dtype=float), levels) * spread
        return GaussianDensity(mu, np.diag(sigma**2))

    def encode(self, f, eps):
        if not isinstance(f, GaussianDensity) or f.d != self.d:
            raise TypeError(f"{self!r} encodes a {self.d}-D GaussianDensity; got {f!r}")
        levels = self.code_sizes(eps)[0]
        code = (levels - 1) // 2  # the level nearest rho = 1
        rho = float(_scale(np.array([float(code)]), levels)[0])
        j = np.arange(self.d)
        pts = np.tile(f.mean, (2 * self.d, 1))
        pts[2 * j + 1, j] = f.mean + np.sqrt(np.diag(f.cov)) / rho
        return pts, np.full(self.d, code, dtype=np.int64)

    def m(self, eps):
        # P(no sample within eps*sigma/d of mu_j) <= 1/(6d) per coordinate
        return math.ceil(1.25 * self.d * math.log(6 * self.d) / eps) + 2

    def fourier_tail(self, W, min_scale):
        s = float(min_scale)
        one = math.sqrt(math.pi) / s * special.erfc(s * W)
        return 4.0 * self.d * one * (math.sqrt(math.pi) / s) ** (self.d - 1)

    def sample_member(self, rng):
        return GaussianDensity(rng.normal(size=self.d), np.diag(rng.uniform(0.3, 1.5, self.d) ** 2))


class Gaussian(AxisAlignedGaussian):
    """Gaussians with full covariance. In 1-D this is :class:`AxisAlignedGaussian`; for ``d > 1``,
    ``tau = d + 1`` points ``x_0..x_d`` and ``d^2`` quantised coefficients ``C``:
    ``mu = x_0``, ``Sigma = A A^T`` with ``A = [x_1 - x_0, ..., x_d - x_0] C`` (the differences span
    ``R^d`` almost surely, so some quantised ``C`` approximates any ``Sigma^{1/2}``).

    Examples
    --------
    >>> Gaussian(2).tau
    3
    """

    def __repr__(self):
        return f"Gaussian(d={self.d})"

    @property
    def tau(self):
        return 2 if self.d == 1 else self.d + 1

    def _coef_levels(self, eps):
        return 2 * math.ceil(2 * self.d / eps) + 1  # grid on [-2, 2]

    def code_sizes(self, eps):
        if self.d == 1:
            return super().code_sizes(eps)
        return [self._coef_levels(eps)] * (self.d * self.d)

    def decode(self, points, codes, eps):
        if self.d == 1:
            return super().decode(points, codes, eps)
        L = self._coef_levels(eps)
        C = (np.asarray(codes, dtype=float).reshape(self.d, self.d) / ((L - 1) / 2) - 1.0) * 2.0
        B = (points[1:] - points[0]).T
        A = B @ C
        cov = A @ A.T
        if np.linalg.eigvalsh(cov).min() <= 1e-10 * max(1.0, np.trace(cov)):
            return None
        return GaussianDensity(points[0], cov)

    def encode(self, f, eps):
        if self.d == 1:
            return super().encode(f, eps)
        if not isinstance(f, GaussianDensity) or f.d != self.d:
            raise TypeError(f"{self!r} encodes a {self.d}-D GaussianDensity; got {f!r}")
        s = np.sqrt(np.diag(f.cov))
        pts = np.vstack([f.mean, f.mean + np.diag(s)])
        C = np.linalg.cholesky(f.cov) / s[:, None]  # B = diag(s), A = B C = chol(cov)
        L = self._coef_levels(eps)
        codes = np.clip(np.round((C / 2.0 + 1.0) * (L - 1) / 2), 0, L - 1).astype(np.int64)
        return pts, codes.reshape(-1)

    def m(self, eps):
        if self.d == 1:
            return super().m(eps)
        return math.ceil(1.25 * (self.d + 1) * math.log(6 * self.d) / eps) + self.d + 1

    def sample_member(self, rng):
        A = rng.normal(size=(self.d, self.d)) * 0.6 + np.eye(self.d)
        return GaussianDensity(rng.normal(size=self.d), A @ A.T)


class Mixture(Family):
    """k-mixtures of a base family: ``tau' = k tau``, codes = the k base codes, then one weight
    level in ``{1..L}`` per component (``L = ceil(4k/eps)``, weights = levels / sum).

    ``m'(eps) = ceil(48 k ln(6k) m(eps/3) / eps)`` (the mixture lemma of Ashtiani et al. 2018,
    constants as in our reading of its proof).

    Examples
    --------
    >>> fam = Mixture(UniformBox(1), 2)
    >>> fam.tau, fam.code_sizes(0.2)
    (4, [40, 40])
    >>> Mixture(UniformBox(1), 0)
    Traceback (most recent call last):
    ...
    ValueError: number of mixture components k must be >= 1; got 0
    """

    def __init__(self, base: Family, k: int):
        if int(k) < 1:
            raise ValueError(f"number of mixture components k must be >= 1; got {k}")
        if isinstance(base, Mixture):
            raise ValueError("the base of a Mixture must not itself be a Mixture")
        self.base, self.k, self.d = base, int(k), base.d

    def __repr__(self):
        return f"Mixture({self.base!r}, k={self.k})"

    @property
    def tau(self):
        return self.k * self.base.tau

    def weight_levels(self, eps):
        return math.ceil(4 * self.k / eps)

    def code_sizes(self, eps):
        return self.base.code_sizes(eps / 3) * self.k + [self.weight_levels(eps)] * self.k

    def decode(self, points, codes, eps):
        tb, nb = self.base.tau, len(self.base.code_sizes(eps / 3))
        comps = []
        for c in range(self.k):
            comp = self.base.decode(
                points[c * tb : (c + 1) * tb], codes[c * nb : (c + 1) * nb], eps / 3
            )
            if comp is None:
                return None
            comps.append(comp)
        levels = np.asarray(codes[self.k * nb :], dtype=float) + 1.0
        return MixtureDensity(levels, comps)

    def weight_codes(self, weights: np.ndarray, eps: float) -> np.ndarray:
        """Weight digits (levels ``1..L`` minus one) whose normalised levels approximate ``weights``."""
        L = self.weight_levels(eps)
        w = np.clip(np.asarray(weights, dtype=float), 0.0, None)
        w = w / w.max() if w.max() > 0 else np.ones(self.k)
        return (np.clip(np.round(L * w), 1, L) - 1).astype(np.int64)

    def encode(self, f, eps):
        if not isinstance(f, MixtureDensity) or len(f.components) != self.k:
            raise TypeError(
                f"{self!r} encodes a MixtureDensity with {self.k} components; got {f!r}"
            )
        enc = [self.base.encode(c, eps / 3) for c in f.components]
        pts = np.concatenate([e[0] for e in enc], axis=0)
        codes = np.concatenate([*[e[1] for e in enc], self.weight_codes(f.weights, eps)])
        return pts, codes.astype(np.int64)

    def m(self, eps):
        return math.ceil(48 * self.k * math.log(6 * self.k) * self.base.m(eps / 3) / eps)

    def fourier_tail(self, W, min_scale):
        # |sum_k w_k phi_k|^2 <= sum_k w_k |phi_k|^2 (Jensen): the base bound holds
        return self.base.fourier_tail(W, min_scale)

    def sample_member(self, rng):
        return MixtureDensity(
            rng.dirichlet(np.ones(self.k)) + 0.1,
            [self.base.sample_member(rng) for _ in range(self.k)],
        )


def make_family(name: str, d: int = 1, k: int = 1) -> Family:
    """Family by name: ``uniform`` (box), ``gaussian``, ``axis-gaussian``; ``k > 1`` gives a mixture.

    Examples
    --------
    >>> make_family("uniform", k=2)
    Mixture(UniformBox(d=1), k=2)
    """
    bases = {"uniform": UniformBox, "gaussian": Gaussian, "axis-gaussian": AxisAlignedGaussian}
    if name not in bases:
        raise ValueError(f"unknown family {name!r}; choose from {', '.join(bases)}")
    if int(k) < 1:
        raise ValueError(f"number of mixture components k must be >= 1; got {k}")
    base = bases[name](d)
    return base if int(k) == 1 else Mixture(base, int(k))
