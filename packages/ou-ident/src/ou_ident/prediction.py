"""Stationary distribution under an unseen intervention, and Gaussian distances.

Paper: "One Intervention per Component is Enough" (ICML 2026), prediction of
unseen interventions from identified parameters.

1. :func:`predict_intervention` - apply the intervention to ``(A, b, D)`` and
   solve the mean and Lyapunov equations of the intervened system.
2. :func:`gaussian_w2` - 2-Wasserstein distance between Gaussians,
   ``||m1 - m2||^2 + tr(S1 + S2 - 2 (S2^1/2 S1 S2^1/2)^1/2)`` (Dowson and Landau, 1982).
3. :func:`gaussian_kl` - ``KL(N(m1, S1) || N(m2, S2))``.
4. :func:`anchored_prediction` - the model's predicted change applied to the observed
   observational law: the Gaussian optimal-transport map from the model's observational
   law to its intervened law (``T = S1^-1/2 (S1^1/2 S2 S1^1/2)^1/2 S1^-1/2``, the map that
   attains the W2 of item 2), pushed onto the observed cells' mean and covariance. A model
   that misfits the observational law still contributes its predicted change; ``fraction``
   moves along the W2 geodesic from "no change" to that prediction (McCann interpolation:
   a shrinkage of the predicted change, chosen by cross-validation in
   :func:`ou_ident.sachs.loeo_fraction`).
5. :func:`calibrate_strength` - the unknown strength of an unseen intervention,
   fitted to the observed mean and variance of its target alone (the other
   variables are then predicted, the Perturb-seq protocol).

Strengths of the unseen intervention are in the units of the parameters, i.e.
of the convention ``tr D = p`` used by the estimators.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.linalg

from ou_ident.interventions import Environment, Intervention, make_intervention
from ou_ident.ou_process import OUParams

__all__ = [
    "anchored_prediction",
    "calibrate_strength",
    "gaussian_kl",
    "gaussian_w2",
    "predict_intervention",
]


def predict_intervention(
    params: OUParams, interventions: Environment | Intervention | Sequence[Intervention]
) -> tuple[np.ndarray, np.ndarray]:
    """Stationary ``(mean (p,), cov (p, p))`` of ``params`` under the intervention(s).

    Examples
    --------
    >>> from ou_ident.interventions import Degradation
    >>> theta = OUParams([[-1.0, 0.0], [1.0, -1.0]], [1.0, 0.0], [1.0, 1.0])
    >>> mean, cov = predict_intervention(theta, Degradation(0, 1.0))
    >>> mean
    array([0.5, 0.5])
    """
    if isinstance(interventions, Intervention):
        env = Environment("predicted", (interventions,))
    elif isinstance(interventions, Environment):
        env = interventions
    else:
        env = Environment("predicted", tuple(interventions))
    theta_e = env.apply(params)
    theta_e.check_hurwitz("the intervened stationary law")
    return theta_e.stationary_mean(), theta_e.stationary_cov()


def _psd_sqrt(S: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    return (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T


def anchored_prediction(
    params: OUParams,
    interventions: Environment | Intervention | Sequence[Intervention],
    observed_mean,
    observed_cov,
    fraction: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The model's predicted change pushed onto the observed observational law.

    With the model's observational law ``N(m1, S1)`` and intervened law ``N(m2, S2)``
    (:func:`predict_intervention`), the optimal-transport map
    ``x -> m2 + T (x - m1)``, ``T = S1^-1/2 (S1^1/2 S2 S1^1/2)^1/2 S1^-1/2``, is applied
    to the observed cells' law: ``(m2 + T (m_obs - m1), T S_obs T)``. It equals the
    model's prediction when the model fits the observed law exactly, and "no change"
    when the intervention changes nothing.

    Parameters
    ----------
    params:
        Fitted parameters (any scale; the stationary laws are scale-free).
    interventions:
        The unseen intervention(s), as for :func:`predict_intervention`.
    observed_mean, observed_cov:
        Mean and covariance of the observed observational cells.
    fraction:
        How much of the predicted change to apply, in ``[0, 1]``: the point at ``fraction``
        of the W2 geodesic (McCann interpolation) from the observed law (``0``, "no
        change") to the anchored prediction (``1``): mean
        ``m_obs + fraction (m_pred - m_obs)``, map ``(1 - fraction) I + fraction T``. Its
        W2 to the observed law is ``fraction`` times the full change's.

    Examples
    --------
    >>> from ou_ident.interventions import Degradation
    >>> theta = OUParams([[-1.0, 0.0], [1.0, -1.0]], [1.0, 0.0], [1.0, 1.0])
    >>> m, S = anchored_prediction(theta, Degradation(0, 1.0), theta.stationary_mean(),
    ...                            theta.stationary_cov())
    >>> bool(np.allclose(m, predict_intervention(theta, Degradation(0, 1.0))[0]))
    True
    >>> m0, S0 = theta.stationary_mean(), theta.stationary_cov()
    >>> half = anchored_prediction(theta, Degradation(0, 1.0), m0, S0, fraction=0.5)
    >>> round(gaussian_w2(*half, m0, S0) / gaussian_w2(m, S, m0, S0), 6)
    0.5
    """
    if not 0.0 <= float(fraction) <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    m1, S1 = params.stationary_mean(), params.stationary_cov()
    m2, S2 = predict_intervention(params, interventions)
    r1 = _psd_sqrt(S1)
    w, V = np.linalg.eigh(0.5 * (S1 + S1.T))
    r1_inv = (V / np.sqrt(np.clip(w, 1e-300, None))) @ V.T
    T = r1_inv @ _psd_sqrt(r1 @ S2 @ r1) @ r1_inv
    T = 0.5 * (T + T.T)
    m_obs = np.asarray(observed_mean, float)
    mean = m_obs + fraction * (m2 + T @ (m_obs - m1) - m_obs)
    T = (1.0 - fraction) * np.eye(len(T)) + fraction * T
    cov = T @ np.asarray(observed_cov, float) @ T
    return mean, 0.5 * (cov + cov.T)


