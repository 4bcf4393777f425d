"""Figures of the prequential evaluation: windowed accuracy and tree size over time.

:func:`tree_figure` draws a fitted tree (``inspect --model``). :func:`prequential_figure` draws, for each stream, the windowed accuracy (top) and the
tree size (bottom) of every method from its :class:`~.prequential.PrequentialResult`, with
the stream's drift points as dashed lines (the paper's "better after drift" claim).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .prequential import PrequentialResult

__all__ = ["prequential_figure", "tree_figure"]


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


def tree_figure(tree: dict, label_names=None, title: str = ""):
    """A matplotlib drawing of a tree given as :meth:`AnytimeHoeffdingTreeClassifier.to_dict`.

    Internal nodes show their test, leaves their majority label and instance count; leaves
    are spread left to right in order, each parent centred over its children.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    boxes, edges = [], []
    n_leaves = [0]

    def place(node, depth):
        if node.get("leaf"):
            x = n_leaves[0]
            n_leaves[0] += 1
            counts = list(node["counts"].values())
            keys = list(node["counts"].keys())
            k = max(range(len(counts)), key=counts.__getitem__) if counts else None
            lab = "-" if k is None else (label_names[k] if label_names is not None else keys[k])
            boxes.append((x, depth, f"{lab}\n(n={sum(counts):g})", True))
            return x
        xl = place(node["left"], depth + 1)
        xr = place(node["right"], depth + 1)
        x = 0.5 * (xl + xr)
        f = node["feature"]
        name = f"x[{f}]" if isinstance(f, int) else str(f)
        boxes.append((x, depth, f"{name} <= {node['threshold']:.4g}", False))
        edges.append((x, depth, xl, depth + 1, "yes"))
        edges.append((x, depth, xr, depth + 1, "no"))
        return x

    place(tree, 0)
    depth = max(b[1] for b in boxes)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.9 * n_leaves[0]), max(2.5, 1.5 * (depth + 1))))
    for x0, d0, x1, d1, text in edges:
        ax.plot([x0, x1], [-d0, -d1], color="grey", lw=1, zorder=1)
        ax.text(0.5 * (x0 + x1), -0.5 * (d0 + d1), text, fontsize=7, color="grey",
                ha="center", va="center", backgroundcolor="white")  # fmt: skip
    for x, d, text, leaf in boxes:
        ax.text(x, -d, text, ha="center", va="center", fontsize=8, zorder=2,
                bbox={"boxstyle": "round", "fc": "#dff0d8" if leaf else "#e8eef7", "ec": "grey"})  # fmt: skip
    ax.set_xlim(-0.8, n_leaves[0] - 0.2)
    ax.set_ylim(-depth - 0.6, 0.6)
    ax.axis("off")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
