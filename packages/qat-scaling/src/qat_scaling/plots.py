"""Figures of a paired QAT grid: delta against N, D and G with the fitted law, and the
weight / activation decomposition of the W4A4 error.

Paper: "Scaling Law for Quantization-Aware Training", Chen et al., arXiv 2505.14302 (the
unified law ``delta = k D^gD (log2 G)^gG / N^gN`` and its weight / activation parts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .grid_tables import DECOMPOSITION_PARTS
from .scaling_law import LawFit


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def delta_figure(w4a4: Sequence[Mapping], fit: LawFit | None = None):
    """delta_W4A4 against N, D and G (one series per value of the other two), with the law."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    pts = [e for e in w4a4 if e["delta"] > 0]
    N = np.array([e["N"] for e in pts], float)
    D = np.array([e["D"] for e in pts], float)
    G = np.array([e["G"] for e in pts], float)
    y = np.array([e["delta"] for e in pts], float)
    for ax, x, label, others in (
        (axes[0], N, "N (non-embedding parameters)", (D, G)),
        (axes[1], D, "D (tokens)", (N, G)),
        (axes[2], G, "G (group size)", (N, D)),
    ):
        keys = sorted(set(zip(*[o.tolist() for o in others], strict=True)))
        for key in keys:
            mask = np.all([o == k for o, k in zip(others, key, strict=True)], axis=0)
            order = np.argsort(x[mask])
            line = ax.plot(x[mask][order], y[mask][order], "o", ms=4)[0]
            if fit is not None:
                grid = np.geomspace(x[mask].min(), x[mask].max(), 20)
                args = {"N": (grid, *key), "D": (key[0], grid, key[1]), "G": (*key, grid)}[label[0]]
                ax.plot(grid, fit.law.predict(*args), "-", color=line.get_color(), lw=1)
        ax.set(xscale="log", yscale="log", xlabel=label, ylabel="delta W4A4 (nats)")
    fig.suptitle("W4A4 QAT error: points measured, lines the fitted unified law", fontsize=10)
    fig.tight_layout()
    return fig


def decomposition_figure(errors: Sequence[Mapping], G: int):
    """delta of W4A4 and of its weight / activation parts (and FC2 fixes) against D, per size."""
    plt = _pyplot()
    sizes = sorted({(e["N"], e["size"]) for e in errors})
    fig, axes = plt.subplots(1, len(sizes), figsize=(4 * len(sizes), 3.2), squeeze=False)
    for ax, (n, size) in zip(axes[0], sizes, strict=True):
        for scheme, label in DECOMPOSITION_PARTS[:5]:
            pts = sorted((e["D"], e["delta"]) for e in errors
                         if e["N"] == n and e["G"] == G and e["scheme"] == scheme)  # fmt: skip
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=3, label=label)
        ax.axhline(0, color="k", lw=0.5)
        ax.set(xscale="log", xlabel="D (tokens)", ylabel="delta (nats)", title=f"{size} (N={n})")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"Weight vs activation part of the W4A4 error, G = {G}", fontsize=10)
    fig.tight_layout()
    return fig
