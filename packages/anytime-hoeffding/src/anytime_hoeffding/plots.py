"""Figures of the prequential evaluation: windowed accuracy and tree size over time.

:func:`prequential_figure` draws, for each stream, the windowed accuracy (top) and the
tree size (bottom) of every method from its :class:`~.prequential.PrequentialResult`, with
the stream's drift points as dashed lines (the paper's "better after drift" claim).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .prequential import PrequentialResult

__all__ = ["prequential_figure"]


def prequential_figure(
    curves: Mapping[str, Mapping[str, PrequentialResult]],
    drifts: Mapping[str, Sequence[int]] | None = None,
):
    """A matplotlib figure: ``curves[stream][method]`` as accuracy and size panels.

    Args:
        curves: ``{stream name: {method name: PrequentialResult}}``.
        drifts: ``{stream name: drift instants}`` drawn as dashed lines.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(curves)
    ncols = min(len(names), 4)
    nrows = -(-len(names) // ncols)
    fig, grid = plt.subplots(2 * nrows, ncols, figsize=(5.5 * ncols, 7 * nrows), squeeze=False)
    for k, name in enumerate(names):
        axes, c = grid[2 * (k // ncols) : 2 * (k // ncols) + 2, :], k % ncols
        for method, r in curves[name].items():
            style = {"lw": 2.2} if method.startswith("ours") else {"lw": 1.1, "alpha": 0.8}
            axes[0, c].plot(r.curve_t, r.curve_accuracy, label=method, **style)
            axes[1, c].plot(r.curve_t, r.curve_nodes, label=method, **style)
        for ax in axes[:, c]:
            for d in (drifts or {}).get(name, ()):
                ax.axvline(d, color="grey", ls="--", lw=0.8)
        axes[0, c].set_title(f"{name}: windowed accuracy (1,000 instances)")
        axes[1, c].set_title(f"{name}: tree size")
        axes[1, c].set_xlabel("instances")
        axes[1, c].set_ylabel("nodes")
        axes[0, c].set_ylabel("accuracy")
    for k in range(len(names), nrows * ncols):  # empty panels of the last row
        grid[2 * (k // ncols), k % ncols].set_visible(False)
        grid[2 * (k // ncols) + 1, k % ncols].set_visible(False)
    grid[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig
