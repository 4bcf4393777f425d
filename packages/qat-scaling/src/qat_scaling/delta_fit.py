"""The unified QAT law fitted to every measured delta, with intervals from the seed bootstrap.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302, the
unified law of the QAT error (its Eq. for delta(N, D, G), written here as
``delta = k D^gD (log2 G)^gG / N^gN``).

At small scale many measured deltas are at the paired-seed noise level, and some are <= 0. A
fit of ``log delta`` (:func:`qat_scaling.scaling_law.fit_qat_law`) must drop those points,
which biases it towards the cells where the noise happened to be positive. Here the law is
fitted in delta space with an additive noise model instead, so every point counts:

    delta_i = k D_i^gD (log2 G_i)^gG / N_i^gN + eps_i,   eps_i ~ Normal(0, sigma^2)

(maximum likelihood = nonlinear least squares on delta) -> :func:`fit_delta_law`.

The spread of delta over paired seeds is not constant: on the committed sweeps a cell's seed sd
grows in proportion to its mean (slope about 1 of log sd on log |mean|, a coefficient of
variation of about 0.5), so an unweighted fit is dominated by the largest, noisiest cells. The
relative noise model (``noise="relative"``) takes this into account:

    Var(delta_i) = f^2 + (c mu_i)^2,   mu_i = k D_i^gD (log2 G_i)^gG / N_i^gN

(a floor f, the evaluation noise of a delta near 0, and a coefficient of variation c). f and c
are estimated from the paired-seed sample variances of the (N, D, G) cells by maximum
likelihood (a sample variance of n seeds is Var chi^2_(n-1) / (n-1)) ->
:func:`fit_variance_function`; the law is then fitted by iteratively reweighted least squares
(quasi-likelihood: weights 1 / Var(mu_i) at the current fit, every point used, delta <= 0
included) -> :func:`fit_delta_law_weighted`. A smooth variance function rather than each cell's
own sample variance as weight: with 3 seeds a cell's sample variance is within a factor
0.025-3.7 of the true one (95%), so raw inverse variances would hand the fit to the cells whose
seeds happened to agree.

Intervals: the runs of one size and seed share weights, batches and every (D, G) cell, so a
seed is the unit of resampling. :func:`seed_bootstrap` redraws, for every size, its seeds with
replacement and refits; percentile intervals of each exponent, widened about the estimate by
sqrt(m / (m - 1)) (m seeds per size: a bootstrap over m units has (m - 1) / m of the variance
of the estimate; on planted tables with 3 seeds the plain percentile intervals covered about
80%, docs/noise_model_check.txt). Under the
relative model each replicate keeps the variance function of the full data (a replicate that
draws one seed three times has zero within-cell variance) and reruns the reweighted fit.

- :func:`noise_floor`: the paired-seed spread of delta per cell (what a trend must exceed).
- :func:`fit_n_only_delta` / :func:`holdout_delta`: the N-only law ``delta = c_G / N^gN`` and
  the leave-one-(N, D)-cell-out comparison of the two laws, in delta space.
- :func:`decompose_delta`: the law of the W4A4 error and of its weight (W4A16) and activation
  (W16A4) parts, each fitted in delta space with seed-bootstrap intervals (the paper's
  decomposition of the QAT error).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from .scaling_law import NotIdentifiableError, QATLaw

__all__ = [
    "DeltaFit",
    "NOISE_MODELS",
    "VarianceFunction",
    "cell_means",
    "usable_noise_model",
    "decompose_delta",
    "fit_delta_law",
    "fit_delta_law_weighted",
    "fit_variance_function",
    "fit_n_only_delta",
    "holdout_delta",
    "noise_floor",
    "seed_bootstrap",
]

_EXPONENTS = ("gN", "gD", "gG")
_BOUND = 6.0  # |exponent| bound of the optimiser (keeps k finite on flat data)

#: Noise models of delta: ``additive`` (constant variance), ``relative`` (variance
#: f^2 + (c mu)^2, :class:`VarianceFunction`).
NOISE_MODELS = ("additive", "relative")


@dataclass(frozen=True)
class VarianceFunction:
    """The variance of a measured delta around the law's mean mu: ``f^2 + (c mu)^2``.

    Args:
        floor: f, the sd of a delta whose mean is 0 (nats).
        cv: c, the coefficient of variation of delta where mu >> f.

    Examples:
        >>> VarianceFunction(floor=0.001, cv=0.5).sd(np.array([0.0, 0.02])).round(5).tolist()
        [0.001, 0.01005]
    """

    floor: float
    cv: float

    def sd(self, mu) -> np.ndarray:
        """The sd of delta at mean(s) ``mu``."""
        mu = np.asarray(mu, dtype=float)
        return np.sqrt(self.floor**2 + (self.cv * mu) ** 2)


@dataclass
class DeltaFit:
    """A law fitted in delta space.

    Attributes:
        law: The fitted :class:`~qat_scaling.scaling_law.QATLaw`.
        free: Exponents that were fitted (one with a single distinct value of its variable is
            fixed at 0 and absorbed into k).
        sigma: RMS residual (the additive noise level, nats).
        n: Number of points.
        ci: Percentile 95% intervals of the seed bootstrap (filled by :func:`seed_bootstrap`).
        boot: Bootstrap replicates per parameter.
        noise: The noise model (:data:`NOISE_MODELS`).
        variance: The fitted variance function (``relative`` model), else None.
    """

    law: QATLaw
    free: tuple[str, ...]
    sigma: float
    n: int
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    boot: dict[str, list[float]] = field(default_factory=dict)
    noise: str = "additive"
    variance: VarianceFunction | None = None

    def excludes_zero(self, name: str) -> bool | None:
        """Whether the bootstrap interval of ``name`` lies strictly above or below 0."""
        if name not in self.ci:
            return None
        lo, hi = self.ci[name]
        return lo > 0 or hi < 0

    def to_dict(self) -> dict:
        """JSON-ready summary (``law`` as keyword arguments of ``QATLaw``)."""
        return {
            "law": {k: getattr(self.law, k) for k in ("k", "gN", "gD", "gG")},
            "free": list(self.free),
            "sigma": self.sigma,
            "n": self.n,
            "noise_model": (
                "additive Gaussian on delta (nonlinear least squares)"
                if self.noise == "additive"
                else "relative: Var(delta) = floor^2 + (cv mu)^2 (iteratively reweighted least "
                "squares, floor and cv from the paired-seed cell variances)"
            ),
            "variance_function": (
                None
                if self.variance is None
                else {"floor": self.variance.floor, "cv": self.variance.cv}
            ),
            "bootstrap_ci": {k: list(v) for k, v in self.ci.items()},
        }


def _prepare(N, D, G, delta):
    arrs = [np.asarray(a, dtype=float) for a in (N, D, G, delta)]
    if len({a.shape for a in arrs}) != 1 or arrs[0].ndim != 1:
        raise ValueError("N, D, G and delta must be 1-D sequences of equal length")
    N, D, G, delta = arrs
    if not np.all(np.isfinite(delta)):
        raise ValueError("delta holds NaN or inf")
    if np.any(N <= 0) or np.any(D <= 0) or np.any(G < 2):
        raise ValueError("need N > 0, D > 0 and G >= 2")
    return N, D, G, delta


def fit_delta_law(N, D, G, delta, start: QATLaw | None = None, sd=None) -> DeltaFit:
    """Maximum-likelihood fit of ``delta = k D^gD (log2 G)^gG / N^gN + Normal(0, sigma^2)``.

    Every point is used, delta <= 0 included. ``sd`` (one per point): known relative noise
    levels, i.e. weighted least squares with weights ``1 / sd^2`` (sigma is then still the
    unweighted RMS residual). An exponent whose variable takes one value only
    is fixed at 0. Fewer than two distinct N raise :class:`NotIdentifiableError`. The
    optimiser starts from three exponent guesses and keeps the best, or from ``start`` only
    (the bootstrap starts each replicate at the full-data fit).

    Examples:
        >>> law = QATLaw(k=0.5, gN=0.6, gD=0.2, gG=1.0)
        >>> N, D, G = np.meshgrid([1e4, 4e4, 1.6e5], [1e5, 4e5], [8, 32], indexing="ij")
        >>> N, D, G = N.ravel(), D.ravel(), G.ravel()
        >>> fit = fit_delta_law(N, D, G, law.predict(N, D, G))
        >>> [round(getattr(fit.law, k), 4) for k in ("gN", "gD", "gG")]
        [0.6, 0.2, 1.0]
    """
    N, D, G, delta = _prepare(N, D, G, delta)
    if len(np.unique(N)) < 2:
        raise NotIdentifiableError("the law needs at least two distinct model sizes N")
    free = tuple(
        name
        for name, x in (("gN", N), ("gD", D), ("gG", G))
        if name == "gN" or len(np.unique(x)) >= 2
    )
    # centre the regressors: k then is the delta at the geometric-mean cell (well scaled)
    cols = {
        "gN": -(np.log(N) - np.log(N).mean()),
        "gD": np.log(D) - np.log(D).mean(),
        "gG": np.log(np.log2(G)) - np.log(np.log2(G)).mean(),
    }
    X = np.stack([cols[name] for name in free], axis=1)
    scale = max(float(np.abs(delta).max()), 1e-12)
    y = delta / scale
    if sd is None:
        w = np.ones_like(y)
    else:
        sd = np.asarray(sd, dtype=float)
        if sd.shape != y.shape or not np.all(sd > 0):
            raise ValueError("sd must hold one positive value per point")
        w = sd.mean() / sd  # relative weights (well scaled)

    def resid(p):
        with np.errstate(over="ignore"):  # a far-off trial step; least_squares backs off
            return w * (np.exp(p[0] + X @ p[1:]) - y)

    start_k = math.log(max(float(np.mean(y)), 1e-3))
    if start is not None:
        ex0 = np.array([float(np.clip(getattr(start, n), -_BOUND, _BOUND)) for n in free])
        c0 = math.log(start.k / scale) + ex0 @ np.array(
            [
                {"gN": -np.log(N).mean(), "gD": np.log(D).mean(), "gG": np.log(np.log2(G)).mean()}[
                    n
                ]
                for n in free
            ]
        )
        starts = [np.r_[c0, ex0]]
    else:
        starts = [np.r_[start_k, np.full(len(free), g0)] for g0 in (0.5, 0.0, 1.5)]
    best = None
    for p0 in starts:
        lb = np.r_[-np.inf, np.full(len(free), -_BOUND)]
        ub = np.r_[np.inf, np.full(len(free), _BOUND)]
        res = least_squares(resid, p0, bounds=(lb, ub), method="trf")
        if best is None or res.cost < best.cost:
            best = res
    p = best.x
    ex = dict(zip(free, p[1:], strict=True))
    # back from centred to raw regressors: log k = c - sum g * mean(regressor)
    logk = p[0] + math.log(scale)
    logk += ex.get("gN", 0.0) * np.log(N).mean()
    logk -= ex.get("gD", 0.0) * np.log(D).mean()
    logk -= ex.get("gG", 0.0) * np.log(np.log2(G)).mean()
    law = QATLaw(
        k=float(math.exp(logk)),
        gN=float(ex.get("gN", 0.0)),
        gD=float(ex.get("gD", 0.0)),
        gG=float(ex.get("gG", 0.0)),
    )
    sigma = float(np.sqrt(np.mean((law.predict(N, D, G) - delta) ** 2)))
    return DeltaFit(law, free, sigma, len(delta))


def _cells(N, D, G) -> np.ndarray:
    """Index of each point's (N, D, G) cell."""
    keys = list(zip(np.asarray(N, float), np.asarray(D, float), np.asarray(G, float), strict=True))
    index: dict[tuple, int] = {}
    return np.array([index.setdefault(k, len(index)) for k in keys])


