"""Moment equations weighted by their sampling covariance (the efficient GMM weighting).

Paper: "One Intervention per Component is Enough" (ICML 2026), the steady-state mean and
Lyapunov equations (:mod:`ou_ident.moment_equations`). The paper's estimators solve them
unweighted; with sample moments the residuals of different environments and of different
entries have very different variances, so this module weights them by the inverse of
their sampling covariance (two-step generalised method of moments, Hansen 1982):

1. residual covariance of one environment at ``(A_e, Sigma_e, n_e)``
   -> :func:`residual_covariance`. For Gaussian snapshots ``m ~ N(mu, Sigma / n)`` and
   ``Cov(S_ab, S_cd) = (Sigma_ac Sigma_bd + Sigma_ad Sigma_bc) / n``, so with
   ``U = A Sigma A^T`` and ``T = A Sigma``:
   ``Cov(r) = U / n``, ``Cov(r, R) = 0`` and
   ``Cov(R_ij, R_kl) = [f(i,j,k,l) + f(i,j,l,k) + f(j,i,k,l) + f(j,i,l,k)] / n`` with
   ``f(i,j,k,l) = U_ik Sigma_jl + T_il T_kj``.
2. whitening of the rows of :func:`ou_ident.moment_equations.design_matrix`, per
   environment, by the Cholesky factor of (1) restricted to the selected rows
   -> :class:`MomentWeights`. Environments with more samples weigh more (``1 / n_e``).
3. the weighted joint estimator (first step unweighted, then weights at the first-step
   drift, then the constrained least squares again) -> :func:`fit_weighted`.

The same weights are used by :func:`ou_ident.recursive.fit_recursive` on the rows of
each strongly connected component.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ou_ident.moment_equations import (
    EnvironmentMoments,
    ParameterLayout,
    _row_index,
    check_environments,
    design_matrix,
    initial_knockdowns,
    profile_knockdowns,
    residuals,
    solve_normalized,
)

__all__ = ["MomentWeights", "fit_weighted", "residual_covariance"]


def residual_covariance(A: np.ndarray, cov: np.ndarray, n: float = 1.0) -> np.ndarray:
    """Sampling covariance of ``[r, R[iu, ju]]`` of one environment (Gaussian snapshots).

    ``r = A m + b`` (``p`` rows) and the upper triangle of ``R = A S + S A^T + D``
    (``p (p + 1) / 2`` rows, ``numpy.triu_indices`` order), for ``n`` samples.

    Examples
    --------
    >>> import numpy as np
    >>> C = residual_covariance(np.array([[-2.0]]), np.array([[0.5]]), n=10)
    >>> np.diag(C)  # Var(r) = A^2 Sigma / n = 0.2, Var(R) = 4 A^2 * 2 Sigma^2 / n = 0.8
    array([0.2, 0.8])
    """
    A = np.asarray(A, float)
    S = np.asarray(cov, float)
    p = A.shape[0]
    T = A @ S
    U = T @ A.T
    iu, ju = np.triu_indices(p)
    i, j = iu[:, None], ju[:, None]
    k, m = iu[None, :], ju[None, :]

    def f(a, b, c, d):
        return U[a, c] * S[b, d] + T[a, d] * T[c, b]

    CR = f(i, j, k, m) + f(i, j, m, k) + f(j, i, k, m) + f(j, i, m, k)
    q = p + iu.size
    C = np.zeros((q, q))
    C[:p, :p] = U
    C[p:, p:] = CR
    C = 0.5 * (C + C.T) / float(n)
    return C.reshape(q, q) if q > 1 else C.reshape(1, 1)


@dataclass(eq=False)
class MomentWeights:
    """Row weights of the moment equations: one residual covariance per environment.

    Parameters
    ----------
    covariances:
        ``(q, q)`` residual covariance of each environment (:func:`residual_covariance`),
        ``q = p + p (p + 1) / 2``.
    lambda_mean:
        Extra weight of the mean rows (1 = the efficient weighting).

    Examples
    --------
    >>> import numpy as np
    >>> w = MomentWeights.at(np.array([[[-1.0]]]), [np.eye(1)], [100])
    >>> w.covariances[0].shape
    (2, 2)
    """

    covariances: list[np.ndarray]
    lambda_mean: float = 1.0

    @classmethod
    def at(cls, drifts, covs, ns, lambda_mean: float = 1.0) -> MomentWeights:
        """Weights at environment drifts ``A_e``, covariances ``Sigma_e`` and sizes ``n_e``."""
        out = []
        for A, S, n in zip(drifts, covs, ns, strict=True):
            out.append(residual_covariance(A, S, 1.0 if n is None else float(n)))
        return cls(out, lambda_mean)

    @classmethod
    def for_fit(cls, layout: ParameterLayout, data, theta, rhos, lambda_mean: float = 1.0):
        """Weights at a (first-step) fit: its environment drifts, the sample covariances."""
        drifts = [
            layout.environment_parameters(theta[None, :], e, rhos)[0][0] for e in range(len(data))
        ]
        return cls.at(drifts, [d.cov for d in data], [d.n for d in data], lambda_mean)

    def apply(
        self, M: np.ndarray, offset: np.ndarray, p: int, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Whiten rows of ``design_matrix(..., lambda_mean=1)`` (all rows or the given subset).

        Undoes the design matrix's own row scaling (``sqrt 2`` off the diagonal,
        ``1 / sqrt(E)``), then multiplies each environment's block by ``L_e^{-1}`` where
        ``L_e L_e^T`` is the residual covariance of the selected rows.
        """
        E = len(self.covariances)
        _, _, wrow = _row_index(p)
        q = wrow.size
        rows = np.arange(E * q) if rows is None else np.asarray(rows)
        scale = np.tile(wrow, E)[rows] / np.sqrt(E)
        M = M / scale[:, None]
        offset = offset / scale
        outM, outo = np.empty_like(M), np.empty_like(offset)
        env_of = rows // q
        for e in range(E):
            sel = np.flatnonzero(env_of == e)
            if sel.size == 0:
                continue
            local = rows[sel] - e * q
            C = self.covariances[e][np.ix_(local, local)]
            jitter = 1e-12 * max(float(np.trace(C)) / sel.size, 1e-300)
            L = np.linalg.cholesky(C + jitter * np.eye(sel.size))
            Me = scipy.linalg.solve_triangular(L, M[sel], lower=True)
            oe = scipy.linalg.solve_triangular(L, offset[sel], lower=True)
            mean_rows = local < p
            if self.lambda_mean != 1.0:  # mean and covariance rows are uncorrelated
                Me[mean_rows] *= np.sqrt(self.lambda_mean)
                oe[mean_rows] *= np.sqrt(self.lambda_mean)
            outM[sel], outo[sel] = Me, oe
        return outM, outo


