"""Gaussian maximum likelihood under the stationarity constraint, with intervals.

Paper: "One Intervention per Component is Enough" (ICML 2026). Each environment's snapshot
is a sample of the stationary law ``N(mu_e(theta), Sigma_e(theta))`` with
``A_e mu_e + b_e = 0`` and ``A_e Sigma_e + Sigma_e A_e^T + D_e = 0`` (the paper's steady-state
equations). This module maximises the exact likelihood of all environments over ``theta``
(the layout of :class:`ou_ident.moment_equations.ParameterLayout`):

1. ``theta -> (A_e, b_e, d_e)`` is linear: :func:`environment_jacobians`.
2. stationary moments and their derivatives: ``d mu = -A^{-1} (dA mu + db)``,
   ``A dSigma + dSigma A^T = -(dA Sigma + Sigma dA^T + dD)`` (one batched Lyapunov solve,
   :func:`lyapunov_batch`) -> :func:`stationary_jacobian`.
3. log-likelihood ``sum_e -n_e / 2 [log det Sigma_e + tr Sigma_e^{-1}(S_e + (m_e - mu_e)
   (m_e - mu_e)^T)]``, its score and Fisher information
   ``I = sum_e n_e [dmu^T Sigma^{-1} dmu + 1/2 tr(Sigma^{-1} dSigma_i Sigma^{-1} dSigma_j)]``
   -> :func:`score_information`.
4. Fisher scoring in the tangent space of the scale normalisation ``tr D = p``, damped
   (Levenberg-Marquardt) so that every accepted step raises the likelihood and keeps every
   environment's drift Hurwitz (the stationarity constraint); noise variances are kept
   ``>= 0`` (a step is projected onto ``d >= 0`` and a variance on its bound whose score
   points outwards is held there, so the scoring continues on the free directions),
   started from a Hurwitz projection of the weighted moment estimate
   (:func:`ou_ident.hurwitz_projection.project_hurwitz`) -> :func:`fit_stationary_ml`.
5. standard errors from the inverse Fisher information restricted to ``tr D = p``
   (``N (N^T I N)^{-1} N^T``; the global scale is the null direction of ``I``), Wald
   intervals -> :meth:`ou_ident.steady_state_fit.OUFit.intervals`.

:func:`fit_efficient` chains the unweighted joint estimator, the weighted moment equations
(:func:`ou_ident.moment_weighting.fit_weighted`) and (4).
Knock-down factors (bilinear) are held at their moment estimates and get no interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg

from ou_ident.hurwitz_projection import project_hurwitz
from ou_ident.moment_equations import EnvironmentMoments, ParameterLayout, check_environments

# The stationarity constraint with a margin: every environment's slowest decay rate must stay
# above MIN_RATE times the mean self-degradation |A_ii|. Without it the likelihood can climb
# to a degenerate boundary (a node's drift row and noise -> 0 together) when an
# untargeted node sits in a dense component; such a fit is flagged, see BOUNDARY_RATE.
MIN_RATE = 1e-4
BOUNDARY_RATE = 1e-2

__all__ = [
    "environment_jacobians",
    "fit_efficient",
    "fit_stationary_ml",
    "log_likelihood",
    "lyapunov_batch",
    "score_information",
    "stationary_jacobian",
    "tangent_basis",
]


def lyapunov_batch(A: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Solve ``A X + X A^T = C`` for a batch ``C (B, p, p)`` (eigendecomposition of ``A``).

    Falls back to :func:`scipy.linalg.solve_continuous_lyapunov` per right-hand side when the
    eigenvectors of ``A`` are ill-conditioned.

    Examples
    --------
    >>> A = np.array([[-1.0, 0.5], [0.0, -2.0]])
    >>> X = lyapunov_batch(A, -np.eye(2)[None])[0]
    >>> bool(np.allclose(A @ X + X @ A.T, -np.eye(2)))
    True
    """
    lam, V = np.linalg.eig(A)
    if np.linalg.cond(V) > 1e8:
        return np.stack([scipy.linalg.solve_continuous_lyapunov(A, c) for c in C])
    W = np.linalg.inv(V)
    Ct = W @ C @ W.T
    Y = Ct / (lam[:, None] + lam[None, :])
    return np.real(V @ Y @ V.T)