def fit_variance_function(mu, s2, dof) -> VarianceFunction:
    """Maximum-likelihood ``f`` and ``c`` of ``Var = f^2 + (c mu)^2`` from cell sample variances.

    Args:
        mu: The law's mean delta of each cell.
        s2: Each cell's sample variance of delta over its seeds (ddof 1).
        dof: Its degrees of freedom (seeds - 1); cells with ``dof < 1`` are ignored.

    A sample variance of n normal draws is ``Var chi^2_(n-1) / (n-1)`` (a Gamma variable of shape
    (n-1)/2), whose log likelihood is ``-(n-1)/2 (log Var + s2 / Var)`` up to a constant. f is
    bounded below by 1% of the median cell sd, so that no cell gets an unbounded weight.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> mu = np.tile(np.geomspace(1e-3, 3e-2, 8), 50)
        >>> s2 = (0.5 * mu) ** 2 * rng.chisquare(2, mu.size) / 2
        >>> round(fit_variance_function(mu, s2, np.full(mu.size, 2)).cv, 1)
        0.5
    """
    from scipy.optimize import minimize

    mu, s2, dof = (np.asarray(a, dtype=float) for a in (mu, s2, dof))
    keep = dof >= 1
    mu, s2, dof = mu[keep], s2[keep], dof[keep]
    if mu.size < 2:
        raise NotIdentifiableError("the variance function needs two or more cells with >= 2 seeds")
    s_med = float(np.sqrt(np.median(s2)))
    scale = max(s_med, 1e-12)
    m, v = mu / scale, s2 / scale**2  # well scaled: the median cell sd is 1

    def nll(p):
        var = np.exp(p[0]) + np.exp(p[1]) * m**2
        return float(np.sum(dof / 2 * (np.log(var) + v / var)))

    lo_floor = 2 * math.log(0.01)
    best = None
    for p0 in ([0.0, 0.0], [lo_floor / 2, 2.0], [0.0, -6.0]):
        res = minimize(nll, p0, method="L-BFGS-B", bounds=[(lo_floor, 10.0), (-30.0, 30.0)])
        if best is None or res.fun < best.fun:
            best = res
    floor2, cv2 = np.exp(best.x)
    return VarianceFunction(floor=float(scale * math.sqrt(floor2)), cv=float(math.sqrt(cv2)))


