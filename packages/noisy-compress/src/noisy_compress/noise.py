"""Additive noise models ``Y = X + Z`` with ``Z ~ g`` known and independent of ``X``.

Paper concept -> code:

1. the noise law ``g`` and its density: :meth:`NoiseModel.pdf`, :meth:`NoiseModel.sample`;
2. the characteristic function ``phi_g(omega) = E exp(i <omega, Z>)``: :meth:`NoiseModel.char_fn`;
3. ``gamma(W) = min_{||omega||_inf <= W} |phi_g(omega)|``, the quantity the noisy ell_2 bound
   divides by (severely ill-posed for Gaussian noise, mildly for Laplace):
   :meth:`NoiseModel.gamma`;
4. identifiability: a class is learnable from noisy samples only if ``phi_g`` does not vanish on an
   open set (otherwise members differing only at those frequencies give the same law of ``Y``):
   :meth:`NoiseModel.identifiability` (band-limited noise is refused, isolated zeros are warned);
5. a radius ``r`` with ``P(||Z||_inf > r) <= delta`` used by perturbation-quantisation:
   :meth:`NoiseModel.radius`.

Models: :class:`GaussianNoise` (any covariance, ``sigma=0`` is "no noise"), :class:`LaplaceNoise`
and :class:`UniformNoise` (independent coordinates) and :class:`FejerNoise`, a band-limited law
(``phi_g`` is a triangle supported on ``[-W, W]``) that exists to show the refusal.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special, stats


class NotIdentifiableError(ValueError):
    """The noise characteristic function vanishes on an open set: the clean law is not identifiable."""


class IdentifiabilityWarning(UserWarning):
    """The noise characteristic function has isolated zeros: identifiable, but rates are case by case."""


@dataclass(frozen=True)
class Identifiability:
    """Result of :meth:`NoiseModel.identifiability`: ``kind`` and a human-readable reason."""

    kind: str  # "nonvanishing", "isolated_zeros" or "band_limited"
    message: str


def _as_2d(z: np.ndarray, d: int, what: str = "points") -> np.ndarray:
    z = np.asarray(z, dtype=float)
    if z.ndim == 1 and d == 1:
        z = z[:, None]
    if z.ndim != 2 or z.shape[1] != d:
        raise ValueError(f"{what} must have shape (n, {d}); got {z.shape}")
    return z


class NoiseModel:
    """Base class of noise laws on ``R^d``; subclasses fill in the closed forms."""

    d: int = 1
    independent: bool = True  # coordinates independent (marginal CDFs give box convolutions)

    # -- basic law
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    def pdf(self, z: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    def char_fn(self, omega: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    def marginal_cdf(self, z: np.ndarray, j: int) -> np.ndarray:
        """CDF of coordinate ``j`` of ``Z`` (only for independent coordinates)."""
        raise NotImplementedError  # pragma: no cover - abstract

    @property
    def is_zero(self) -> bool:
        """True when ``Z = 0`` almost surely (the clean setting)."""
        return False

    @property
    def sup_density(self) -> float:
        """``||g||_inf`` (used by ``||p - q||_2^2 <= 2 ||g||_inf TV(p, q)`` for convolved densities)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def radius(self, n: int, delta: float) -> float:
        """``r`` with ``P(max_i ||Z_i||_inf > r) <= delta`` over ``n`` draws (union bound)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def gamma(self, W: float) -> float:
        """``min_{||omega||_inf <= W} |phi_g(omega)|`` (0 if ``phi_g`` vanishes inside the cube)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def identifiability(self) -> Identifiability:
        return Identifiability("nonvanishing", f"{self!r}: phi_g has no zeros")

    def check_identifiable(self) -> None:
        """Raise :class:`NotIdentifiableError` for band-limited noise, warn for isolated zeros."""
        ident = self.identifiability()
        if ident.kind == "band_limited":
            raise NotIdentifiableError(ident.message)
        if ident.kind == "isolated_zeros":
            warnings.warn(ident.message, IdentifiabilityWarning, stacklevel=3)


def _check_scale(value: float, name: str) -> float:
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"noise {name} must be a finite number >= 0; got {value}")
    return value