def environment_jacobians(layout: ParameterLayout, rhos: dict) -> list[np.ndarray]:
    """Per environment the linear map ``theta -> (vec A_e, b_e, d_e)``: ``(dim, p*p + 2p)``."""
    eye = np.eye(layout.dim)
    out = []
    for e in range(len(layout.environments)):
        A, b, d = layout.environment_parameters(eye, e, rhos)
        out.append(np.concatenate([A.reshape(layout.dim, -1), b, d], axis=1))
    return out


def _split(J: np.ndarray, p: int):
    return J[:, : p * p].reshape(-1, p, p), J[:, p * p : p * p + p], J[:, p * p + p :]


def stationary_jacobian(A, b, d, dA, db, dd):
    """Stationary ``mu, Sigma`` of ``(A, b, diag d)`` and their derivatives along a batch.

    ``dA (B, p, p), db (B, p), dd (B, p)`` -> ``mu (p,), Sigma (p, p), dmu (B, p),
    dSigma (B, p, p)``.
    """
    p = A.shape[0]
    mu = -np.linalg.solve(A, b)
    Sigma = lyapunov_batch(A, -np.diag(d)[None])[0]
    Sigma = 0.5 * (Sigma + Sigma.T)
    dmu = -np.linalg.solve(A, (dA @ mu + db).T).T
    C = dA @ Sigma
    C = C + np.swapaxes(C, 1, 2)
    C[:, np.arange(p), np.arange(p)] += dd
    dSigma = lyapunov_batch(A, -C)
    return mu, Sigma, dmu, 0.5 * (dSigma + np.swapaxes(dSigma, 1, 2))


def _n(env: EnvironmentMoments) -> float:
    return 1.0 if env.n is None else float(env.n)


def _env_arrays(theta: np.ndarray, J: np.ndarray, p: int):
    v = theta @ J
    return v[: p * p].reshape(p, p), v[p * p : p * p + p], v[p * p + p :]


def _slowest_rate_ratio(theta, jacs, p) -> float:
    """``min_e |alpha(A_e)| / mean |diag A|`` (0 or negative: some drift is not Hurwitz)."""
    scale = float(np.mean(np.abs(np.diag(_env_arrays(theta, jacs[0], p)[0])))) or 1.0
    alpha = max(float(np.max(np.linalg.eigvals(_env_arrays(theta, J, p)[0]).real)) for J in jacs)
    return -alpha / scale


def _is_stable(theta, jacs, p, margin: float = MIN_RATE) -> bool:
    for J in jacs:
        if np.any(_env_arrays(theta, J, p)[2] < 0):
            return False
    return _slowest_rate_ratio(theta, jacs, p) > margin


def log_likelihood(theta, data: Sequence[EnvironmentMoments], jacs) -> float:
    """Gaussian log-likelihood (up to a constant) of all environments' sufficient statistics."""
    p = data[0].p
    total = 0.0
    for env, J in zip(data, jacs, strict=True):
        A, b, d = _env_arrays(theta, J, p)
        mu = -np.linalg.solve(A, b)
        Sigma = lyapunov_batch(A, -np.diag(d)[None])[0]
        Sigma = 0.5 * (Sigma + Sigma.T)
        n = _n(env)
        S = env.cov * ((n - 1) / n if env.n is not None else 1.0) + np.outer(
            env.mean - mu, env.mean - mu
        )
        try:
            c = scipy.linalg.cho_factor(Sigma)
        except np.linalg.LinAlgError:
            return -np.inf
        logdet = 2.0 * np.sum(np.log(np.diag(c[0])))
        total += -0.5 * n * (logdet + np.trace(scipy.linalg.cho_solve(c, S)))
    return float(total)


def score_information(theta, data: Sequence[EnvironmentMoments], jacs):
    """Score ``(dim,)`` and Fisher information ``(dim, dim)`` of the log-likelihood."""
    p = data[0].p
    dim = theta.size
    score = np.zeros(dim)
    info = np.zeros((dim, dim))
    for env, J in zip(data, jacs, strict=True):
        A, b, d = _env_arrays(theta, J, p)
        dA, db, dd = _split(J, p)
        mu, Sigma, dmu, dSigma = stationary_jacobian(A, b, d, dA, db, dd)
        n = _n(env)
        Si = np.linalg.inv(Sigma)
        Si = 0.5 * (Si + Si.T)
        resid = env.mean - mu
        S = env.cov * ((n - 1) / n if env.n is not None else 1.0) + np.outer(resid, resid)
        G = 0.5 * n * Si @ (S - Sigma) @ Si
        score += n * dmu @ (Si @ resid) + np.einsum("cij,ij->c", dSigma, G)
        Q = Si[None] @ dSigma  # (dim, p, p)
        info += n * dmu @ Si @ dmu.T + 0.5 * n * np.einsum("aij,bji->ab", Q, Q)
    return score, 0.5 * (info + info.T)