def _cell_variances(cell: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = np.bincount(cell)
    s2 = np.zeros(n.size)
    for c in range(n.size):
        if n[c] > 1:
            s2[c] = float(np.var(delta[cell == c], ddof=1))
    return s2, n - 1


def fit_delta_law_weighted(
    N,
    D,
    G,
    delta,
    variance: VarianceFunction | None = None,
    start: QATLaw | None = None,
    iters: int = 20,
) -> DeltaFit:
    """The law under the relative noise model ``Var(delta) = f^2 + (c mu)^2`` (quasi-likelihood).

    Iteratively reweighted least squares: fit, set each point's weight to ``1 / Var(mu)`` at the
    current fit (mu of its cell), refit, until the exponents move by less than 1e-6. Without
    ``variance``, f and c are re-estimated at every iteration from the paired-seed sample
    variances of the (N, D, G) cells (:func:`fit_variance_function`; needs cells with >= 2
    seeds); with it, they are held fixed (the seed bootstrap passes the full data's).

    Examples:
        >>> rng = np.random.default_rng(1)
        >>> law = QATLaw(k=0.5, gN=0.6, gD=0.2, gG=1.0)
        >>> grid = np.meshgrid([1e4, 4e4, 1.6e5], [1e5, 4e5], [4, 16], range(3), indexing="ij")
        >>> N, D, G = (a.ravel() for a in grid[:3])
        >>> mu = law.predict(N, D, G)
        >>> fit = fit_delta_law_weighted(N, D, G, mu * (1 + 0.3 * rng.standard_normal(mu.size)))
        >>> fit.noise, 0.1 < fit.variance.cv < 0.5, abs(fit.law.gN - 0.6) < 0.2
        ('relative', True, True)
    """
    N, D, G, delta = _prepare(N, D, G, delta)
    cell = _cells(N, D, G)
    s2, dof = _cell_variances(cell, delta)
    fit = fit_delta_law(N, D, G, delta, start=start)
    var = variance
    for _ in range(iters):
        mu = fit.law.predict(N, D, G)
        if variance is None:
            mu_cell = np.zeros(dof.size)
            mu_cell[cell] = mu
            var = fit_variance_function(mu_cell, s2, dof)
        new = fit_delta_law(N, D, G, delta, start=fit.law, sd=var.sd(mu))
        moved = max(abs(getattr(new.law, n) - getattr(fit.law, n)) for n in new.free)
        fit = new
        if moved < 1e-6:
            break
    fit.noise = "relative"
    fit.variance = var
    return fit


def seed_bootstrap(
    points: Sequence[Mapping], reps: int = 1000, seed: int = 0, noise: str = "additive"
) -> DeltaFit:
    """The law on ``points`` plus percentile intervals from a seed bootstrap.

    ``noise``: ``additive`` (:func:`fit_delta_law`) or ``relative``
    (:func:`fit_delta_law_weighted`; each replicate keeps the full data's variance function).

    ``points``: dicts with ``size`` (or ``N``), ``seed``, ``N``, ``D``, ``G``, ``delta``. Each
    replicate redraws, per size, that size's seeds with replacement (all the cells of a drawn
    seed come along, keeping their pairing) and refits. A size with a single seed leaves
    nothing to resample: then no interval is given (``ci`` stays empty).

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> law = QATLaw(k=0.5, gN=0.6, gD=0.2, gG=1.0)
        >>> pts = [dict(size=n, seed=s, N=n, D=d, G=g,
        ...             delta=float(law.predict(n, d, g)) * (1 + 0.05 * rng.standard_normal()))
        ...        for n in (1e4, 4e4) for s in range(3) for d in (1e5, 4e5) for g in (8, 32)]
        >>> fit = seed_bootstrap(pts, reps=200)
        >>> fit.ci["gN"][0] < 0.6 < fit.ci["gN"][1] and fit.excludes_zero("gN")
        True
    """
    if noise not in NOISE_MODELS:
        raise ValueError(f"noise must be one of {', '.join(NOISE_MODELS)}, got {noise!r}")
    pts = list(points)
    arr = lambda key, sel: [p[key] for p in sel]  # noqa: E731
    if noise == "relative":
        fit = fit_delta_law_weighted(*(arr(k, pts) for k in ("N", "D", "G", "delta")))

        def refit(sample):
            cols = (arr(k, sample) for k in ("N", "D", "G", "delta"))
            return fit_delta_law_weighted(*cols, variance=fit.variance, start=fit.law, iters=5)
    else:
        fit = fit_delta_law(*(arr(k, pts) for k in ("N", "D", "G", "delta")))

        def refit(sample):
            cols = (arr(k, sample) for k in ("N", "D", "G", "delta"))
            return fit_delta_law(*cols, start=fit.law)

    if reps <= 0:
        return fit
    groups: dict[object, dict[object, list[Mapping]]] = {}
    for p in pts:
        groups.setdefault(p.get("size", p["N"]), {}).setdefault(p["seed"], []).append(p)
    if min(len(by_seed) for by_seed in groups.values()) < 2:
        return fit  # one seed of some size: nothing to resample, no interval
    rng = np.random.default_rng(seed)
    boot: dict[str, list[float]] = {name: [] for name in ("k", *fit.free)}
    for _ in range(reps):
        sample: list[Mapping] = []
        for by_seed in groups.values():
            keys = list(by_seed)
            for i in rng.integers(0, len(keys), len(keys)):
                sample.extend(by_seed[keys[i]])
        try:
            f = refit(sample)
        except (NotIdentifiableError, ValueError):
            continue
        boot["k"].append(f.law.k)
        for name in fit.free:
            boot[name].append(getattr(f.law, name))
    fit.boot = boot
    # a bootstrap over m units has (m - 1) / m of the variance of the estimate: widen the
    # percentile interval about the estimate by sqrt(m / (m - 1)) (m = fewest seeds of a size;
    # 1.22 for 3 seeds), within the optimiser's bounds
    m = min(len(by_seed) for by_seed in groups.values())
    widen = math.sqrt(m / (m - 1))
    fit.ci = {}
    for name, v in boot.items():
        if len(v) < 10:
            continue
        est = fit.law.k if name == "k" else getattr(fit.law, name)
        lo, hi = float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))
        lo, hi = est - widen * (est - lo), est + widen * (hi - est)
        if name == "k":
            lo = max(lo, 0.0)
        else:
            lo, hi = max(lo, -_BOUND), min(hi, _BOUND)
        fit.ci[name] = (lo, hi)
    return fit


