"""The unified QAT scaling law, the N-only prior law and the Chinchilla fit of the FP loss.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302.

1. Loss model: ``L_QAT(N, D, G) = L_FP(N, D) + delta(N, D, G)`` -> :func:`qat_error` builds
   ``delta = L_QAT - L_FP`` from paired runs.
2. Unified law: ``delta = k * D^gD * (log2 G)^gG / N^gN`` -> :class:`QATLaw`; it is linear in
   log space, ``log delta = log k + gD log D + gG log log2 G - gN log N``, fitted by OLS with
   t-based 95 % intervals, a bootstrap over runs, or a robust Huber fit -> :func:`fit_qat_law`.
3. Prior law (effective parameters, Kumar et al. 2024 "Scaling Laws for Precision"):
   ``L = A (N eff_G)^-alpha + ...`` gives ``delta = c_G / N^gN`` with one constant per
   precision setting and no D dependence -> :class:`NOnlyLaw`, :func:`fit_n_only_law`.
4. FP loss: Chinchilla ``L = A/N^alpha + B/D^beta + E`` with the Huber-on-log-loss fit of
   Hoffmann et al. 2022 -> :func:`fit_chinchilla`.
5. Decomposition: the W4A16 (weight) and W16A4 (activation) errors each fitted with the
   unified form -> :func:`decompose`.
6. Held-out evaluation: leave one (N, D) cell out, refit, predict it -> :func:`compare_laws`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import optimize, stats

PARAMS = ("k", "gN", "gD", "gG")


class NotIdentifiableError(ValueError):
    """The data cannot determine the law's parameters."""


def _as_arrays(N, D, G, delta) -> tuple[np.ndarray, ...]:
    arrs = [np.asarray(a, dtype=float).ravel() for a in (N, D, G, delta)]
    if len({len(a) for a in arrs}) != 1:
        raise ValueError(f"N, D, G and delta have different lengths {[len(a) for a in arrs]}")
    return tuple(arrs)


def clean_points(
    N, D, G, delta, strict: bool = False, need_g: bool = True
) -> tuple[np.ndarray, ...]:
    """Validate fitting data; drop (with a warning) or reject (``strict``) non-positive delta.

    Raises ``ValueError`` on NaN / infinite values, N or D <= 0, G < 2, and
    :class:`NotIdentifiableError` with fewer than two distinct values of N, D or G.
    """
    N, D, G, delta = _as_arrays(N, D, G, delta)
    for name, a in (("N", N), ("D", D), ("G", G), ("delta", delta)):
        if not np.all(np.isfinite(a)):
            raise ValueError(
                f"{name} contains NaN or infinite values ({int((~np.isfinite(a)).sum())} of {len(a)})"
            )
    if np.any(N <= 0) or np.any(D <= 0):
        raise ValueError("N and D must be positive")
    if np.any(G < 2):
        raise ValueError(
            f"group size G must be >= 2 for the (log2 G) term, got {sorted(set(G[G < 2].tolist()))}"
        )
    bad = delta <= 0
    if bad.any():
        msg = f"{int(bad.sum())} of {len(delta)} points have delta <= 0 (QAT loss not above FP)"
        if strict:
            raise ValueError(msg + "; strict mode refuses them")
        warnings.warn(msg + "; dropped", RuntimeWarning, stacklevel=2)
        N, D, G, delta = N[~bad], D[~bad], G[~bad], delta[~bad]
    names = ("N", "D", "G") if need_g else ("N", "D")
    for name, a in zip(names, (N, D, G), strict=False):
        if len(np.unique(a)) < 2:
            raise NotIdentifiableError(
                f"need at least 2 distinct values of {name} to fit the law, got {np.unique(a).tolist()}"
            )
    return N, D, G, delta


@dataclass(frozen=True)
class QATLaw:
    """``delta(N, D, G) = k * D^gD * (log2 G)^gG / N^gN``.

    Examples:
        >>> law = QATLaw(k=2.0, gN=0.5, gD=0.1, gG=1.0)
        >>> round(float(law.predict(1e4, 1e6, 16)), 4)  # 2 * 1e6^0.1 * 4 / 100
        0.3185
    """

    k: float
    gN: float
    gD: float
    gG: float

    def predict(self, N, D, G) -> np.ndarray:
        """The law's delta at ``(N, D, G)`` (broadcasting)."""
        N, D, G = (np.asarray(a, dtype=float) for a in (N, D, G))
        return self.k * D**self.gD * np.log2(G) ** self.gG / N**self.gN


def _design(N, D, G) -> np.ndarray:
    return np.column_stack([np.ones_like(N), -np.log(N), np.log(D), np.log(np.log2(G))])


def _law_from_beta(beta: np.ndarray) -> QATLaw:
    return QATLaw(k=float(np.exp(beta[0])), gN=float(beta[1]), gD=float(beta[2]), gG=float(beta[3]))


@dataclass
class LawFit:
    """A fitted :class:`QATLaw` with its uncertainty.

    Attributes:
        law: Point estimate.
        ci: 95 % intervals per parameter from OLS (t distribution), ``{name: (lo, hi)}``.
        bootstrap_ci: Percentile 95 % intervals from resampling runs (empty if not run).
        r2: R^2 of log delta.
        rmse_log: Residual RMS of log delta.
        n: Points used.
        method: ``ols_log`` or ``huber``.
    """

    law: QATLaw
    ci: dict[str, tuple[float, float]]
    r2: float
    rmse_log: float
    n: int
    method: str = "ols_log"
    bootstrap_ci: dict[str, tuple[float, float]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        return {
            "law": asdict(self.law),
            "ci": self.ci,
            "bootstrap_ci": self.bootstrap_ci,
            "r2": self.r2,
            "rmse_log": self.rmse_log,
            "n": self.n,
            "method": self.method,
        }


def _ols(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    dof = len(y) - X.shape[1]
    if dof <= 0:
        return beta, None, resid
    s2 = float(resid @ resid) / dof
    cov = s2 * np.linalg.pinv(X.T @ X)
    return beta, cov, resid


def _huber(X: np.ndarray, y: np.ndarray, f_scale: float) -> np.ndarray:
    beta0, *_ = np.linalg.lstsq(X, y, rcond=None)
    res = optimize.least_squares(lambda b: X @ b - y, beta0, loss="huber", f_scale=f_scale)
    return res.x


def fit_qat_law(
    N,
    D,
    G,
    delta,
    method: str = "ols_log",
    bootstrap: int = 0,
    seed: int = 0,
    strict: bool = False,
    huber_scale: float = 0.1,
) -> LawFit:
    """Fit the unified law to paired-run errors.

    Args:
        N, D, G, delta: One entry per run (non-embedding parameters, tokens, group size, error).
        method: ``ols_log`` (least squares on log delta, closed-form intervals) or ``huber``
            (robust least squares on log delta, ``f_scale=huber_scale``).
        bootstrap: Resamples of the runs for percentile intervals (0 = none).
        seed: Seed of the bootstrap.
        strict: Refuse non-positive delta instead of dropping it with a warning.

    Examples:
        >>> rng = np.random.default_rng(0)
        >>> N, D, G = (a.ravel() for a in np.meshgrid([1e4, 3e4, 1e5], [1e5, 1e6], [8, 16, 32]))
        >>> fit = fit_qat_law(N, D, G, QATLaw(3.0, 0.4, 0.2, 1.5).predict(N, D, G))
        >>> [round(v, 6) for v in (fit.law.k, fit.law.gN, fit.law.gD, fit.law.gG)]
        [3.0, 0.4, 0.2, 1.5]
    """
    N, D, G, delta = clean_points(N, D, G, delta, strict=strict)
    X, y = _design(N, D, G), np.log(delta)
    if len(y) < X.shape[1]:
        raise NotIdentifiableError(f"need at least {X.shape[1]} points, got {len(y)}")
    if method == "ols_log":
        beta, cov, resid = _ols(X, y)
    elif method == "huber":
        beta = _huber(X, y, huber_scale)
        _, cov, _ = _ols(X, y)  # OLS covariance as the interval of the robust fit
        resid = y - X @ beta
    else:
        raise ValueError(f"method must be 'ols_log' or 'huber', got {method!r}")
    ci: dict[str, tuple[float, float]] = {}
    if cov is not None:
        t = stats.t.ppf(0.975, len(y) - X.shape[1])
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
        for i, name in enumerate(PARAMS):
            lo, hi = beta[i] - t * se[i], beta[i] + t * se[i]
            ci[name] = (float(np.exp(lo)), float(np.exp(hi))) if i == 0 else (float(lo), float(hi))
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1 - float(resid @ resid) / ss_tot if ss_tot > 0 else 1.0
    fit = LawFit(_law_from_beta(beta), ci, r2, float(np.sqrt(np.mean(resid**2))), len(y), method)
    if bootstrap:
        fit.bootstrap_ci = _bootstrap(X, y, bootstrap, seed, method, huber_scale)
    return fit


def _bootstrap(X, y, reps, seed, method, huber_scale) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(reps):
        idx = rng.integers(0, len(y), len(y))
        Xb = X[idx]
        if np.linalg.matrix_rank(Xb) < X.shape[1]:
            continue
        beta = (
            _huber(Xb, y[idx], huber_scale)
            if method == "huber"
            else np.linalg.lstsq(Xb, y[idx], rcond=None)[0]
        )
        draws.append(beta)
    if len(draws) < 10:
        return {}
    arr = np.array(draws)
    arr[:, 0] = np.exp(arr[:, 0])
    lo, hi = np.percentile(arr, [2.5, 97.5], axis=0)
    return {name: (float(lo[i]), float(hi[i])) for i, name in enumerate(PARAMS)}


@dataclass(frozen=True)
class NOnlyLaw:
    """Prior QAT law: ``delta = c_G / N^gN`` (effective parameters; no D dependence).

    Examples:
        >>> NOnlyLaw(gN=0.5, c={8: 1.0}).predict([1e4], [8]).tolist()
        [0.01]
    """

    gN: float
    c: Mapping[int, float]

    def predict(self, N, G) -> np.ndarray:
        """delta at ``(N, G)``; G must be one of the fitted settings."""
        N, G = np.asarray(N, dtype=float), np.asarray(G)
        missing = set(np.unique(G).tolist()) - set(self.c)
        if missing:
            raise ValueError(f"no fitted constant for G={sorted(missing)}")
        return np.array([self.c[int(g)] for g in G.ravel()]) / N**self.gN


def fit_n_only_law(N, G, delta) -> NOnlyLaw:
    """OLS on ``log delta = log c_G - gN log N`` (one intercept per G)."""
    N, G, delta = (np.asarray(a, dtype=float).ravel() for a in (N, G, delta))
    groups = sorted({int(g) for g in G})
    X = np.column_stack([-np.log(N)] + [(g == G).astype(float) for g in groups])
    beta, *_ = np.linalg.lstsq(X, np.log(delta), rcond=None)
    return NOnlyLaw(
        float(beta[0]), {g: float(np.exp(b)) for g, b in zip(groups, beta[1:], strict=True)}
    )


def compare_laws(N, D, G, delta, strict: bool = False) -> dict[str, dict[str, float]]:
    """Leave-one-(N, D)-cell-out prediction error of the unified and the N-only law.

    Returns ``{law: {"rmse_log": ..., "mape": ..., "cells": ...}}`` where ``rmse_log`` is
    the RMS error of log delta on the held-out points and ``mape`` the mean absolute
    relative error of delta. Cells whose removal makes the unified law unidentifiable are
    skipped (counted in ``cells``).
    """
    N, D, G, delta = clean_points(N, D, G, delta, strict=strict)
    errs: dict[str, list[float]] = {"unified": [], "N-only": []}
    rel: dict[str, list[float]] = {"unified": [], "N-only": []}
    cells = sorted(set(zip(N.tolist(), D.tolist(), strict=True)))
    used = 0
    for n, d in cells:
        test = (n == N) & (d == D)
        train = ~test
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                uni = fit_qat_law(N[train], D[train], G[train], delta[train])
        except NotIdentifiableError:
            continue
        nonly = fit_n_only_law(N[train], G[train], delta[train])
        if not set(G[test].tolist()) <= set(nonly.c):
            continue  # the N-only law has no constant for a G seen only in this cell
        used += 1
        for name, pred in (
            ("unified", uni.law.predict(N[test], D[test], G[test])),
            ("N-only", nonly.predict(N[test], G[test])),
        ):
            errs[name].extend((np.log(pred) - np.log(delta[test])).tolist())
            rel[name].extend((np.abs(pred - delta[test]) / delta[test]).tolist())
    if not used:
        raise NotIdentifiableError("no (N, D) cell can be held out with the law still identifiable")
    return {
        name: {
            "rmse_log": float(np.sqrt(np.mean(np.square(errs[name])))),
            "mape": float(np.mean(rel[name])),
            "cells": used,
        }
        for name in errs
    }


@dataclass(frozen=True)
class ChinchillaLaw:
    """``L(N, D) = A / N^alpha + B / D^beta + E``.

    Examples:
        >>> round(float(ChinchillaLaw(1.0, 0.5, 1.0, 0.5, 1.0).predict(100, 10000)), 3)
        1.11
    """

    A: float
    alpha: float
    B: float
    beta: float
    E: float

    def predict(self, N, D) -> np.ndarray:
        """The loss at ``(N, D)``."""
        N, D = np.asarray(N, dtype=float), np.asarray(D, dtype=float)
        return self.A / N**self.alpha + self.B / D**self.beta + self.E


def fit_chinchilla(N, D, L, huber_delta: float = 1e-3) -> tuple[ChinchillaLaw, float]:
    """Hoffmann et al.'s fit: Huber loss on ``log L`` residuals of the log-sum-exp form.

    Minimises ``sum Huber(LSE(a - alpha log N, b - beta log D, e) - log L)`` from a grid of
    starts (``A = e^a``, ``B = e^b``, ``E = e^e``); returns the law and the RMS log residual.
    Needs at least 2 distinct N and D and 5 points.
    """
    N, D, L = (np.asarray(a, dtype=float).ravel() for a in (N, D, L))
    if not np.all(np.isfinite(L)) or np.any(L <= 0):
        raise ValueError("FP losses must be finite and positive")
    if len(np.unique(N)) < 2 or len(np.unique(D)) < 2 or len(L) < 5:
        raise NotIdentifiableError("the Chinchilla fit needs >= 2 distinct N and D and >= 5 points")
    lN, lD, lL = np.log(N), np.log(D), np.log(L)

    def resid(p):
        a, alpha, b, beta, e = p
        return np.logaddexp(np.logaddexp(a - alpha * lN, b - beta * lD), e) - lL

    best = None
    e0 = math.log(max(min(L) * 0.5, 1e-3))
    for a0 in (0.0, 5.0, 10.0):
        for al0 in (0.2, 0.5, 1.0):
            for be0 in (0.2, 0.5, 1.0):
                p0 = np.array([a0, al0, a0, be0, e0])
                res = optimize.least_squares(
                    resid,
                    p0,
                    loss="huber",
                    f_scale=huber_delta,
                    bounds=([-30, 0, -30, 0, -10], [50, 3, 50, 3, 5]),
                )
                if best is None or res.cost < best.cost:
                    best = res
    a, alpha, b, beta, e = best.x
    law = ChinchillaLaw(
        float(np.exp(a)), float(alpha), float(np.exp(b)), float(beta), float(np.exp(e))
    )
    return law, float(np.sqrt(np.mean(resid(best.x) ** 2)))


def qat_error(records: Sequence[Mapping], strict: bool = False) -> list[dict]:
    """Pair QAT runs with the FP run of the same size, tokens and seed: ``delta = L - L_FP``.

    ``records`` hold ``size, N, D, scheme, G, seed, val_loss`` (the grid runner's JSONL rows).
    Returns one dict per QAT record with ``delta`` and ``fp_loss`` added. NaN losses raise.
    """
    fp: dict[tuple, float] = {}
    for r in records:
        if not math.isfinite(float(r["val_loss"])):
            raise ValueError(f"NaN/inf loss in run {r.get('run', r)}")
        if r["scheme"] == "FP":
            fp[(r["N"], r["D"], r["seed"])] = float(r["val_loss"])
    out = []
    for r in records:
        if r["scheme"] == "FP":
            continue
        key = (r["N"], r["D"], r["seed"])
        if key not in fp:
            if strict:
                raise ValueError(f"no FP run paired with {r.get('run')}")
            continue
        out.append({**r, "fp_loss": fp[key], "delta": float(r["val_loss"]) - fp[key]})
    return out


def decompose(errors: Sequence[Mapping], bootstrap: int = 0, seed: int = 0) -> dict[str, LawFit]:
    """Fit the unified law separately to the W4A4, W4A16 (weight) and W16A4 (activation) errors.

    Schemes with data that cannot identify the law are left out of the result.
    """
    fits: dict[str, LawFit] = {}
    for scheme in ("W4A4", "W4A16", "W16A4"):
        rows = [e for e in errors if e["scheme"] == scheme]
        if not rows:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                fits[scheme] = fit_qat_law(
                    [r["N"] for r in rows],
                    [r["D"] for r in rows],
                    [r["G"] for r in rows],
                    [r["delta"] for r in rows],
                    bootstrap=bootstrap,
                    seed=seed,
                )
        except NotIdentifiableError:
            continue
    return fits