def fit_weighted(
    data: Sequence[EnvironmentMoments],
    mask=None,
    first=None,
    ridge: float = 0.0,
    lambda_mean: float = 1.0,
    iterations: int = 2,
    weights: MomentWeights | None = None,
):
    """Two-step (iterated) GMM: the joint estimator with efficient row weights.

    Parameters
    ----------
    data:
        Moments of every environment (``n`` sets the environment's weight).
    mask:
        ``(p, p)`` drift support with the diagonal; ``None`` = all edges allowed.
    first:
        First-step :class:`~ou_ident.steady_state_fit.OUFit` (default: the unweighted
        equations solved here, i.e. :func:`~ou_ident.joint.fit_joint` without L1).
    ridge:
        Ridge penalty on the off-diagonal drift (in whitened units).
    lambda_mean:
        Extra weight of the mean equations (1 = efficient).
    iterations:
        Re-weighting rounds (each at the previous round's drift).
    weights:
        Fixed weights (for example :meth:`MomentWeights.at` the planted parameters, the
        oracle of the efficiency checks): one weighted solve, no first step, no
        re-weighting.

    Returns
    -------
    OUFit
        ``method = "weighted"``, ``tr D = p``.

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> prob = make_problem(5, "degradation", seed=0)
    >>> fit = fit_weighted(prob.moments())           # population moments: exact
    >>> bool(np.allclose(fit.A, prob.params.A, atol=1e-8))
    True
    """
    from ou_ident.steady_state_fit import OUFit

    p = check_environments(data)
    mask = np.ones((p, p), dtype=bool) if mask is None else np.asarray(mask, bool)
    layout = ParameterLayout(mask, [d.environment for d in data])
    norm_cols = np.arange(layout.dim)[layout.d_slice]
    pen_cols = layout.offdiag_a
    keys = [(e, j) for e, j, _ in layout.knockdowns()]

    def solve(rh, weights):
        M, off = design_matrix(layout, data, rh, lambda_mean=1.0 if weights else lambda_mean)
        if weights is not None:
            M, _ = weights.apply(M, off, p)
        th = solve_normalized(M, norm_cols, float(p), ridge, pen_cols)
        r = M @ th
        return th, float(r @ r) + ridge * float(th[pen_cols] @ th[pen_cols])

    if weights is not None:  # fixed weights: one weighted solve
        rhos = initial_knockdowns(layout)
        if keys:
            rhos = profile_knockdowns(keys, rhos, lambda rh: solve(rh, weights)[1], n_grid=50)
        theta, objective = solve(rhos, weights)
        res = residuals(layout, data, theta[None, :], rhos)[0]
        diag = {"objective": objective, "unweighted_objective": float(res @ res), "ridge": ridge}
        return OUFit.from_theta(layout, theta, rhos, "weighted", diag)
    if first is not None:
        rhos, theta = dict(first.rhos), first.theta
    else:  # first step: the unweighted equations (the joint estimator without L1)
        rhos = initial_knockdowns(layout)
        if keys:
            rhos = profile_knockdowns(keys, rhos, lambda rh: solve(rh, None)[1], n_grid=50)
        theta, _ = solve(rhos, None)
    for _ in range(max(int(iterations), 1)):
        weights = MomentWeights.for_fit(layout, data, theta, rhos, lambda_mean)

        if keys:
            rhos = profile_knockdowns(
                keys, rhos, lambda rh, w=weights: solve(rh, w)[1], n_grid=5, width=0.02
            )
        theta, objective = solve(rhos, weights)
    res = residuals(layout, data, theta[None, :], rhos)[0]
    diag = {"objective": objective, "unweighted_objective": float(res @ res), "ridge": ridge}
    return OUFit.from_theta(layout, theta, rhos, "weighted", diag)