#: The W4A4 error and its weight (W4A16) and activation (W16A4) parts.
DECOMPOSITION_SCHEMES = ("W4A4", "W4A16", "W16A4")


def decompose_delta(
    errors: Sequence[Mapping], reps: int = 1000, seed: int = 0, noise: str = "additive"
) -> dict[str, DeltaFit]:
    """:func:`seed_bootstrap` per scheme of :data:`DECOMPOSITION_SCHEMES` present in ``errors``.

    ``errors``: rows with ``scheme``, ``N``, ``D``, ``G``, ``delta``, ``seed`` (``size``
    optional), e.g. :func:`qat_scaling.scaling_law.qat_error` of a sweep's records. A scheme
    whose rows cannot identify the law (one N, one D, too few points) is left out.

    Examples:
        >>> law = QATLaw(k=0.5, gN=0.6, gD=0.2, gG=1.0)
        >>> rows = [dict(scheme=s, seed=0, N=n, D=d, G=8, delta=float(law.predict(n, d, 8)) * w)
        ...         for s, w in (("W4A16", 0.6), ("W16A4", 0.4))
        ...         for n in (1e4, 2e4, 4e4) for d in (1e5, 4e5)]
        >>> fits = decompose_delta(rows, reps=0)
        >>> sorted(fits), round(fits["W4A16"].law.gN, 3), round(fits["W16A4"].law.gD, 3)
        (['W16A4', 'W4A16'], 0.6, 0.2)
    """
    fits: dict[str, DeltaFit] = {}
    for scheme in DECOMPOSITION_SCHEMES:
        rows = [e for e in errors if e["scheme"] == scheme]
        if not rows:
            continue
        try:
            used, _ = usable_noise_model(rows, noise)
            fits[scheme] = seed_bootstrap(rows, reps=reps, seed=seed, noise=used)
        except (NotIdentifiableError, ValueError):
            continue
    return fits


