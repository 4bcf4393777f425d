"""Figures of ``lorfs reproduce`` (matplotlib, Agg backend): one per comparison table.

Paper: Kaminsky, Freedman, Radinsky, "Overcoming PINNs Failure Modes in High Dimension with
Low-Rank Fourier Sum", ICML 2026.

- :func:`headline_figure`: relative L2 error per problem and method (log scale), from the
  runs of :func:`lorfs.comparison.headline_table`;
- :func:`high_d_figure`: error and seconds vs ``d`` (:func:`lorfs.comparison.high_d_table`);
- :func:`variance_figure`: Monte-Carlo relative std vs ``d`` against theory and the closed
  form's round-off (:func:`lorfs.comparison.variance_table`).
"""

from __future__ import annotations

from collections.abc import Sequence


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def headline_figure(runs: Sequence, methods: Sequence[str]):
    """Grouped log-scale bars: one group per problem, one bar per method that ran."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4))
    problems = list(dict.fromkeys(r.problem for r in runs))
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        xs, ys = [], []
        for k, p in enumerate(problems):
            for r in runs:
                if r.problem == p and r.method == m:
                    xs.append(k + (i - len(methods) / 2) * width)
                    ys.append(max(r.error, 1e-17))
        if xs:
            ax.bar(xs, ys, width=width, label=m, align="edge")
    ax.set_yscale("log")
    ax.set_xticks(range(len(problems)))
    ax.set_xticklabels(problems, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel("relative L2 error")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title("LoRFS vs baselines")
    return fig


def high_d_figure(points: Sequence[dict]):
    """Error (left) and seconds (right) vs ``d``, log-log, one line per method and problem."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for method, problem in dict.fromkeys((p["method"], p["problem"]) for p in points):
        sel = [p for p in points if p["method"] == method and p["problem"] == problem]
        ds = [p["d"] for p in sel]
        axes[0].plot(ds, [max(p["error"], 1e-17) for p in sel], "o-", label=f"{method} {problem}")
        axes[1].plot(ds, [p["seconds"] for p in sel], "o-", label=f"{method} {problem}")
    for a, lab in zip(axes, ("relative L2 error", "seconds"), strict=True):
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("d")
        a.set_ylabel(lab)
    axes[0].legend(fontsize=6)
    return fig


def variance_figure(rows: Sequence[dict]):
    """Measured and theoretical Monte-Carlo relative std vs ``d``; the closed form has none."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ds = [v["d"] for v in rows]
    ax.plot(ds, [v["mc_rel_std"] for v in rows], "o-", label="Monte Carlo (measured)")
    ax.plot(ds, [v["theory_rel_std"] for v in rows], "--", label="Monte Carlo (theory)")
    ax.axhline(1e-16, color="k", lw=0.8, label="closed form (round-off)")
    ax.set_yscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("relative std of the loss estimate")
    ax.legend(fontsize=7)
    return fig


def nonlinear_figure(rows: Sequence[tuple[str, float]]):
    """Bar chart (log scale) of LoRFS's relative L2 error per nonlinear problem."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = [r[0] for r in rows]
    ax.bar(range(len(rows)), [max(r[1], 1e-16) for r in rows], color="tab:blue")
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("relative L2 error vs reference")
    ax.set_title("LoRFS time slabs on the nonlinear benchmarks")
    fig.tight_layout()
    return fig
