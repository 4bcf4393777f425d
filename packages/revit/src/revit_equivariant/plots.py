"""The figures of the benchmark: one-step MSE per test set and rollout MSE per step
(:func:`comparison_figure`); validation learning curves over seeds (:func:`learning_curves_figure`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def comparison_figure(rows: Sequence[Mapping[str, Any]], curves: Mapping[str, Sequence[float]]):
    """Bars of ``MSE id`` / ``MSE rot90`` / ``MSE 45deg forcing`` per model, and rollout curves.

    ``rows`` and ``curves`` are what :func:`~revit_equivariant.benchmark.kolmogorov_table`
    returns; the result is a matplotlib figure.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    names = [
        r["model"].split(" (")[0].replace("persistence u(t+1)=u(t)", "persistence") for r in rows
    ]
    keys = ["MSE id", "MSE rot90", "MSE 45deg forcing"]
    width = 0.27
    for j, key in enumerate(keys):
        axes[0].bar(
            [i + (j - 1) * width for i in range(len(rows))],
            [r[key] for r in rows],
            width,
            label=key,
        )
    axes[0].set_xticks(range(len(rows)), names, rotation=30, ha="right", fontsize=7)
    axes[0].set(ylabel="one-step MSE", title="in-distribution vs rotated")
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=7)
    for name, roll in curves.items():
        axes[1].plot(range(1, len(roll) + 1), roll, marker="o", label=name)
    axes[1].set(xlabel="rollout step", ylabel="MSE", title="autoregressive rollout (id test)")
    axes[1].set_yscale("log")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return fig


def learning_curves_figure(
    curves: Mapping[str, Mapping[int, Sequence[float]]],
    train_curves: Mapping[str, Mapping[int, Sequence[float]]] | None = None,
):
    """Validation MSE per epoch of every model: the mean over seeds, the min-max band shaded;
    the mean training loss per epoch dashed in the same colour when ``train_curves`` is given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for name, by_seed in curves.items():
        runs = list(by_seed.values())
        n = min(len(c) for c in runs)
        epochs = range(1, n + 1)
        mean = [sum(c[e] for c in runs) / len(runs) for e in range(n)]
        (line,) = ax.plot(epochs, mean, label=name.split(" (")[0])
        lo = [min(c[e] for c in runs) for e in range(n)]
        hi = [max(c[e] for c in runs) for e in range(n)]
        ax.fill_between(epochs, lo, hi, color=line.get_color(), alpha=0.2)
        train = list((train_curves or {}).get(name, {}).values())
        if train:
            m = min(len(c) for c in train)
            tr = [sum(c[e] for c in train) / len(train) for e in range(m)]
            ax.plot(range(1, m + 1), tr, color=line.get_color(), linestyle="--", linewidth=1)
    ax.set(
        xlabel="epoch",
        ylabel="one-step MSE",
        title="learning curves: validation (solid, band: seeds), training (dashed)",
    )
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