def cell_means(points: Sequence[Mapping]) -> list[dict]:
    """Seed mean, seed standard deviation and count of delta per (N, D, G) cell."""
    cells: dict[tuple, list[float]] = {}
    for p in points:
        cells.setdefault((p["N"], p["D"], p["G"]), []).append(float(p["delta"]))
    out = []
    for (n, d, g), v in sorted(cells.items()):
        a = np.asarray(v)
        sd = float(a.std(ddof=1)) if len(a) > 1 else float("nan")
        out.append({"N": n, "D": d, "G": g, "mean": float(a.mean()), "sd": sd, "seeds": len(a)})
    return out


def usable_noise_model(points: Sequence[Mapping], noise: str) -> tuple[str, str | None]:
    """``noise``, or ``additive`` with a note where the relative model has too few cells with
    two or more seeds to estimate its variance function (fewer than two)."""
    if noise == "relative" and sum(c["seeds"] > 1 for c in cell_means(points)) < 2:
        return "additive", "relative noise model needs >= 2 cells with >= 2 seeds: additive used"
    return noise, None


def noise_floor(points: Sequence[Mapping]) -> dict[str, float]:
    """The paired-seed spread of delta: median over cells of the seed sd, and of its SE.

    ``sd``: the spread of one seed's delta; ``se``: that of a cell's seed mean (sd / sqrt(n)).
    """
    cells = [c for c in cell_means(points) if c["seeds"] > 1]
    if not cells:
        return {"sd": float("nan"), "se": float("nan"), "cells": 0}
    sd = np.array([c["sd"] for c in cells])
    se = sd / np.sqrt([c["seeds"] for c in cells])
    return {"sd": float(np.median(sd)), "se": float(np.median(se)), "cells": len(cells)}