class GaussianNoise(NoiseModel):
    """Gaussian noise ``Z ~ N(0, Sigma)``; give ``sigma`` (isotropic) or a PSD ``cov``.

    Examples
    --------
    >>> g = GaussianNoise(0.5)
    >>> round(float(g.char_fn(np.array([[2.0]]))[0]), 4)  # exp(-sigma^2 w^2 / 2)
    0.6065
    >>> GaussianNoise(-1.0)
    Traceback (most recent call last):
    ...
    ValueError: noise sigma must be a finite number >= 0; got -1.0
    """

    def __init__(self, sigma: float | None = None, d: int = 1, cov: np.ndarray | None = None):
        if cov is None:
            sigma = _check_scale(0.0 if sigma is None else sigma, "sigma")
            if int(d) < 1:
                raise ValueError(f"dimension d must be >= 1; got {d}")
            cov = (sigma**2) * np.eye(int(d))
        else:
            cov = np.atleast_2d(np.asarray(cov, dtype=float))
            if cov.shape[0] != cov.shape[1]:
                raise ValueError(f"noise covariance must be square; got shape {cov.shape}")
            if not np.all(np.isfinite(cov)):
                raise ValueError("noise covariance contains NaN or inf")
            if not np.allclose(cov, cov.T, atol=1e-12):
                raise ValueError("noise covariance must be symmetric")
            eig = np.linalg.eigvalsh(cov)
            if eig.min() < -1e-12 * max(1.0, abs(eig).max()):
                raise ValueError(
                    f"noise covariance must be positive semi-definite; smallest eigenvalue {eig.min():.3g}"
                )
        self.cov = cov
        self.d = cov.shape[0]
        self.independent = bool(np.allclose(cov, np.diag(np.diag(cov))))

    def __repr__(self) -> str:
        if self.independent and np.allclose(np.diag(self.cov), self.cov[0, 0]):
            return f"GaussianNoise(sigma={math.sqrt(self.cov[0, 0]):.4g}, d={self.d})"
        return f"GaussianNoise(cov={self.cov.tolist()})"

    @property
    def scales(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    @property
    def is_zero(self) -> bool:
        return bool(np.all(self.cov == 0))

    def sample(self, n, rng):
        if self.is_zero:
            return np.zeros((n, self.d))
        return rng.multivariate_normal(np.zeros(self.d), self.cov, size=n, method="eigh")

    def pdf(self, z):
        z = _as_2d(z, self.d)
        return stats.multivariate_normal(np.zeros(self.d), self.cov).pdf(z).reshape(len(z))

    def char_fn(self, omega):
        omega = _as_2d(omega, self.d, "frequencies")
        return np.exp(-0.5 * np.einsum("ij,jk,ik->i", omega, self.cov, omega))

    def marginal_cdf(self, z, j):
        s = self.scales[j]
        if s == 0:
            return (np.asarray(z) >= 0).astype(float)
        return special.ndtr(np.asarray(z) / s)

    @property
    def sup_density(self):
        det = np.linalg.det(self.cov)
        return math.inf if det <= 0 else float((2 * math.pi) ** (-self.d / 2) / math.sqrt(det))

    def radius(self, n, delta):
        s = float(self.scales.max())
        return s * math.sqrt(2 * math.log(2 * n * self.d / delta))

    def gamma(self, W):
        lam = float(np.linalg.eigvalsh(self.cov).max())
        return math.exp(-0.5 * lam * self.d * W**2)  # worst corner of the cube


class LaplaceNoise(NoiseModel):
    """Independent Laplace coordinates with scale ``b``: ``phi_g(omega) = prod_j 1/(1 + b^2 omega_j^2)``.

    Examples
    --------
    >>> LaplaceNoise(1.0).gamma(1.0)
    0.5
    """

    def __init__(self, b: float, d: int = 1):
        self.b = _check_scale(b, "scale b")
        if int(d) < 1:
            raise ValueError(f"dimension d must be >= 1; got {d}")
        self.d = int(d)

    def __repr__(self):
        return f"LaplaceNoise(b={self.b:.4g}, d={self.d})"

    @property
    def scales(self):
        return np.full(self.d, self.b)

    @property
    def is_zero(self):
        return self.b == 0

    def sample(self, n, rng):
        return rng.laplace(0.0, self.b, size=(n, self.d)) if self.b > 0 else np.zeros((n, self.d))

    def pdf(self, z):
        z = _as_2d(z, self.d)
        return np.prod(np.exp(-np.abs(z) / self.b) / (2 * self.b), axis=1)

    def char_fn(self, omega):
        omega = _as_2d(omega, self.d, "frequencies")
        return np.prod(1.0 / (1.0 + (self.b * omega) ** 2), axis=1)

    def marginal_cdf(self, z, j):
        z = np.asarray(z, dtype=float)
        if self.b == 0:
            return (z >= 0).astype(float)
        e = 0.5 * np.exp(-np.abs(z) / self.b)
        return np.where(z < 0, e, 1.0 - e)

    @property
    def sup_density(self):
        return math.inf if self.b == 0 else (2 * self.b) ** (-self.d)

    def radius(self, n, delta):
        return self.b * math.log(n * self.d / delta)

    def gamma(self, W):
        return (1.0 / (1.0 + (self.b * W) ** 2)) ** self.d


class UniformNoise(NoiseModel):
    """Independent ``U[-h, h]`` coordinates: ``phi_g = prod sinc``, which has isolated zeros (warned).

    Examples
    --------
    >>> UniformNoise(0.5).identifiability().kind
    'isolated_zeros'
    """

    def __init__(self, h: float, d: int = 1):
        self.h = _check_scale(h, "half-width h")
        if int(d) < 1:
            raise ValueError(f"dimension d must be >= 1; got {d}")
        self.d = int(d)

    def __repr__(self):
        return f"UniformNoise(h={self.h:.4g}, d={self.d})"

    @property
    def scales(self):
        return np.full(self.d, self.h / math.sqrt(3))

    @property
    def is_zero(self):
        return self.h == 0

    def sample(self, n, rng):
        return rng.uniform(-self.h, self.h, size=(n, self.d))

    def pdf(self, z):
        z = _as_2d(z, self.d)
        return np.where(np.all(np.abs(z) <= self.h, axis=1), (2 * self.h) ** (-self.d), 0.0)

    def char_fn(self, omega):
        omega = _as_2d(omega, self.d, "frequencies")
        return np.prod(np.sinc(self.h * omega / math.pi), axis=1)

    def marginal_cdf(self, z, j):
        z = np.asarray(z, dtype=float)
        if self.h == 0:
            return (z >= 0).astype(float)
        return np.clip((z + self.h) / (2 * self.h), 0.0, 1.0)

    @property
    def sup_density(self):
        return math.inf if self.h == 0 else (2 * self.h) ** (-self.d)

    def radius(self, n, delta):
        return self.h

    def gamma(self, W):
        return 0.0 if self.h * W >= math.pi else float(np.sinc(self.h * W / math.pi) ** self.d)

    def identifiability(self):
        if self.h == 0:
            return Identifiability("nonvanishing", "zero noise")
        return Identifiability(
            "isolated_zeros",
            f"{self!r}: phi_g vanishes at omega = k*pi/h (isolated zeros); the clean law is "
            "identifiable but the noisy rates must be worked out case by case",
        )


class FejerNoise(NoiseModel):
    """Band-limited noise: density ``(1 - cos(W z)) / (pi W z^2)``, ``phi_g(omega) = (1 - |omega|/W)_+``.

    Its characteristic function vanishes on ``|omega| > W``, so the learner refuses it.

    Examples
    --------
    >>> FejerNoise(2.0).identifiability().kind
    'band_limited'
    """

    independent = True

    def __init__(self, W: float = 1.0):
        W = float(W)
        if not math.isfinite(W) or W <= 0:
            raise ValueError(f"band limit W must be > 0; got {W}")
        self.W = W
        self.d = 1

    def __repr__(self):
        return f"FejerNoise(W={self.W:.4g})"

    def sample(self, n, rng):
        # The Fejer law is the law of (U1 + U2) * ... : sample by inverse transform on a fine grid.
        z = np.linspace(-400 / self.W, 400 / self.W, 400_001)
        cdf = np.cumsum(self.pdf(z[:, None]))
        cdf /= cdf[-1]
        return np.interp(rng.uniform(size=n), cdf, z)[:, None]

    def pdf(self, z):
        z = _as_2d(z, 1)[:, 0]
        small = np.abs(z) < 1e-8
        zz = np.where(small, 1.0, z)
        return np.where(
            small, self.W / (2 * math.pi), (1 - np.cos(self.W * zz)) / (math.pi * self.W * zz**2)
        )

    def char_fn(self, omega):
        omega = _as_2d(omega, 1, "frequencies")[:, 0]
        return np.clip(1 - np.abs(omega) / self.W, 0.0, None)

    @property
    def sup_density(self):
        return self.W / (2 * math.pi)

    def radius(self, n, delta):
        return 4 * n / (math.pi * self.W * delta)  # tail ~ 2/(pi W r) (heavy-tailed)

    def gamma(self, W):
        return max(0.0, 1 - W / self.W)

    def identifiability(self):
        return Identifiability(
            "band_limited",
            f"{self!r}: the noise characteristic function vanishes for |omega| > {self.W:g}; "
            "members that differ only at those frequencies give the same noisy law, so no learner "
            "can succeed (choose noise whose characteristic function has no zero interval)",
        )


def make_noise(kind: str, scale: float, d: int = 1) -> NoiseModel:
    """Build a noise model by name: ``gaussian`` (sigma), ``laplace`` (b), ``uniform`` (h), ``fejer`` (W).

    Examples
    --------
    >>> make_noise("laplace", 0.2)
    LaplaceNoise(b=0.2, d=1)
    """
    kinds = {"gaussian": GaussianNoise, "laplace": LaplaceNoise, "uniform": UniformNoise}
    if kind == "fejer":
        return FejerNoise(scale)
    if kind not in kinds:
        raise ValueError(f"unknown noise {kind!r}; choose from gaussian, laplace, uniform, fejer")
    return kinds[kind](scale, d=d)