def tangent_basis(layout: ParameterLayout, fixed=None) -> np.ndarray:
    """Basis of ``{v : sum v[D] = 0}`` (the ``tr D = p`` constraint), ``(dim, dim - 1)``.

    ``fixed``: optional ``(p,)`` boolean mask of noise variances held where they are (a
    variance on its bound ``d_j = 0``); their directions are left out of the basis.

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> prob = make_problem(4, "degradation", seed=0)
    >>> layout = ParameterLayout(prob.mask, prob.environments)
    >>> N = tangent_basis(layout)
    >>> N.shape[1] == layout.dim - 1, bool(np.allclose(N[layout.d_slice].sum(axis=0), 0))
    (True, True)
    >>> fixed = np.array([True, False, False, False])
    >>> tangent_basis(layout, fixed).shape[1] == layout.dim - 2
    True
    """
    dim = layout.dim
    cols = np.arange(dim)[layout.d_slice]
    fixed = np.zeros(cols.size, bool) if fixed is None else np.asarray(fixed, bool)
    free_d = cols[~fixed]
    if free_d.size == 0:
        raise ValueError("every noise variance is fixed: no direction keeps tr D = p")
    q = int(free_d[0])
    keep = np.setdiff1d(np.arange(dim), np.concatenate([[q], cols[fixed]]))
    N = np.zeros((dim, keep.size))
    N[keep, np.arange(keep.size)] = 1.0
    N[q, np.searchsorted(keep, free_d[1:])] = -1.0
    return N


def _onto_nonnegative_noise(theta: np.ndarray, layout: ParameterLayout) -> np.ndarray:
    """Noise variances clipped at 0, then the global scale restored to ``tr D = p``."""
    out = theta.copy()
    cols = np.arange(layout.dim)[layout.d_slice]
    out[cols] = np.maximum(out[cols], 0.0)
    return out * (layout.p / float(np.sum(out[cols])))


def fit_stationary_ml(
    data: Sequence[EnvironmentMoments],
    start,
    max_iter: int = 200,
    tol: float = 1e-8,
):
    """Maximum likelihood of the stationary Gaussian laws, from a moment estimate ``start``.

    Parameters
    ----------
    data:
        Moments of every environment; ``n`` is each environment's sample size.
    start:
        An :class:`~ou_ident.steady_state_fit.OUFit` on the same environments (its layout
        and knock-down factors are kept); projected onto Hurwitz drifts first.
    max_iter, tol:
        Fisher-scoring iterations; the loop stops when the Newton decrement
        ``g^T I^+ g / 2`` (the log-likelihood still to gain) is below ``tol`` per parameter.

    Every step keeps all environments' drifts Hurwitz with the margin :data:`MIN_RATE` and
    every noise variance ``>= 0`` (``diagnostics["noise_on_bound"]``: how many ended at 0);
    ``diagnostics["at_boundary"]`` flags a fit whose slowest decay rate ended below
    :data:`BOUNDARY_RATE` times the mean self-degradation (a degenerate, weakly identified
    solution: treat its parameters and intervals with suspicion).

    Returns
    -------
    OUFit
        ``method = "ml"``, ``tr D = p``, with ``theta_cov`` (inverse Fisher information in
        the tangent of ``tr D = p``; ``None`` for population moments).
    """
    from ou_ident.steady_state_fit import OUFit

    layout, rhos = start.layout, dict(start.rhos)
    p = layout.p
    jacs = environment_jacobians(layout, rhos)
    N = tangent_basis(layout)
    dcols = np.arange(layout.dim)[layout.d_slice]
    theta = project_hurwitz(start.theta, layout, rhos)
    projected = not np.allclose(theta, start.theta)
    theta = _onto_nonnegative_noise(theta, layout)
    ll = log_likelihood(theta, data, jacs)
    iterations = 0
    damping = 1e-6  # Levenberg-Marquardt: relative to the mean diagonal of the information
    decrement = np.inf
    fixed = np.zeros(p, bool)
    while iterations < max_iter:
        iterations += 1
        score, info = score_information(theta, data, jacs)
        # active bounds: a variance at 0 whose score (relative to the free variances') points
        # below 0 is held there; every other direction is a free Newton direction
        at_zero = theta[dcols] <= 0.0
        rel = score[dcols] - np.mean(score[dcols][~at_zero]) if np.any(~at_zero) else score[dcols]
        fixed = at_zero & (rel <= 0.0)
        Nf = tangent_basis(layout, fixed)
        H = Nf.T @ info @ Nf
        g = Nf.T @ score
        scale = float(np.trace(H)) / len(H)
        # Newton decrement g' H^+ g / 2: the log-likelihood still to gain on the quadratic model
        decrement = 0.5 * float(g @ np.linalg.lstsq(H, g, rcond=1e-14)[0])
        if decrement <= tol * max(1.0, len(H)):
            break
        improved = False
        while damping < 1e12:
            try:
                step = Nf @ np.linalg.solve(H + damping * scale * np.eye(len(H)), g)
            except np.linalg.LinAlgError:
                damping *= 10.0
                continue
            trial = _onto_nonnegative_noise(theta + step, layout)
            if _is_stable(trial, jacs, p):
                ll_new = log_likelihood(trial, data, jacs)
                if ll_new > ll:
                    improved = True
                    break
            damping *= 10.0
        if not improved:
            break
        theta, ll = trial, ll_new
        damping = max(damping / 30.0, 1e-12)
    theta_cov = None
    if all(d.n is not None for d in data):
        _, info = score_information(theta, data, jacs)
        H = N.T @ info @ N
        theta_cov = N @ np.linalg.pinv(H, rcond=1e-15, hermitian=True) @ N.T
    rate = _slowest_rate_ratio(theta, jacs, p)
    diag = {
        "slowest_rate_ratio": rate,
        "at_boundary": bool(rate < BOUNDARY_RATE),
        "log_likelihood": ll,
        "iterations": iterations,
        "newton_decrement": float(decrement),
        "noise_on_bound": int(np.sum(theta[dcols] <= 0.0)),
        "projected_to_hurwitz": bool(projected),
        "start_method": start.method,
    }
    fit = OUFit.from_theta(layout, theta, rhos, "ml", diag)
    fit.theta_cov = theta_cov
    return fit


