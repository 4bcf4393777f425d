"""Anchors the noise-aware learner is compared with (all fit noisy ``y`` and return a clean density).

1. :class:`NaiveGMM`: scikit-learn ``GaussianMixture`` on the noisy data (ignores the noise);
2. :class:`DeconvolvedGMM`: the same fit with the noise covariance subtracted from every
   component, eigenvalues clipped at a floor;
3. :class:`ExtremeDeconvolution`: the EM of Bovy, Hogg & Roweis (2011) for a GMM observed with
   known Gaussian noise (``T_j = V_j + S``; E-step posterior means ``b_ij`` and covariances
   ``B_ij``); :class:`PygmmisXD` wraps the ``pygmmis`` package when installed (``bench`` extra);
4. :class:`DeconvolutionKDE`: Stefanski & Carroll (1990) deconvolving kernel estimator
   ``f_hat(x) = (1/2pi) int e^{-iwx} phi_n(w) phi_K(hw) / phi_g(w) dw`` with the band-limited
   kernel ``phi_K(t) = (1 - t^2)^3 1{|t| <= 1}`` (1-D);
5. :class:`NaiveKDE`: Gaussian KDE of the noisy data (scipy; :class:`KDEpyFFT` with ``KDEpy``);
6. :class:`MomentDeconvolution`: matches the first two moments of ``X = Y - Z`` within the family
   (single uniform box or Gaussian).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .densities import BoxDensity, Density, GaussianDensity, GridDensity, MixtureDensity, as_points
from .noise import GaussianNoise, NoiseModel


def _noise_cov(noise: NoiseModel) -> np.ndarray:
    if isinstance(noise, GaussianNoise):
        return noise.cov
    scales = np.asarray(getattr(noise, "scales", np.zeros(noise.d)))
    return np.diag(scales**2)  # second moments of any independent-coordinate noise


def _gmm(y: np.ndarray, k: int, seed: int):
    from sklearn.mixture import GaussianMixture

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GaussianMixture(k, covariance_type="full", n_init=2, random_state=seed).fit(y)


def _mixture(weights, means, covs) -> Density:
    comps = [GaussianDensity(m, c) for m, c in zip(means, covs, strict=True)]
    return comps[0] if len(comps) == 1 else MixtureDensity(weights, comps)


def _clip_psd(cov: np.ndarray, floor: float) -> np.ndarray:
    w, v = np.linalg.eigh((cov + cov.T) / 2)
    return (v * np.maximum(w, floor)) @ v.T


class NaiveGMM:
    """Gaussian mixture fitted to the noisy data as if it were clean.

    Examples
    --------
    >>> y = np.random.default_rng(0).normal(0, 1, (500, 1))
    >>> NaiveGMM(1).fit(y, GaussianNoise(0.5)).cov.round(1).tolist()
    [[1.0]]
    """

    name = "naive GMM"

    def __init__(self, k: int = 1, seed: int = 0):
        self.k, self.seed = int(k), seed

    def fit(self, y: np.ndarray, noise: NoiseModel) -> Density:
        y = as_points(y, noise.d, "samples")
        g = _gmm(y, self.k, self.seed)
        return _mixture(g.weights_, g.means_, g.covariances_)


class DeconvolvedGMM(NaiveGMM):
    """Naive GMM with the noise covariance subtracted from each component (clipped to PSD).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(0, 1, (4000, 1)) + rng.normal(0, 0.5, (4000, 1))
    >>> round(float(DeconvolvedGMM(1).fit(y, GaussianNoise(0.5)).cov[0, 0]), 1)
    1.0
    """

    name = "deconvolved GMM"

    def fit(self, y, noise):
        y = as_points(y, noise.d, "samples")
        g = _gmm(y, self.k, self.seed)
        S = _noise_cov(noise)
        floor = 1e-4 * float(np.mean(np.var(y, axis=0)))
        covs = [_clip_psd(c - S, floor) for c in g.covariances_]
        return _mixture(g.weights_, g.means_, covs)


class ExtremeDeconvolution(NaiveGMM):
    """Extreme deconvolution (Bovy et al. 2011) with homoscedastic known Gaussian noise ``S``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(2, 1, (3000, 1)) + rng.normal(0, 1, (3000, 1))
    >>> f = ExtremeDeconvolution(1).fit(y, GaussianNoise(1.0))
    >>> round(float(f.mean[0]), 1), round(float(f.cov[0, 0]), 1)
    (2.0, 1.0)
    """

    name = "extreme deconvolution"

    def __init__(self, k: int = 1, seed: int = 0, max_iter: int = 300, tol: float = 1e-7):
        super().__init__(k, seed)
        self.max_iter, self.tol = max_iter, tol

    def fit(self, y, noise):
        from .densities import gaussian_logpdf

        y = as_points(y, noise.d, "samples")
        n, d = y.shape
        S = _noise_cov(noise)
        g = _gmm(y, self.k, self.seed)
        floor = 1e-4 * float(np.mean(np.var(y, axis=0)))
        alpha = g.weights_.copy()
        m = g.means_.copy()
        V = np.array([_clip_psd(c - S, floor) for c in g.covariances_])
        prev = -np.inf
        for _ in range(self.max_iter):
            logr = np.stack(
                [math.log(alpha[j]) + gaussian_logpdf(y, m[j], V[j] + S) for j in range(self.k)],
                axis=1,
            )
            mx = logr.max(axis=1, keepdims=True)
            ll = float(np.mean(mx[:, 0] + np.log(np.exp(logr - mx).sum(axis=1))))
            r = np.exp(logr - mx)
            r /= r.sum(axis=1, keepdims=True)
            for j in range(self.k):
                T_inv = np.linalg.inv(V[j] + S)
                K = V[j] @ T_inv
                b = m[j] + (y - m[j]) @ K.T  # (n, d) posterior means
                B = V[j] - K @ V[j]
                rj = r[:, j]
                sj = rj.sum() + 1e-300
                alpha[j] = sj / n
                m[j] = (rj[:, None] * b).sum(axis=0) / sj
                diff = b - m[j]
                V[j] = _clip_psd(
                    (rj[:, None, None] * np.einsum("ni,nj->nij", diff, diff)).sum(0) / sj + B, floor
                )
            if ll - prev < self.tol:
                break
            prev = ll
        return _mixture(alpha, m, V)


class PygmmisXD(NaiveGMM):
    """Extreme deconvolution through ``pygmmis`` (Melchior & Goulding 2018); needs the ``bench`` extra."""

    name = "pygmmis XD"

    @staticmethod
    def available() -> bool:
        try:
            import pygmmis  # noqa: F401
        except ImportError:
            return False
        return True

    def fit(self, y, noise):
        import logging

        import pygmmis

        logging.getLogger("pygmmis").setLevel(logging.ERROR)
        y = as_points(y, noise.d, "samples")
        S = _noise_cov(noise)
        gmm = pygmmis.GMM(K=self.k, D=y.shape[1])
        rng = np.random.RandomState(self.seed)
        covar = np.broadcast_to(S, (len(y), *S.shape)).copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pygmmis.fit(gmm, y, covar=covar, init_method="kmeans", w=1e-4, rng=rng)
        return _mixture(gmm.amp, gmm.mean, gmm.covar)


def fan_bandwidth(y: np.ndarray, noise: NoiseModel) -> float:
    """Bandwidth of the deconvolution KDE: ``max(Silverman, sigma / sqrt(log n / 2))`` (Fan 1991's
    ``(log n)^{-1/2}`` rate for Gaussian noise; Silverman's rule when the noise is 0)."""
    n = len(y)
    s = float(np.std(y))
    iqr = float(np.subtract(*np.percentile(y, [75, 25])))
    silverman = 0.9 * min(s, iqr / 1.34 if iqr > 0 else s) * n ** (-0.2)
    scale = float(np.max(getattr(noise, "scales", [0.0])))
    return max(silverman, scale / math.sqrt(max(math.log(n), 1.0) / 2))


class DeconvolutionKDE:
    """Deconvolving kernel density estimator (1-D), band-limited kernel ``phi_K = (1 - t^2)^3``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.normal(0, 1, (2000, 1)) + rng.normal(0, 0.5, (2000, 1))
    >>> f = DeconvolutionKDE().fit(y, GaussianNoise(0.5))
    >>> bool(abs(f.pdf(np.zeros((1, 1)))[0] - 0.399) < 0.12)  # N(0, 1) density at 0, smoothed
    True
    """

    name = "deconvolution KDE"

    def __init__(self, bandwidth: float | None = None, n_grid: int = 1024, n_freq: int = 256):
        self.bandwidth, self.n_grid, self.n_freq = bandwidth, n_grid, n_freq

    def fit(self, y, noise):
        y = as_points(y, 1, "samples")[:, 0]
        h = self.bandwidth or fan_bandwidth(y, noise)
        w = np.linspace(-1 / h, 1 / h, self.n_freq)
        phi_n = np.exp(1j * np.outer(w, y)).mean(axis=1)
        phi_g = np.real(noise.char_fn(w[:, None]))
        phi_k = (1 - (h * w) ** 2) ** 3
        ratio = phi_n * phi_k / np.maximum(phi_g, 1e-300)
        pad = 4 * h + 4 * float(np.max(getattr(noise, "scales", [0.0])))
        x = np.linspace(y.min() - pad, y.max() + pad, self.n_grid)
        dw = w[1] - w[0]
        vals = np.real(np.exp(-1j * np.outer(x, w)) @ ratio) * dw / (2 * math.pi)
        return GridDensity(x, vals)


class NaiveKDE:
    """Gaussian KDE of the noisy data (scipy ``gaussian_kde``, Scott's rule), tabulated on a grid.

    Examples
    --------
    >>> y = np.random.default_rng(0).normal(0, 1, (500, 1))
    >>> type(NaiveKDE().fit(y, GaussianNoise(0.0))).__name__
    'GridDensity'
    """

    name = "naive KDE"

    def __init__(self, n_grid: int = 1024):
        self.n_grid = n_grid

    def fit(self, y, noise):
        from scipy.stats import gaussian_kde

        y = as_points(y, 1, "samples")[:, 0]
        kde = gaussian_kde(y)
        bw = float(np.sqrt(kde.covariance[0, 0]))
        x = np.linspace(y.min() - 4 * bw, y.max() + 4 * bw, self.n_grid)
        return GridDensity(x, kde(x))


class KDEpyFFT(NaiveKDE):
    """Naive FFT KDE from ``KDEpy`` (ISJ bandwidth); needs the ``bench`` extra."""

    name = "KDEpy FFT-KDE"

    @staticmethod
    def available() -> bool:
        try:
            import KDEpy  # noqa: F401
        except ImportError:
            return False
        return True

    def fit(self, y, noise):
        from KDEpy import FFTKDE

        y = as_points(y, 1, "samples")[:, 0]
        x, vals = FFTKDE(kernel="gaussian", bw="ISJ").fit(y).evaluate(self.n_grid)
        return GridDensity(x, vals)


class MomentDeconvolution:
    """Method of moments for ``X = Y - Z``: mean ``E Y``, covariance ``Cov Y - Cov Z`` (clipped),
    matched within the ``box`` or ``gaussian`` family.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.uniform(0, 1, (20000, 1)) + rng.normal(0, 0.2, (20000, 1))
    >>> b = MomentDeconvolution("box").fit(y, GaussianNoise(0.2))
    >>> round(float(b.lo[0]), 1), round(float(b.hi[0]), 1)
    (0.0, 1.0)
    """

    name = "moment deconvolution"

    def __init__(self, family: str = "box"):
        if family not in ("box", "gaussian"):
            raise ValueError(f"moment deconvolution supports 'box' or 'gaussian'; got {family!r}")
        self.family = family

    def fit(self, y, noise):
        y = as_points(y, noise.d, "samples")
        mean = y.mean(axis=0)
        cov = np.atleast_2d(np.cov(y.T)) - _noise_cov(noise)
        floor = 1e-6 * float(np.mean(np.var(y, axis=0)))
        if self.family == "gaussian":
            return GaussianDensity(mean, _clip_psd(cov, floor))
        half = np.sqrt(3 * np.maximum(np.diag(cov), floor))
        return BoxDensity(mean - half, mean + half)