def gaussian_w2(m1, S1, m2, S2) -> float:
    """2-Wasserstein distance between ``N(m1, S1)`` and ``N(m2, S2)``.

    Examples
    --------
    >>> import numpy as np
    >>> round(gaussian_w2(np.zeros(2), np.eye(2), np.ones(2), 4 * np.eye(2)), 6)
    2.0
    """
    m1, m2 = np.asarray(m1, float), np.asarray(m2, float)
    S1, S2 = np.asarray(S1, float), np.asarray(S2, float)
    r2 = _psd_sqrt(S2)
    cross = scipy.linalg.sqrtm(r2 @ S1 @ r2)
    cross = np.real(cross)
    val = float(np.sum((m1 - m2) ** 2) + np.trace(S1) + np.trace(S2) - 2 * np.trace(cross))
    return float(np.sqrt(max(val, 0.0)))


def gaussian_kl(m1, S1, m2, S2) -> float:
    """``KL(N(m1, S1) || N(m2, S2))`` in nats (``S2`` must be positive definite).

    Examples
    --------
    >>> import numpy as np
    >>> gaussian_kl(np.zeros(1), np.eye(1), np.zeros(1), np.eye(1))
    0.0
    """
    m1, m2 = np.asarray(m1, float), np.asarray(m2, float)
    S1, S2 = np.asarray(S1, float), np.asarray(S2, float)
    p = m1.size
    c2 = scipy.linalg.cho_factor(S2)
    diff = m2 - m1
    tr = np.trace(scipy.linalg.cho_solve(c2, S1))
    maha = float(diff @ scipy.linalg.cho_solve(c2, diff))
    logdet2 = 2 * np.sum(np.log(np.diag(c2[0])))
    sign, logdet1 = np.linalg.slogdet(S1)
    if sign <= 0:
        raise ValueError("S1 must be positive definite for the KL divergence")
    return float(max(0.5 * (tr + maha - p + logdet2 - logdet1), 0.0))


def _strength_bounds(family: str, params: OUParams, target: int) -> tuple[float, float]:
    akk = abs(float(params.A[target, target]))
    scale = float(np.max(np.abs(params.stationary_mean()))) + 1.0
    return {
        "shift": (-50.0 * scale * max(akk, 1.0), 50.0 * scale * max(akk, 1.0)),
        "noise": (1e-3, 100.0),
        "degradation": (1e-6 * max(akk, 1e-3), 50.0 * max(akk, 1e-3)),
        "knockdown": (0.0, 1.0 - 1e-9),
        "inhibition": (0.0, 1.0 - 1e-9),
        "hard": (-50.0 * scale, 50.0 * scale),
    }[family]


def calibrate_strength(
    params: OUParams, family: str, target: int, observed_mean: float, observed_var: float
) -> Intervention:
    """The intervention of ``family`` on ``target`` whose predicted target moments fit best.

    Minimises ``(mu_k(s) - observed_mean)^2 + (Sigma_kk(s) - observed_var)^2`` over the
    family's domain (grid, then bounded Brent). Only the target's own moments are used,
    so the prediction of every other variable is out of sample. The ``inhibition`` family
    is not calibrated (its remaining activity hardly moves the target's own moments): it
    returns the full block ``rho = 0``.

    Examples
    --------
    >>> from ou_ident.interventions import Degradation
    >>> theta = OUParams([[-1.0, 0.0], [1.0, -1.0]], [1.0, 0.0], [1.0, 1.0])
    >>> m, S = predict_intervention(theta, Degradation(0, 0.8))
    >>> round(calibrate_strength(theta, "degradation", 0, m[0], S[0, 0]).strength, 6)
    0.8
    """
    import scipy.optimize

    if not 0 <= target < params.p:
        raise ValueError(f"target {target} out of range for p={params.p} variables")
    make_intervention(family, target)  # validates the family name
    if family == "inhibition":
        # the target's own moments barely depend on its outgoing edges: a full block
        return make_intervention(family, target, 0.0)
    lo, hi = _strength_bounds(family, params, target)

    def loss(s: float) -> float:
        try:
            m, S = predict_intervention(params, make_intervention(family, target, float(s)))
        except ValueError:  # outside the domain or not Hurwitz
            return float("inf")
        return float((m[target] - observed_mean) ** 2 + (S[target, target] - observed_var) ** 2)

    grid = np.linspace(lo, hi, 201)
    if family in {"degradation", "noise"}:
        grid = np.geomspace(lo, hi, 201)
    vals = np.array([loss(s) for s in grid])
    i = int(np.argmin(vals))
    a, b = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    best = float(grid[i])
    if b > a:
        res = scipy.optimize.minimize_scalar(
            loss, bounds=(a, b), method="bounded", options={"xatol": 1e-12}
        )
        if res.fun <= vals[i]:
            best = float(res.x)
    return make_intervention(family, target, best)