def fit_efficient(
    data: Sequence[EnvironmentMoments],
    mask=None,
    ridge: float = 0.0,
    max_iter: int = 200,
):
    """The efficient estimator: weighted moment equations, then stationary Gaussian ML.

    1. the unweighted joint estimator (:func:`ou_ident.joint.fit_joint`);
    2. the moment equations re-weighted by each environment's sample size and the sampling
       covariance of its moments (:func:`ou_ident.moment_weighting.fit_weighted`);
    3. Hurwitz projection and Fisher scoring of the exact likelihood
       (:func:`fit_stationary_ml`) from both moment estimates, keeping the higher
       likelihood among the fits that did not end on the degenerate boundary (both
       when both did), with standard errors.

    Parameters
    ----------
    data:
        Moments of every environment (sample moments with ``n`` for intervals).
    mask:
        ``(p, p)`` drift support with the diagonal; ``None`` = all edges allowed.
    ridge:
        Ridge penalty of the moment steps (1-2) only.
    max_iter:
        Fisher-scoring iterations.

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> from ou_ident.recovery_metrics import scale_aligned_rel_error
    >>> prob = make_problem(6, "degradation", seed=1)
    >>> fit = fit_efficient(prob.moments(n=20_000, seed=0), prob.mask)
    >>> fit.method, fit.params.is_hurwitz
    ('efficient', True)
    >>> iv = fit.intervals()            # Wald intervals of every parameter
    >>> bool(np.all(iv["A"][0] <= fit.A) and np.all(fit.A <= iv["A"][1]))
    True
    """
    from ou_ident.joint import fit_joint
    from ou_ident.moment_weighting import fit_weighted

    p = check_environments(data)
    mask = np.ones((p, p), dtype=bool) if mask is None else np.asarray(mask, bool)
    first = fit_joint(data, mask, ridge=ridge)
    weighted = fit_weighted(data, mask, first=first, ridge=ridge)
    # the likelihood is not concave: climb from both moment estimates, keep the higher one
    fits = [fit_stationary_ml(data, start, max_iter=max_iter) for start in (weighted, first)]
    interior = [f for f in fits if not f.diagnostics["at_boundary"]] or fits
    fit = max(interior, key=lambda f: f.diagnostics["log_likelihood"])
    fit.method = "efficient"
    fit.diagnostics["weighted_objective"] = weighted.diagnostics["objective"]
    return fit
