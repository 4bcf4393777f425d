"""Anchors the paper's estimators are compared with, all fitted on the same moments.

Paper: "One Intervention per Component is Enough" (ICML 2026). Baselines:

1. :func:`fit_observational` - the observational-only graphical continuous
   Lyapunov model (Dettling, Drton et al.): the same moment equations on the
   observational environment alone (known support, or L1 for an unknown one).
2. :func:`fit_shift_only` - a model whose interventions can only shift the input
   (``b_k -> b_k + delta``, the shift family of Zweig et al. 2025 / stadion's
   shift part), fitted to the same environments.
3. :func:`no_change` - predict the observational (control) distribution.
4. :class:`LinearSEM` via :func:`fit_gies_sem` - GIES (PyPI ``gies``, extra
   ``bench``) on the interventional data with known targets, then a linear
   Gaussian SEM per node on its parents; an unseen intervention is a
   stochastic do-intervention on the target, calibrated to its observed moments.
5. :func:`graphical_lasso_scores` - scikit-learn's graphical lasso (extra
   ``bench``) on the observational correlation: undirected edge scores only.

GIES needs raw samples; :func:`pseudo_samples` builds ``n`` rows whose sample
mean and covariance equal given moments exactly, so every method sees the same
sufficient statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ou_ident.interventions import Environment, Shift
from ou_ident.joint import fit_joint
from ou_ident.moment_equations import EnvironmentMoments
from ou_ident.steady_state_fit import OUFit

__all__ = [
    "LinearSEM",
    "fit_gies_sem",
    "fit_observational",
    "fit_shift_only",
    "graphical_lasso_scores",
    "no_change",
    "pseudo_samples",
]


def fit_observational(
    data: Sequence[EnvironmentMoments], mask=None, l1: float = 0.0, ridge: float = 0.0
) -> OUFit:
    """Lyapunov-equation fit on the observational environment(s) only.

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> prob = make_problem(5, seed=0)
    >>> fit_observational(prob.moments(), prob.mask).method
    'observational'
    """
    obs = [d for d in data if d.environment.is_observational]
    if not obs:
        raise ValueError("no observational environment (one without interventions) in the data")
    fit = fit_joint(obs, mask, ridge=ridge, l1=l1)
    fit.method = "observational"
    return fit


def as_shift_environment(env: Environment) -> Environment:
    """The same targets, modelled as unknown input shifts."""
    return Environment(env.name, tuple(Shift(iv.target) for iv in env.interventions))


def fit_shift_only(
    data: Sequence[EnvironmentMoments], mask=None, l1: float = 0.0, ridge: float = 0.0
) -> OUFit:
    """Joint fit in which every intervention is modelled as an unknown shift of ``b_k``.

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> prob = make_problem(5, seed=0)
    >>> fit_shift_only(prob.moments(), prob.mask).method
    'shift-only'
    """
    shifted = [
        EnvironmentMoments(as_shift_environment(d.environment), d.mean, d.cov, d.n) for d in data
    ]
    fit = fit_joint(shifted, mask, ridge=ridge, l1=l1)
    fit.method = "shift-only"
    return fit


def no_change(data: Sequence[EnvironmentMoments]) -> tuple[np.ndarray, np.ndarray]:
    """The observational ``(mean, cov)``: the prediction of the "no change" baseline."""
    obs = [d for d in data if d.environment.is_observational]
    if not obs:
        raise ValueError("no observational environment (one without interventions) in the data")
    return obs[0].mean, obs[0].cov


def pseudo_samples(mean, cov, n: int, seed: int = 0) -> np.ndarray:
    """``(n, p)`` rows whose sample mean and (``n - 1``) covariance are exactly ``mean, cov``.

    Examples
    --------
    >>> import numpy as np
    >>> X = pseudo_samples([1.0, 2.0], [[2.0, 0.5], [0.5, 1.0]], 50)
    >>> bool(np.allclose(np.cov(X, rowvar=False), [[2.0, 0.5], [0.5, 1.0]]))
    True
    """
    mean, cov = np.asarray(mean, float), np.asarray(cov, float)
    p = mean.size
    if n <= p:
        raise ValueError(f"need n > p pseudo samples, got n={n}, p={p}")
    Z = np.random.default_rng(seed).standard_normal((n, p))
    Z -= Z.mean(axis=0)
    w, V = np.linalg.eigh(np.cov(Z, rowvar=False))
    Z = Z @ (V / np.sqrt(w)) @ V.T  # exact identity sample covariance
    w, V = np.linalg.eigh(0.5 * (cov + cov.T))
    return mean + Z @ (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T


@dataclass
class LinearSEM:
    """Linear Gaussian SEM ``X = c + B X + eps``, ``eps ~ N(0, diag(omega))`` on a DAG.

    ``B[i, j] != 0`` is the edge ``j -> i`` (the drift-graph convention).

    Examples
    --------
    >>> import numpy as np
    >>> sem = LinearSEM(np.array([[0.0, 0.0], [2.0, 0.0]]), np.array([1.0, 0.0]),
    ...                 np.array([1.0, 1.0]))
    >>> mean, cov = sem.moments()
    >>> mean
    array([1., 2.])
    >>> sem.predict_do(0, 3.0, 0.0)[0]
    array([3., 6.])
    """

    B: np.ndarray
    c: np.ndarray
    omega: np.ndarray

    def moments(self, B=None, c=None, omega=None) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of the SEM (optionally with changed parameters)."""
        B = self.B if B is None else B
        c = self.c if c is None else c
        omega = self.omega if omega is None else omega
        inv = np.linalg.inv(np.eye(B.shape[0]) - B)
        return inv @ c, inv @ np.diag(omega) @ inv.T

    def predict_do(self, target: int, mean: float, var: float):
        """Stochastic do-intervention ``X_k := N(mean, var)`` (incoming edges cut)."""
        B, c, om = self.B.copy(), self.c.copy(), self.omega.copy()
        B[target, :] = 0.0
        c[target], om[target] = mean, var
        return self.moments(B, c, om)


def _pdag_to_dag(P: np.ndarray) -> np.ndarray:
    """A DAG in the equivalence class of a GIES estimate (``P[i, j]`` = edge ``i -> j``)."""
    import gies.utils

    try:
        return np.asarray(gies.utils.pdag_to_dag(P), dtype=int)
    except Exception:  # noqa: BLE001 - fall back to orienting undirected edges by index
        D = np.asarray(P, dtype=int).copy()
        und = (D == 1) & (D.T == 1)
        D[np.tril(und)] = 0
        return D


def fit_gies_sem(
    data: Sequence[EnvironmentMoments], n_max: int = 10_000, seed: int = 0
) -> LinearSEM:
    """GIES (Gaussian BIC, known targets) and a least-squares linear SEM on its DAG.

    Each node's regression uses the pooled environments in which it is not a target.
    Raw samples are :func:`pseudo_samples` with the environments' exact moments
    (``min(n_e, n_max)`` rows each). Needs the ``gies`` package (extra ``bench``).
    """
    try:
        import gies
    except ImportError as exc:
        raise ImportError(
            "the GIES baseline needs the 'gies' package: pip install 'ou-ident[bench]'"
        ) from exc
    X = [
        pseudo_samples(d.mean, d.cov, int(min(d.n or n_max, n_max)), seed + k)
        for k, d in enumerate(data)
    ]
    targets = [list(d.environment.targets) for d in data]
    est, _ = gies.fit_bic(X, targets)
    dag = _pdag_to_dag(np.asarray(est))
    p = data[0].p
    B, c, om = np.zeros((p, p)), np.zeros(p), np.ones(p)
    for i in range(p):
        parents = np.flatnonzero(dag[:, i])
        rows = np.concatenate([x for x, t in zip(X, targets, strict=True) if i not in t])
        Z = np.column_stack([np.ones(len(rows)), rows[:, parents]])
        coef, *_ = np.linalg.lstsq(Z, rows[:, i], rcond=None)
        resid = rows[:, i] - Z @ coef
        c[i], B[i, parents], om[i] = coef[0], coef[1:], float(resid.var())
    return LinearSEM(B, c, om)


def graphical_lasso_scores(data: Sequence[EnvironmentMoments], alpha: float = 0.05) -> np.ndarray:
    """``|precision|`` of sklearn's graphical lasso on the observational correlation.

    Needs scikit-learn (extra ``bench``). Symmetric: no edge direction.
    """
    try:
        from sklearn.covariance import graphical_lasso
    except ImportError as exc:
        raise ImportError(
            "the graphical-lasso baseline needs scikit-learn: pip install 'ou-ident[bench]'"
        ) from exc
    obs = [d for d in data if d.environment.is_observational]
    if not obs:
        raise ValueError("no observational environment (one without interventions) in the data")
    S = obs[0].cov
    sd = np.sqrt(np.diag(S))
    R = S / np.outer(sd, sd)
    _, prec = graphical_lasso(R, alpha=alpha, max_iter=200)
    return np.abs(prec)
