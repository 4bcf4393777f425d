"""Figures of the experiment: the matched-minus-mismatched gap against the keep ratio (for the
diffusion priors and for the exact Gaussian priors) and the local-correlation curves.

Each function takes the tables of :mod:`weakprior.prior_mismatch`,
:func:`weakprior.analytic_priors.gaussian_posterior_table` or
:func:`weakprior.local_correlation.correlation_table` and returns a matplotlib figure.
"""

from __future__ import annotations

from collections.abc import Sequence

from icml26_shared.results import Table

from .image_quality import cell_mean


def _axes(width: float = 5.5):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, 4))


def _gap_axes(ax) -> None:
    ax.axhline(0, color="k", lw=0.5)
    ax.set_xlabel("keep ratio (squares: 50 % box, at keep 0.5)")
    ax.set_ylabel("matched - mismatched PSNR on missing pixels (dB)")
    ax.legend(fontsize=7)


def _half_width(cell) -> float:
    """The ``h`` of a ``"m ± h"`` cell (0 for a plain number)."""
    parts = str(cell).split("±")
    return float(parts[1]) if len(parts) == 2 else 0.0


def gap_figure(gap: Table, keeps: Sequence[float]):
    """Gap of the weak solver (diffusion priors) against the keep ratio, with the intervals of
    ``"m ± h"`` cells as error bars; the box as a square."""
    fig, ax = _axes()
    cols = [f"keep{k:g}" for k in keeps]
    for row in gap.rows:
        line = ax.errorbar(keeps, [cell_mean(row[c]) for c in cols],
                           yerr=[_half_width(row[c]) for c in cols], marker="o", capsize=3,
                           label=f"{row['target']} vs {row['mismatched prior']}")  # fmt: skip
        if "box" in row:
            ax.errorbar([0.5], [cell_mean(row["box"])], yerr=[_half_width(row["box"])],
                        marker="s", capsize=3, color=line.lines[0].get_color())  # fmt: skip
    ax.set_title("small diffusion priors, weak solver (95 % CI over seeds)")
    _gap_axes(ax)
    fig.tight_layout()
    return fig


def gaussian_gap_figure(gauss: Table, keeps: Sequence[float]):
    """The same gap for the exact Gaussian priors (closed-form posterior means)."""
    fig, ax = _axes()
    cols = [f"keep{k:g}" for k in keeps]
    targets = dict.fromkeys(r["target"] for r in gauss.rows)
    for t in targets:
        by_prior = {r["Gaussian prior fitted on"]: r for r in gauss.rows if r["target"] == t}
        if t not in by_prior:
            continue
        for name, r in by_prior.items():
            if name == t:
                continue
            vals = [cell_mean(by_prior[t][c]) - cell_mean(r[c]) for c in cols]
            (line,) = ax.plot(keeps, vals, marker="o", label=f"{t} vs {name}")
            if "box" in r:
                ax.scatter([0.5], [cell_mean(by_prior[t]["box"]) - cell_mean(r["box"])],
                           marker="s", color=line.get_color())  # fmt: skip
    ax.set_title("exact Gaussian priors (closed-form posterior mean)")
    _gap_axes(ax)
    fig.tight_layout()
    return fig


def correlation_figure(corr: Table):
    """Local-correlation curves of the data and of the prior samples."""
    fig, ax = _axes()
    ks = [c for c in corr.columns if c.startswith("k=")]
    for row in corr.rows:
        if not row["images"].startswith("distance"):
            ax.plot(range(len(ks)), [row[c] for c in ks], marker=".", label=row["images"])
    ax.set_xlabel("pixel offset k")
    ax.set_ylabel("correlation")
    ax.set_title("local correlation: data vs prior samples")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
