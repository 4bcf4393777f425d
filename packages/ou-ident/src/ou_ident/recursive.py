"""The recursive per-component estimator.

Paper: "One Intervention per Component is Enough" (ICML 2026), the recursive
identification algorithm over the SCCs of the drift graph:

1. SCCs and a topological order of the condensation (networkx) ->
   :class:`ou_ident.drift_graph.DriftGraph`; a single root and a connected
   condensation are required (:meth:`DriftGraph.check_single_root`).
2. Root component ``R``: its marginal is a closed OU process. The ``R`` rows
   of the mean equation and the ``(R, R)`` block of the Lyapunov equation over
   all environments form a *homogeneous* linear system; it is solved with the
   scale normalisation ``sum_{i in R} D_ii = |R|``, which fixes the global scale.
3. Next component ``S`` with solved predecessors ``P`` (a prefix of the order,
   so ``(X_P, X_S)`` is again closed because ``A_PS = 0``): the ``S`` rows of
   the mean equation and the ``(S, P)`` and ``(S, S)`` Lyapunov blocks are
   linear in ``(A_SS, A_SP, b_S, D_S, strengths on S)`` given the solved
   ``A_PP^e``; they are *inhomogeneous* (the scale comes from ``P``) and are
   solved by ordinary least squares.
4. Finally the whole system is rescaled to ``tr D = p``.

Not in the paper (issue #36): by default the equations of each component are weighted
by their sampling covariance (a first unweighted pass gives the drifts at which the
weights are evaluated, :mod:`ou_ident.moment_weighting`), and a non-Hurwitz result is
projected onto Hurwitz drifts by a uniform diagonal shift
(:func:`ou_ident.hurwitz_projection.project_hurwitz`).

Knock-down factors (a bilinear family) of interventions on ``S`` are found by
variable projection inside steps 2/3: the linear system is re-solved for each
trial factor (:func:`ou_ident.moment_equations.profile_knockdowns`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ou_ident.drift_graph import DriftGraph
from ou_ident.moment_equations import (
    EnvironmentMoments,
    ParameterLayout,
    check_environments,
    design_matrix,
    initial_knockdowns,
    profile_knockdowns,
    row_metadata,
    solve_normalized,
)
from ou_ident.moment_weighting import MomentWeights
from ou_ident.steady_state_fit import OUFit

__all__ = ["fit_recursive"]


def fit_recursive(
    data: Sequence[EnvironmentMoments],
    mask,
    lambda_mean: float = 1.0,
    weighting: str = "efficient",
    project: bool = True,
) -> OUFit:
    """Per-SCC recursive estimator (root: homogeneous + normalisation; others: OLS).

    Parameters
    ----------
    data:
        Moments of every environment (observational and interventional).
    mask:
        ``(p, p)`` support of the drift (diagonal included); defines the drift graph.
    lambda_mean:
        Weight of the mean equations relative to the Lyapunov equations (on top of the
        efficient weights with ``weighting="efficient"``).
    weighting:
        ``"efficient"`` (default): a first unweighted pass, then every component's rows
        are whitened by their sampling covariance at the first-pass drift
        (:class:`ou_ident.moment_weighting.MomentWeights`); ``"none"``: the unweighted
        equations (the paper's algorithm as written).
    project:
        Shift the drift's diagonal onto Hurwitz drifts when the estimate is not stable
        (:func:`ou_ident.hurwitz_projection.project_hurwitz`; recorded in
        ``diagnostics["projected_to_hurwitz"]``).

    Returns
    -------
    OUFit
        Parameters in the convention ``tr D = p``; ``diagnostics["components"]``
        lists each SCC with the conditioning of its linear system.

    Examples
    --------
    >>> import numpy as np
    >>> from ou_ident.ou_process import OUParams
    >>> from ou_ident.interventions import Environment, Degradation
    >>> theta = OUParams([[-1.0, 0.5, 0.0], [0.3, -1.2, 0.0], [0.0, 0.7, -0.9]],
    ...                  [1.0, -0.5, 0.2], [1.0, 0.8, 1.2]).normalized()
    >>> envs = [Environment("obs"), Environment("deg0", (Degradation(0, 0.7),)),
    ...         Environment("deg2", (Degradation(2, 0.5),))]
    >>> data = [EnvironmentMoments.population(e, theta) for e in envs]
    >>> fit = fit_recursive(data, theta.A != 0)
    >>> bool(np.allclose(fit.A, theta.A, atol=1e-8))
    True
    >>> round(fit.strengths["deg0"][0], 6)
    0.7
    """
    if weighting not in ("efficient", "none"):
        raise ValueError(f"weighting must be 'efficient' or 'none', got {weighting!r}")
    p = check_environments(data)
    weights = None
    if weighting == "efficient":
        first = fit_recursive(data, mask, lambda_mean, weighting="none", project=False)
        weights = MomentWeights.for_fit(first.layout, data, first.theta, first.rhos, lambda_mean)
    layout = ParameterLayout(mask, [d.environment for d in data])
    if layout.p != p:
        raise ValueError(f"support mask is {layout.p}x{layout.p}, data have p={p}")
    graph = DriftGraph(layout.mask)
    graph.check_single_root()
    owner = layout.owner()
    row_i, row_j = row_metadata(p, len(data))
    theta = np.zeros(layout.dim)
    rhos = initial_knockdowns(layout)
    solved: list[int] = []
    report = []
    for k, comp in enumerate(graph.components):
        S = np.asarray(comp)
        scope = np.asarray(solved + list(comp))
        cols = np.flatnonzero(np.isin(owner, S))
        is_mean = row_j < 0
        rows = (is_mean & np.isin(row_i, S)) | (
            ~is_mean
            & (np.isin(row_i, S) | np.isin(row_j, S))
            & np.isin(row_i, scope)
            & np.isin(row_j, scope)
        )
        rows = np.flatnonzero(rows)
        kd_keys = [(e, j) for e, j, iv in layout.knockdowns() if iv.target in comp]
        norm_pos = np.flatnonzero(np.isin(cols, np.arange(layout.dim)[layout.d_slice]))
        n_comp = len(comp)

        def solve(rh, cols=cols, rows=rows, norm_pos=norm_pos, root=(k == 0), n=n_comp):
            if weights is None:
                M, offset = design_matrix(
                    layout, data, rh, columns=cols, base=theta, lambda_mean=lambda_mean
                )
                M, offset = M[rows], offset[rows]
            else:
                M, offset = design_matrix(layout, data, rh, columns=cols, base=theta)
                M, offset = weights.apply(M[rows], offset[rows], p, rows)
            if root:  # root: homogeneous, fix the scale on this component
                z = solve_normalized(M, norm_pos, float(n))
            else:  # downstream: inhomogeneous ordinary least squares
                z = np.linalg.lstsq(M, -offset, rcond=None)[0]
            res = M @ z + offset
            return z, M, float(res @ res)

        if kd_keys:  # knock-down factors: variable projection (bilinear family)
            rhos = profile_knockdowns(kd_keys, rhos, lambda rh: solve(rh)[2])
        z, M, _ = solve(rhos)
        theta[cols] = z
        sv = np.linalg.svd(M, compute_uv=False)
        nullity_expected = 1 if k == 0 else 0
        s_max = sv[0] if sv.size else 0.0
        s_small = sv[len(cols) - 1 - nullity_expected] if len(cols) > nullity_expected else 0.0
        cond = float(s_small / s_max) if s_max > 0 and len(sv) >= len(cols) else 0.0
        if cond < 1e-10:
            warnings.warn(
                f"component {list(comp)}: the per-component linear system is rank deficient "
                f"(conditioning {cond:.2g}); its parameters are not identified - add an "
                "intervention that changes the drift of a node in this component",
                UserWarning,
                stacklevel=2,
            )
        report.append({"component": list(comp), "unknowns": int(len(cols)), "conditioning": cond})
        solved.extend(comp)
    projected = False
    if project:
        from ou_ident.hurwitz_projection import project_hurwitz

        new = project_hurwitz(theta, layout, rhos)
        projected = not np.allclose(new, theta)
        theta = new
    diag = {
        "components": report,
        "n_components": len(report),
        "weighting": weighting,
        "projected_to_hurwitz": projected,
    }
    return OUFit.from_theta(layout, theta, rhos, "recursive", diag)
