"""Projection of an estimate onto Hurwitz drifts (the stationarity constraint).

Paper: "One Intervention per Component is Enough" (ICML 2026). A stationary law exists only
when every environment's drift ``A_e`` is Hurwitz (all eigenvalues in the open left half
plane). Moment estimates from finite samples need not be; :func:`project_hurwitz` moves
them back by the smallest uniform shift of the diagonal of ``A`` (which keeps the support and
the intervention parameters) that makes all ``A_e`` Hurwitz, with a margin. Used by the
weighted recursive estimator (:func:`ou_ident.recursive.fit_recursive`) and as the start of
the likelihood refinement (:func:`ou_ident.stationary_likelihood.fit_stationary_ml`).
"""

from __future__ import annotations

import numpy as np

from ou_ident.moment_equations import ParameterLayout

__all__ = ["project_hurwitz"]


def project_hurwitz(theta, layout: ParameterLayout, rhos: dict, margin: float = 0.05):
    """Shift the drift's diagonal down until every environment's drift is Hurwitz.

    Returns ``theta`` unchanged when it already is; otherwise every ``A_ii`` is lowered by
    ``max_e alpha(A_e) + margin * mean |A_ii|`` (``alpha``: largest real part of the
    eigenvalues), the smallest uniform diagonal shift that makes all drifts stable. Negative
    noise levels are clipped to a small positive value.
    """
    theta = np.array(theta, dtype=float)
    d = theta[layout.d_slice]
    if np.any(d <= 0):
        theta[layout.d_slice] = np.clip(d, 1e-3 * max(float(np.mean(np.abs(d))), 1e-12), None)
    alpha = max(
        float(
            np.max(
                np.linalg.eigvals(layout.environment_parameters(theta[None], e, rhos)[0][0]).real
            )
        )
        for e in range(len(layout.environments))
    )
    if alpha < 0:
        return theta
    diag = np.flatnonzero(layout.a_index[:, 0] == layout.a_index[:, 1])
    shift = alpha + margin * float(np.mean(np.abs(theta[diag])))
    theta[diag] -= shift
    return theta
