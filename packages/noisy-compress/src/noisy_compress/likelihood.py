"""The convolved likelihood ``sum_i log (f * g)(y_i)`` and its maximiser over a family.

Part of the implementation of "Provable Bounds for the Learnability of Sample-Compressible
Families from Noisy Samples" (ICML 2026).

The candidate search of the learner (:mod:`noisy_compress.candidates`) is seeded from the
maximum of the *convolved* likelihood on the candidate half ``S1``: the law of the observed
``Y = X + Z`` is ``f * g`` (closed forms in :mod:`noisy_compress.convolution`), so the estimator
``argmax_f sum_{y in S1} log (f * g)(y)`` is consistent for the clean ``f`` whenever the family is
identifiable from ``f * g``. This is a computational device of ours, not a step of the paper's
learner: the seed only decides *where* the compression candidates are decoded; the selection
guarantee comes from the tournament on the untouched half ``S2``.

Paper concept -> code:

1. the convolved log-likelihood (mean over points): :func:`convolved_loglik`;
2. its maximiser over a family, started from the extreme-deconvolution EM fit (Bovy et al. 2011;
   boxes are started from the moment-matched box of each Gaussian component, ``mu +- sqrt(3) s``)
   and refined by L-BFGS-B on an unconstrained parametrisation (box ``(lo, log width)``,
   Gaussian ``(mean, Cholesky factor with log diagonal)``, mixture weights by softmax logits):
   :func:`convolved_mle`;
3. the profiled mixture weights: for fixed components the weights minimising
   ``sum_c (sum_k w_k P_k(c) - h(c))^2`` over the cells ``c`` (a least-squares projection of the
   histogram onto the components' cell masses, solved in closed form through the KKT system of
   the constraint ``sum_k w_k = 1``, then clipped to ``w >= 0``): :func:`profile_weights`.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
from scipy import optimize

from .convolution import convolved_pdf
from .densities import BoxDensity, Density, GaussianDensity, MixtureDensity, as_points
from .families import AxisAlignedGaussian, Family, Mixture, UniformBox
from .noise import NoiseModel


def convolved_loglik(
    f: Density, noise: NoiseModel, y: np.ndarray, numerical: bool = False
) -> float:
    """Mean of ``log (f * g)(y_i)`` (``-inf`` where the convolved density vanishes).

    Examples
    --------
    >>> from noisy_compress.noise import GaussianNoise
    >>> y = np.zeros((1, 1))
    >>> round(convolved_loglik(GaussianDensity([0.0], [[1.0]]), GaussianNoise(1.0), y), 4)
    -1.2655
    """
    p = convolved_pdf(f, noise, y, numerical=numerical)
    with np.errstate(divide="ignore"):
        return float(np.mean(np.log(p)))


# ------------------------------------------------------------------ parametrisation


def _pack(f: Density) -> np.ndarray:
    if isinstance(f, BoxDensity):
        return np.concatenate([f.lo, np.log(f.hi - f.lo)])
    if isinstance(f, GaussianDensity):
        L = np.linalg.cholesky(f.cov)
        il = np.tril_indices(f.d, -1)
        return np.concatenate([f.mean, np.log(np.diag(L)), L[il]])
    if isinstance(f, MixtureDensity):
        w = np.clip(np.asarray(f.weights), 1e-12, None)
        logits = np.log(w[1:] / w[0])
        return np.concatenate([*[_pack(c) for c in f.components], logits])
    raise TypeError(f"no parametrisation for {type(f).__name__}")


def _size(f: Density) -> int:
    return len(_pack(f))


def _unpack(theta: np.ndarray, like: Density) -> Density:
    d = like.d
    if isinstance(like, BoxDensity):
        lo = theta[:d]
        return BoxDensity(lo, lo + np.exp(np.clip(theta[d:], -30, 30)))
    if isinstance(like, GaussianDensity):
        L = np.zeros((d, d))
        L[np.diag_indices(d)] = np.exp(np.clip(theta[d : 2 * d], -30, 30))
        L[np.tril_indices(d, -1)] = theta[2 * d :]
        return GaussianDensity(theta[:d], L @ L.T + 1e-12 * np.eye(d))
    if isinstance(like, MixtureDensity):
        comps, pos = [], 0
        for c in like.components:
            m = _size(c)
            comps.append(_unpack(theta[pos : pos + m], c))
            pos += m
        logits = np.concatenate([[0.0], theta[pos:]])
        w = np.exp(logits - logits.max())
        return MixtureDensity(w / w.sum(), comps)
    raise TypeError(f"no parametrisation for {type(like).__name__}")


# ------------------------------------------------------------------ starting point


def _base_of(family: Family) -> Family:
    return family.base if isinstance(family, Mixture) else family


def _gaussian_start(y: np.ndarray, noise: NoiseModel, k: int, seed: int) -> Density:
    from .baselines import ExtremeDeconvolution

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ExtremeDeconvolution(k, seed, max_iter=100).fit(y, noise)


def _as_family_member(g: Density, family: Family) -> Density:
    """Turn the Gaussian (mixture) ``g`` into a member of ``family`` with the same moments."""
    base = _base_of(family)
    weights, comps = (g.weights, g.components) if isinstance(g, MixtureDensity) else ([1.0], [g])
    out = []
    for c in comps:
        if isinstance(base, UniformBox):
            half = math.sqrt(3.0) * np.sqrt(np.clip(np.diag(c.cov), 1e-12, None))
            out.append(BoxDensity(c.mean - half, c.mean + half))
        elif isinstance(base, AxisAlignedGaussian) and type(base) is AxisAlignedGaussian:
            out.append(GaussianDensity(c.mean, np.diag(np.diag(c.cov))))
        else:
            out.append(c)
    if isinstance(family, Mixture):
        return MixtureDensity(np.clip(weights, 0.02, None), out)
    return out[0]


def _quantile_start(y: np.ndarray, family: Family) -> Density:
    """Components on the ``k`` equal-count slices of the first coordinate (a second start)."""
    k = family.k if isinstance(family, Mixture) else 1
    base = _base_of(family)
    order = np.argsort(y[:, 0])
    comps = []
    for chunk in np.array_split(y[order], k):
        lo, hi = np.quantile(chunk, [0.02, 0.98], axis=0)
        hi = np.maximum(hi, lo + 1e-3)
        if isinstance(base, UniformBox):
            comps.append(BoxDensity(lo, hi))
        else:
            cov = np.cov(chunk.T).reshape(y.shape[1], y.shape[1]) + 1e-6 * np.eye(y.shape[1])
            if type(base) is AxisAlignedGaussian:
                cov = np.diag(np.diag(cov))
            comps.append(GaussianDensity(chunk.mean(axis=0), cov))
    return MixtureDensity(np.ones(k), comps) if isinstance(family, Mixture) else comps[0]


def convolved_mle(
    family: Family,
    y: np.ndarray,
    noise: NoiseModel,
    seed: int = 0,
    max_points: int = 20_000,
    max_iter: int = 200,
    numerical: bool = False,
) -> Density:
    """Maximise the convolved likelihood over ``family`` (L-BFGS-B from two starting points).

    Parameters
    ----------
    family, y, noise:
        The family, the noisy sample ``(n, d)`` and the known noise law.
    seed:
        Seed of the EM start and of the subsample.
    max_points:
        The likelihood is evaluated on at most this many points (a random subsample).
    max_iter:
        L-BFGS-B iterations per start.
    numerical:
        Allow Monte-Carlo convolutions (slow).

    Returns the best of the refined EM (extreme-deconvolution) start and the refined quantile start,
    by convolved likelihood on ``y``. Only ``GaussianDensity`` / ``BoxDensity`` members and their
    mixtures are supported (the families of :mod:`noisy_compress.families`).

    Examples
    --------
    >>> from noisy_compress.noise import GaussianNoise
    >>> rng = np.random.default_rng(0)
    >>> y = rng.uniform(0, 1, (3000, 1)) + rng.normal(0, 0.1, (3000, 1))
    >>> f = convolved_mle(UniformBox(1), y, GaussianNoise(0.1))
    >>> bool(abs(f.lo[0]) < 0.03 and abs(f.hi[0] - 1) < 0.03)
    True
    """
    y = as_points(y, family.d, "samples")
    rng = np.random.default_rng(seed)
    yf = y if len(y) <= max_points else y[rng.choice(len(y), max_points, replace=False)]
    k = family.k if isinstance(family, Mixture) else 1
    starts = []
    with contextlib.suppress(ValueError, np.linalg.LinAlgError):
        starts.append(_as_family_member(_gaussian_start(yf, noise, k, seed), family))
    starts.append(_quantile_start(yf, family))

    def nll(theta, like):
        try:
            f = _unpack(theta, like)
        except ValueError:
            return 1e10
        p = convolved_pdf(f, noise, yf, numerical=numerical)
        return float(-np.mean(np.log(p + 1e-300)))

    best, best_val = None, math.inf
    for start in starts:
        theta0 = _pack(start)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            res = optimize.minimize(
                nll, theta0, args=(start,), method="L-BFGS-B", options={"maxiter": max_iter}
            )
        theta = res.x if np.isfinite(res.fun) and res.fun <= nll(theta0, start) else theta0
        val = nll(theta, start)
        if val < best_val:
            best, best_val = _unpack(theta, start), val
    return best


def profile_weights(P: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Closed-form least-squares weights ``argmin_{sum w = 1} ||w P - h||^2``, clipped to ``w >= 0``.

    ``P`` is ``(k, cells)`` (each component's convolved cell masses), ``h`` the empirical cell
    frequencies. The KKT system ``[2 P P^T, 1; 1^T, 0] [w; lambda] = [2 P h; 1]`` is solved
    directly (least squares when singular); negative weights are set to zero and the rest
    re-solved on the remaining components.

    Examples
    --------
    >>> P = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]])
    >>> profile_weights(P, 0.3 * P[0] + 0.7 * P[1]).round(6).tolist()
    [0.3, 0.7]
    """
    P, h = np.asarray(P, dtype=float), np.asarray(h, dtype=float)
    k = len(P)
    active = np.ones(k, dtype=bool)
    w = np.zeros(k)
    for _ in range(k):
        Pa = P[active]
        m = len(Pa)
        A = np.zeros((m + 1, m + 1))
        A[:m, :m] = 2 * Pa @ Pa.T
        A[:m, m] = A[m, :m] = 1.0
        b = np.concatenate([2 * Pa @ h, [1.0]])
        sol = np.linalg.lstsq(A, b, rcond=None)[0][:m]
        w = np.zeros(k)
        w[active] = sol
        if np.all(sol >= 0):
            break
        active &= w > 0
        if not active.any():
            w = np.full(k, 1.0 / k)
            break
    w = np.clip(w, 0.0, None)
    return w / w.sum() if w.sum() > 0 else np.full(k, 1.0 / k)