@dataclass(frozen=True)
class NOnlyDeltaLaw:
    """``delta = c_G / N^gN``: one constant per G, no D term (the earlier QAT laws' form)."""

    c: dict[float, float]
    gN: float

    def predict(self, N, G) -> np.ndarray:
        N, G = np.broadcast_arrays(np.asarray(N, float), np.asarray(G, float))
        return np.array(
            [self.c[float(g)] / n**self.gN for n, g in zip(N.ravel(), G.ravel(), strict=True)]
        )


def fit_n_only_delta(N, G, delta, sd=None) -> NOnlyDeltaLaw:
    """Least-squares fit of :class:`NOnlyDeltaLaw` in delta space (every point used).

    ``sd``: per-point noise levels (weights ``1 / sd^2``), as in :func:`fit_delta_law`.

    >>> law = NOnlyDeltaLaw({8.0: 2.0, 32.0: 4.0}, 0.5)
    >>> N, G = np.array([1e4, 1e4, 4e4, 4e4]), np.array([8, 32, 8, 32])
    >>> round(fit_n_only_delta(N, G, law.predict(N, G)).gN, 4)
    0.5
    """
    N, G, delta = (np.asarray(a, float) for a in (N, G, delta))
    if len(np.unique(N)) < 2:
        raise NotIdentifiableError("the N-only law needs at least two distinct N")
    gs = sorted({float(g) for g in G})
    idx = np.array([gs.index(float(g)) for g in G])
    lnN = np.log(N) - np.log(N).mean()
    scale = max(float(np.abs(delta).max()), 1e-12)
    y = delta / scale
    w = np.ones_like(y) if sd is None else np.mean(sd) / np.asarray(sd, dtype=float)

    def resid(p):
        return w * (np.exp(p[idx] - p[-1] * lnN) - y)

    p0 = np.r_[np.full(len(gs), math.log(max(float(np.mean(y)), 1e-3))), 0.5]
    lb = np.r_[np.full(len(gs), -np.inf), -_BOUND]
    ub = np.r_[np.full(len(gs), np.inf), _BOUND]
    p = least_squares(resid, p0, bounds=(lb, ub)).x
    gN = float(p[-1])
    c = {g: float(scale * math.exp(p[i] + gN * np.log(N).mean())) for i, g in enumerate(gs)}
    return NOnlyDeltaLaw(c, gN)


