"""Figures of the experiment: TV against n with the bound's shape, and fitted densities.

Each function takes what :func:`noisy_compress.sample_complexity.sample_complexity_curves` or
:func:`noisy_compress.comparison.comparison_table` returned and gives a matplotlib figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def sample_complexity_figure(curves: dict, eps_levels: Sequence[float]):
    """Mean TV (± std over seeds) against n per noise level, with a rescaled ``n^-1/2``."""
    fig, ax = _plt().subplots(figsize=(5.5, 4))
    ns = np.asarray(curves["ns"], dtype=float)
    for sigma, arr in curves["tv"].items():
        ax.errorbar(ns, arr.mean(axis=0), yerr=arr.std(axis=0), marker="o", capsize=3,
                    label=f"sigma={sigma}")  # fmt: skip
    ref = curves["tv"][max(curves["tv"])].mean(axis=0)[0] * np.sqrt(ns[0] / ns)
    ax.plot(ns, ref, "k--", label="bound shape ~ n^-1/2 (rescaled)")
    for e in eps_levels:
        ax.axhline(e, color="grey", lw=0.5)
    ax.set(xscale="log", yscale="log", xlabel="n (noisy samples)", ylabel="TV to U[0,1]",
           title="Noise-aware tournament: TV vs n")  # fmt: skip
    ax.legend(fontsize=8)
    return fig


def fits_figure(truth, fits: dict, names: Sequence[str], title: str):
    """The clean density ``truth`` and the estimates ``fits[name]`` on a 1-D grid."""
    x = np.linspace(-0.8, 3.3, 1500)[:, None]
    fig, ax = _plt().subplots(figsize=(6, 3.5))
    ax.plot(x, truth.pdf(x), "k", lw=2, label="truth")
    for name in names:
        ax.plot(x, fits[name].pdf(x), label=name, lw=1)
    ax.set(xlabel="x", ylabel="density", title=title)
    ax.legend(fontsize=7)
    return fig
