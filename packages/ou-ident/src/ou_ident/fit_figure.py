"""The figure of a fit: the drift graph and observed against predicted covariances.

Paper: "One Intervention per Component is Enough" (ICML 2026). A fitted model
(:class:`ou_ident.steady_state_fit.OUFit`) implies a stationary law for every training
environment (its mean and Lyapunov equations with the estimated strengths). The figure
written by ``ou-ident solve --out DIR`` (``fit.png``) shows

1. the estimated drift ``A`` as a signed heat map (row ``i``, column ``j``: edge ``j -> i``);
2. every observed covariance entry ``S_e[i, j]`` against the fitted ``Sigma_e[i, j]``,
   one colour per environment (on the diagonal when the model fits)
   -> :func:`plot_fit`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ou_ident.moment_equations import EnvironmentMoments

__all__ = ["plot_fit"]


def plot_fit(fit, data: Sequence[EnvironmentMoments], genes: Sequence[str]):
    """Two-panel matplotlib figure of ``fit`` on its training ``data``.

    Examples
    --------
    >>> from ou_ident.synthetic import make_problem
    >>> from ou_ident.joint import fit_joint
    >>> prob = make_problem(4, "degradation", seed=0)
    >>> data = prob.moments()
    >>> fig = plot_fit(fit_joint(data, prob.mask), data, list("abcd"))
    >>> len(fig.axes) >= 2
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    A = fit.A
    p = A.shape[0]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4.4))
    lim = float(np.max(np.abs(A))) or 1.0
    im = ax1.imshow(A, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(im, ax=ax1, shrink=0.8)
    ticks = np.arange(p)
    labels = list(genes) if p <= 30 else [""] * p
    ax1.set_xticks(ticks, labels, rotation=90, fontsize=6)
    ax1.set_yticks(ticks, labels, fontsize=6)
    ax1.set_title(f"drift A ({fit.method}; row i, column j: edge j -> i)", fontsize=8)
    iu = np.triu_indices(p)
    lo, hi = np.inf, -np.inf
    for env in data:
        try:
            params = fit.environment_params(env.name)
            Sigma = params.stationary_cov()
        except ValueError:  # not Hurwitz in this environment: nothing to compare
            continue
        ax2.scatter(env.cov[iu], Sigma[iu], s=8, alpha=0.7, label=env.name)
        lo = min(lo, float(env.cov[iu].min()), float(Sigma[iu].min()))
        hi = max(hi, float(env.cov[iu].max()), float(Sigma[iu].max()))
    if np.isfinite(lo):
        ax2.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax2.set_xlabel("observed covariance entry")
    ax2.set_ylabel("fitted stationary covariance entry")
    ax2.set_title("training environments: observed vs fitted", fontsize=8)
    if len(data) <= 12:
        ax2.legend(fontsize=6)
    fig.tight_layout()
    return fig