def holdout_delta(
    points: Sequence[Mapping], noise: str = "additive"
) -> dict[str, dict[str, float]]:
    """Leave each (N, D) cell out, refit both laws on the rest, predict its seed-mean deltas.

    ``noise``: the noise model of the unified law's fit (the N-only law is fitted unweighted
    under ``additive``; under ``relative`` it gets the unified fit's variance function as
    weights, so that both laws are fitted under the same noise model).

    Returns per law (``unified``, ``N-only``) the RMSE of the predicted against the measured
    seed-mean delta (nats) over all held-out (N, D, G) cells, and the number of cells.
    """
    pts = list(points)
    nd = sorted({(p["N"], p["D"]) for p in pts})
    errs: dict[str, list[float]] = {"unified": [], "N-only": []}
    for n, d in nd:
        train = [p for p in pts if (p["N"], p["D"]) != (n, d)]
        test = [c for c in cell_means(pts) if (c["N"], c["D"]) == (n, d)]
        col = {key: np.array([p[key] for p in train], float) for key in ("N", "D", "G", "delta")}
        try:
            if noise == "relative":
                uni = fit_delta_law_weighted(col["N"], col["D"], col["G"], col["delta"])
                sd = uni.variance.sd(uni.law.predict(col["N"], col["D"], col["G"]))
            else:
                uni = fit_delta_law(col["N"], col["D"], col["G"], col["delta"])
                sd = None
            non = fit_n_only_delta(col["N"], col["G"], col["delta"], sd=sd)
        except NotIdentifiableError:
            continue
        for c in test:
            if float(c["G"]) not in non.c:
                continue
            errs["unified"].append(float(uni.law.predict(c["N"], c["D"], c["G"])) - c["mean"])
            errs["N-only"].append(float(non.predict(c["N"], c["G"])[0]) - c["mean"])
    if not errs["unified"]:
        raise NotIdentifiableError("no (N, D) cell can be held out with both laws identifiable")
    return {
        name: {"rmse": float(np.sqrt(np.mean(np.square(e)))), "cells": len(e)}
        for name, e in errs.items()
    }
