"""Finite-sample convergence of the joint estimator: relative error of the drift against n.

Paper: "One Intervention per Component is Enough" (ICML 2026). With exact Gaussian sample
moments of ``n`` cells per environment (Wishart draws,
:meth:`ou_ident.synthetic.SteadyStateProblem.moments`), the scale-aligned relative error of
:func:`ou_ident.joint.fit_joint` should fall like ``n^{-1/2}`` once asymptotic; the fitted
slope of ``log error`` against ``log n`` over the last three ``n`` measures how far the
regime is:

- :func:`error_vs_n`: mean error over seeds for each ``n``;
- :func:`error_vs_n_table`: both settings of ``reproduce`` (one intervention per SCC, one per
  node) as a table with slopes, and the log-log figure.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from icml26_shared.results import Table

from ou_ident.joint import fit_joint
from ou_ident.recovery_metrics import scale_aligned_rel_error
from ou_ident.synthetic import make_problem

# (label, p, interventions per component) of the two settings
SETTINGS = (("one intervention per SCC", 10, 1), ("one intervention per node", 6, 6))


def error_vs_n(p: int, per_component: int, ns: Sequence[int], seeds: Sequence[int]) -> list[float]:
    """Mean scale-aligned relative error of ``fit_joint`` over ``seeds`` at each ``n``.

    Examples
    --------
    >>> errs = error_vs_n(4, 4, [10**4, 10**6], [0])
    >>> errs[1] < errs[0]
    True
    """
    out = []
    for n in ns:
        e = []
        for s in seeds:
            prob = make_problem(p, "degradation", per_component=per_component, seed=s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit = fit_joint(prob.moments(int(n), seed=s, method="wishart"), prob.mask)
            e.append(scale_aligned_rel_error(fit.A, prob.params.A))
        out.append(float(np.mean(e)))
    return out


def slope(ns: Sequence[int], errs: Sequence[float], last: int = 3) -> float:
    """Least-squares slope of ``log err`` against ``log n`` over the ``last`` points."""
    return float(np.polyfit(np.log(ns[-last:]), np.log(errs[-last:]), 1)[0])


def error_vs_n_table(ns: Sequence[int], seeds: Sequence[int]):
    """The table (one row per setting of :data:`SETTINGS`) and the log-log figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = Table(
        "Joint estimator: relative error of A against n (exact Wishart moments)",
        ["setting", "p", *[f"n={n:.0e}" for n in ns], "slope (last 3)"],
        notes=(
            "Mean over seeds of the scale-aligned relative error; slope of log error against "
            "log n over the last three n (theory: -0.5 in the asymptotic regime)."
        ),
    )
    fig, ax = plt.subplots(figsize=(5.5, 4))
    errs: list[float] = []
    for label, p, per in SETTINGS:
        errs = error_vs_n(p, per, ns, seeds)
        k = slope(ns, errs)
        table.add_row(setting=label, p=p, **{f"n={n:.0e}": v for n, v in zip(ns, errs, strict=True)},
                      **{"slope (last 3)": k})  # fmt: skip
        ax.loglog(ns, errs, "o-", label=f"{label} (p={p}), slope {k:.2f}")
    ref = np.array(ns, float)
    ax.loglog(ref, errs[-1] * np.sqrt(ns[-1] / ref), "k--", lw=0.8, label="n^-1/2")
    ax.set_xlabel("samples per environment n")
    ax.set_ylabel("relative error of A (scale aligned)")
    ax.legend(fontsize=7)
    ax.set_title("ou-ident: error vs n")
    return table, fig
