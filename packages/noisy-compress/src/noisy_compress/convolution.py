"""Noise-convolved densities ``(f * g)(y) = E_Z f(y - Z)``: the law of the observed ``Y = X + Z``.

Closed forms (tested against Monte Carlo in ``tests/test_convolution.py``):

1. ``N(mu, S) * N(0, Sigma) = N(mu, S + Sigma)`` (any covariances);
2. box ``*`` noise with independent coordinates:
   ``prod_j [G_j(y_j - lo_j) - G_j(y_j - hi_j)] / (hi_j - lo_j)`` with ``G_j`` the noise marginal CDF
   (Gaussian, Laplace and uniform noise);
3. diagonal Gaussian ``*`` Laplace: per coordinate
   ``(1/2b) e^{s^2/2b^2} [e^{-z/b} Phi(z/s - s/b) + e^{z/b} Phi(-z/s - s/b)]``, ``z = y - mu``;
4. diagonal Gaussian ``*`` uniform ``U[-h, h]``: ``[Phi((z + h)/s) - Phi((z - h)/s)] / 2h``;
5. mixtures: ``(sum_k w_k f_k) * g = sum_k w_k (f_k * g)`` (the closure step);
6. anything else: Monte Carlo ``(1/N) sum_i f(y - Z_i)`` with fixed noise draws, only when
   ``numerical=True`` (otherwise :class:`NoClosedFormError`);
7. in 1-D, the distribution function of ``X + Z`` in closed form (exact masses of intervals, used
   by the Scheffe sets of :class:`~noisy_compress.partition.CellPartition`):
   ``N(mu, s^2) * N(0, sigma^2)`` gives ``Phi((y - mu) / sqrt(s^2 + sigma^2))`` and a box gives
   ``[Psi(y - lo) - Psi(y - hi)] / (hi - lo)`` with ``Psi(t) = int_{-inf}^t G`` the integrated
   noise CDF (Gaussian: ``t Phi(t/sigma) + sigma phi(t/sigma)``; Laplace and uniform noise in
   closed form too): :func:`convolved_cdf`.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .densities import (
    BoxDensity,
    Density,
    GaussianDensity,
    MixtureDensity,
    as_points,
    gaussian_logpdf,
)
from .noise import GaussianNoise, LaplaceNoise, NoiseModel, UniformNoise


class NoClosedFormError(ValueError):
    """A convolution has no closed form here and the numerical fallback was not enabled."""


def _laplace_gauss_1d(z: np.ndarray, s: float, b: float) -> np.ndarray:
    c = s**2 / (2 * b**2)
    t1 = np.exp(c - z / b + special.log_ndtr(z / s - s / b))
    t2 = np.exp(c + z / b + special.log_ndtr(-z / s - s / b))
    return (t1 + t2) / (2 * b)


def _closed_form(f: Density, noise: NoiseModel, y: np.ndarray) -> np.ndarray | None:
    if isinstance(f, GaussianDensity) and isinstance(noise, GaussianNoise):
        return np.exp(gaussian_logpdf(y, f.mean, f.cov + noise.cov))
    if isinstance(f, BoxDensity) and noise.independent:
        out = np.ones(len(y))
        for j in range(f.d):
            upper = noise.marginal_cdf(y[:, j] - f.lo[j], j)
            lower = noise.marginal_cdf(y[:, j] - f.hi[j], j)
            out *= np.clip(upper - lower, 0.0, None) / (f.hi[j] - f.lo[j])
        return out
    if isinstance(f, GaussianDensity) and f.diagonal and isinstance(noise, LaplaceNoise):
        s = np.sqrt(np.diag(f.cov))
        out = np.ones(len(y))
        for j in range(f.d):
            out *= _laplace_gauss_1d(y[:, j] - f.mean[j], s[j], noise.b)
        return out
    if isinstance(f, GaussianDensity) and f.diagonal and isinstance(noise, UniformNoise):
        s, h = np.sqrt(np.diag(f.cov)), noise.h
        out = np.ones(len(y))
        for j in range(f.d):
            z = y[:, j] - f.mean[j]
            out *= (special.ndtr((z + h) / s[j]) - special.ndtr((z - h) / s[j])) / (2 * h)
        return out
    return None


def has_closed_form(f: Density, noise: NoiseModel) -> bool:
    """Whether :func:`convolved_pdf` has a closed form for ``f * noise``."""
    if noise.is_zero:
        return True
    if isinstance(f, MixtureDensity):
        return all(has_closed_form(c, noise) for c in f.components)
    probe = np.zeros((1, f.d))
    return _closed_form(f, noise, probe) is not None


def convolved_pdf(
    f: Density,
    noise: NoiseModel,
    y: np.ndarray,
    numerical: bool = False,
    n_mc: int = 4000,
    seed: int = 0,
) -> np.ndarray:
    """Density of ``X + Z`` at ``y`` for ``X ~ f`` and ``Z ~ noise``.

    Examples
    --------
    >>> f = GaussianDensity([0.0], [[1.0]])
    >>> y = np.array([[0.0]])
    >>> bool(np.isclose(convolved_pdf(f, GaussianNoise(1.0), y)[0], 1 / np.sqrt(4 * np.pi)))
    True
    """
    if f.d != noise.d:
        raise ValueError(f"density has dimension {f.d} but noise has dimension {noise.d}")
    y = as_points(y, f.d)
    if noise.is_zero:
        return f.pdf(y)
    if isinstance(f, MixtureDensity):
        return sum(
            w * convolved_pdf(c, noise, y, numerical, n_mc, seed)
            for w, c in zip(f.weights, f.components, strict=True)
        )
    out = _closed_form(f, noise, y)
    if out is not None:
        return out
    if not numerical:
        raise NoClosedFormError(
            f"no closed form for {type(f).__name__} convolved with {noise!r}; "
            "enable the numerical (Monte Carlo) fallback with numerical=True"
        )
    z = noise.sample(n_mc, np.random.default_rng(seed))
    out = np.zeros(len(y))
    for start in range(0, len(y), 256):
        block = y[start : start + 256]
        shifted = (block[:, None, :] - z[None, :, :]).reshape(-1, f.d)
        out[start : start + 256] = f.pdf(shifted).reshape(len(block), n_mc).mean(axis=1)
    return out


def _integrated_noise_cdf(noise: NoiseModel, t: np.ndarray) -> np.ndarray | None:
    """``Psi(t) = int_{-inf}^t G(s) ds`` for the 1-D noise CDF ``G`` (``None``: no closed form)."""
    if noise.is_zero:
        return np.clip(t, 0.0, None)
    if isinstance(noise, GaussianNoise):
        s = float(noise.scales[0])
        return t * special.ndtr(t / s) + s * np.exp(-0.5 * (t / s) ** 2) / np.sqrt(2 * np.pi)
    if isinstance(noise, LaplaceNoise):
        b = float(noise.b)
        return np.where(t < 0, 0.5 * b * np.exp(np.minimum(t, 0) / b),
                        t + 0.5 * b * np.exp(-np.maximum(t, 0) / b))  # fmt: skip
    if isinstance(noise, UniformNoise):
        h = float(noise.h)
        return np.where(t < -h, 0.0, np.where(t > h, t, (t + h) ** 2 / (4 * h)))
    return None


def convolved_cdf(f: Density, noise: NoiseModel, y: np.ndarray) -> np.ndarray | None:
    """Distribution function of ``X + Z`` at the points ``y`` (1-D; ``None`` without a closed form).

    Examples
    --------
    >>> F = convolved_cdf(BoxDensity([0.0], [1.0]), GaussianNoise(0.1), np.array([-5.0, 0.5, 6.0]))
    >>> F.round(6).tolist()
    [0.0, 0.5, 1.0]
    """
    if f.d != 1 or noise.d != 1:
        return None
    y = np.asarray(y, dtype=float).reshape(-1)
    if isinstance(f, MixtureDensity):
        parts = [convolved_cdf(c, noise, y) for c in f.components]
        if any(p is None for p in parts):
            return None
        return sum(w * p for w, p in zip(f.weights, parts, strict=True))
    if isinstance(f, GaussianDensity):
        var = float(f.cov[0, 0])
        if noise.is_zero:
            return special.ndtr((y - f.mean[0]) / np.sqrt(var))
        if isinstance(noise, GaussianNoise):
            return special.ndtr((y - f.mean[0]) / np.sqrt(var + float(noise.cov[0, 0])))
        return None
    if isinstance(f, BoxDensity):
        lo, hi = float(f.lo[0]), float(f.hi[0])
        a, b = _integrated_noise_cdf(noise, y - lo), _integrated_noise_cdf(noise, y - hi)
        if a is None:
            return None
        return np.clip((a - b) / (hi - lo), 0.0, 1.0)
    return None


class ConvolvedDensity(Density):
    """The law of ``X + Z``: ``pdf`` through :func:`convolved_pdf`, ``sample`` by adding noise.

    Examples
    --------
    >>> c = ConvolvedDensity(BoxDensity([0.0], [1.0]), GaussianNoise(0.1))
    >>> c.sample(3, np.random.default_rng(0)).shape
    (3, 1)
    """

    def __init__(self, base: Density, noise: NoiseModel, numerical: bool = False):
        if base.d != noise.d:
            raise ValueError(f"density has dimension {base.d} but noise has dimension {noise.d}")
        self.base, self.noise, self.numerical, self.d = base, noise, numerical, base.d

    def pdf(self, x):
        return convolved_pdf(self.base, self.noise, x, numerical=self.numerical)

    def sample(self, n, rng):
        return self.base.sample(n, rng) + self.noise.sample(n, rng)

    def support_box(self):
        lo, hi = self.base.support_box()
        pad = 6 * np.asarray(getattr(self.noise, "scales", np.zeros(self.d)))
        return lo - pad, hi + pad

    def params(self):
        return {"type": "convolved", "base": self.base.params(), "noise": repr(self.noise)}
