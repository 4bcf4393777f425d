"""Figures of the experiment: TV against n with the bound's shape, and fitted densities.

Each function takes what :func:`noisy_compress.sample_complexity.sample_complexity_curves` or
:func:`noisy_compress.comparison.comparison_table` returned and gives a matplotlib figure;
:func:`fit_figure` draws one fit against its data (``noisy-compress learn --out``).
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


def fit_figure(y: np.ndarray, density, noise, truth=None, title: str = ""):
    """The fit against the data: in 1-D a histogram of the noisy ``y`` with the fitted noisy law
    ``f_hat * g`` and the clean estimate ``f_hat`` (and ``truth`` when known); in 2-D the noisy
    points with contours of ``f_hat * g``."""
    from .convolution import convolved_pdf

    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    if y.shape[1] == 1:
        lo, hi = np.quantile(y[:, 0], [0.001, 0.999])
        pad = 0.15 * (hi - lo)
        x = np.linspace(lo - pad, hi + pad, 800)[:, None]
        ax.hist(y[:, 0], bins=min(80, max(10, len(y) // 25)), density=True, color="0.85",
                label="noisy data (histogram)")  # fmt: skip
        ax.plot(x, convolved_pdf(density, noise, x), "C0", lw=1.5, label="fit convolved with noise")
        ax.plot(x, density.pdf(x), "C1", lw=1.5, label="clean estimate")
        if truth is not None:
            ax.plot(x, truth.pdf(x), "k--", lw=1, label="planted truth")
        ax.set(xlabel="x", ylabel="density")
    else:
        ax.scatter(y[:, 0], y[:, 1], s=2, color="0.6", label="noisy data")
        lo, hi = y[:, :2].min(axis=0), y[:, :2].max(axis=0)
        g0, g1 = np.meshgrid(np.linspace(lo[0], hi[0], 120), np.linspace(lo[1], hi[1], 120))
        pts = np.stack([g0.ravel(), g1.ravel()], axis=1)
        if y.shape[1] == 2:
            z = convolved_pdf(density, noise, pts).reshape(g0.shape)
            ax.contour(g0, g1, z, levels=8, cmap="viridis")
        ax.set(xlabel="coordinate 1", ylabel="coordinate 2")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
